import Glibc

/// Whether this process runs under ThreadSanitizer (`make tsan`), which makes everything 5-15 times
/// slower: the real-time threads of the router and of the test clients miss their deadlines, so
/// JACK reports many xruns, and a burst of OSC takes seconds longer.
///
/// `make tsan` is there to find races, which need the code to run, not to meet deadlines: tests
/// whose verdict is real-time performance (how many cycles an xrun may spoil, how fast a burst
/// goes through, a soak at full rate) or memory growth (TSan's own memory grows with the run)
/// relax that one verdict under it, and say so. The first is the weakest there: sample-exact
/// comparisons need only some clean cycles (each spoiled one still explained by an xrun);
/// `make test` keeps them all strict. Every other check is the same.
public enum ThreadSanitizer {
    public static let isActive: Bool = dlsym(nil, "__tsan_init") != nil
}
