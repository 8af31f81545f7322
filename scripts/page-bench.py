#!/usr/bin/env python3
"""The control page's cost, measured (make bench, part "page"; scripts/bench-page.sh).

Usage: page-bench.py URL ROUTER_PID SECONDS APPS

Opens URL in headless Chromium (Debian's chromium through chromedriver, as the tests do) at
1280x800, waits until the page is live with APPS strips and their meters drawn, lets it settle,
then records Chromium's performance trace (the DevTools protocol's Tracing domain: categories
toplevel, devtools.timeline and disabled-by-default-devtools.timeline, as DevTools' Performance panel records) for SECONDS. From it:
the renderer main thread's busy time (the union of its top-level tasks,
ThreadControllerImpl::RunTask) as a share of the window, and the frames it committed a second.
Beside it, Chromium's own running total of the same thread's task time (Performance.getMetrics
TaskDuration) over the window, and the router's CPU (every thread of ROUTER_PID, from
/proc/<pid>/task/*/schedstat) over the SECONDS before the page opened and over the traced window.
Prints one JSON object.
"""
import json
import sys
import tempfile
import time
import urllib.request

import websocket
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

url, router, seconds, apps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])


def router_cpu():
    """CPU seconds of every thread of the router so far."""
    import glob
    total = 0
    for path in glob.glob(f"/proc/{router}/task/*/schedstat"):
        try:
            with open(path) as stat:
                total += int(stat.read().split()[0])
        except OSError:
            pass
    return total / 1e9


# The router alone: the window before the page opens.
cpu0, t0 = router_cpu(), time.monotonic()
time.sleep(seconds)
alone = (router_cpu() - cpu0) / (time.monotonic() - t0)

profile = tempfile.TemporaryDirectory(prefix="duckrouter-page-bench-")
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile.name}", "--force-device-scale-factor=1"):
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.set_window_size(1280, 800)
    driver.get(url)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        live = driver.execute_script(
            "return document.body.dataset.connected === 'yes' && document.querySelectorAll('.strip canvas.meter').length")
        if live and live >= apps:
            break
        time.sleep(0.1)
    else:
        sys.exit(f"page-bench: the page did not come live with {apps} strips within 30 s")
    time.sleep(3)

    address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
    browser = json.load(urllib.request.urlopen(f"http://{address}/json/version"))["webSocketDebuggerUrl"]
    devtools = websocket.create_connection(browser, timeout=120, suppress_origin=True)
    requests = iter(range(1, 1_000_000))

    def call(method, params=None):
        devtools.send(json.dumps({"id": next(requests), "method": method, "params": params or {}}))

    driver.execute_cdp_cmd("Performance.enable", {})
    metrics = lambda: {m["name"]: m["value"] for m in driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]}
    call("Tracing.start", {"traceConfig": {"includedCategories": ["toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline"],
                                           "recordMode": "recordContinuously"}, "transferMode": "ReportEvents"})
    time.sleep(0.5)
    m0, cpu0, t0 = metrics(), router_cpu(), time.monotonic()
    time.sleep(seconds)
    m1, cpu1, t1 = metrics(), router_cpu(), time.monotonic()
    call("Tracing.end")
    events = []
    while True:
        message = json.loads(devtools.recv())
        if message.get("method") == "Tracing.dataCollected":
            events += message["params"]["value"]
        elif message.get("method") == "Tracing.tracingComplete":
            break
    devtools.close()
finally:
    driver.quit()
    profile.cleanup()

# The renderer main thread with the most top-level task time is the page's.
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
best = None
for thread in (key for key, name in names.items() if name == "CrRendererMain"):
    tasks = sorted((e["ts"], e["ts"] + e.get("dur", 0)) for e in events
                   if (e["pid"], e["tid"]) == thread and e.get("ph") == "X" and e.get("name") == "ThreadControllerImpl::RunTask")
    stamps = [e["ts"] for e in events if (e["pid"], e["tid"]) == thread and e.get("ph") in ("X", "B", "E", "I", "i") and "ts" in e]
    if not tasks or not stamps:
        continue
    # The union of the tasks (nested ones counted once), within the traced span.
    busy, end = 0, None
    for start, stop in tasks:
        if end is None or start > end:
            busy += stop - start
            end = stop
        elif stop > end:
            busy += stop - end
            end = stop
    span = (max(stamps) - min(stamps)) / 1e6
    commits = sum(1 for e in events if (e["pid"], e["tid"]) == thread and e.get("name") == "Commit" and e.get("ph") == "X")
    if best is None or busy > best["busy"]:
        best = {"busy": busy, "span": span, "commits": commits, "tasks": len(tasks)}
if best is None:
    sys.exit("page-bench: no renderer main thread in the trace")
traced = max(best["span"], 1e-9)
print(json.dumps({
    "apps": apps,
    "seconds": round(t1 - t0, 2),
    "mainThreadBusyPercent": round(best["busy"] / 1e6 / traced * 100, 1),
    "taskDurationPercent": round((m1["TaskDuration"] - m0["TaskDuration"]) / (t1 - t0) * 100, 1),
    "framesPerSecond": round(best["commits"] / traced, 1),
    "layoutsPerSecond": round((m1["LayoutCount"] - m0["LayoutCount"]) / (t1 - t0), 2),
    "styleRecalcsPerSecond": round((m1["RecalcStyleCount"] - m0["RecalcStyleCount"]) / (t1 - t0), 2),
    "tasks": best["tasks"],
    "routerAloneCpuPercent": round(alone * 100, 2),
    "routerWithPageCpuPercent": round((cpu1 - cpu0) / (t1 - t0) * 100, 2),
}))
