# Sourced by scripts/bench.sh (BENCH_PARTS=process; its helpers, jackd and the feeder in place).
# The whole process against a plain C client (issue 21): duckrouter with N active ambient stereo
# apps fed by the feeder and four stereo routes, and scripts/mixclient.c doing the same mix (N
# stereo inputs with gain ramps into the current of four stereo outputs), each measured from
# outside by every thread's CPU (/proc/<pid>/task/*/schedstat) over PROCESS_SECONDS (6) after 2 s
# of settling, the two alternating PROCESS_RUNS (5) times at every size of PROCESS_SIZES
# ("1 16 64 128 256"). Then idle: the session loaded with PROCESS_IDLE_APPS (16) apps connected
# to nothing and no OSC, as % of one core, with and without a silent signal-activated mic. Memory at the smallest and largest size: resident,
# private (what the process alone holds) and shared memory mapped (JACK's segments among it),
# and what the router's private memory consists of (process-private.txt).
# process.md, process.dat (medians and spreads), process-threads.txt (the first run's CPU by
# thread) and docs/process-cpu.png (gnuplot).
process_sizes=${PROCESS_SIZES:-1 16 64 128 256}
process_runs=${PROCESS_RUNS:-5}
process_seconds=${PROCESS_SECONDS:-6}
process_idle_apps=${PROCESS_IDLE_APPS:-16}
echo "== The whole process against a plain C client: sizes $process_sizes, $process_runs runs each, ${process_seconds}s windows"
gcc -O2 -Wall -o "$out/mixclient" scripts/mixclient.c -ljack

process_session() {   # apps, connected (true/false), [signal: one more app, a signal-activated mic] → JSON on stdout
    python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
apps, connected, signal = int(sys.argv[1]), sys.argv[2] == "true", sys.argv[3] == "signal"
print(json.dumps({
    "client": "duckrouter",
    "routes": [{"name": f"route{r}", "ports": ["system:playback_1", "system:playback_2"]} for r in range(1, 5)],
    "apps": [dict({"name": f"app{a:03d}", "category": "ambient", "active": True},
                  **({"connect": ["feeder:output1", "feeder:output2"]} if connected else {}))
             for a in range(1, apps + 1)]
            + ([{"name": "mic", "category": "playAndRecord", "options": ["duckOthers"], "activation": "signal", "channels": 1}]
               if signal else []),
}))
PY
}

# Memory of process $1: "resident private shared" in kB (smaps_rollup).
process_memory() {
    awk '/^Rss:/ { rss = $2 } /^Private_(Clean|Dirty):/ { private += $2 } /^Shared_(Clean|Dirty):/ { shared += $2 }
         END { print rss, private, shared }' /proc/"$1"/smaps_rollup 2>/dev/null
}

# Starts one of the two on `apps` stereo inputs (the router: on process-session-<apps>.json,
# "idle" too); sets started_pid.
start_router_for() {
    .build/release/duckrouter --server "$server" --log-level warning --http-port 0 --osc-port $(( 20000 + $$ % 20000 )) \
        "$out/process-session-$1.json" 2>>"$out/duckrouter-process.log" &
    started_pid=$!
    pids+=("$started_pid")
}
start_mixclient_for() {   # "idle": PROCESS_IDLE_APPS inputs connected to nothing
    if [ "$1" = idle ]; then
        "$out/mixclient" mixclient "$process_idle_apps" 4 2>>"$out/mixclient.log" &
    else
        "$out/mixclient" mixclient "$1" 4 feeder:output1 feeder:output2 2>>"$out/mixclient.log" &
    fi
    started_pid=$!
    pids+=("$started_pid")
}
wait_port() {   # a port's full name: until it exists (15 s at most)
    for _ in $(seq 150); do jack_lsp 2>/dev/null | grep -qx "$1" && return 0; sleep 0.1; done
    return 1
}
wait_connected() {   # client name, apps
    local port
    port="$1:app$(printf %03d "$2")_in_2"
    for _ in $(seq 150); do
        [ "$(jack_lsp -c "$port" 2>/dev/null | grep -c feeder)" -ge 1 ] && return 0
        sleep 0.1
    done
    echo "bench: $port was never connected to the feeder" >&2
    return 1
}

echo "| stereo apps | duckrouter µs CPU per cycle: median (min-max) | mixclient (C): median (min-max) | ratio of medians |" > "$out/process.md"
echo "|---|---|---|---|" >> "$out/process.md"
: > "$out/process.dat"
: > "$out/process-memory.txt"
: > "$out/process-private.txt"
: > "$out/process-threads.txt"
for size in $process_sizes; do
    process_session "$size" true > "$out/process-session-$size.json"
    router_figures=(); client_figures=()
    for run in $(seq "$process_runs"); do
        for program in router mixclient; do
            if [ $program = router ]; then start_router_for "$size"; name=duckrouter; else start_mixclient_for "$size"; name=mixclient; fi
            wait_connected "$name" "$size" || { kill -INT "$started_pid"; wait "$started_pid"; exit 1; }
            sleep 2
            thread_ns "$started_pid" > "$out/process-threads-a"
            figure=$(cpu_per_cycle "$started_pid" "$process_seconds")
            thread_ns "$started_pid" > "$out/process-threads-b"
            if [ "$run" = 1 ]; then
                echo "$name $size $(process_memory "$started_pid")" >> "$out/process-memory.txt"
                if [ $program = router ]; then
                    { echo "duckrouter at $size apps:"; python3 scripts/private-memory.py "$started_pid" 10; } >> "$out/process-private.txt"
                fi
                echo "$name $size apps: $(thread_rates "$out/process-threads-a" "$out/process-threads-b" "$process_seconds")" >> "$out/process-threads.txt"
            fi
            kill -INT "$started_pid"; wait "$started_pid" || true
            if [ $program = router ]; then router_figures+=("$figure"); else client_figures+=("$figure"); fi
        done
    done
    python3 - "$size" "${router_figures[*]}" "${client_figures[*]}" "$out" <<'PY'
