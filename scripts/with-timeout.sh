#!/usr/bin/env bash
# with-timeout.sh SECONDS WHAT COMMAND [ARGS...]: runs COMMAND in a session of its own and, past
# SECONDS, stops every process of that session (TERM, then KILL 30 s later) and exits 124 saying
# WHAT ran over. `timeout` alone is not enough for `swift test`: the test process it starts is in
# a process group of its own, outlives swift-test and would hold a hung CI job to its limit.
set -u
limit=$1 what=$2
shift 2
setsid "$@" &
leader=$!
flag=$(mktemp "${TMPDIR:-/tmp}/with-timeout.XXXXXX")
rm -f "$flag"
(
    sleep "$limit"
    if kill -0 "$leader" 2>/dev/null; then
        echo "$what ran over $limit s (a test hung?) and is stopped" >&2
        touch "$flag"
        pkill -TERM -s "$leader"
        sleep 30
        pkill -KILL -s "$leader"
    fi
) &
watcher=$!
# Ctrl-C (or make stopping) reaches this script, not the session: pass it on to every process there.
trap 'kill "$watcher" 2>/dev/null; pkill -TERM -s "$leader" 2>/dev/null; sleep 2; pkill -KILL -s "$leader" 2>/dev/null; rm -f "$flag"; exit 130' INT TERM
wait "$leader"
status=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
if [ -e "$flag" ]; then
    rm -f "$flag"
    pkill -KILL -s "$leader" 2>/dev/null
    exit 124
fi
exit "$status"
