#!/usr/bin/env bash
# The chaos run (make chaos): scripts/chaos.sh SERVER COMMAND… runs COMMAND (duckchaos and its
# arguments) against a private jackd (SERVER=jackd) or a private headless PipeWire
# (SERVER=pipewire: PipeWire's libjack for duckchaos and the router it starts, as
# scripts/test-pipewire.sh sets it up for the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
server=$1
shift
case "$server" in
jackd)
    exec "$@"
    ;;
pipewire)
    libjack=$(ls -d /usr/lib/*/pipewire-0.3/jack 2>/dev/null | head -n 1 || true)
    if [ ! -e "$libjack/libjack.so.0" ] || [ ! -x /usr/bin/pipewire ]; then
        echo "chaos: pipewire and pipewire-jack are not installed (make deps)" >&2
        exit 1
    fi
    runtime=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-pipewire.XXXXXX")
    trap 'rm -rf "$runtime"' EXIT
    export XDG_RUNTIME_DIR="$runtime" JACK_IMPL=pipewire
    export LD_LIBRARY_PATH="$libjack${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    unset JACK_DEFAULT_SERVER PIPEWIRE_REMOTE PIPEWIRE_QUANTUM
    "$@"   # not exec: the trap removes the runtime directory
    ;;
*)
    echo "chaos: SERVER must be jackd or pipewire, not '$server'" >&2
    exit 64
    ;;
esac
