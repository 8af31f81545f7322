import Testing
@testable import RouterCore

@Suite("Slot allocator")
struct SlotAllocatorTests {
    @Test("slots come in order, freed ones first, never past the capacity")
    func takeAndGive() {
        var slots = SlotAllocator(capacity: 3)
        #expect(slots.take() == 0)
        #expect(slots.take() == 1)
        slots.give(0)
        #expect(slots.take() == 0)
        #expect(slots.take() == 2)
        #expect(slots.take() == nil)
        #expect(slots.available == 0)
    }

    @Test("taking several is all or nothing")
    func takeSeveral() {
        var slots = SlotAllocator(capacity: 4)
        #expect(slots.take(3) == [0, 1, 2])
        #expect(slots.take(2) == nil)
        #expect(slots.inUse == 3)
        #expect(slots.take(1) == [3])
    }

    @Test("a copy kept before a transaction puts every slot back when restored")
    func restoreCopy() {
        var slots = SlotAllocator(capacity: 4)
        _ = slots.take(2)
        let before = slots
        _ = slots.take(2)
        slots = before
        #expect(slots.available == 2)
        #expect(slots.isTaken(1) && !slots.isTaken(2))
    }
}
