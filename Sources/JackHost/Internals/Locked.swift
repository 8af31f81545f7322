import Glibc

/// A value behind a lock that ThreadSanitizer can see: JackHost's state shared between the
/// control thread and JACK's notification thread.
///
/// Not Synchronization's `Mutex`: on Linux it waits on a futex inside the uninstrumented standard
/// library, so TSan sees no ordering between two threads taking it and reports every access under
/// it as a race (two threads incrementing under a `Mutex` are reported; under a pthread mutex they
/// are not). With it, `make tsan` could not tell a real race from a locked one. A pthread mutex
/// is intercepted by TSan. It blocks: never on the process thread.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is read and written only with `mutex` held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
