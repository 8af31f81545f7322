/// An OSC bundle sent again and again whose messages keep their addresses and string arguments
/// and change only their float arguments: meters, 20 times a second to every subscriber. It is
/// laid out once, with the same bytes liblo's `lo_bundle_serialise` gives (OSC 1.0: big-endian,
/// strings NUL-terminated and padded to four bytes, each element prefixed by its size); each
/// send then copies the layout and writes the floats in place, where encoding the messages
/// through liblo costs some hundred allocations a bundle.
public struct OSCFloatBundle: Sendable {
    /// One message of the bundle: its address, its string arguments, then `floats` floats.
    public struct Shape: Equatable, Sendable {
        public var address: String
        public var strings: [String]
        public var floats: Int

        public init(address: String, strings: [String], floats: Int) {
            self.address = address
            self.strings = strings
            self.floats = floats
        }
    }

    public let shapes: [Shape]
    private let layout: [UInt8]
    /// Where each float goes, in the order the shapes give them.
    private let offsets: [Int]

    /// Lays out a bundle (time tag "immediately") of one message per shape.
    public init(_ shapes: [Shape]) {
        self.shapes = shapes
        var bytes = Array("#bundle".utf8) + [0]
        bytes += [0, 0, 0, 0, 0, 0, 0, 1]   // immediately
        var offsets: [Int] = []
        for shape in shapes {
            let sizeAt = bytes.count
            bytes += [0, 0, 0, 0]
            Self.append(string: shape.address, to: &bytes)
            Self.append(string: "," + String(repeating: "s", count: shape.strings.count) + String(repeating: "f", count: shape.floats), to: &bytes)
            for string in shape.strings { Self.append(string: string, to: &bytes) }
            for _ in 0..<shape.floats {
                offsets.append(bytes.count)
                bytes += [0, 0, 0, 0]
            }
            let size = UInt32(bytes.count - sizeAt - 4)
            bytes.withUnsafeMutableBufferPointer { Self.write(size, at: sizeAt, in: $0) }
        }
        layout = bytes
        self.offsets = offsets
    }

    /// How many floats a bundle takes.
    public var floatCount: Int { offsets.count }

    /// The bundle with these floats, in the order of the shapes (`floatCount` of them; missing
    /// ones are 0, extra ones ignored).
    public func encode(_ floats: [Float]) -> [UInt8] {
        var bytes = layout
        bytes.withUnsafeMutableBufferPointer { out in
            offsets.withUnsafeBufferPointer { at in
                floats.withUnsafeBufferPointer { values in
                    var index = 0
                    while index < at.count && index < values.count {
                        Self.write(values[index].bitPattern, at: at[index], in: out)
                        index += 1
                    }
                }
            }
        }
        return bytes
    }

    private static func append(string: String, to bytes: inout [UInt8]) {
        bytes += string.utf8
        bytes.append(0)
        while bytes.count % 4 != 0 { bytes.append(0) }
    }

    /// Big-endian, as OSC has every number (no allocation, also in a debug build).
    private static func write(_ value: UInt32, at offset: Int, in bytes: UnsafeMutableBufferPointer<UInt8>) {
        bytes[offset] = UInt8(truncatingIfNeeded: value >> 24)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value >> 16)
        bytes[offset + 2] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[offset + 3] = UInt8(truncatingIfNeeded: value)
    }
}
