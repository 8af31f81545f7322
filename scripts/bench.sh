#!/usr/bin/env bash
# make bench: the mix kernels against the C reference, and the whole router under jackd (dummy)
# against jack_mix_box with the same number of stereo channels fed by the same source.
# Results: bench-results/ (text and Markdown rows for docs/PERFORMANCE.md).
#   RUNS (default 3) runs of BENCH_SECONDS (default 10) per mixer; the median is reported.
# Then the OSC control path (oscbench): command latency over OSC_MESSAGES (default 1000) messages
# and OSC_FLOOD_SECONDS (default 5) of flood per offered rate.
#   BENCH_PARTS chooses what runs (default "kernel denormals volumes meters router scale process osc websocket loudness page pipewire").
# loudness: 64 stereo apps into 8 routes with loudness metering off and on (scripts/bench-loudness.sh).
# page: the control page with 16 metering apps in headless Chromium: its main thread's busy share in
# Chromium's performance trace, and the router's cost of one page (scripts/bench-page.sh).
# websocket: the router with 16 active apps, alone and with WS_CLIENTS (default 20) control-page
# clients on its WebSocket (scripts/ws-listener.py: every value LISTENed, meters at 20 Hz),
# alternating RUNS times: the router's whole CPU and its process callback's mean / p99 / max
# (scripts/proctime.c), and the frames the clients got; after each run, the floor: a C program
# (scripts/ws-floor.c) writing only as many frames of the meters' size to as many readers, what
# the kernel's loopback delivery costs any sender. websocket.md; and each thread's CPU in both
# windows by name (the HTTP server's event loop NIO-ELT-*, duckrouter.osc, the control queue's
# dispatch workers, JACK's thread under the process name): websocket-threads.txt.
# denormals: the Swift kernel on normal and subnormal signals with flush-to-zero/denormals-are-zero
# off and on, and the engine's whole cycle (duckbench --denormals; DENORMAL_RUNS, default 21).
# volumes: the engine's whole cycle with the volume stages idle (the floor), every app and route at a
# steady volume, and every one fading along each curve (duckbench --volumes; VOLUME_RUNS, default 9).
# meters: the engine's whole cycle with RMS meters off (the floor) and on, and the per-buffer sum of
# squares beside the peak scan (duckbench --meters; METER_RUNS, default 9).
# scale: the process callback's own time per cycle at SCALE_APPS (default "1 16 64 128 256") stereo
# apps, timed from outside by scripts/proctime.c (LD_PRELOAD) for duckrouter and jack_mix_box alike,
# beside the C reference and Swift kernels alone (duckbench --per-cycle); SCALE_SECONDS (default 10)
# each; SCALE_ROUTES (default 1) routes in the router's session. A table (scale.md), the data
# (scale.dat) and a plot (docs/process-time.png, gnuplot).
# process: the whole process (every thread's CPU) against a plain C client doing the same mix
# (scripts/mixclient.c), alternating, at 1 to 256 stereo apps, and idle (scripts/bench-process.sh).
# pipewire: the same measurement (and each process's CPU per cycle, as in router) under a private
# headless PipeWire instead of jackd (issue 16): its own XDG_RUNTIME_DIR, a null sink named
# "system" for the playback ports, the clock set to 48 kHz / 128 frames with pw-metadata
# (clock.force-rate, clock.force-quantum), every JACK program on PipeWire's libjack. Checks that the
# router ran on PipeWire at 128 frames (its "running" log line). pipewire.md and pipewire.dat.
# Everything the script starts (servers, clients, PipeWire's runtime directory) goes on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
window=${BENCH_SECONDS:-10}
# jack_mix_box takes one MIDI CC (0-127) per channel, so 128 is its maximum too.
apps=${BENCH_APPS:-128}
rate=48000
period=128
out=bench-results
mkdir -p "$out"
# One fixed name: JACK2 keeps a small table of server names in shared memory, and a server that
# dies uncleanly keeps its entry unless a later server takes the same name.
server="duckbench"
export JACK_DEFAULT_SERVER=$server
parts=" ${BENCH_PARTS:-kernel denormals volumes meters router scale process osc websocket loudness page pipewire} "
part() { [[ $parts == *" $1 "* ]]; }
pids=()

pw_runtime=""

