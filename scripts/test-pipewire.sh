#!/usr/bin/env bash
# The integration tests on PipeWire's JACK (issue 16): every JackServer of the run is a private
# headless PipeWire (JACK_IMPL=pipewire, Tests/JackTestSupport/JackServer+PipeWire.swift), and the
# test process and the daemons it starts load PipeWire's libjack instead of JACK2's.
#
# Arguments go to `swift test` (e.g. --filter). Without any, every integration suite and the
# JackHost suites run (`make test` runs them after the jackd run), except the 60 s soak (it runs
# on jackd) and PipeWireTests (made for PipeWire, they already run in the jackd pass).
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
if [ $# -eq 0 ]; then set -- --filter 'IntegrationTests|JackHostTests' --skip 'SoakTests|PipeWireTests'; fi
if swift test --skip-build --no-parallel --xunit-output "$runtime/results.xml" "$@"; then exit 0; fi
# A few failed tests run once more, alone, and must pass then; more than three, or any that fails
# again, fail the run (a stopgap, named in the output; the jackd pass never retries). Why: PipeWire
# 0.3.65 reports no xrun to JACK clients, and on a loaded 2-core machine it misses cycles all the
# time (7 of the router's and 9 of the recorder's in one 4 s take of a CI run). The timing checks
# count what the router and the recorder missed (/state engine.missedCycles, the take's gaps) and
# play their scene again, but a run on 2026-11-26 had all three takes of a scene spoiled
# (SignalActivationTests), and a late graph can hand a client a cycle of silence with no cycle
# missed by anyone's clock (RouteGraphTests, RouterAudioTests: now allowed for, on PipeWire only).
failed=$(python3 - "$runtime/results-swift-testing.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    sys.exit(0)
names = {case.get("classname", "").split(".")[-1] + "/" + case.get("name", "").split("(")[0]
         for case in root.iter("testcase") if case.find("failure") is not None or case.find("error") is not None}
print("|".join(sorted(names)))
PY
)
count=$(printf '%s' "$failed" | tr '|' '\n' | grep -c . || true)
if [ "$count" -eq 0 ] || [ "$count" -gt 3 ]; then
    echo "test-pipewire: $count failed test(s) found in the results; not retrying" >&2
    exit 1
fi
echo "test-pipewire: RETRYING ONCE, ALONE, on PipeWire: $failed"
swift test --skip-build --no-parallel --filter "$failed"
