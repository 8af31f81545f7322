#!/usr/bin/env bash
# `make tsan`: the test suites built with -sanitize=thread. Any ThreadSanitizer report, in the
# test process or in a process it starts (they share TSAN_OPTIONS), fails the run.
#
# Which suites: all of them, unit and integration (the daemons the integration tests start are the
# TSan build too). `TSAN_SUITES` narrows the list (a `--filter` regex).
#
# JACK clients close under TSan through scripts/tsan-cancel.c, preloaded into every process of the
# run: libjack cancels its threads inside intercepted calls, which TSan cannot survive (see there).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build-tsan
reports=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-tsan.XXXXXX")
trap 'rm -rf "$reports"' EXIT
swift build --build-tests --sanitize=thread --scratch-path "$scratch"
# The man pages the packaging tests render come from swift-argument-parser's tool, as in make test.
swift build --product generate-manual --sanitize=thread --scratch-path "$scratch"
mkdir -p "$scratch"
cc -Wall -Werror -O2 -shared -fPIC -o "$scratch/tsan-cancel.so" scripts/tsan-cancel.c -ldl -lpthread
export LD_PRELOAD="$PWD/$scratch/tsan-cancel.so${LD_PRELOAD:+ $LD_PRELOAD}"
export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp log_path=$reports/report halt_on_error=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
status=0
suites=${TSAN_SUITES:-.}
swift test --skip-build --sanitize=thread --scratch-path "$scratch" --no-parallel --filter "$suites" "$@" || status=$?
count=$(cat "$reports"/report.* 2>/dev/null | grep -c 'ThreadSanitizer' || true)
if [ "$count" -gt 0 ]; then
    echo "make tsan: $count ThreadSanitizer report line(s):" >&2
    cat "$reports"/report.* >&2
    status=1
else
    echo "make tsan: no ThreadSanitizer reports"
fi
exit $status
