import CAllocCounter
import Glibc
import OSCTransport
import Testing

/// The meters' bundle laid out once and filled in (OSCFloatBundle) must be the very bytes liblo
/// serialises for the same messages, whatever the names' lengths (each padding case), channel
/// counts and values.
@Suite("OSC float bundle")
struct OSCFloatBundleTests {
    /// Names of every length modulo four, non-ASCII too, and channel counts 0 to 6.
    static func shapes(seed: Int) -> [OSCFloatBundle.Shape] {
        let names = ["", "a", "ab", "abc", "abcd", "music", "nav", "phone-call", "Çello ♪", "app01"]
        return (0..<(3 + seed % 17)).map { k in
            OSCFloatBundle.Shape(address: "/duckrouter/meter",
                                 strings: [k % 3 == 0 ? "route" : "app", names[(k * 7 + seed) % names.count]],
                                 floats: (k + seed) % 7)
        }
    }

    @Test("the same bytes as liblo's lo_bundle_serialise, for names of every padding, 0 to 6 channels and any float", arguments: 0..<12)
    func sameAsLiblo(seed: Int) throws {
        let shapes = Self.shapes(seed: seed)
        let bundle = OSCFloatBundle(shapes)
        var state = UInt32(truncatingIfNeeded: seed &* 2_654_435_761 &+ 1)
        func next() -> Float {
            state = state &* 1_664_525 &+ 1_013_904_223
            // Levels as meters send them, and values of every exponent and sign.
            return state % 4 == 0 ? -144 : Float(bitPattern: state) .isFinite ? Float(bitPattern: state) : -3.5
        }
        for _ in 0..<5 {
            let floats = (0..<bundle.floatCount).map { _ in next() }
            var position = 0
            let messages = shapes.map { shape in
                defer { position += shape.floats }
                return OSCMessage(shape.address, shape.strings.map(OSCArgument.string)
                                  + floats[position..<position + shape.floats].map(OSCArgument.float))
            }
            #expect(bundle.encode(floats) == OSCCodec.encodeBundle(messages))
        }
    }

    @Test("a bundle that decodes to its messages, floats written in order; missing floats are 0")
    func decodes() throws {
        let bundle = OSCFloatBundle([.init(address: "/duckrouter/meter", strings: ["app", "music"], floats: 2),
                                     .init(address: "/duckrouter/meter", strings: ["route", "speaker"], floats: 2)])
        #expect(bundle.floatCount == 4)
        guard case let .bundle(timetag, elements) = try OSCCodec.decode(bundle.encode([-6, -12.5, -144])) else {
            Issue.record("not a bundle")
            return
        }
        #expect(timetag == .immediately)
        let messages = elements.compactMap { element -> OSCMessage? in if case let .message(m) = element { m } else { nil } }
        #expect(messages == [OSCMessage("/duckrouter/meter", [.string("app"), .string("music"), .float(-6), .float(-12.5)]),
                             OSCMessage("/duckrouter/meter", [.string("route"), .string("speaker"), .float(-144), .float(0)])])
    }

    @Test("filling in the meters' bundle of 17 stereo meters allocates once (the bundle), where encoding it through liblo allocates for every message",
          .enabled(if: CAllocCounter_is_available() != 0, "allocations are not counted under a sanitizer"))
    func oneAllocation() throws {
        let shapes = (1...17).map { OSCFloatBundle.Shape(address: "/duckrouter/meter", strings: [$0 == 17 ? "route" : "app", "app\($0)"], floats: 2) }
        let bundle = OSCFloatBundle(shapes)
        let floats = [Float](repeating: -20, count: bundle.floatCount)
        let messages = shapes.map { OSCMessage($0.address, $0.strings.map(OSCArgument.string) + [.float(-20), .float(-20)]) }
        #expect(CAllocCounter_is_active() != 0)
        func allocations(_ body: () -> [UInt8]) -> UInt64 {
            CAllocCounter_watch(pthread_self())
            let bytes = body()
            CAllocCounter_stop()
            #expect(bytes.count == 904)
            return CAllocCounter_allocations()
        }
        let filled = allocations { bundle.encode(floats) }
        let liblo = allocations { OSCCodec.encodeBundle(messages) }
        print("OSCFloatBundle: \(filled) allocation(s) a bundle; through liblo \(liblo)")
        #expect(filled <= 1)
        #expect(liblo > 17)
    }
}
