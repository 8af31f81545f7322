# Sourced by scripts/bench.sh (BENCH_PARTS=page; its helpers and jackd are in place).
# The control page (issue 39): the router with PAGE_APPS (default 16) active stereo apps fed by the
# feeder, loudness metered, and the page open in headless Chromium at 1280x800 with every strip's
# meters moving. scripts/page-bench.py records Chromium's performance trace for PAGE_SECONDS
# (default 10) and gives the renderer main thread's busy share and frames a second; and the
# router's whole CPU over the same window and over as long before the page opened (the router's
# cost of one page is the difference). $runs runs, each with a fresh browser. page.md.
page_apps=${PAGE_APPS:-16}
page_seconds=${PAGE_SECONDS:-10}
echo "== The control page: $page_apps metering apps, $runs runs of ${page_seconds}s traced"
python3 - "$page_apps" > "$out/page-session.json" <<'PY'
import json, sys
print(json.dumps({
    "loudness": {"meter": True},
    "routes": [{"name": "speaker", "ports": ["system:playback_1", "system:playback_2"]}],
    "apps": [{"name": f"app{a:02d}", "category": "ambient", "active": True, "connect": ["feeder:output1", "feeder:output2"]}
             for a in range(1, int(sys.argv[1]) + 1)],
}))
PY
pageport=$(( 30000 + ($$ + 7) % 20000 ))
.build/release/duckrouter --server "$server" --log-level warning --http-port "$pageport" --osc-port $(( pageport + 1 )) \
    --state "$out/page-session.state.json" "$out/page-session.json" 2>>"$out/duckrouter-page.log" &
page_router=$!
pids+=("$page_router")
for _ in $(seq 100); do
    python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "http://127.0.0.1:$pageport/?HOST_INFO" 2>/dev/null && break
    sleep 0.1
done
{
echo "| run | main thread busy (trace) | TaskDuration | frames/s | layouts/s | style recalcs/s | router alone, % of a core | with the page | the page's cost |"
echo "|---|---|---|---|---|---|---|---|---|"
} > "$out/page.md"
: > "$out/page.jsonl"
for run in $(seq "$runs"); do
    python3 scripts/page-bench.py "http://127.0.0.1:$pageport/ui/" "$page_router" "$page_seconds" "$page_apps" | tee -a "$out/page.jsonl"
    python3 - "$run" "$(tail -n 1 "$out/page.jsonl")" >> "$out/page.md" <<'PY'
import json, sys
r = json.loads(sys.argv[2])
cost = r["routerWithPageCpuPercent"] - r["routerAloneCpuPercent"]
print(f"| {sys.argv[1]} | {r['mainThreadBusyPercent']}% | {r['taskDurationPercent']}% | {r['framesPerSecond']} | "
      f"{r['layoutsPerSecond']} | {r['styleRecalcsPerSecond']} | "
      f"{r['routerAloneCpuPercent']}% | {r['routerWithPageCpuPercent']}% | {cost:+.2f}% |")
PY
done
kill -INT "$page_router"; wait "$page_router" || true
python3 - "$out/page.jsonl" "$period" "$rate" <<'PY' | tee -a "$out/page.md"
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
period, rate = int(sys.argv[2]), int(sys.argv[3])
busy = statistics.median(r["mainThreadBusyPercent"] for r in runs)
cost = statistics.median(r["routerWithPageCpuPercent"] - r["routerAloneCpuPercent"] for r in runs)
cycle_us = period / rate * 1e6
print(f"\nMedians: the page's main thread {busy:.1f}% busy ({statistics.median(r['framesPerSecond'] for r in runs):.0f} frames/s); "
      f"the router's cost of the page {cost:.2f}% of one core ({cost / 100 * cycle_us:.1f} µs per {cycle_us:.0f} µs cycle).")
PY
