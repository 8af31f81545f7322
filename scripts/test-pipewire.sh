#!/usr/bin/env bash
# The integration tests on PipeWire's JACK (issue 16): every JackServer of the run is a private
# headless PipeWire (JACK_IMPL=pipewire, Sources/JackRig/JackServer+PipeWire.swift), and the
# test process and the daemons it starts load PipeWire's libjack instead of JACK2's.
#
# Arguments go to `swift test` (e.g. --filter). Without any, every integration suite and the
# JackHost suites run (`make test` runs them after the jackd run), except the 60 s soak (it runs
# on jackd), PipeWireTests (made for PipeWire, they already run in the jackd pass) and
# LoudnessDuckingTests (issue 19's acceptance is under jackd; its two minutes of 3 s loudness
# windows would add as much again to CI, and the loudness path through PipeWire's libjack is
# LoudnessMeteringTests', which runs here) and ConsolePageTests (issue 39's acceptance is under
# jackd; the page against a router on PipeWire is ControlPageTests', which runs here).
set -euo pipefail
cd "$(dirname "$0")/.."
libjack=$(ls -d /usr/lib/*/pipewire-0.3/jack 2>/dev/null | head -n 1 || true)   # /usr/lib/<multiarch>/…
if [ ! -e "$libjack/libjack.so.0" ] || [ ! -x /usr/bin/pipewire ]; then
    echo "test-pipewire: pipewire and pipewire-jack are not installed (make deps)" >&2
    exit 1
fi
runtime=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-pipewire.XXXXXX")
trap 'rm -rf "$runtime"' EXIT
export XDG_RUNTIME_DIR="$runtime"
export JACK_IMPL=pipewire
export LD_LIBRARY_PATH="$libjack${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset JACK_DEFAULT_SERVER PIPEWIRE_REMOTE PIPEWIRE_QUANTUM
if [ $# -eq 0 ]; then set -- --filter 'IntegrationTests|JackHostTests' --skip 'SoakTests|PipeWireTests|LoudnessDuckingTests|ConsolePageTests|PackagingTests'; fi
swift test --skip-build --no-parallel "$@"   # not exec: the trap removes the runtime directory
