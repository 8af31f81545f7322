#!/usr/bin/env bash
# Runs a command beside a private systemd user manager, for testing dist/duckrouter.service the
# way people use it (systemctl --user start, reload, stop) on a machine whose PID 1 is not
# systemd, without touching anything else on it.
#   scripts/with-user-systemd.sh COMMAND [ARGUMENTS…]
# COMMAND runs with HOME, XDG_CONFIG_HOME and XDG_RUNTIME_DIR of a fresh folder, where
# `systemctl --user` reaches the private manager. Exit status: COMMAND's; 77 when a user manager
# cannot run here (not root, no unshare, no systemd), with the reason on stderr.
#
# Containment. A user manager takes the cgroup it finds itself in for its own and moves what it
# finds there into init.scope; started plainly on a machine without systemd it would take the
# machine's root cgroups. So it runs in a cgroup namespace whose root is a cgroup made for it
# below this process's own (in every hierarchy it uses), with cgroupfs mounted afresh in a
# private mount namespace: it cannot see, let alone move, anything above. /run/systemd/system
# (which it checks to believe systemd booted) exists only in that mount namespace. Everything is
# removed on exit, and PID 1's cgroups are compared before and after.
set -uo pipefail

skip() { echo "with-user-systemd.sh: skipped: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (mount and cgroup namespaces)"
command -v unshare >/dev/null || skip "no unshare"
manager=/lib/systemd/systemd
[ -x "$manager" ] || skip "no $manager"
[ -d /sys/fs/cgroup/unified ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || skip "no cgroup v2 hierarchy"

if [ "${1:-}" != --inside ]; then
    [ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGUMENTS…]" >&2; exit 64; }
    pid1_before=$(cat /proc/1/cgroup)
    name=duckrouter-test-$$
    made=()      # "kind folder": the cgroups made for the manager, one per hierarchy it writes to
    work=""
    child=""
    cleanup() {
        local status=$?
        [ -n "$child" ] && kill -KILL "$child" 2>/dev/null
        # Whatever still runs in them (a manager killed hard leaves its services), then the
        # folders, deepest first.
        local entry folder left=""
        for entry in "${made[@]}"; do
            folder=${entry#* }
            for _ in 1 2 3 4 5; do
                pids=$(find "$folder" -name cgroup.procs -exec cat {} + 2>/dev/null)
                [ -z "$pids" ] && break
                kill -KILL $pids 2>/dev/null
                sleep 0.1
            done
            find "$folder" -depth -type d -exec rmdir {} \; 2>/dev/null
            [ -d "$folder" ] && left="$left $folder"
        done
        [ -n "$work" ] && rm -rf "$work"
        if [ "$(cat /proc/1/cgroup)" != "$pid1_before" ]; then
            echo "with-user-systemd.sh: PID 1's cgroups changed during the run:" >&2
            diff <(echo "$pid1_before") /proc/1/cgroup >&2
            exit 70
        fi
        if [ -n "$left" ]; then
            echo "with-user-systemd.sh: cgroups left behind:$left" >&2
            exit 70
        fi
        exit "$status"
    }
    trap cleanup EXIT

    # The hierarchies a user manager writes to: the one that tracks its processes (cgroup v2's,
    # or v1's name=systemd) and the v1 controllers it keeps accounting in. Each new cgroup sits
    # below this process's own. The tracking ones must be made, or it would take the cgroup this
    # process shares with others.
    while IFS=: read -r _ controllers path; do
        required=false
        case $controllers in
            "") kind=unified; mount=/sys/fs/cgroup/unified; required=true
                [ -f /sys/fs/cgroup/cgroup.controllers ] && { kind=v2; mount=/sys/fs/cgroup; } ;;
            name=systemd) kind=systemd; mount=/sys/fs/cgroup/systemd; required=true ;;
            pids|memory|cpu|cpu,cpuacct) kind=$controllers; mount=/sys/fs/cgroup/$controllers ;;
            *) continue ;;
        esac
        if [ -d "$mount$path" ] && mkdir "$mount$path/$name" 2>/dev/null; then
            made+=("$kind $mount$path/$name")
        elif $required; then
            skip "cannot make a cgroup of its own in $mount$path (this process's cgroup is not visible there)"
        fi
    done < /proc/self/cgroup
    [ ${#made[@]} -gt 0 ] || skip "no cgroup hierarchy to contain a user manager in"

    work=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-user-systemd.XXXXXX")
    kinds=()
    folders=()
    for entry in "${made[@]}"; do kinds+=("${entry%% *}"); folders+=("${entry#* }"); done
    # A child that moves itself into the new cgroups, then makes the namespaces.
    bash -c 'for folder in "$@"; do [ "$folder" = -- ] && break; echo $$ > "$folder/cgroup.procs" || exit 75; done
             while [ "$1" != -- ]; do shift; done; shift
             exec unshare --mount --propagation private --cgroup --fork --kill-child -- "$0" --inside "$@"' \
        "$0" "${folders[@]}" -- "${kinds[*]}" "$work" "$@" &
    child=$!
    wait "$child"
    status=$?
    child=""
    exit "$status"
fi

# Inside the namespaces. Arguments: --inside KINDS WORK COMMAND…
shift
kinds=$1 work=$2
shift 2

# cgroupfs afresh, only the hierarchies a cgroup was made in: in this cgroup namespace their
# root is that cgroup.
if [ "$kinds" = v2 ]; then
    mount -t cgroup2 cgroup2 /sys/fs/cgroup || exit 75
else
    mount -t tmpfs -o mode=755 duckrouter-cgroup /sys/fs/cgroup || exit 75
    for kind in $kinds; do
        case $kind in
            unified) mkdir -p /sys/fs/cgroup/unified && mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified ;;
            systemd) mkdir -p /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd ;;
            *) mkdir -p "/sys/fs/cgroup/$kind" && mount -t cgroup -o "$kind" cgroup "/sys/fs/cgroup/$kind" ;;
        esac || exit 75
    done
fi
mkdir -p /run/systemd && mount -t tmpfs -o mode=755 duckrouter-run-systemd /run/systemd && mkdir /run/systemd/system || exit 75

export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_RUNTIME_DIR=$work/runtime
unset DBUS_SESSION_BUS_ADDRESS
mkdir -p "$XDG_CONFIG_HOME/systemd/user" && mkdir -m 700 "$XDG_RUNTIME_DIR"
# Only the test's units and the packages' (not /etc/systemd/user, where this machine may enable
# services for every user: they would start here as root).
SYSTEMD_UNIT_PATH="$XDG_CONFIG_HOME/systemd/user:/usr/lib/systemd/user" \
    "$manager" --user --log-target=console --log-level=info > "$work/manager.log" 2>&1 &
manager_pid=$!
for _ in $(seq 100); do
    case "$(systemctl --user is-system-running 2>/dev/null)" in running|degraded) break ;; esac
    kill -0 "$manager_pid" 2>/dev/null || break
    sleep 0.1
done
if ! systemctl --user show-environment >/dev/null 2>&1; then
    echo "with-user-systemd.sh: the user manager did not start; its log:" >&2
    cat "$work/manager.log" >&2
    kill "$manager_pid" 2>/dev/null
    exit 77
fi
"$@"
status=$?
systemctl --user exit >/dev/null 2>&1 || kill "$manager_pid"
for _ in $(seq 100); do kill -0 "$manager_pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$manager_pid" 2>/dev/null
exit "$status"
