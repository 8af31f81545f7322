#!/usr/bin/env bash
# make deb-test (issue 20): the .deb into a clean Debian 12 root, as a person installs it.
#   scripts/deb-test.sh [PACKAGE.deb]   (default: the one `make deb` made for this version)
# debootstrap makes the root once (minbase bookworm, from deb.debian.org, a few minutes) and keeps
# it as a tarball in .build-dist; each run unpacks a fresh copy into a folder of its own, works in
# a chroot there (in a private mount namespace: its /proc and /dev/shm go with it), and removes
# the folder. No Swift toolchain exists in the root. In it:
#   dpkg -i + apt-get -f install; no Swift library in ldd; --version; duckrouter check on the
#   installed default session; duckctl --help; the router run for real on a jackd of the test's
#   own (jackd2 installed for the test), duckctl status and the control page answering;
#   dpkg -r, then every file of the package gone and the root as it was before the install.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DIST_BUILD:=.build-dist}"
: "${DEB_TEST_MIRROR:=http://deb.debian.org/debian}"
version=$(scripts/dist.sh version)
package=${1:-$(ls -t "$DIST_BUILD"/duckrouter_"${version}"-*_"$(dpkg --print-architecture)".deb 2>/dev/null | head -n 1)}
[ -n "$package" ] && [ -f "$package" ] || { echo "deb-test: no package of duckrouter $version in $DIST_BUILD: run 'make deb' first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "deb-test: needs root (debootstrap, chroot, mounts): run it with sudo" >&2; exit 1; }

cache=$DIST_BUILD/debian12-minbase.tar
if [ ! -f "$cache" ]; then
    scripts/install-deps.sh debootstrap
    bootstrap=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-debootstrap.XXXXXX")
    echo "deb-test: making a Debian 12 root with debootstrap (once; kept in $cache)" >&2
    if ! debootstrap --variant=minbase bookworm "$bootstrap" "$DEB_TEST_MIRROR" > "$DIST_BUILD/debootstrap.log" 2>&1; then
        tail -30 "$DIST_BUILD/debootstrap.log" >&2
        rm -rf --one-file-system "$bootstrap"
        exit 1
    fi
    tar -C "$bootstrap" --one-file-system --numeric-owner -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
    rm -rf --one-file-system "$bootstrap"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-deb-test.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT
root=$work/root
mkdir "$root"
tar -C "$root" --numeric-owner -xf "$cache"
chmod 755 "$root"    # the root folder, as / is (mktemp made the bootstrap's 0700)
cp "$package" "$root/tmp/duckrouter.deb"
cp scripts/deb-test-inside.sh "$root/tmp/deb-test-inside.sh"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# An OSC port free here for UDP and TCP, and an HTTP port (the chroot shares this machine's
# network; a port taken meanwhile makes the router say so, and the test fail with its log).
read -r osc_port http_port < <(python3 -c '
import socket
def free(udp_too):
    for _ in range(100):
        t = socket.socket(); t.bind(("127.0.0.1", 0)); port = t.getsockname()[1]
        if not udp_too: return port
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", port)); return port
        except OSError:
            continue
        finally:
            u.close(); t.close()
print(free(True), free(False))')

echo "deb-test: installing $package into a fresh Debian 12 root in $root" >&2
# A mount and PID namespace of its own: its /proc, /dev and /dev/shm are gone with it, and so
# is every process the test started there, also when it fails half-way.
unshare --mount --propagation private --pid --fork -- bash -c '
    set -e
    root=$1; shift
    mount -t proc proc "$root/proc"
    # /dev from the host: the nodes in the tarball would not work on a nodev /tmp.
    mount -t tmpfs -o mode=755 dev "$root/dev"
    for node in null zero full random urandom tty; do
        touch "$root/dev/$node" && mount --bind "/dev/$node" "$root/dev/$node"
    done
    ln -s /proc/self/fd "$root/dev/fd"
    mkdir -p "$root/dev/shm" && mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive /bin/bash /tmp/deb-test-inside.sh "$@"
' deb-test "$root" "$version" "$osc_port" "$http_port"
echo "deb-test: passed" >&2
