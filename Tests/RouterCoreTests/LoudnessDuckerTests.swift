import Foundation
import Loudness
import Policy
@testable import RouterCore
import Testing

/// The loop behind loudness-targeted ducks, fed made-up readings: the depth it asks for is the
/// measured difference less the target, between the floor and 0 dB; it waits for 400 ms of the
/// ducker; a silent ducker pushes no deeper; small moves are left alone.
@Suite("Loudness-targeted ducking loop")
struct LoudnessDuckerTests {
    static let pair = DuckPair(ducker: "voice", ducked: "bed", route: "tx")

    static func energy(_ lufs: Double) -> Double { lufs == -.infinity ? 0 : pow(10, (lufs + 0.691) / 10) }

    /// A reading whose last `blocks.count` blocks have these loudnesses, `heard` blocks in all.
    static func reading(_ blocks: [Double], heard: Int? = nil) -> LoudnessWorker.Reading {
        LoudnessWorker.Reading(momentary: nil, shortTerm: nil, blocks: Array(blocks.map(energy).suffix(30)), blocksHeard: heard ?? blocks.count)
    }

    static func duck(target: Double = 15, floor: Double = -40, now: Double = -14) -> LoudnessDuck {
        LoudnessDuck(pair: pair, rule: AppliedDuckingRule(ducker: "voice", scope: .pair, route: "tx", level: -14, target: target,
                                                          floor: floor, attack: 100, release: 500),
                     decibels: now)
    }

    struct World {
        var voice: LoudnessWorker.Reading
        var bed: LoudnessWorker.Reading
        var volumes: [String: Double] = [:]

        func step(_ ducker: inout LoudnessDucker, _ ducks: [LoudnessDuck]) -> [DuckPair: Double] {
            ducker.step(ducks, reading: { $0 == "voice" ? voice : $0 == "bed" ? bed : nil },
                        volume: { volumes[$0] ?? 0 }, threshold: { _ in -40 })
        }
    }

    @Test("a voice at -20 LUFS over a bed at -10: the bed goes to -25 dB so it sits 15 LU under; at -30 it goes to -5 dB; the floor and 0 dB bound it")
    func depth() {
        var loop = LoudnessDucker()
        // The duck begins: the voice's meter has heard 50 blocks (of silence before it spoke).
        var world = World(voice: Self.reading(Array(repeating: -.infinity, count: 50)), bed: Self.reading(Array(repeating: -10, count: 40)))
        #expect(world.step(&loop, [Self.duck()]).isEmpty, "the voice has not spoken yet")
        world.voice = Self.reading(Array(repeating: -.infinity, count: 50) + Array(repeating: -20, count: 3), heard: 53)
        #expect(world.step(&loop, [Self.duck()]).isEmpty, "300 ms: too little to judge")
        world.voice = Self.reading(Array(repeating: -.infinity, count: 50) + Array(repeating: -20, count: 4), heard: 54)
        #expect(world.step(&loop, [Self.duck()]) == [Self.pair: -25], "400 ms of the voice, none of the silence before it")
        #expect(loop.estimates[Self.pair]?.ducker == -20 && loop.estimates[Self.pair]?.ducked.map { abs($0 - -10) < 1e-9 } == true)
        world.bed = Self.reading(Array(repeating: -30, count: 40))
        #expect(world.step(&loop, [Self.duck(now: -25)]) == [Self.pair: -5])
        world.bed = Self.reading(Array(repeating: -40, count: 40))
        #expect(world.step(&loop, [Self.duck(now: -5)]) == [Self.pair: 0], "never louder than not ducked")
        world.bed = Self.reading(Array(repeating: 0, count: 40))
        #expect(world.step(&loop, [Self.duck(floor: -30, now: 0)]) == [Self.pair: -30], "never deeper than the floor")
    }

    @Test("volumes count: a voice turned down 6 dB, a bed turned up 6 dB, is a duck 12 dB deeper; a voice turned all the way down moves nothing")
    func volumes() {
        var loop = LoudnessDucker()
        var world = World(voice: Self.reading(Array(repeating: -20, count: 10)), bed: Self.reading(Array(repeating: -20, count: 40)))
        _ = world.step(&loop, [Self.duck()])  // the onset: the voice's blocks from here on count
        world.voice = Self.reading(Array(repeating: -20, count: 16), heard: 16)
        world.volumes = ["voice": -6, "bed": 6]
        #expect(world.step(&loop, [Self.duck()]) == [Self.pair: -27])
        world.volumes = ["voice": -.infinity]
        #expect(world.step(&loop, [Self.duck(now: -27)]).isEmpty, "not the floor: a muted voice holds its duck")
    }

    @Test("a silent ducker pushes no deeper, but lets the bed up; moves under 0.5 dB are left alone")
    func silenceAndDeadband() {
        var loop = LoudnessDucker()
        var world = World(voice: Self.reading([], heard: 0), bed: Self.reading(Array(repeating: -20, count: 40)))
        _ = world.step(&loop, [Self.duck()])
        world.voice = Self.reading(Array(repeating: -20, count: 10))
        #expect(world.step(&loop, [Self.duck()]) == [Self.pair: -15])
        // A pause: the last 400 ms under the threshold; the 3 s mean falls, which would ask for a
        // shallower duck (allowed) but never a deeper one.
        world.voice = Self.reading(Array(repeating: -20, count: 10) + Array(repeating: -.infinity, count: 4))
        world.bed = Self.reading(Array(repeating: -10, count: 40))
        #expect(world.step(&loop, [Self.duck(now: -15)]).isEmpty, "the bed got louder, but the voice is silent: the duck holds")
        #expect(loop.estimates[Self.pair]?.duckerSilent == true)
        world.voice = Self.reading(Array(repeating: -20, count: 14))
        world.bed = Self.reading(Array(repeating: -20.3, count: 40))
        #expect(world.step(&loop, [Self.duck(now: -15)]).isEmpty, "0.3 dB: left alone")
        #expect(world.step(&loop, [Self.duck(now: -15.6)]) == [Self.pair: -14.7], "0.9 dB: moved")
    }

    @Test("a pair no longer in force is forgotten: its next duck waits for the ducker's first 400 ms again; a muted ducker holds the duck")
    func forgets() {
        var loop = LoudnessDucker()
        var world = World(voice: Self.reading(Array(repeating: -20, count: 10)), bed: Self.reading(Array(repeating: -20, count: 40)))
        _ = world.step(&loop, [Self.duck()])
        world.voice = Self.reading(Array(repeating: -20, count: 14))
        #expect(world.step(&loop, [Self.duck()]) == [Self.pair: -15])
        // The duck ends; the router's timer stops with it, so the loop is not stepped again: the
        // router tells it which pairs are in force on every change instead.
        loop.keep(only: [])
        #expect(loop.estimates.isEmpty)
        #expect(world.step(&loop, [Self.duck()]).isEmpty, "a new onset: the voice's next 400 ms first")
        world.voice = Self.reading(Array(repeating: -20, count: 18))
        #expect(world.step(&loop, [Self.duck()]) == [Self.pair: -15])
    }
}
