@testable import OSCTransport
import Testing

/// How often refusals are answered and logged (RefusalBudget): the first few from each address
/// in an interval, a bounded number in all, one summary when the interval ends, and a table
/// of addresses that never outgrows its capacity.
@Suite("RefusalBudget")
struct RefusalBudgetTests {
    @Test("one address flooding gets its first five answered, the rest counted in one summary when the interval ends")
    func oneAddress() {
        var budget = RefusalBudget(perAddress: 5, overall: 20, interval: 10, capacity: 8)
        let answered = (0..<2000).filter { k in budget.note("127.0.0.2", now: Double(k) / 1000).answer }.count
        #expect(answered == 5)
        #expect(budget.due == 10)
        #expect(budget.summary(now: 9.9) == nil, "not before the interval ends")
        let summary = budget.summary(now: 10)
        #expect(summary == .init(unanswered: 1995, addresses: 1, busiest: [.init(host: "127.0.0.2", count: 1995)], seconds: 10))
        #expect(summary?.description == "1995 in the last 10 s from 1 address: 127.0.0.2 (1995)")
        #expect(budget.due == nil && budget.summary(now: 30) == nil, "said once")
        #expect(budget.note("127.0.0.2", now: 31).answer, "a new interval answers again")
    }

    @Test("every refusal answered gives no summary; a refusal after the interval ended carries the summary with it")
    func summaryOnNextRefusal() {
        var budget = RefusalBudget(perAddress: 2, overall: 20, interval: 10, capacity: 8)
        #expect(budget.note("a", now: 0).answer && budget.note("a", now: 1).answer)
        #expect(budget.due == nil, "nothing unanswered, nothing due")
        #expect(!budget.note("a", now: 2).answer)
        let next = budget.note("a", now: 12.5)
        #expect(next.answer && next.ended?.unanswered == 1 && next.ended?.seconds == 12.5)
    }

    @Test("forged addresses: at most `overall` answers in all, and the table stays within its capacity; the overflow is counted as one unnamed address (236 tracked ones unanswered, 20 answered)")
    func manyAddresses() {
        var budget = RefusalBudget(perAddress: 5, overall: 20, interval: 10, capacity: 256)
        var answered = 0
        for k in 0..<100_000 where budget.note("10.\(k >> 16).\(k >> 8 & 255).\(k & 255)", now: Double(k) / 100_000).answer {
            answered += 1
        }
        #expect(answered == 20)
        #expect(budget.trackedAddresses == 256)
        let summary = budget.summary(now: 10)
        #expect(summary?.unanswered == 99_980 && summary?.addresses == 237 && summary?.busiest.count == 3, "\(String(describing: summary))")
        #expect(budget.trackedAddresses == 0, "emptied at every interval")
    }
}
