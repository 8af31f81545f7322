#!/usr/bin/env bash
# Builds, installs and uninstalls duckrouter as an installed program (issue 20); the Makefile's
# dist, install and uninstall targets call it, and scripts/make-deb.sh installs into its package
# root through it.
#   scripts/dist.sh build       release binaries (Swift runtime linked in), man pages, completions
#   scripts/dist.sh install     copies them under $DESTDIR$PREFIX (see the Makefile's variables)
#   scripts/dist.sh uninstall   removes exactly what install copies
#   scripts/dist.sh files       lists what install copies: "source destination mode"
#   scripts/dist.sh unit        prints the systemd user unit as install writes it ($BINDIR, $DATADIR, $DOCDIR)
#   scripts/dist.sh version     prints the version (Sources/BuildInfo/Version.swift), for the Makefile and scripts
set -euo pipefail
cd "$(dirname "$0")/.."

: "${SWIFT:=swift}"
: "${DIST_BUILD:=.build-dist}"
: "${PREFIX:=/usr/local}"
: "${DESTDIR:=}"
: "${BINDIR:=$PREFIX/bin}"
: "${DATADIR:=$PREFIX/share}"
: "${MANDIR:=$DATADIR/man}"
: "${DOCDIR:=$DATADIR/doc/duckrouter}"
: "${USERUNITDIR:=$PREFIX/lib/systemd/user}"
: "${BASHCOMPDIR:=$DATADIR/bash-completion/completions}"
: "${ZSHCOMPDIR:=$DATADIR/zsh/site-functions}"
: "${FISHCOMPDIR:=$DATADIR/fish/vendor_completions.d}"

binaries=$DIST_BUILD/release
extras=$DIST_BUILD/extras
version=$(sed -n 's/^ *public static let version = "\(.*\)"/\1/p' Sources/BuildInfo/Version.swift)
# The date on the man pages: the last commit's, so the same source gives the same pages.
man_date=$(git log -1 --format=%cs 2>/dev/null || date -u +%F)

under_sudo() { [ "$(id -u)" -eq 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; }

build() {
    # Not as root for someone else: root-owned files in the build folder would stop their next
    # build (and sudo's PATH seldom has swift).
    if under_sudo; then
        echo "dist.sh: build as yourself ('make dist'), then 'sudo make install'" >&2
        exit 1
    fi
    local flags=(-c release --static-swift-stdlib --scratch-path "$DIST_BUILD")
    for product in duckrouter duckctl generate-manual; do
        "$SWIFT" build "${flags[@]}" --product "$product"
    done
    rm -rf "$extras"
    mkdir -p "$extras/man" "$extras/bash" "$extras/zsh" "$extras/fish"
    for tool in duckrouter duckctl; do
        "$binaries/generate-manual" "$binaries/$tool" --date "$man_date" --authors "the duckrouter authors" \
            --output-directory "$extras/man"
        gzip -9n < "$extras/man/$tool.1" > "$extras/man/$tool.1.gz"
        "$binaries/$tool" --generate-completion-script bash > "$extras/bash/$tool"
        "$binaries/$tool" --generate-completion-script zsh > "$extras/zsh/_$tool"
        "$binaries/$tool" --generate-completion-script fish > "$extras/fish/$tool.fish"
    done
    echo "$version" > "$extras/version"
    echo "built duckrouter $version in $binaries (man pages and completions in $extras)"
}

# What install copies, one line each: source, destination, mode.
files() {
    echo "$binaries/duckrouter $BINDIR/duckrouter 0755"
    echo "$binaries/duckctl $BINDIR/duckctl 0755"
    for tool in duckrouter duckctl; do
        echo "$extras/man/$tool.1.gz $MANDIR/man1/$tool.1.gz 0644"
        echo "$extras/bash/$tool $BASHCOMPDIR/$tool 0644"
        echo "$extras/zsh/_$tool $ZSHCOMPDIR/_$tool 0644"
        echo "$extras/fish/$tool.fish $FISHCOMPDIR/$tool.fish 0644"
    done
    # Made at install time: it names the paths of this install.
    echo "dist/duckrouter.service.in $USERUNITDIR/duckrouter.service 0644"
    # The control page, where the router looks for it: ../share/duckrouter/ui from its binary.
    for page in Sources/HTTPControl/Resources/ui/*; do
        echo "$page $DATADIR/duckrouter/ui/$(basename "$page") 0644"
    done
    for session in Sessions/*.json; do
        case $session in *.state.json) continue ;; esac
        echo "$session $DATADIR/duckrouter/sessions/$(basename "$session") 0644"
    done
    echo "README.md $DOCDIR/README.md 0644"
    for doc in docs/*.md docs/*.png; do
        echo "$doc $DOCDIR/docs/$(basename "$doc") 0644"
    done
}

# The unit with this install's paths.
unit_file() {
    sed -e "s|@BINDIR@|$BINDIR|g" -e "s|@DATADIR@|$DATADIR|g" -e "s|@DOCDIR@|$DOCDIR|g" dist/duckrouter.service.in
}

install_files() {
    if [ ! -x "$binaries/duckrouter" ] || [ ! -f "$extras/version" ]; then
        if under_sudo; then
            echo "dist.sh: nothing built in $DIST_BUILD yet: run 'make dist' (as yourself) first" >&2
            exit 1
        fi
        build
    elif [ -n "$(find Sources dist Sessions -newer "$binaries/duckrouter" -type f -print -quit)" ]; then
        echo "dist.sh: warning: sources changed since $DIST_BUILD was built; 'make dist' builds them" >&2
    fi
    unit=$(mktemp)
    trap 'rm -f "$unit"' EXIT
    unit_file > "$unit"
    files | while read -r source destination mode; do
        [ "$source" = dist/duckrouter.service.in ] && source=$unit
        install -D -m "$mode" "$source" "$DESTDIR$destination"
    done
    echo "installed duckrouter $version under ${DESTDIR}${PREFIX}"
}

uninstall_files() {
    while read -r _ destination _; do
        rm -f "$DESTDIR$destination"
    done < <(files)
    # The folders that are duckrouter's own, once empty (shared ones like bin/ stay).
    for folder in "$DESTDIR$DATADIR/duckrouter/ui" "$DESTDIR$DATADIR/duckrouter/sessions" "$DESTDIR$DATADIR/duckrouter" \
                  "$DESTDIR$DOCDIR/docs" "$DESTDIR$DOCDIR"; do
        rmdir "$folder" 2>/dev/null || true
    done
    echo "removed duckrouter from ${DESTDIR}${PREFIX}"
}

case ${1:-} in
    build) build ;;
    install) install_files ;;
    uninstall) uninstall_files ;;
    files) files ;;
    unit) unit_file ;;
    version) echo "$version" ;;
    *) echo "usage: $0 build|install|uninstall|files|unit|version" >&2; exit 64 ;;
esac
