# Sourced by scripts/bench.sh (BENCH_PARTS=loudness; its helpers and jackd are in place).
# Loudness metering (issue 19): the router with LOUDNESS_APPS (default 64) active stereo multiRoute
# apps fed by the feeder into LOUDNESS_ROUTES (default 8) stereo routes, with loudness.meter off
# and on, alternating $runs times, $scale_seconds each: the whole process's CPU per cycle, the
# metering thread's own (duckrouter.lufs), and the process callback's mean / p99 / max
# (scripts/proctime.c); after each run, the floor: libebur128 alone metering as many stereo
# streams in a C program (scripts/ebur128-floor.c). loudness.md and loudness-threads.txt.
loudness_apps=${LOUDNESS_APPS:-64}
loudness_routes=${LOUDNESS_ROUTES:-8}
echo "== Loudness metering: $loudness_apps stereo apps into $loudness_routes stereo routes, meter off and on, $runs runs of ${scale_seconds}s each"
build_proctime
gcc -O2 -Wall -o "$out/ebur128-floor" scripts/ebur128-floor.c -lebur128 -lm
for meter in false true; do
    python3 - "$loudness_apps" "$loudness_routes" "$meter" > "$out/loudness-session-$meter.json" <<'PY'
import json, sys
apps, routes, meter = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "true"
print(json.dumps({
    "loudness": {"meter": meter},
    # Every route to the same two playback ports: each is its own pair of router outputs, metered.
    "routes": [{"name": f"route{r}", "ports": ["system:playback_1", "system:playback_2"]} for r in range(1, routes + 1)],
    "apps": [{"name": f"app{a:03d}", "category": "multiRoute", "options": ["mixWithOthers"], "active": True,
              "connect": ["feeder:output1", "feeder:output2"]} for a in range(1, apps + 1)],
}))
PY
done
{
echo "| run | meter | CPU µs per cycle | duckrouter.lufs ms/s | callback mean / p99 / max µs | floor: libebur128 alone, ms/s |"
echo "|---|---|---|---|---|---|"
} > "$out/loudness.md"
: > "$out/loudness-threads.txt"
off_cpu=(); on_cpu=(); off_p99=(); on_p99=(); lufs=(); floors=()
for run in $(seq "$runs"); do
    for meter in false true; do
        rm -f "$out/proctime-loudness.txt"
        PROCTIME_OUT="$out/proctime-loudness.txt" LD_PRELOAD="$PWD/$out/proctime.so" \
            .build/release/duckrouter --server "$server" --log-level warning --http-port 0 --osc-port $(( 20000 + $$ % 20000 )) \
            "$out/loudness-session-$meter.json" 2>>"$out/duckrouter-loudness.log" &
        pid=$!
        pids+=("$pid")
        for _ in $(seq 100); do
            [ "$(jack_lsp -c "duckrouter:app$(printf %03d "$loudness_apps")_in_2" 2>/dev/null | grep -c feeder)" -ge 1 ] && break
            sleep 0.1
        done
        thread_ns "$pid" > "$out/loudness-threads-0"; t0=$(date +%s.%N)
        read -r _ l_mean l_p99 l_max l_cpu < <(timed_window "$out/proctime-loudness.txt" "$pid")
        thread_ns "$pid" > "$out/loudness-threads-1"
        threads=$(thread_rates "$out/loudness-threads-0" "$out/loudness-threads-1" "$(python3 -c "print($(date +%s.%N) - $t0)")")
        kill -INT "$pid"; wait "$pid" || true
        meter_ms=$(echo "$threads" | tr ',' '\n' | awk '/duckrouter.lufs/ { print $2 }')
        meter_ms=${meter_ms:-0}
        floor_ms="-"
        if [ "$meter" = true ]; then
            floor_ms=$("$out/ebur128-floor" $(( loudness_apps + loudness_routes )) "$scale_seconds" | sed -n 's/.*audio: \([0-9.]*\) ms of CPU.*/\1/p')
            floors+=("$floor_ms")
        fi
        echo "run $run, meter $meter: $l_cpu µs/cycle, callback $l_mean / $l_p99 / $l_max µs; threads: $threads; floor $floor_ms ms/s"
        echo "| $run | $meter | $l_cpu | $meter_ms | $l_mean / $l_p99 / $l_max | $floor_ms |" >> "$out/loudness.md"
        echo "$run | meter $meter | $threads" >> "$out/loudness-threads.txt"
        if [ "$meter" = true ]; then on_cpu+=("$l_cpu"); on_p99+=("$l_p99"); lufs+=("$meter_ms"); else off_cpu+=("$l_cpu"); off_p99+=("$l_p99"); fi
    done
done
python3 - "$period" "$rate" "${off_cpu[*]}" "${on_cpu[*]}" "${off_p99[*]}" "${on_p99[*]}" "${lufs[*]}" "${floors[*]}" <<'PY' | tee -a "$out/loudness.md"
import statistics, sys
period, rate = int(sys.argv[1]), int(sys.argv[2])
off, on, off_p99, on_p99, lufs, floors = ([float(x) for x in arg.split()] for arg in sys.argv[3:9])
cycle_us = period / rate * 1e6
extra = statistics.median(on) - statistics.median(off)
print(f"\nMedians: meter off {statistics.median(off):.1f} µs of CPU per {cycle_us:.0f} µs cycle, on {statistics.median(on):.1f}: "
      f"+{extra:.1f} µs per cycle = {extra / cycle_us * 100:.2f}% of one core; the metering thread alone "
      f"{statistics.median(lufs):.1f} ms/s = {statistics.median(lufs) / 10:.2f}% of one core; "
      f"callback p99 {statistics.median(off_p99):.1f} µs off, {statistics.median(on_p99):.1f} µs on.")
floor = statistics.median(floors)
print(f"The floor (libebur128 alone, as many streams, in C): {floor:.1f} ms/s = {floor / 10:.2f}% of one core; "
      f"the metering thread's own work above it {statistics.median(lufs) - floor:.1f} ms/s.")
PY
