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
    made=()
    # The hierarchies a user manager writes to: its own (name=systemd or the v2 one) and the v1
    # controllers it keeps accounting in. Each new cgroup sits below this process's own.
    while IFS=: read -r _ controllers path; do
        case $controllers in
            "") mount=/sys/fs/cgroup/unified; [ -f /sys/fs/cgroup/cgroup.controllers ] && mount=/sys/fs/cgroup ;;
            name=systemd) mount=/sys/fs/cgroup/systemd ;;
            pids|memory|cpu|cpu,cpuacct) mount=/sys/fs/cgroup/$controllers ;;
            *) continue ;;
        esac
        [ -d "$mount$path" ] || continue
        mkdir "$mount$path/$name" || skip "cannot make a cgroup in $mount$path"
        made+=("$mount$path/$name")
    done < /proc/self/cgroup

    cleanup() {
        # Deepest first: the manager's own slices and scopes inside ours.
        for folder in "${made[@]}"; do
            [ -d "$folder" ] || continue
            find "$folder" -depth -type d -exec rmdir {} + 2>/dev/null
            rmdir "$folder" 2>/dev/null
        done
        rm -rf "$work"
        if [ "$(cat /proc/1/cgroup)" != "$pid1_before" ]; then
            echo "with-user-systemd.sh: PID 1's cgroups changed during the run:" >&2
            diff <(echo "$pid1_before") /proc/1/cgroup >&2
            exit 70
        fi
    }
    work=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-user-systemd.XXXXXX")
    trap cleanup EXIT
    # A child that moves itself into the new cgroups, then makes the namespaces.
    bash -c 'for folder in "$@"; do [ "$folder" = -- ] && break; echo $$ > "$folder/cgroup.procs" || exit 1; done
             exec unshare --mount --propagation private --cgroup --fork --kill-child -- "$0" --inside "$@"' \
        "$0" "${made[@]}" -- "$work" "$@" 2>&1 &
    child=$!
    wait "$child"
    exit $?
fi

# Inside the namespaces. Arguments: --inside [cgroup folders…] -- WORK COMMAND…
shift
while [ "$1" != -- ]; do shift; done
shift
work=$1; shift

# cgroupfs afresh: in this cgroup namespace its root is the cgroup made above.
mount -t tmpfs -o mode=755 duckrouter-cgroup /sys/fs/cgroup || exit 75
while IFS=: read -r _ controllers _; do
    case $controllers in
        "") mkdir -p /sys/fs/cgroup/unified && mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified ;;
        name=systemd) mkdir -p /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd ;;
        pids|memory|cpu|cpu,cpuacct) mkdir -p "/sys/fs/cgroup/$controllers" && mount -t cgroup -o "$controllers" cgroup "/sys/fs/cgroup/$controllers" ;;
    esac || exit 75
done < /proc/self/cgroup
mkdir -p /run/systemd && mount -t tmpfs -o mode=755 duckrouter-run-systemd /run/systemd && mkdir /run/systemd/system || exit 75

export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_RUNTIME_DIR=$work/runtime
mkdir -p "$XDG_CONFIG_HOME/systemd/user" && mkdir -m 700 "$XDG_RUNTIME_DIR"
"$manager" --user --log-target=console --log-level=info > "$work/manager.log" 2>&1 &
manager_pid=$!
for _ in $(seq 100); do
    systemctl --user is-system-running >/dev/null 2>&1 && break
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
