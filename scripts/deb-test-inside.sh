#!/bin/bash
# The part of scripts/deb-test.sh that runs inside the clean Debian 12 root (as root, chrooted).
#   deb-test-inside.sh VERSION OSC_PORT HTTP_PORT
set -euo pipefail
# The root was unpacked by root from a tarball: apt fetches as root, not as _apt.
echo "APT::Sandbox::User \"root\";" > /etc/apt/apt.conf.d/99deb-test
version=$1 osc_port=$2 http_port=$3
step() { echo "== $*" >&2; }
fail() { echo "deb-test: FAILED: $*" >&2; exit 1; }

# Every path of the root, with its type, mode and owner, but the ones dpkg, apt and programs
# change as they run; regular files under /etc and /usr with their checksums too.
snapshot() {
    find / -xdev \( -path /proc -o -path /dev -o -path /sys -o -path /tmp -o -path /run -o -path /root \
        -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \
        -o -path /var/lib/systemd -o -path /var/lib/ucf -o -path /etc/ld.so.cache \) -prune \
        -o -printf '%y %m %u %g %p\n' | sort -k5
    find /etc /usr -xdev -type f ! -path /etc/ld.so.cache -print0 | sort -z | xargs -0 md5sum
}
# Whatever the test started, stopped however it ends.
started=()
trap 'for pid in "${started[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done' EXIT

step "apt-get update"
apt-get update -qq
# The router and duckctl run as a person would, not as root.
useradd --create-home --shell /bin/bash rig
snapshot > /tmp/before.txt

step "no Swift toolchain here"
if command -v swift >/dev/null || command -v swiftc >/dev/null || [ -e /opt/swift ] || \
   find / -xdev -name 'libswiftCore.so*' -print -quit 2>/dev/null | grep -q .; then
    fail "a Swift toolchain or runtime is in the root"
fi

step "dpkg -i (its dependencies are missing: dpkg leaves it unconfigured)"
dpkg -i /tmp/duckrouter.deb >/tmp/dpkg-i.log 2>&1 || true
step "apt-get -f install"
apt-get -f install -y -qq --no-install-recommends >/tmp/apt-f.log 2>&1 || { cat /tmp/apt-f.log >&2; fail "apt-get -f install"; }
dpkg-query -W -f='${Status}' duckrouter | grep -q "install ok installed" || fail "duckrouter is not installed: $(dpkg-query -W -f='${Status}' duckrouter)"
dpkg -L duckrouter > /tmp/files.txt

step "the binaries load no Swift library"
for binary in /usr/bin/duckrouter /usr/bin/duckctl; do
    ldd "$binary" > /tmp/ldd.txt || fail "ldd $binary"
    if grep -i -E 'swift|not found' /tmp/ldd.txt; then fail "$binary needs what is not here"; fi
done

step "--version"
[ "$(duckrouter --version)" = "$version" ] || fail "duckrouter --version: $(duckrouter --version)"
[ "$(duckctl --version)" = "$version" ] || fail "duckctl --version: $(duckctl --version)"

step "duckrouter check /usr/share/duckrouter/sessions/default.json"
duckrouter check /usr/share/duckrouter/sessions/default.json
for session in /usr/share/duckrouter/sessions/*.json; do
    case $session in */schema.json) continue ;; esac
    duckrouter check "$session" >/dev/null || fail "duckrouter check $session"
done

step "duckctl --help"
duckctl --help > /tmp/help.txt
grep -q "USAGE: duckctl" /tmp/help.txt || fail "duckctl --help: $(cat /tmp/help.txt)"
grep -q "^ExecStart=/usr/bin/duckrouter run --wait-for-server --create-from /usr/share/duckrouter/sessions/default.json" \
    /usr/lib/systemd/user/duckrouter.service || fail "the unit's ExecStart"

