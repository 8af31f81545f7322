/// What this build of duckrouter is, in one place: `duckrouter --version`, `duckctl --version`,
/// OSCQuery's HOST_INFO and the Debian package (the Makefile reads `version` from this line)
/// all say the same.
public enum BuildInfo {
    public static let version = "0.9.0"
}