# Stops process $1, a child: SIGTERM, SIGKILL after 5 s; waits for it.
stop_pid() {
    kill -TERM "$1" 2>/dev/null || return 0
    ( sleep 5; kill -KILL "$1" 2>/dev/null ) &
    local watchdog=$!
    wait "$1" 2>/dev/null || true
    kill "$watchdog" 2>/dev/null || true
}
# Stops everything the script started, clients before servers: the mixer being measured (a
# background job not in pids), then pids newest first (a client of PipeWire's libjack can hang
# in jack_client_close when its server goes at the same moment). Removes PipeWire's runtime
# directory.
cleanup() {
    local pid i
    for pid in $(jobs -p); do [[ " ${pids[*]} " == *" $pid "* ]] || stop_pid "$pid"; done
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
    pids=()
    if [ -n "$pw_runtime" ]; then rm -rf "$pw_runtime"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if part kernel; then
echo "== Mix kernels (duckbench): 128 stereo apps into 4 stereo routes, $period frames"
.build/release/duckbench --apps 128 --frames $period --runs 9 --cycles 20000 | tee "$out/kernel.txt"
.build/release/duckbench --apps 128 --frames $period --runs 9 --cycles 20000 --markdown > "$out/kernel.md"

echo "== Mix kernels: instructions per cycle under valgrind (repeatable, unlike the times above)"
# valgrind 3.19 cannot read the toolchain's debug info, so it runs a stripped copy. Each count is
# the difference between 1,100 and 100 cycles, which cancels start-up and set-up.
stripped="$out/duckbench.stripped"
strip -o "$stripped" .build/release/duckbench
instructions() {
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$stripped" \
        --only "$1" --scene "$2" --cycles "$3" 2>&1 | awk '/I +refs:/ { gsub(",", "", $NF); print $NF }'
}
{
    printf '%-10s  %14s  %14s  %6s\n' scene "C -O3 instr" "Swift SIMD" ratio
    for scene in steady ramping; do
        c=$(( ($(instructions c $scene 1100) - $(instructions c $scene 100)) / 1000 ))
        v=$(( ($(instructions vectorised $scene 1100) - $(instructions vectorised $scene 100)) / 1000 ))
        printf '%-10s  %14d  %14d  %6s\n' $scene $c $v "$(python3 -c "print(f'{$v / $c:.2f}')")"
    done
} | tee "$out/kernel-instructions.txt"
fi

if part denormals; then
echo "== Denormals (duckbench --denormals): 128 stereo apps into 4 stereo routes, $period frames"
.build/release/duckbench --denormals --apps 128 --frames $period --runs "${DENORMAL_RUNS:-21}" --cycles 5000 | tee "$out/denormals.txt"
.build/release/duckbench --denormals --apps 128 --frames $period --runs "${DENORMAL_RUNS:-21}" --cycles 5000 --markdown > "$out/denormals.md"
fi

if part volumes; then
echo "== Volume stages (duckbench --volumes): 128 stereo apps into 4 stereo routes, $period frames"
.build/release/duckbench --volumes --apps 128 --frames $period --runs "${VOLUME_RUNS:-9}" --cycles 5000 | tee "$out/volumes.txt"
.build/release/duckbench --volumes --apps 128 --frames $period --runs "${VOLUME_RUNS:-9}" --cycles 5000 --markdown > "$out/volumes.md"
fi

if part meters; then
echo "== RMS meters (duckbench --meters): 128 stereo apps into 4 stereo routes, $period frames"
.build/release/duckbench --meters --apps 128 --frames $period --runs "${METER_RUNS:-9}" --cycles 5000 | tee "$out/meters.txt"
.build/release/duckbench --meters --apps 128 --frames $period --runs "${METER_RUNS:-9}" --cycles 5000 --markdown > "$out/meters.md"
fi

# Which server the JACK programs below talk to: jackd, or PipeWire for the pipewire part.
jack_impl=jackd
pw_jack_library=$(ls -d /usr/lib/*/pipewire-0.3/jack 2>/dev/null | head -n 1 || true)   # /usr/lib/<multiarch>/…

start_jackd() {
    jackd -n "$server" -d dummy -r $rate -p $period > "$out/jackd.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && return 0; sleep 0.1; done
    return 1
}

# Starts a private headless PipeWire whose socket is $server, in a runtime directory of its own
# (never a desktop's PipeWire), with a null sink named "system" whose ports are system:playback_1
# and _2 as under jackd (the sessions and jack_simple_client need them; without a session manager
# PipeWire has no other sink), and the `default` metadata a session manager would add. From then
# on every JACK program of this script loads PipeWire's libjack and reaches that server.
start_pipewire() {
    pw_runtime=$(mktemp -d "${TMPDIR:-/tmp}/duckrouter-pwbench.XXXXXX")
    mkdir -p "$pw_runtime/config/pipewire/pipewire.conf.d"
    cat > "$pw_runtime/config/pipewire/pipewire.conf.d/duckrouter-bench.conf" <<'CONF'
context.objects = [
    { factory = metadata args = { metadata.name = default } }
    { factory = adapter
      args = { factory.name = support.null-audio-sink node.name = system node.description = system
               media.class = Audio/Sink audio.position = [ FL FR ] object.linger = true
               adapter.auto-port-config = { mode = dsp monitor = false control = false position = unknown } } }
]
CONF
    env -u LD_LIBRARY_PATH -u PIPEWIRE_QUANTUM -u PIPEWIRE_REMOTE XDG_RUNTIME_DIR="$pw_runtime" \
        XDG_CONFIG_HOME="$pw_runtime/config" DBUS_SESSION_BUS_ADDRESS=disabled: PIPEWIRE_CORE="$server" \
        setpriv --pdeathsig KILL -- pipewire > "$out/pipewire.log" 2>&1 &
    pids+=($!)
    export XDG_RUNTIME_DIR=$pw_runtime LD_LIBRARY_PATH=$pw_jack_library PIPEWIRE_REMOTE=$server JACK_DEFAULT_SERVER=$server
    unset PIPEWIRE_QUANTUM
    jack_impl=pipewire
    for _ in $(seq 100); do [ -S "$pw_runtime/$server" ] && break; sleep 0.1; done
    env -u LD_LIBRARY_PATH pw-metadata -r "$server" -n settings 0 clock.force-rate $rate > /dev/null &&
        set_period $period && [ "$(jack_samplerate 2>/dev/null)" = $rate ]
}

# Sets the server's period while it runs, as a user would, and waits until clients have it:
# jack_bufsize on jackd; on PipeWire the clock's force-quantum setting (its libjack does not pass
# jack_set_buffer_size on to the graph).
set_period() {
    if [ $jack_impl = pipewire ]; then
        env -u LD_LIBRARY_PATH pw-metadata -r "$server" -n settings 0 clock.force-quantum "$1" > /dev/null
    else
        jack_bufsize "$1" > /dev/null
    fi
    for _ in $(seq 50); do [ "$(jack_bufsize 2>/dev/null)" = "$1" ] && return 0; sleep 0.1; done
    echo "bench: the server's period did not become $1 frames" >&2
    return 1
}

# Starts jack_mix_box with $1 stereo channels, each fed by the feeder, MAIN to system:playback;
# any further arguments are environment settings for it (VAR=value). Sets mixbox_pid.
#
# jack_mix_box adds its channels after activating its client, and its process callback walks
# the channel list while it grows: at 128 frames it crashes (SIGSEGV) within a second, every
# time, with 8 channels or more. Starting it while the server runs 8192-frame periods (one
# cycle every 170 ms) leaves no cycle inside that window; the measured period is set after.
start_mixbox() {
    local channels=$1
    shift
    set_period 8192
    env "$@" jack_mix_box -n mixbox -s $(seq 0 $((channels - 1))) >> "$out/jack_mix_box.log" 2>&1 &
    mixbox_pid=$!
    for _ in $(seq 100); do
        [ "$(jack_lsp 2>/dev/null | grep -c '^mixbox:Channel')" -ge $((2 * channels)) ] && break
        sleep 0.1
    done
    set_period $period
    jack_connect "mixbox:MAIN L" system:playback_1 2>/dev/null || true
    jack_connect "mixbox:MAIN R" system:playback_2 2>/dev/null || true
    for k in $(seq 1 "$channels"); do
        jack_connect feeder:output1 "mixbox:Channel $k L" 2>/dev/null || true
        jack_connect feeder:output2 "mixbox:Channel $k R" 2>/dev/null || true
    done
}

# jack_simple_client plays a sine to system:playback_1/2 (it exits when there are no such ports).
start_feeder() {
    jack_simple_client feeder > /dev/null 2>&1 &
    pids+=($!)
    sleep 1
}

# Each thread of a process: "tid:name ns" (its CPU time so far), one a line.
thread_ns() { for t in /proc/"$1"/task/*; do echo "$(basename "$t"):$({ tr ' ' _ < "$t/comm"; } 2>/dev/null) $({ awk '{ print $1 }' "$t/schedstat"; } 2>/dev/null)"; done; }
# From two thread_ns snapshots ($1, $2) taken $3 seconds apart: ms of CPU a second by thread
# name (threads of one name added up), the busiest first, those over 0.1 ms/s. Threads that came
# or went between the two are left out. Over the whole of timed_window (its settling included),
# so not quite the window of the process's µs per cycle.
thread_rates() {
    LC_ALL=C join --nocheck-order <(LC_ALL=C sort "$1") <(LC_ALL=C sort "$2") | awk -v s="$3" '{ split($1, id, ":"); ms[id[2]] += ($3 - $2) / 1e6 / s }
        END { for (n in ms) if (ms[n] > 0.1) printf "%s %.1f\n", n, ms[n] }' | sort -k2 -nr | awk '{ printf "%s%s %s ms/s", (NR > 1 ? ", " : ""), $1, $2 }'
}
# CPU time of every thread of a process, in nanoseconds.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }

# Prints µs of CPU per cycle (every thread of process $1) over the next $2 seconds, counting
# rate / period cycles a second.
cpu_per_cycle() {
    local a t0 b t1
    a=$(cpu_ns "$1"); t0=$(date +%s.%N)
    sleep "$2"
    b=$(cpu_ns "$1"); t1=$(date +%s.%N)
    python3 -c "print(f'{($b - $a) / 1000 / (($t1 - $t0) * $rate / $period):.2f}')"
}

if part router || part scale || part process || part osc || part websocket || part loudness || part page; then
if ! start_jackd; then
    # "Too many servers already active": JACK's table holds entries of servers that died. The
    # benchmark never deletes JACK's shared memory itself (another program's server may own it).
    cat "$out/jackd.log" >&2
    if grep -q "Too many servers" "$out/jackd.log"; then
        echo "bench: JACK's server table is full; entries of servers that died stay until removed." >&2
        echo "bench: with no JACK program running, 'rm -rf /dev/shm/jack*' clears them." >&2
    fi
    exit 1
fi
echo "== jackd -d dummy -r $rate -p $period running as '$server'"
start_feeder
fi

if part router; then
echo "== Whole mixers under jackd -d dummy -r $rate -p $period: CPU per cycle, $runs runs of ${window}s"
python3 - "$apps" > "$out/bench-session.json" <<'PY'
import json, sys
apps = int(sys.argv[1])
print(json.dumps({
    "client": "duckrouter",
    "routes": [{"name": f"route{r}", "ports": ["system:playback_1", "system:playback_2"]} for r in range(1, 5)],
    "apps": [{"name": f"app{a:03d}", "category": "ambient", "connect": ["feeder:output1", "feeder:output2"]}
             for a in range(1, apps + 1)],
}, indent=1))
PY

# Prints µs of CPU per JACK cycle for process $1 over the window, after 2 s of settling.
measure() {
    sleep 2
    cpu_per_cycle "$1" "$window"
}

router_runs=()
mixbox_runs=()
for run in $(seq "$runs"); do
    .build/release/duckrouter --server "$server" --log-level warning --http-port 0 "$out/bench-session.json" 2>>"$out/duckrouter.log" &
    pid=$!
    for _ in $(seq 100); do
        [ "$(jack_lsp -c "duckrouter:app${apps}_in_2" 2>/dev/null | grep -c feeder)" -ge 1 ] && break
        sleep 0.1
    done
    router_runs+=("$(measure "$pid")")
    kill -INT "$pid"; wait "$pid" || true

    start_mixbox "$apps"
    pid=$mixbox_pid
    figure=$(measure "$pid")
    if kill -0 "$pid" 2>/dev/null; then
        mixbox_runs+=("$figure")
        kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    else
        wait "$pid" 2>/dev/null; status=$?
        echo "jack_mix_box exited with status $status before it could be measured (see $out/jack_mix_box.log)" >&2
        mixbox_runs+=("crashed")
    fi
    echo "run $run: duckrouter ${router_runs[-1]} µs/cycle, jack_mix_box ${mixbox_runs[-1]} µs/cycle"
done

python3 - "$out" "${router_runs[*]}" "${mixbox_runs[*]}" "$apps" <<'PY'
import statistics, sys
out, apps = sys.argv[1], sys.argv[4]
router = [float(x) for x in sys.argv[2].split()]
mixbox = [float(x) for x in sys.argv[3].split() if x != "crashed"]
r = statistics.median(router)
runs = ', '.join(f'{x:.2f}' for x in router)
if mixbox:
    m = statistics.median(mixbox)
    line = (f"| {apps} stereo apps, 128 frames, 48 kHz | {r:.2f} | {m:.2f} | {m / r:.1f}x less | "
            f"{runs} / {', '.join(f'{x:.2f}' for x in mixbox)} |")
    print(f"median: duckrouter {r:.2f} µs/cycle, jack_mix_box {m:.2f} µs/cycle: duckrouter uses {m / r:.1f}x less CPU per cycle")
else:
    line = f"| {apps} stereo apps, 128 frames, 48 kHz | {r:.2f} | crashed | not measured | {runs} / crashed |"
    print(f"median: duckrouter {r:.2f} µs/cycle; jack_mix_box crashed in every run, no comparison")
open(f"{out}/router.md", "w").write(line + "\n")
PY
fi

# The process callback's time per cycle at a number of stereo apps, for the scale and pipewire
# parts alike, on whichever server runs.
scale_seconds=${SCALE_SECONDS:-10}
scale_apps=${SCALE_APPS:-1 16 64 128 256}
# Routes of the router's session (each a stereo pair to system:playback; the first is current and
# carries the mix, the others are written silent); jack_mix_box always has one output.
scale_routes=${SCALE_ROUTES:-1}
router_log_level=warning
router_log="$out/duckrouter-scale.log"
proctime_built=false
build_proctime() {
    $proctime_built || gcc -O2 -shared -fPIC -o "$out/proctime.so" scripts/proctime.c -ldl -lpthread
    proctime_built=true
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' /proc/"$1"/status 2>/dev/null || echo "?"; }
mb() { case $1 in '' | *[!0-9]*) echo - ;; *) echo "$(($1 / 1024)) MB" ;; esac; }
# Starts the statistics after a warm-up, waits, and prints "cycles mean p99 max cpu", cpu being
# the CPU time of every thread of process $2 over the window in µs per cycle.
timed_window() {
    local file=$1 cpu
    sleep 2
    touch "$file.reset"
    cpu=$(cpu_per_cycle "$2" "$scale_seconds")
    sleep 1.5
    echo "$(cat "$file" 2>/dev/null || echo "0 ? ? ?") $cpu"
}
# Times duckrouter with $1 stereo apps fed by the feeder into one stereo route, then
# jack_mix_box with as many channels (up to its 128). Sets r_mean r_p99 r_max r_cpu r_rss for
# the router and m_mean m_p99 m_max m_cpu m_rss for jack_mix_box ("-" when not measured).
measure_callbacks() {
    local n=$1 pid
    build_proctime
    python3 - "$n" "$scale_routes" > "$out/scale-session.json" <<'PY'
import json, sys
n, routes = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({
    "client": "duckrouter",
    "routes": [{"name": "speaker" if r == 1 else f"route{r}", "ports": ["system:playback_1", "system:playback_2"]}
               for r in range(1, routes + 1)],
    "apps": [{"name": f"app{a:03d}", "category": "ambient", "active": True, "connect": ["feeder:output1", "feeder:output2"]}
             for a in range(1, n + 1)],
}))
PY
    rm -f "$out/proctime-router.txt"
    PROCTIME_OUT="$out/proctime-router.txt" LD_PRELOAD="$PWD/$out/proctime.so" \
        .build/release/duckrouter --server "$server" --log-level "$router_log_level" --http-port 0 --osc-port $(( 20000 + $$ % 20000 )) \
        "$out/scale-session.json" 2>>"$router_log" &
    pid=$!
    for _ in $(seq 100); do
        [ "$(jack_lsp -c "duckrouter:app$(printf %03d "$n")_in_2" 2>/dev/null | grep -c feeder)" -ge 1 ] && break
        sleep 0.1
    done
    read -r _ r_mean r_p99 r_max r_cpu < <(timed_window "$out/proctime-router.txt" "$pid")
    r_rss=$(rss_kb "$pid")
    kill -INT "$pid"; wait "$pid" || true

    m_mean="-"; m_p99="-"; m_max="-"; m_cpu="-"; m_rss="-"
    if [ "$n" -le 128 ]; then
        rm -f "$out/proctime-mixbox.txt"
        start_mixbox "$n" PROCTIME_OUT="$out/proctime-mixbox.txt" LD_PRELOAD="$PWD/$out/proctime.so"
        pid=$mixbox_pid
        read -r _ m_mean m_p99 m_max m_cpu < <(timed_window "$out/proctime-mixbox.txt" "$pid")
        m_rss=$(rss_kb "$pid")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
        else
            m_mean="crashed"; m_p99="-"; m_max="-"; m_cpu="-"; m_rss="-"
        fi
    fi
}

if part scale; then
echo "== Process callback time per cycle at $scale_apps stereo apps, $scale_routes route(s), $period frames (scripts/proctime.c)"
: > "$out/scale.dat"
{
echo "| stereo apps | duckrouter mean / p99 / max µs | RSS | jack_mix_box mean / p99 / max µs | RSS | C reference kernel mean / p99 / max µs | Swift kernel mean / p99 / max µs |"
echo "|---|---|---|---|---|---|---|"
} > "$out/scale.md"
for n in $scale_apps; do
    measure_callbacks "$n"
    read -r _ cmean cp99 cmax smean sp99 smax < <(.build/release/duckbench --per-cycle --apps "$n" --routes 1 --frames $period --cycles 20000)
    echo "$n stereo apps: duckrouter $r_mean / $r_p99 / $r_max µs (RSS $r_rss kB, process CPU $r_cpu µs/cycle), jack_mix_box $m_mean / $m_p99 / $m_max µs (RSS $m_rss kB, process CPU $m_cpu µs/cycle), C kernel $cmean / $cp99 / $cmax µs, Swift kernel $smean / $sp99 / $smax µs"
    echo "| $n | $r_mean / $r_p99 / $r_max | $(mb "$r_rss") | $m_mean / $m_p99 / $m_max | $(mb "$m_rss") | $cmean / $cp99 / $cmax | $smean / $sp99 / $smax |" >> "$out/scale.md"
    echo "$n $r_mean $r_p99 $r_max ${m_mean/-/NaN} ${m_p99/-/NaN} ${m_max/-/NaN} $cmean $cp99 $smean $sp99" >> "$out/scale.dat"
done
if command -v gnuplot > /dev/null; then
    gnuplot <<GP
set terminal pngcairo size 900,560 font ",10" noenhanced
set output "docs/process-time.png"
set title "Process callback time per cycle, $period frames at $rate Hz, stereo apps into one stereo route"
set xlabel "stereo apps"
set ylabel "µs per cycle"
set logscale xy
set key top left
set grid
set datafile missing "NaN"
set xrange [0.8:320]
plot "$out/scale.dat" using 1:2 with linespoints lw 2 title "duckrouter mean", \
     "" using 1:3 with linespoints dt 2 title "duckrouter p99", \
     "" using 1:5 with linespoints lw 2 title "jack_mix_box mean", \
     "" using 1:6 with linespoints dt 2 title "jack_mix_box p99", \
     "" using 1:8 with linespoints title "C reference kernel mean", \
     "" using 1:10 with linespoints title "Swift kernel mean"
GP
    echo "plot: docs/process-time.png"
fi
fi

if part osc; then
echo "== OSC control (oscbench): command latency and sustained messages per second"
# The measured app, music, plays oscbench_source's constant level to the speaker route, which is
# oscbench_probe; seven more apps make the plans the size of a small rig's.
python3 - > "$out/osc-session.json" <<'PY'
import json
apps = [{"name": "music", "category": "playback", "active": True, "connect": ["oscbench_source:out_[12]"]}]
apps += [{"name": f"app{n}", "category": "ambient", "active": True} for n in range(2, 9)]
print(json.dumps({"routes": [{"name": "speaker", "ports": ["oscbench_probe:in_1", "oscbench_probe:in_2"]}],
                  "apps": apps}, indent=1))
PY
oscport=$(( 20000 + $$ % 20000 ))
.build/release/duckrouter --server "$server" --log-level warning --http-port 0 --osc-port "$oscport" \
    "$out/osc-session.json" 2>>"$out/duckrouter-osc.log" &
pid=$!
pids+=("$pid")
.build/release/oscbench --server "$server" --port "$oscport" --messages "${OSC_MESSAGES:-1000}" \
    --flood-seconds "${OSC_FLOOD_SECONDS:-5}" --markdown "$out/osc.md" | tee "$out/osc.txt"
kill -INT "$pid"; wait "$pid" || true
fi

if part websocket; then
clients=${WS_CLIENTS:-20}
echo "== The WebSocket: the router alone and with $clients control-page clients (meters at 20 Hz, every value listened), $runs runs of ${scale_seconds}s each"
build_proctime
python3 - > "$out/ws-session.json" <<'PY'
import json
print(json.dumps({
    "routes": [{"name": "speaker", "ports": ["system:playback_1", "system:playback_2"]}],
    "apps": [{"name": f"app{a:02d}", "category": "ambient", "active": True, "connect": ["feeder:output1", "feeder:output2"]}
             for a in range(1, 17)],
}))
PY
httpport=$(( 30000 + $$ % 20000 ))
rm -f "$out/proctime-ws.txt"
PROCTIME_OUT="$out/proctime-ws.txt" LD_PRELOAD="$PWD/$out/proctime.so" \
    .build/release/duckrouter --server "$server" --log-level warning --http-port "$httpport" --osc-port $(( httpport + 1 )) \
    "$out/ws-session.json" 2>>"$out/duckrouter-ws.log" &
router=$!
pids+=("$router")
for _ in $(seq 100); do
    python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "http://127.0.0.1:$httpport/?HOST_INFO" 2>/dev/null && break
    sleep 0.1
done
alone=(); with=(); alone_p99=(); with_p99=(); received=(); floors=()
: > "$out/websocket-threads.txt"
gcc -O2 -Wall -o "$out/ws-floor" scripts/ws-floor.c
floorport=$(( httpport + 2 ))
{
echo "| run | alone: CPU µs per cycle | callback mean / p99 / max µs | with $clients clients: CPU µs per cycle | callback mean / p99 / max µs | frames per client per second | floor: CPU µs per cycle |"
echo "|---|---|---|---|---|---|---|"
} > "$out/websocket.md"
for run in $(seq "$runs"); do
    thread_ns "$router" > "$out/ws-threads-a0"; t0=$(date +%s.%N)
    read -r _ a_mean a_p99 a_max a_cpu < <(timed_window "$out/proctime-ws.txt" "$router")
    thread_ns "$router" > "$out/ws-threads-a1"; a_threads=$(thread_rates "$out/ws-threads-a0" "$out/ws-threads-a1" "$(python3 -c "print($(date +%s.%N) - $t0)")")
    listeners=()
    for k in $(seq "$clients"); do
        python3 scripts/ws-listener.py 127.0.0.1 "$httpport" "$out/ws-listener-$k.txt" &
        listeners+=("$!")
    done
    # The window starts once every client has its values and meters (its setup, some 30 ms of
    # the router's CPU per client, is not what is measured); the clients start slowly on a busy machine.
    for _ in $(seq 600); do
        [ "$(ls "$out"/ws-listener-*.txt.ready 2>/dev/null | wc -l)" -ge "$clients" ] && break
        sleep 0.1
    done
    if [ "$(ls "$out"/ws-listener-*.txt.ready 2>/dev/null | wc -l)" -lt "$clients" ]; then
        echo "bench: the WebSocket clients did not all get their values and meters within 60 s" >&2
        exit 1
    fi
    thread_ns "$router" > "$out/ws-threads-w0"; t0=$(date +%s.%N)
    read -r _ w_mean w_p99 w_max w_cpu < <(timed_window "$out/proctime-ws.txt" "$router")
    thread_ns "$router" > "$out/ws-threads-w1"; w_threads=$(thread_rates "$out/ws-threads-w0" "$out/ws-threads-w1" "$(python3 -c "print($(date +%s.%N) - $t0)")")
    for pid in "${listeners[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
    rate_per_client=$(cat "$out"/ws-listener-*.txt | awk '{ f += $1; s += $2 } END { if (s > 0) printf "%.1f", f / s; else print "?" }')
    frame_bytes=$(cat "$out"/ws-listener-*.txt | awk '$3 > m { m = $3 } END { print (m >= 126 ? m : 126) }')
    rm -f "$out"/ws-listener-*.txt "$out"/ws-listener-*.txt.ready
    # The floor: a C program that only writes as many frames of that size to as many readers.
    "$out/ws-floor" "$floorport" "$clients" "$frame_bytes" &
    floor=$!
    readers=()
    for k in $(seq "$clients"); do
        python3 -c '
import socket, sys, time
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        break
    except OSError:
        time.sleep(0.05)
while s.recv(65536):
    pass' "$floorport" &
        readers+=("$!")
    done
    sleep 3
    f_cpu=$(cpu_per_cycle "$floor" "$scale_seconds")
    kill "$floor" "${readers[@]}" 2>/dev/null; wait "$floor" "${readers[@]}" 2>/dev/null || true
    echo "run $run: alone $a_cpu µs/cycle (callback $a_mean / $a_p99 / $a_max µs), with $clients clients $w_cpu µs/cycle (callback $w_mean / $w_p99 / $w_max µs), $rate_per_client frames/s per client; the floor (ws-floor, $frame_bytes-byte frames) $f_cpu µs/cycle"
    echo "  threads alone: $a_threads"
    echo "  threads with $clients clients: $w_threads"
    echo "| $run | $a_cpu | $a_mean / $a_p99 / $a_max | $w_cpu | $w_mean / $w_p99 / $w_max | $rate_per_client | $f_cpu |" >> "$out/websocket.md"
    echo "$run | alone: $a_threads | with: $w_threads" >> "$out/websocket-threads.txt"
    alone+=("$a_cpu"); with+=("$w_cpu"); alone_p99+=("$a_p99"); with_p99+=("$w_p99"); received+=("$rate_per_client"); floors+=("$f_cpu")
done
kill -INT "$router"; wait "$router" || true
python3 - "$period" "$rate" "${alone[*]}" "${with[*]}" "${alone_p99[*]}" "${with_p99[*]}" "${floors[*]}" <<'PY' | tee -a "$out/websocket.md"
import statistics, sys
period, rate = int(sys.argv[1]), int(sys.argv[2])
alone, with_, ap, wp, floors = ([float(x) for x in arg.split()] for arg in sys.argv[3:8])
cycle_us = period / rate * 1e6
extra = statistics.median(with_) - statistics.median(alone)
print(f"\nMedians: alone {statistics.median(alone):.1f} µs of CPU per {cycle_us:.0f} µs cycle, with clients "
      f"{statistics.median(with_):.1f}: +{extra:.1f} µs per cycle = {extra / cycle_us * 100:.2f}% of one core; "
      f"callback p99 {statistics.median(ap):.1f} µs alone, {statistics.median(wp):.1f} µs with clients.")
floor = statistics.median(floors)
print(f"The floor (a C program writing only the same frames to as many readers): {floor:.1f} µs per cycle = "
      f"{floor / cycle_us * 100:.2f}% of one core; the router's own work above it {extra - floor:.1f} µs per cycle.")
PY
fi

if part process; then
# shellcheck source=scripts/bench-process.sh
source scripts/bench-process.sh
fi

if part loudness; then
# shellcheck source=scripts/bench-loudness.sh
source scripts/bench-loudness.sh
fi

if part page; then
# shellcheck source=scripts/bench-page.sh
source scripts/bench-page.sh
fi

if part pipewire; then
echo "== Process callback time per cycle under a private headless PipeWire, $period frames at $rate Hz (scripts/proctime.c)"
if [ ! -e "$pw_jack_library/libjack.so.0" ] || ! command -v pipewire > /dev/null; then
    echo "bench: pipewire and pipewire-jack are not installed (make deps)" >&2
    exit 1
fi
# jackd and the feeder of the parts before go first: only PipeWire runs while this part measures.
cleanup
server="duckbench-pw"
if ! start_pipewire; then
    cat "$out/pipewire.log" >&2
    echo "bench: PipeWire did not start with $period-frame periods at $rate Hz" >&2
    exit 1
fi
echo "== pipewire as '$server' in $pw_runtime: JACK clients get $(jack_bufsize) frames at $(jack_samplerate) Hz"
start_feeder
if ! kill -0 "${pids[-1]}" 2>/dev/null; then echo "bench: jack_simple_client did not start on PipeWire" >&2; exit 1; fi
# info, for the router's "running" line (which JACK, rate, period) and its xrun notices.
router_log_level=info
router_log="$out/duckrouter-pipewire.log"
: > "$router_log"
: > "$out/pipewire.dat"
{
echo "| stereo apps | duckrouter mean / p99 / max µs | CPU µs per cycle | RSS | jack_mix_box mean / p99 / max µs | CPU µs per cycle | RSS |"
echo "|---|---|---|---|---|---|---|"
} > "$out/pipewire.md"
for n in $scale_apps; do
    logged=$(wc -l < "$router_log")
    measure_callbacks "$n"
    running=$(tail -n +$((logged + 1)) "$router_log" | { grep 'jack=' || true; } | tail -1)
    if [[ $running != *jack=PipeWire* || $running != *period=$period* || $running != *rate=$rate* ]]; then
        echo "bench: the router did not run on PipeWire at $period frames, $rate Hz: ${running:-no running line} ($router_log)" >&2
        exit 1
    fi
    xruns=$(tail -n +$((logged + 1)) "$router_log" | { grep -o 'total=[0-9]*' || true; } | tail -1)
    xruns=${xruns:-total=0}
    echo "$n stereo apps on PipeWire: duckrouter $r_mean / $r_p99 / $r_max µs (process CPU $r_cpu µs/cycle, RSS $r_rss kB, xruns ${xruns#total=}), jack_mix_box $m_mean / $m_p99 / $m_max µs (process CPU $m_cpu µs/cycle, RSS $m_rss kB)"
    echo "| $n | $r_mean / $r_p99 / $r_max | $r_cpu | $(mb "$r_rss") | $m_mean / $m_p99 / $m_max | $m_cpu | $(mb "$m_rss") |" >> "$out/pipewire.md"
    echo "$n $r_mean $r_p99 $r_max $r_cpu ${m_mean/-/NaN} ${m_p99/-/NaN} ${m_max/-/NaN} ${m_cpu/-/NaN}" >> "$out/pipewire.dat"
done
fi
echo "Markdown rows for docs/PERFORMANCE.md: $out/*.md"
