/// Hands out small integer slots (meter slots, level watches, gain slots) below a capacity and
/// takes them back for reuse.
///
/// Owns: which slots are free. Touches nothing else. A value type, so a change transaction can
/// keep a copy and put it back when it rolls back. Control queue only.
struct SlotAllocator: Equatable {
    let capacity: Int
    private var next: Int32 = 0
    private var free: [Int32] = []
    private var isFree: [Bool]

    init(capacity: Int) {
        self.capacity = capacity
        isFree = Array(repeating: false, count: max(capacity, 0))
    }

    /// Slots handed out and not given back.
    var inUse: Int { Int(next) - free.count }

    /// Slots that can still be taken.
    var available: Int { capacity - inUse }

    /// A free slot (the most recently given back first), or nil when all `capacity` are taken.
    mutating func take() -> Int32? {
        if let slot = free.popLast() {
            isFree[Int(slot)] = false
            return slot
        }
        guard Int(next) < capacity else { return nil }
        next += 1
        return next - 1
    }

    /// `count` slots, or none when fewer are free.
    mutating func take(_ count: Int) -> [Int32]? {
        guard count <= available else { return nil }
        return (0..<count).map { _ in take()! }
    }

    /// Gives slots back. A slot given back twice, or never taken, is a bug on the caller's side:
    /// it is ignored (a debug build stops), so two owners never share a slot.
    mutating func give(_ slots: some Sequence<Int32>) {
        for slot in slots {
            guard slot >= 0, slot < next, !isFree[Int(slot)] else {
                assertionFailure("slot \(slot) given back twice or never taken")
                continue
            }
            isFree[Int(slot)] = true
            free.append(slot)
        }
    }

    func isTaken(_ slot: Int32) -> Bool { slot >= 0 && slot < next && !isFree[Int(slot)] }

    mutating func give(_ slot: Int32) { give(CollectionOfOne(slot)) }
}
