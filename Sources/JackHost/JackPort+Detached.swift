extension JackPort {
    /// A port value not registered with any client, for code that builds plans without JACK
    /// (unit tests of the control plane). Never hand one to a `JackClient`: its pointer is only a
    /// token for the engine's port-buffer function.
    public init(detached pointer: UnsafeMutableRawPointer, name: String) {
        self.init(pointer: OpaquePointer(pointer), name: name)
    }
}
