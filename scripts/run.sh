#!/usr/bin/env bash
# Runs the router on a session, starting a JACK server with the dummy driver when none is running
# (and stopping that server again on exit). Ctrl-C stops both. The router logs the control page's
# link with its key ("control page: http://…/ui/#key=…"); duckctl page prints it again.
#   scripts/run.sh BINARY SESSION [extra duckrouter arguments…]
set -uo pipefail
binary=$1; session=$2; shift 2
server=${JACK_DEFAULT_SERVER:-default}
jackd_pid=""

cleanup() {
    if [ -n "$jackd_pid" ] && kill -0 "$jackd_pid" 2>/dev/null; then
        echo "Stopping the JACK server '$server' started for this run." >&2
        kill -TERM "$jackd_pid" 2>/dev/null
        wait "$jackd_pid" 2>/dev/null
    fi
}
trap cleanup EXIT
# Ctrl-C reaches the router (same process group), which stops cleanly; the script then cleans up.
trap ':' INT TERM

if ! JACK_DEFAULT_SERVER=$server jack_lsp >/dev/null 2>&1; then
    echo "No JACK server '$server' is running; starting one: jackd -n $server -d dummy -r 48000 -p 256" >&2
    jackd -n "$server" -d dummy -r 48000 -p 256 >"${TMPDIR:-/tmp}/duckrouter-jackd-$server.log" 2>&1 &
    jackd_pid=$!
    for _ in $(seq 50); do
        JACK_DEFAULT_SERVER=$server jack_lsp >/dev/null 2>&1 && break
        sleep 0.1
    done
    if ! JACK_DEFAULT_SERVER=$server jack_lsp >/dev/null 2>&1; then
        echo "jackd did not start; its log:" >&2
        cat "${TMPDIR:-/tmp}/duckrouter-jackd-$server.log" >&2
        exit 1
    fi
fi

echo "The control page's link (with the key that lets it change every app) is the router's" \
     "'control page:' line below; $(dirname "$binary")/duckctl page prints it again, page --qr as a QR code for a phone." >&2
"$binary" --server "$server" "$session" "$@" &
router_pid=$!
wait "$router_pid"
status=$?
# A Ctrl-C interrupts the first wait; wait again for the router's own exit status.
if kill -0 "$router_pid" 2>/dev/null; then wait "$router_pid"; status=$?; fi
exit "$status"