import statistics, sys
size, router, client, out = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()], sys.argv[4]
r, c = statistics.median(router), statistics.median(client)
with open(f"{out}/process.md", "a") as f:
    f.write(f"| {size} | {r:.1f} ({min(router):.1f}-{max(router):.1f}) | {c:.1f} ({min(client):.1f}-{max(client):.1f}) | {r / c:.2f}x |\n")
with open(f"{out}/process.dat", "a") as f:
    f.write(f"{size} {r:.2f} {min(router):.2f} {max(router):.2f} {c:.2f} {min(client):.2f} {max(client):.2f}\n")
print(f"   {size:>3} apps: duckrouter {r:.1f} µs per cycle (runs {', '.join(f'{x:.1f}' for x in router)}); "
      f"mixclient {c:.1f} (runs {', '.join(f'{x:.1f}' for x in client)}); {r / c:.2f}x")
PY
done

# Idle: the session loaded, its apps connected to nothing, no OSC; the same with a silent
# signal-activated mic besides (its level watch asleep); and, alternating with them, the C client
# with as many inputs connected to nothing: what any JACK client doing this costs here.
process_session "$process_idle_apps" false > "$out/process-session-idle.json"
process_session "$process_idle_apps" false signal > "$out/process-session-idle-signal.json"
# The router idle on process-session-$1.json once port $2 exists: its CPU per cycle into
# idle_figure; in the first run ($3 = 1), its CPU by thread to process-threads.txt as "$4".
measure_idle_router() {
    start_router_for "$1"
    wait_port "$2" || true
    sleep 2
    thread_ns "$started_pid" > "$out/process-threads-a"
    idle_figure=$(cpu_per_cycle "$started_pid" "$process_seconds")
    thread_ns "$started_pid" > "$out/process-threads-b"
    [ "$3" = 1 ] && echo "$4: $(thread_rates "$out/process-threads-a" "$out/process-threads-b" "$process_seconds")" >> "$out/process-threads.txt"
    kill -INT "$started_pid"; wait "$started_pid" || true
}
idle=()
idle_signal=()
idle_c=()
for run in $(seq "$process_runs"); do
    measure_idle_router idle duckrouter:route4_out_2 "$run" "duckrouter idle"
    idle+=("$idle_figure")
    measure_idle_router idle-signal duckrouter:mic_in_1 "$run" "duckrouter idle with a silent signal-activated mic"
    idle_signal+=("$idle_figure")
    start_mixclient_for idle
    wait_port mixclient:route4_out_2 || true
    sleep 2
    idle_c+=("$(cpu_per_cycle "$started_pid" "$process_seconds")")
    kill -INT "$started_pid"; wait "$started_pid" || true
done
python3 - "${idle[*]}" "${idle_c[*]}" "$rate" "$period" "$process_idle_apps" "$out" "${idle_signal[*]}" <<'PY'
import statistics, sys
runs, runs_c = [float(x) for x in sys.argv[1].split()], [float(x) for x in sys.argv[2].split()]
rate, period, apps, out = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
runs_s = [float(x) for x in sys.argv[7].split()]
cycle_us = 1e6 * period / rate
m, c, s = statistics.median(runs), statistics.median(runs_c), statistics.median(runs_s)
line = (f"Idle ({apps} apps loaded, none sounding, no OSC): {m:.1f} µs per cycle = {m / cycle_us * 100:.2f}% of one core "
        f"(runs {', '.join(f'{x:.1f}' for x in runs)}); the C client with {apps} stereo inputs connected to nothing: "
        f"{c:.1f} µs = {c / cycle_us * 100:.2f}% (runs {', '.join(f'{x:.1f}' for x in runs_c)}); {m / c:.2f}x. "
        f"With a silent signal-activated mic besides: {s:.1f} µs = {s / cycle_us * 100:.2f}% "
        f"(runs {', '.join(f'{x:.1f}' for x in runs_s)})")
print("   " + line)
with open(f"{out}/process.md", "a") as f:
    f.write("\n" + line + "\n")
PY
echo "   memory (kB: resident, private, shared mapped), first run of each size:"
sed 's/^/     /' "$out/process-memory.txt"
echo "   private memory of duckrouter by mapping (scripts/private-memory.py), first run of each size:"
sed 's/^/     /' "$out/process-private.txt"
echo "   CPU by thread (ms a second), first run of each size:"
sed 's/^/     /' "$out/process-threads.txt"

if command -v gnuplot > /dev/null; then
    gnuplot <<GP
set terminal pngcairo size 900,520 font "DejaVu Sans,10"
set output "docs/process-cpu.png"
set title "Whole process: CPU per JACK cycle (128 frames at 48 kHz), median of $process_runs runs, bars min-max"
set xlabel "stereo apps"
set ylabel "µs of CPU per cycle (every thread)"
set logscale x 2
set key top left
set grid
plot "$out/process.dat" using 1:2:3:4 with yerrorlines title "duckrouter" lw 2, \
     "$out/process.dat" using 1:5:6:7 with yerrorlines title "mixclient (plain C, scripts/mixclient.c)" lw 2
GP
fi
