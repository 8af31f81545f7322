import CLiblo
#if canImport(Glibc)
import Glibc
#endif

/// Turns bytes into OSC packets and back, through liblo (`lo_message_deserialise`,
/// `lo_message_serialise`, `lo_bundle_serialise`): every liblo call of the project is here.
///
/// Bundles are framed here (liblo's own bundle parser lives inside its server, which cannot be
/// bound to one address); each message inside a bundle is validated and decoded by liblo.
public enum OSCCodec {
    /// Bundles may nest; deeper nesting than this is refused rather than followed.
    public static let maximumBundleDepth = 8

    /// Decodes one packet. Throws for anything that is not well-formed OSC.
    public static func decode(_ bytes: [UInt8]) throws(OSCDecodeError) -> OSCPacket {
        try decode(bytes[...], depth: 0)
    }

    private static let bundleTag: [UInt8] = Array("#bundle".utf8) + [0]

    private static func decode(_ bytes: ArraySlice<UInt8>, depth: Int) throws(OSCDecodeError) -> OSCPacket {
        guard !bytes.isEmpty else { throw OSCDecodeError("empty packet") }
        guard bytes.count % 4 == 0 else { throw OSCDecodeError("packet length \(bytes.count) is not a multiple of 4") }
        if bytes.starts(with: bundleTag) {
            guard depth < maximumBundleDepth else { throw OSCDecodeError("bundles nested more than \(maximumBundleDepth) deep") }
            guard bytes.count >= 16 else { throw OSCDecodeError("bundle of \(bytes.count) bytes has no time tag") }
            var position = bytes.startIndex + 8
            let timetag = OSCTimetag(seconds: readUInt32(bytes, position), fraction: readUInt32(bytes, position + 4))
            position += 8
            var elements: [OSCPacket] = []
            while position < bytes.endIndex {
                guard bytes.endIndex - position >= 4 else { throw OSCDecodeError("bundle element size is cut off") }
                let size = Int(readUInt32(bytes, position))
                position += 4
                guard size > 0, size % 4 == 0, size <= bytes.endIndex - position else {
                    throw OSCDecodeError("bundle element of \(size) bytes does not fit the \(bytes.endIndex - position) left")
                }
                elements.append(try decode(bytes[position..<position + size], depth: depth + 1))
                position += size
            }
            return .bundle(timetag, elements)
        }
        return .message(try decodeMessage(Array(bytes)))
    }

    private static func readUInt32(_ bytes: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    private static func decodeMessage(_ bytes: [UInt8]) throws(OSCDecodeError) -> OSCMessage {
        guard bytes.first == UInt8(ascii: "/") else { throw OSCDecodeError("address does not start with '/'") }
        var copy = bytes
        var result: Int32 = 0
        // liblo validates the address, the type tags and every argument's size before it decodes.
        let decoded: lo_message? = copy.withUnsafeMutableBytes { raw in
            lo_message_deserialise(raw.baseAddress, raw.count, &result)
        }
        guard let message = decoded else { throw OSCDecodeError(describe(result)) }
        defer { lo_message_free(message) }
        guard let end = bytes.firstIndex(of: 0) else { throw OSCDecodeError("address is not terminated") }
        guard let path = String(validating: bytes[..<end], as: UTF8.self) else { throw OSCDecodeError("address is not UTF-8") }
        let count = Int(lo_message_get_argc(message))
        var arguments: [OSCArgument] = []
        arguments.reserveCapacity(count)
        if count > 0, let types = lo_message_get_types(message), let argv = lo_message_get_argv(message) {
            for i in 0..<count {
                let tag = UInt8(bitPattern: types[i])
                switch tag {
                // These carry no data; liblo gives them no argument pointer.
                case UInt8(ascii: "T"): arguments.append(.true)
                case UInt8(ascii: "F"): arguments.append(.false)
                case UInt8(ascii: "N"): arguments.append(.nil)
                case UInt8(ascii: "I"): arguments.append(.infinitum)
                default:
                    guard let arg = argv[i] else { throw OSCDecodeError("argument \(i + 1) is missing") }
                    arguments.append(try argument(tag, arg))
                }
            }
        }
        return OSCMessage(path, arguments)
    }

    private static func argument(_ tag: UInt8, _ arg: UnsafeMutablePointer<lo_arg>) throws(OSCDecodeError) -> OSCArgument {
        // Only the argument's own bytes are read: liblo allocates 4 bytes for a 4-byte argument,
        // and `arg.pointee` would copy the whole (larger) lo_arg union past them (AddressSanitizer
        // found this through `make fuzz`).
        let raw = UnsafeRawPointer(arg)
        switch tag {
        case UInt8(ascii: "i"): return .int32(raw.loadUnaligned(as: Int32.self))
        case UInt8(ascii: "f"): return .float(raw.loadUnaligned(as: Float.self))
        case UInt8(ascii: "d"): return .double(raw.loadUnaligned(as: Double.self))
        case UInt8(ascii: "h"): return .int64(raw.loadUnaligned(as: Int64.self))
        case UInt8(ascii: "c"): return .character(UInt8(truncatingIfNeeded: raw.loadUnaligned(as: Int32.self)))
        case UInt8(ascii: "t"):
            return .timetag(OSCTimetag(seconds: raw.loadUnaligned(as: UInt32.self), fraction: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        case UInt8(ascii: "m"):
            return .midi([raw.load(fromByteOffset: 0, as: UInt8.self), raw.load(fromByteOffset: 1, as: UInt8.self),
                          raw.load(fromByteOffset: 2, as: UInt8.self), raw.load(fromByteOffset: 3, as: UInt8.self)])
        case UInt8(ascii: "s"), UInt8(ascii: "S"):
            // The string starts at the argument's address (liblo checked its terminator and padding).
            let start = UnsafeRawPointer(arg).assumingMemoryBound(to: UInt8.self)
            let bytes = UnsafeBufferPointer(start: start, count: strlen(UnsafeRawPointer(arg).assumingMemoryBound(to: CChar.self)))
            guard let text = String(validating: bytes, as: UTF8.self) else { throw OSCDecodeError("a string argument is not UTF-8") }
            return tag == UInt8(ascii: "s") ? .string(text) : .symbol(text)
        case UInt8(ascii: "b"):
            let blob = UnsafeMutableRawPointer(arg)
            let size = Int(lo_blob_datasize(blob))
            guard let data = lo_blob_dataptr(blob) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: data, count: size)))
        case UInt8(ascii: "T"): return .true
        case UInt8(ascii: "F"): return .false
        case UInt8(ascii: "N"): return .nil
        case UInt8(ascii: "I"): return .infinitum
        default: throw OSCDecodeError("unknown type tag '\(Character(Unicode.Scalar(tag)))'")
        }
    }