step "the router runs: jackd (installed for the test) with the dummy driver, duckctl status, the control page"
apt-get install -y -qq --no-install-recommends jackd2 >/tmp/apt-jackd.log 2>&1 || { cat /tmp/apt-jackd.log >&2; fail "installing jackd2"; }
export JACK_NO_AUDIO_RESERVATION=1
# A command, not a function: `as_rig x &` must make $! the program itself (a function would run
# in a subshell of its own, and a signal to $! would stop only that).
as_rig=(setpriv --reuid=rig --regid=rig --init-groups env HOME=/home/rig)
"${as_rig[@]}" jackd -n debtest -d dummy -r 48000 -p 256 >/tmp/jackd.log 2>&1 &
jackd_pid=$!
started+=("$jackd_pid")
home=/home/rig
# The default session with the test's ports, made by the router itself from a template, as the
# systemd unit does.
sed -e "s/^  \"client\": \"duckrouter\",/  \"client\": \"duckrouter\", \"osc\": {\"port\": $osc_port}, \"http\": {\"port\": $http_port},/" \
    /usr/share/duckrouter/sessions/default.json > /tmp/template.json
grep -q "\"port\": $osc_port" /tmp/template.json || fail "could not set the test's ports in the template"
chmod 644 /tmp/template.json
"${as_rig[@]}" duckrouter run --server debtest --wait-for-server --create-from /tmp/template.json \
    "$home/.config/duckrouter/session.json" >/tmp/router.log 2>&1 &
router_pid=$!
started+=("$router_pid")
answered=false
for _ in $(seq 100); do
    if "${as_rig[@]}" duckctl --port "$osc_port" --timeout 0.5 status >/tmp/status.txt 2>/tmp/status.err; then answered=true; break; fi
    kill -0 "$router_pid" 2>/dev/null || break
    sleep 0.2
done
$answered || { cat /tmp/router.log /tmp/status.err /tmp/jackd.log >&2; fail "the router did not answer duckctl status"; }
cat /tmp/status.txt >&2
grep -q "duckrouter on JACK server 'debtest': connected" /tmp/status.txt || fail "status header"
grep -q "^ │  \*  speaker" /tmp/status.txt || fail "status: the speaker route"
grep -q "^ │     music  playback  active" /tmp/status.txt || fail "status: music"
[ "$(stat -c %U "$home/.config/duckrouter/session.json" 2>/dev/null)" = rig ] || fail "the session file was not made from the template, as the user"
# The control page, from /usr/share/duckrouter/ui (bash's /dev/tcp: no curl in minbase).
exec 3<>"/dev/tcp/127.0.0.1/$http_port"
printf 'GET /ui/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
page=$(cat <&3)
exec 3<&-
grep -q "^HTTP/1.1 200" <<<"$page" || fail "GET /ui/: $(head -1 <<<"$page")"
grep -q "<html" <<<"$page" || fail "GET /ui/ is not the page"
kill -TERM "$router_pid"
router_status=0
wait "$router_pid" || router_status=$?
[ "$router_status" = 0 ] || { tail -20 /tmp/router.log >&2; fail "the router's exit status on SIGTERM: $router_status"; }
kill -TERM "$jackd_pid"; wait "$jackd_pid" || true
# The user's own files (made by the router, not by the package) are theirs to remove.
rm -rf "$home/.config"

step "dpkg -r duckrouter, then jackd2 and every dependency purged again"
dpkg -r duckrouter >/tmp/dpkg-r.log 2>&1 || { cat /tmp/dpkg-r.log >&2; fail "dpkg -r"; }
if dpkg-query -W -f='${Status}' duckrouter 2>/dev/null | grep -q -v "not-installed"; then
    fail "dpkg still knows duckrouter: $(dpkg-query -W -f='${Status}' duckrouter)"
fi
while read -r path; do
    if [ -f "$path" ] || [ -L "$path" ]; then fail "$path is still there after dpkg -r"; fi
done < /tmp/files.txt
apt-get purge -y -qq jackd2 >/dev/null 2>&1
apt-get autoremove --purge -y -qq >/dev/null 2>&1
snapshot > /tmp/after.txt
if ! diff /tmp/before.txt /tmp/after.txt >/tmp/left.txt; then
    cat /tmp/left.txt >&2
    fail "the root differs from before the install (< before, > after)"
fi
echo "deb-test: $(wc -l < /tmp/files.txt) paths installed, all removed; the root is as it was" >&2
