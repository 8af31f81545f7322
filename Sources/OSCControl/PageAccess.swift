import Foundation
import SessionStore

/// The control page's key as the router holds it now (docs/HTTP.md, "Who may do what"), where it
/// is kept, and the page's address. The control server asks it whether a key a WebSocket presents
/// is the page's and changes it (`/page/key/rotate`); the daemon asks it for the page's link (the
/// address with the key) for its log and the service's status.
///
/// Any thread: the key is read and changed under a lock. The key leaves this type only through
/// `link`, which only the daemon's own log, its status and `duckctl page` (which reads the file)
/// show: no reply, document or error carries it.
public final class PageAccess: @unchecked Sendable {
    // @unchecked: `key` and `observers` are read and written only under `lock` (NSLock, which
    // TSan sees).
    private let lock = NSLock()
    private var key: String
    /// How many times the key has changed in this run: a stream admitted with the key records it,
    /// so a change revokes exactly the streams admitted before it.
    private var generation = 0
    private var observers: [@Sendable (String) -> Void] = []
    /// Wrong keys presented since the last one logged, and when that was (`noteWrongKey`).
    private var wrongKeys = (count: 0, lastReport: -Double.infinity)

    /// The page's address without the key: `http://192.168.1.20:9952/ui/`.
    public let address: String
    /// Where the key is kept.
    public let file: PageKeyFile

    public init(address: String, file: PageKeyFile, key: String) {
        self.address = address
        self.file = file
        self.key = key
    }

    /// The key kept in `file`, or a new one made and kept there. When it cannot be kept (a
    /// folder that cannot be written), the new key serves this run only and `problem` says why.
    public static func open(address: String, file: PageKeyFile) -> (access: PageAccess, made: Bool, problem: String?) {
        do throws(PageKeyFile.Failure) {
            let (key, made) = try file.loadOrMake()
            return (PageAccess(address: address, file: file, key: key), made, nil)
        } catch {
            return (PageAccess(address: address, file: file, key: PageKeyFile.newKey()), true, error.description)
        }
    }

    /// The page's address with the key, as the page reads it: in the fragment, which a browser
    /// sends to no server and puts in no Referer.
    public var link: String { lock.withLock { PageKeyFile.link(address: address, key: key) } }

    /// Whether `presented` is the page's key now (compared in constant time).
    public func holds(_ presented: String) -> Bool {
        generation(holding: presented) != nil
    }

    /// The key's generation (see `rotate`) if `presented` is the page's key now, else nil.
    public func generation(holding presented: String) -> Int? {
        let (key, generation) = lock.withLock { (self.key, self.generation) }
        return PageKeyFile.matches(presented, key) ? generation : nil
    }

    /// Makes a new key, keeps it, and from then on only it is the page's; tells the observers the
    /// new link, and returns the new key's generation. Throws when it cannot be kept: the old key
    /// stays (a key that a restart would bring back is no change). It writes a file: call it off
    /// threads that must not wait for a disk.
    @discardableResult
    public func rotate() throws(PageKeyFile.Failure) -> Int {
        let new = PageKeyFile.newKey()
        try file.save(new)
        let (observers, generation) = lock.withLock { () -> ([@Sendable (String) -> Void], Int) in
            key = new
            self.generation += 1
            return (self.observers, self.generation)
        }
        let link = PageKeyFile.link(address: address, key: new)
        for observer in observers { observer(link) }
        return generation
    }

    /// Counts a wrong key presented; returns how many there were since the last report when one
    /// is due (at most one a second), so a peer trying keys cannot flood the log.
    public func noteWrongKey(now: Double) -> Int? {
        lock.withLock {
            wrongKeys.count += 1
            guard now - wrongKeys.lastReport >= 1 else { return nil }
            defer { wrongKeys = (0, now) }
            return wrongKeys.count
        }
    }

    /// Calls `observer` with the new link each time the key changes (on the thread that changed it).
    public func onChange(_ observer: @escaping @Sendable (String) -> Void) {
        lock.withLock { observers.append(observer) }
    }
}
