#!/usr/bin/env bash
# `make tsan`: the test suites built with -sanitize=thread. Any ThreadSanitizer report, in the
# test process or in a process it starts (they share TSAN_OPTIONS), fails the run.
#
# Which suites: every unit-test target that does not open a JACK client. A process that closes a
# JACK client is killed by TSan itself ("thread T.. finished with ignores enabled"): libjack stops
# its threads with pthread_cancel while they block in read(), and TSan's interceptors do not
# unwind on cancellation. That makes JackHostTests and the integration suites abort at random
# under TSan, whatever the code under test does; `TSAN_SUITES` overrides the list to try them.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build-tsan
reports=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-tsan.XXXXXX")
trap 'rm -rf "$reports"' EXIT
swift build --build-tests --sanitize=thread --scratch-path "$scratch"
# ignore_noninstrumented_modules=0 (Linux's default, spelled out): ignoring libjack's calls would
# only add to the ignores its cancelled threads die with.
export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp log_path=$reports/report halt_on_error=0 ignore_noninstrumented_modules=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
status=0
suites=${TSAN_SUITES:-'^(EngineTests|PolicyTests|SessionStoreTests|OSCTransportTests|OSCControlTests|RouterCoreTests)\.'}
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