    private static func describe(_ code: Int32) -> String {
        switch code {
        case LO_ESIZE: "the message is not a multiple of 4 bytes"
        case LO_EINVALIDPATH: "the address is not a valid string"
        case LO_ENOTYPE: "the message has no type tags"
        case LO_EBADTYPE: "the message has an unknown type tag"
        case LO_EINVALIDTYPE: "the type tags are not a valid string"
        case LO_EINVALIDARG: "an argument does not match its type tag"
        case LO_EPAD: "the padding is not zero"
        case LO_EINVALIDBUND: "invalid bundle"
        case LO_TOOBIG: "the message is too large"
        default: "malformed message (liblo error \(code))"
        }
    }

    /// Encodes a message.
    public static func encode(_ message: OSCMessage) -> [UInt8] {
        let m = loMessage(message)
        defer { lo_message_free(m) }
        var size = lo_message_length(m, message.path)
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { raw in _ = lo_message_serialise(m, message.path, raw.baseAddress, &size) }
        return bytes
    }

    /// A packet framed for OSC 1.0 over TCP: its length as four big-endian bytes, then the packet.
    public static func lengthPrefixed(_ packet: [UInt8]) -> [UInt8] {
        let n = UInt32(packet.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + packet
    }

    /// Encodes a bundle of messages with a time tag.
    public static func encodeBundle(_ messages: [OSCMessage], timetag: OSCTimetag = .immediately) -> [UInt8] {
        guard let bundle = lo_bundle_new(lo_timetag(sec: timetag.seconds, frac: timetag.fraction)) else { return [] }
        defer { lo_bundle_free_recursive(bundle) }
        for message in messages { lo_bundle_add_message(bundle, message.path, loMessage(message)) }
        var size: Int = 0
        guard let raw = lo_bundle_serialise(bundle, nil, &size) else { return [] }
        defer { free(raw) }
        return Array(UnsafeRawBufferPointer(start: raw, count: size))
    }

    private static func loMessage(_ message: OSCMessage) -> lo_message {
        let m = lo_message_new()!
        for argument in message.arguments {
            switch argument {
            case let .int32(v): lo_message_add_int32(m, v)
            case let .float(v): lo_message_add_float(m, v)
            case let .double(v): lo_message_add_double(m, v)
            case let .int64(v): lo_message_add_int64(m, v)
            case let .string(v): lo_message_add_string(m, v)
            case let .symbol(v): lo_message_add_symbol(m, v)
            case let .character(v): lo_message_add_char(m, CChar(bitPattern: v))
            case let .timetag(t): lo_message_add_timetag(m, lo_timetag(sec: t.seconds, frac: t.fraction))
            case let .midi(bytes):
                var data = (bytes.count > 0 ? bytes[0] : 0, bytes.count > 1 ? bytes[1] : 0,
                            bytes.count > 2 ? bytes[2] : 0, bytes.count > 3 ? bytes[3] : 0)
                withUnsafeMutableBytes(of: &data) { lo_message_add_midi(m, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
            case let .blob(bytes):
                // liblo 0.31 cannot make an empty blob (lo_blob_new returns NULL for size 0); the
                // router never sends blobs, so an empty one goes out as a single zero byte.
                let payload = bytes.isEmpty ? [0] : bytes
                let blob = payload.withUnsafeBytes { lo_blob_new(Int32(payload.count), $0.baseAddress) }
                lo_message_add_blob(m, blob)
                lo_blob_free(blob)
            case .true: lo_message_add_true(m)
            case .false: lo_message_add_false(m)
            case .nil: lo_message_add_nil(m)
            case .infinitum: lo_message_add_infinitum(m)
            }
        }
        return m
    }
}
