@testable import HTTPControl
import Testing

/// The log of connections that were not served: a few lines per address, then one summary per
/// interval, and a bounded table of addresses; the connection caps and the descriptor reserve.
@Suite("The HTTP refusal log and connection caps")
struct RefusalLogTests {
    @Test("the first three connections of an address get a line each; the rest one summary with the count at the interval's end; then it starts again")
    func firstThenSummary() {
        var log = RefusalLog()
        let lines = (0..<1000).compactMap { _ in log.note(.refused, from: "10.0.0.9") }
        #expect(lines.count == 3 && lines.allSatisfy { !$0.summary && $0.count == 1 })
        #expect(log.note(.turnedAway, from: "10.0.0.9") != nil, "each kind counts on its own")
        #expect(log.flush() == [RefusalLog.Line(kind: .refused, address: "10.0.0.9", count: 997, summary: true)])
        #expect(log.flush().isEmpty, "nothing to sum up")
        #expect(log.note(.refused, from: "10.0.0.9") != nil, "a new interval logs again")
    }

    @Test("addresses past the table's size are counted together, in one summary")
    func boundedTable() {
        var log = RefusalLog(firstLines: 1, maximumAddresses: 4)
        let lines = (0..<100).compactMap { log.note(.refused, from: "10.0.0.\($0)") }
        #expect(lines.count == 4)
        #expect(log.flush() == [RefusalLog.Line(kind: .refused, address: nil, count: 96, summary: true)])
    }

    @Test("each kind has a table of its own: refused peers from many addresses do not take the place of allowed peers turned away")
    func tablePerKind() {
        var log = RefusalLog(firstLines: 1, maximumAddresses: 4)
        _ = (0..<100).compactMap { log.note(.refused, from: "10.0.0.\($0)") }
        #expect(log.note(.turnedAway, from: "192.168.1.5", detail: "at most 16") != nil, "an allowed peer turned away still gets its line")
        #expect(log.flush() == [RefusalLog.Line(kind: .refused, address: nil, count: 96, summary: true)])
    }

    @Test("the caps: lowered to leave the descriptor reserve, one address never more than half")
    func limits() {
        let plenty = ConnectionBook.Limits(total: 64, perAddress: 16, descriptorLimit: 20_000, reserve: 256)
        #expect(plenty == ConnectionBook.Limits(total: 64, perAddress: 16, descriptorLimit: nil, reserve: 256))
        #expect(plenty.total == 64 && plenty.perAddress == 16)
        let tight = ConnectionBook.Limits(total: 64, perAddress: 16, descriptorLimit: 300, reserve: 256)
        #expect(tight.total == 64 && tight.perAddress == 16, "150 descriptors stay free")
        let lower = ConnectionBook.Limits(total: 64, perAddress: 16, descriptorLimit: 100, reserve: 256)
        #expect(lower.total == 50 && lower.perAddress == 16)
        let low = ConnectionBook.Limits(total: 64, perAddress: 16, descriptorLimit: 40, reserve: 256)
        #expect(low.total == 20 && low.perAddress == 10, "half of a low limit stays free")
    }
}
