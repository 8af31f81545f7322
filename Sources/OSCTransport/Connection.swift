#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection and its buffers (server thread only).
final class Connection {
    enum Framing { case unknown, lengthPrefixed, slip }
    static let slipEnd: UInt8 = 0xC0
    static let slipEscape: UInt8 = 0xDB

    let fd: Int32
    let id: Int
    let address: SocketAddress
    let inbound: Bool
    var framing: Framing = .unknown
    var connecting = false
    var input: [UInt8] = []
    var output: [UInt8] = []
    /// A peer's connection only: when it is closed unless a packet completes first (ms on
    /// `OSCServer.nowMilliseconds`' clock); nil while it holds no partial packet and has sent a
    /// complete one (OSCServer+Admission.swift).
    var deadline: Int64?
    /// It has sent a complete packet.
    var spoke = false
    /// A packet was taken out of `input` since the deadline was last looked at.
    var tookPacket = false

    init(fd: Int32, id: Int, address: SocketAddress, inbound: Bool) {
        self.fd = fd
        self.id = id
        self.address = address
        self.inbound = inbound
    }

    /// After its input was read and its packets taken out: a deadline for a packet begun, none
    /// once every packet it sent is complete, the same deadline while one is still coming.
    func updateDeadline(now: Int64, timeout: Int64) {
        guard inbound else { return }
        if tookPacket {
            tookPacket = false
            spoke = true
            deadline = holdsPartialPacket ? now + timeout : nil
        } else if deadline == nil && holdsPartialPacket {
            deadline = now + timeout
        }
    }

    /// Bytes of a packet not complete yet wait in `input` (SLIP's packet ends alone are none).
    var holdsPartialPacket: Bool {
        framing == .slip ? input.contains { $0 != Connection.slipEnd } : !input.isEmpty
    }

    static func frame(_ packet: [UInt8], _ framing: Framing) -> [UInt8] {
        switch framing {
        case .slip:
            var out: [UInt8] = [Connection.slipEnd]
            for byte in packet {
                switch byte {
                case Connection.slipEnd: out += [Connection.slipEscape, 0xDC]
                case Connection.slipEscape: out += [Connection.slipEscape, 0xDD]
                default: out.append(byte)
                }
            }
            out.append(Connection.slipEnd)
            return out
        case .lengthPrefixed, .unknown:
            return OSCCodec.lengthPrefixed(packet)
        }
    }

    static func unslip(_ frame: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(frame.count)
        var escaped = false
        for byte in frame {
            if escaped {
                switch byte {
                case 0xDC: out.append(slipEnd)
                case 0xDD: out.append(slipEscape)
                default: return nil
                }
                escaped = false
            } else if byte == slipEscape {
                escaped = true
            } else {
                out.append(byte)
            }
        }
        return escaped ? nil : out
    }
}
