#!/usr/bin/env bash
# `make tsan`: the unit and integration suites built with -sanitize=thread. Any ThreadSanitizer
# report, in the test process or in a daemon it starts (they share TSAN_OPTIONS), fails the run.
#
# Left out: ScaleTests and SoakTests measure time and allocations under load, which the sanitizer's
# own cost and its malloc make meaningless (they run in `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build-tsan
reports=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-tsan.XXXXXX")
trap 'rm -rf "$reports"' EXIT
swift build --build-tests --sanitize=thread --scratch-path "$scratch"
# ignore_noninstrumented_modules=0: libjack cancels its own threads inside blocking reads, which
# with the default ignores makes TSan abort ("finished with ignores enabled").
export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp log_path=$reports/report halt_on_error=0 ignore_noninstrumented_modules=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
status=0
swift test --skip-build --sanitize=thread --scratch-path "$scratch" --no-parallel \
    --skip 'ScaleTests|SoakTests' "$@" || status=$?
count=$(cat "$reports"/report.* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
if [ "$count" -gt 0 ]; then
    echo "make tsan: $count ThreadSanitizer report(s):" >&2
    cat "$reports"/report.* >&2
    status=1
else
    echo "make tsan: no ThreadSanitizer reports"
fi
exit $status
