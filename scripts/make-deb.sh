#!/usr/bin/env bash
# Makes duckrouter_<version>_<arch>.deb from what `make dist` built (issue 20): the binaries with
# the Swift runtime linked in, so the package needs no Swift toolchain, and dependencies found by
# dpkg-shlibdeps from the libraries the binaries really load.
#   scripts/make-deb.sh [OUTPUT_FOLDER]   (default: .build-dist; prints the package's path last)
set -euo pipefail
cd "$(dirname "$0")/.."
umask 022

: "${DIST_BUILD:=.build-dist}"
output=${1:-$DIST_BUILD}
version=$(cat "$DIST_BUILD/extras/version" 2>/dev/null || true)
if [ -z "$version" ] || [ ! -x "$DIST_BUILD/release/duckrouter" ]; then
    echo "make-deb.sh: nothing built in $DIST_BUILD yet: run 'make dist' first" >&2
    exit 1
fi
source_version=$(scripts/dist.sh version)
if [ "$version" != "$source_version" ]; then
    echo "make-deb.sh: $DIST_BUILD holds $version but the source says $source_version: run 'make dist' again" >&2
    exit 1
fi
architecture=$(dpkg --print-architecture)
# The upstream version is the binaries' (--version); -1 is this packaging of it.
: "${DEB_REVISION:=1}"
: "${DEB_MAINTAINER:=duckrouter authors <duckrouter@localhost>}"
package=duckrouter_${version}-${DEB_REVISION}_${architecture}
work=$(realpath -m "$DIST_BUILD/deb")
root=$work/$package
rm -rf "$work"
mkdir -p "$root/DEBIAN" "$output"

# Debian's places: /usr, zsh's vendor completions, user units under /usr/lib/systemd/user.
# Every folder given: none may come from the caller's environment (a make install's /usr/local).
env PREFIX=/usr BINDIR=/usr/bin DATADIR=/usr/share MANDIR=/usr/share/man DOCDIR=/usr/share/doc/duckrouter \
    USERUNITDIR=/usr/lib/systemd/user BASHCOMPDIR=/usr/share/bash-completion/completions \
    ZSHCOMPDIR=/usr/share/zsh/vendor-completions FISHCOMPDIR=/usr/share/fish/vendor_completions.d \
    DESTDIR="$root" DIST_BUILD="$DIST_BUILD" scripts/dist.sh install >/dev/null
if [ -e "$root/usr/local" ] || [ ! -x "$root/usr/bin/duckrouter" ]; then
    echo "make-deb.sh: the package root is not laid out under /usr:" >&2
    (cd "$root" && find . -maxdepth 3) >&2
    exit 1
fi

# Stripped (Debian policy); the Swift runtime finds its metadata through sections, not symbols.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/duckrouter" "$root/usr/bin/duckctl"
# SwiftPM links with RUNPATH $ORIGIN (for its own build folder); an installed binary must not
# look for libraries beside itself.
patchelf --remove-rpath "$root/usr/bin/duckrouter" "$root/usr/bin/duckctl"

doc=$root/usr/share/doc/duckrouter
install -m 0644 dist/debian/copyright "$doc/copyright"
changelog_date=$(git log -1 --format=%aD 2>/dev/null || date -R)
printf 'duckrouter (%s-%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
    "$version" "$DEB_REVISION" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$DEB_MAINTAINER" "$changelog_date" \
    | gzip -9n > "$doc/changelog.Debian.gz"

# dpkg-shlibdeps reads debian/control of a source package; a minimal one is enough.
shlibs=$work/shlibs
mkdir -p "$shlibs/debian"
printf 'Source: duckrouter\n\nPackage: duckrouter\nArchitecture: any\n' > "$shlibs/debian/control"
depends=$(cd "$shlibs" && dpkg-shlibdeps -O -e"$root/usr/bin/duckrouter" -e"$root/usr/bin/duckctl" 2>"$work/shlibdeps.log" \
    | sed -n 's/^shlibs:Depends=//p')
if [ -z "$depends" ]; then
    echo "make-deb.sh: dpkg-shlibdeps found no dependencies:" >&2
    cat "$work/shlibdeps.log" >&2
    exit 1
fi

installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
# '#' as sed's delimiter: the dependencies hold '|' (libjack-jackd2-0 | libjack-0.125).
sed -e "s#@VERSION@#$version-$DEB_REVISION#" -e "s#@MAINTAINER@#$DEB_MAINTAINER#" -e "s#@ARCHITECTURE@#$architecture#" -e "s#@DEPENDS@#$depends#" \
    -e "s#@INSTALLED_SIZE@#$installed_size#" dist/debian/control.in > "$root/DEBIAN/control"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

dpkg-deb --root-owner-group -Zxz --build "$root" "$output/$package.deb" >/dev/null
echo "Depends: $depends" >&2
echo "$output/$package.deb"
