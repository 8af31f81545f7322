import Engine
import Foundation
import Testing
@testable import RouterCore

/// The peak board against a real engine run on the test's thread (no JACK): readings named by
/// the layout the control queue gave, and no peak lost when two threads collect at once (the
/// OSC server's meter tick and the control queue's housekeeping).
@Suite("Peak board")
struct PeakBoardTests {
    /// An engine mixing music's two inputs (meter slots 0 and 1, 32 frames of `left` and of
    /// `right`) at unit gain into the speaker (output slot 0), and a board following music and
    /// `routes`. Cycles run on the test's thread.
    final class Fixture {
        let engine: Engine
        let board: PeakBoard
        private let buffers = PlanPublisherTests.Buffers()
        private let left: PortHandle

        init(left leftValue: Float, right rightValue: Float, routes: [RouteState]) throws {
            var configuration = Engine.Configuration()
            configuration.meterIntervalFrames = 32
            configuration.meterBlocks = 8
            engine = Engine(configuration: configuration, portBuffer: PlanPublisherTests.directBuffers)
            left = buffers.make(32, leftValue)
            let right = buffers.make(32, rightValue), out = buffers.make(32)
            try engine.publish(MixPlanDescription(
                inputs: [.init(port: left, meterSlot: 0), .init(port: right, meterSlot: 1)],
                outputs: [.init(port: out, meterSlot: 0, contributions: [
                    MixContribution(input: 0, gainSlot: 0, target: 1, rampFrames: 1),
                    MixContribution(input: 1, gainSlot: 1, target: 1, rampFrames: 1),
                ])]))
            board = PeakBoard(engine: engine)
            board.follow(apps: [PeakBoardTests.music], routes: routes)
        }

        /// The left input plays `value` from the next cycle on.
        func setLeft(_ value: Float) {
            left.pointer.assumingMemoryBound(to: Float.self).update(repeating: value, count: 32)
        }
    }

    static let music = AppState(name: "music", channelCount: 2, meterSlots: [0, 1], connect: [])
    static let speaker = RouteState(name: "speaker", channelCount: 1, meterSlots: [0], destinations: [], gain: 1)

    @Test("peaks are named by the layout, taken once, and a new layout names the next ones")
    func named() throws {
        let fixture = try Fixture(left: 0.5, right: -0.25, routes: [Self.speaker])
        let (engine, board) = (fixture.engine, fixture.board)
        engine.runCycle(frames: 32)
        engine.runCycle(frames: 32)
        #expect(board.takePeaks() == [PeakMeter(kind: .app, name: "music", peaks: [0.5, 0.25]),
                                      PeakMeter(kind: .route, name: "speaker", peaks: [0.25])])
        #expect(board.takePeaks().map(\.peaks) == [[0, 0], [0]], "nothing since")
        #expect(board.latestPeakDecibels(app: Self.music).map { ($0 * 10).rounded() / 10 } == [-6, -12],
                "the latest reading stays for /state")
        var radio = Self.music
        radio.name = "radio"
        radio.meterSlots = [1]
        board.follow(apps: [radio], routes: [])
        engine.runCycle(frames: 32)
        #expect(board.takePeaks() == [PeakMeter(kind: .app, name: "radio", peaks: [0.25])])
        engine.runCycle(frames: 32)
        board.dropPeaks()
        #expect(board.takePeaks().map(\.peaks) == [[0]], "dropped")
    }

    @Test("what a collection gathers stays until it is taken: a click collected early is in the take after a quiet cycle")
    func collectedThenTaken() throws {
        let fixture = try Fixture(left: 0.9, right: 0.1, routes: [])
        let (engine, board) = (fixture.engine, fixture.board)
        engine.runCycle(frames: 32)
        board.collect()   // the control queue's housekeeping
        fixture.setLeft(0.1)
        engine.runCycle(frames: 32)
        board.collect()
        #expect(board.takePeaks().map(\.peaks) == [[0.9, 0.1]])
        #expect(board.latestPeakDecibels(app: Self.music).map { ($0 * 10).rounded() / 10 } == [-20, -20], "the latest reading is the quiet cycle's")
    }

    @Test("RMS is in the takes only while measured: each channel's squares over the frames measured, named like the peaks")
    func rmsWhileMeasured() throws {
        let fixture = try Fixture(left: 0.5, right: -0.25, routes: [Self.speaker])
        let (engine, board) = (fixture.engine, fixture.board)
        engine.runCycle(frames: 32)
        #expect(board.takePeaks().allSatisfy { $0.rms == nil && $0.squares.isEmpty }, "not measured")
        board.measureRMS(true)
        #expect(board.measuresRMS && engine.measuresRMS)
        engine.runCycle(frames: 32)
        engine.runCycle(frames: 32)
        let meters = board.takePeaks()
        #expect(meters.map(\.rms) == [[0.5, 0.25], [0.25]])
        #expect(meters.map(\.squaredFrames) == [64, 64])
        board.measureRMS(false)
        #expect(!engine.measuresRMS)
        engine.runCycle(frames: 32)
        #expect(board.takePeaks().allSatisfy { $0.rms == nil }, "off again")
    }

    /// The control queue collects at its housekeeping while the OSC thread takes the peaks: what
    /// either collects reaches the next take. A click in one cycle among 2,000 is in some take.
    @Test("a click collected by one thread is taken by the other")
    func twoCollectors() throws {
        let fixture = try Fixture(left: 0.1, right: 0.1, routes: [Self.speaker])
        let (engine, board) = (fixture.engine, fixture.board)
        let shared = Shared()
        let collector = Thread { while !shared.done { board.collect() } }
        let reader = Thread {
            while !shared.done { shared.heard(board.takePeaks().first?.peaks.first ?? 0) }
        }
        collector.start()
        reader.start()
        for cycle in 0..<2000 {
            fixture.setLeft(cycle == 1000 ? 0.9 : 0.1)
            engine.runCycle(frames: 32)
            if cycle % 50 == 0 { Thread.sleep(forTimeInterval: 0.0002) }   // lets the others run; not a verdict
        }
        shared.done = true
        while !collector.isFinished || !reader.isFinished { Thread.sleep(forTimeInterval: 0.001) }
        let last = board.takePeaks().first?.peaks.first ?? 0
        #expect(max(shared.loudest, last) == 0.9)
    }

    /// What the test's threads share, under an NSLock (TSan sees it).
    final class Shared: @unchecked Sendable {
        private let lock = NSLock()
        private var _done = false
        private var _loudest: Float = 0
        var done: Bool {
            get { lock.withLock { _done } }
            set { lock.withLock { _done = newValue } }
        }
        var loudest: Float { lock.withLock { _loudest } }
        func heard(_ peak: Float) { lock.withLock { _loudest = max(_loudest, peak) } }
    }
}
