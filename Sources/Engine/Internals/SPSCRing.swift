import Synchronization

/// A bounded, lock-free, single-producer single-consumer queue of pointer-sized values.
///
/// Ownership: the storage is allocated once by `init` on the control thread and freed by
/// `deallocate()` once neither thread can touch it again. Exactly one thread pushes and exactly one
/// thread pops; `head` is written only by the consumer and `tail` only by the producer, so a
/// release-store of one index after the slot write, paired with an acquire-load on the other side,
/// is all the synchronisation needed. Push and pop never allocate, lock or retain.
public struct SPSCRing: ~Copyable {
    private let head = Atomic<Int>(0)   // next slot to read; written by the consumer only
    private let tail = Atomic<Int>(0)   // next slot to write; written by the producer only
    private let slots: UnsafeMutablePointer<UInt>
    private let mask: Int

    /// A ring holding at least `minimumCapacity` values (rounded up to a power of two).
    public init(minimumCapacity: Int) {
        var capacity = 1
        while capacity < max(minimumCapacity, 2) { capacity <<= 1 }
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: 0, count: capacity)
        mask = capacity - 1
    }

    public var capacity: Int { mask + 1 }

    /// Producer side: appends `value`; false when the ring is full (nothing is written).
    @_noLocks
    public func push(_ value: UInt) -> Bool {
        let t = tail.load(ordering: .relaxed)
        let h = head.load(ordering: .acquiring)
        if t &- h > mask { return false }
        slots[t & mask] = value
        tail.store(t &+ 1, ordering: .releasing)
        return true
    }

    /// Producer side: whether a push would succeed now (the consumer can only make more room).
    @_noLocks
    public func hasRoom() -> Bool {
        tail.load(ordering: .relaxed) &- head.load(ordering: .acquiring) <= mask
    }

    /// Consumer side: removes the oldest value; nil when the ring is empty.
    @_noLocks
    public func pop() -> UInt? {
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        if h == t { return nil }
        let value = slots[h & mask]
        head.store(h &+ 1, ordering: .releasing)
        return value
    }

    /// Consumer side: the oldest value without removing it; nil when the ring is empty.
    @_noLocks
    public func peek() -> UInt? {
        let h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        if h == t { return nil }
        return slots[h & mask]
    }

    /// Frees the storage. Call only when neither side will use the ring again.
    public func deallocate() {
        slots.deallocate()
    }
}
