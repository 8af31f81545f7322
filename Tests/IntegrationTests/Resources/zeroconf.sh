#!/usr/bin/env bash
# ZeroconfTests: the daemon's zeroconf advertisement, seen by avahi-browse, with an avahi daemon
# of the test's own: in a network namespace (a veth pair, no route anywhere) and a mount
# namespace (avahi's /run/avahi-daemon is a private tmpfs), on a D-Bus system bus of its own. The
# JACK server stays outside; JACK talks over files in /dev/shm, which the namespaces share.
#
# Usage: zeroconf.sh WORKDIR DUCKROUTER SERVER SESSION   (as root; run under `unshare -n -m`)
# Prints, one per line:
#   browse1 <avahi-browse -rpt line>   the services while the router and avahi run
#   gone <seconds>                     avahi stopped: the router said so within that time
#   browse2 <line>                     avahi back: the services again
#   browse3 <line>                     the router stopped (SIGTERM): what is left (nothing)
#   sentinel <line>                    a service the script publishes itself, browsed then
#   router-exit <status>
#   log <line>                         the router's log
set -u
work=$1 duckrouter=$2 server=$3 session=$4
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/bus"
pids=()
# SIGKILL: this script may inherit a blocked SIGTERM from the test process, and so would
# dbus-daemon (avahi-daemon and the router take theirs through their own signal handling).
cleanup() {
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
    wait 2>/dev/null
}
trap cleanup EXIT

mount -t tmpfs tmpfs /run/avahi-daemon 2>/dev/null || { mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon; }
ip link set lo up
ip link add zc0 type veth peer name zc1
ip addr add 10.77.0.1/24 dev zc0
ip link set zc0 multicast on up
ip link set zc1 up

cat > "$work/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$work/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/> <allow own="*"/>
    <allow send_type="method_call"/> <allow send_type="signal"/> <allow send_type="method_return"/> <allow send_type="error"/>
    <allow receive_type="method_call"/> <allow receive_type="signal"/> <allow receive_type="method_return"/> <allow receive_type="error"/>
  </policy>
</busconfig>
EOF
cat > "$work/avahi.conf" <<EOF
[server]
host-name=duckrig
use-ipv4=yes
use-ipv6=no
allow-interfaces=zc0
enable-dbus=yes
ratelimit-interval-usec=0
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
EOF

dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile > "$work/dbus.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/bus" ] && break; sleep 0.05; done

start_avahi() {
    avahi-daemon --no-drop-root --no-chroot --no-rlimits --no-proc-title -f "$work/avahi.conf" >> "$work/avahi.log" 2>&1 &
    avahi=$!
    pids+=("$avahi")
    for _ in $(seq 200); do grep -q "Server startup complete" "$work/avahi.log" 2>/dev/null && return 0; sleep 0.05; done
    return 1
}
# Waits (up to $2 seconds) for the router's log to have $1 more times than $3.
wait_log() {
    for _ in $(seq $(( $2 * 20 ))); do
        [ "$(grep -c "$1" "$work/router.log")" -gt "$3" ] && return 0
        sleep 0.05
    done
    return 1
}
browse() {
    local type
    for type in _oscjson._tcp _osc._udp _osc._tcp; do
        timeout 5 avahi-browse -rpt "$type" 2>/dev/null | grep '^=' | sed "s/^/$1 /"
    done
}

start_avahi || { echo "avahi-failed"; cat "$work/avahi.log" | sed 's/^/log /'; exit 1; }
"$duckrouter" --server "$server" --log-level info "$session" > /dev/null 2> "$work/router.log" &
router=$!
pids+=("$router")
wait_log "zeroconf: advertised" 10 0 || echo "not-advertised"
browse browse1

kill "$avahi"; wait "$avahi" 2>/dev/null
started=$(date +%s.%N)
if wait_log "avahi daemon went away" 10 0; then
    echo "gone $(python3 -c "print(round($(date +%s.%N) - $started, 3))")"
fi
start_avahi || echo "avahi-failed-again"
wait_log "zeroconf: advertised" 10 1 || echo "not-advertised-again"
browse browse2

# A service of the script's own, so that "nothing left" below is avahi answering without the
# router's services, not avahi no longer answering.
avahi-publish -s sentinel _sentinel._tcp 1 > /dev/null 2>&1 &
pids+=($!)
kill -TERM "$router"; wait "$router"
echo "router-exit $?"
# The services go when the router's D-Bus connection closes; avahi may take a moment to see it.
for _ in $(seq 30); do
    left=$(browse browse3)
    [ -z "$left" ] && break
    sleep 0.1
done
[ -n "$left" ] && echo "$left"
for _ in $(seq 30); do
    sentinel=$(timeout 5 avahi-browse -rpt _sentinel._tcp 2>/dev/null | grep '^=')
    [ -n "$sentinel" ] && break
    sleep 0.1
done
echo "$sentinel" | sed 's/^/sentinel /'
sed 's/^/log /' "$work/router.log"
