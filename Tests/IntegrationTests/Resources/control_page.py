#!/usr/bin/env python3
"""Drives the control page in a real browser (Debian's chromium, headless, through
chromium-driver and selenium) for the integration tests.

Usage: control_page.py URL. Reads one JSON array per line on stdin, prints one JSON object per
line for each:
  ["open", W, H]                 -> {"apps": [...], "routes": [...], "current": route, "seconds": s}
                                    loads URL at W x H and waits until the page is live
  ["size", W, H]                 -> {"done": true}
  ["fader", APP, VALUE]          -> {"done": true}        moves APP's fader to VALUE (input, change)
  ["click", CSS]                 -> {"done": true}
  ["text", CSS]                  -> {"text": "..."}       "" when there is no such element
  ["attr", CSS, NAME]            -> {"value": "..."}      null when there is none
  ["wait_text", CSS, TEXT, S]    -> {"found": bool, "seconds": s}  until the element's text contains
                                    TEXT (watched in the page with a MutationObserver), S seconds at most
  ["wait_attr", CSS, NAME, VALUE, S] -> {"found": bool, "seconds": s}
  ["screenshot", PATH]           -> {"saved": PATH}
  ["reload"]                     -> as "open", at the current size
  ["console"]                    -> {"errors": [...]}     severe messages in the browser's console
  ["quit"]                       -> {"quit": true}
"""
import json
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

url = sys.argv[1]
profile = tempfile.TemporaryDirectory(prefix="duckrouter-chromium-")
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--hide-scrollbars", f"--user-data-dir={profile.name}", "--force-device-scale-factor=1"):
    options.add_argument(argument)
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
driver.set_script_timeout(30)


def emit(obj):
    print(json.dumps(obj), flush=True)


WAIT = """
const [selector, test, seconds, done] = arguments;
const started = performance.now();
function ok() {
  const element = document.querySelector(selector);
  return element !== null && new Function("element", test)(element);
}
if (ok()) { done({found: true, seconds: 0}); return; }
const observer = new MutationObserver(() => {
  if (ok()) { observer.disconnect(); clearTimeout(timer); done({found: true, seconds: (performance.now() - started) / 1000}); }
});
observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
const timer = setTimeout(() => { observer.disconnect(); done({found: false, seconds}); }, seconds * 1000);
"""


def wait(selector, test, seconds):
    return driver.execute_async_script(WAIT, selector, test, seconds)


def opened():
    started = time.monotonic()
    live = wait("body", "return element.dataset.connected === 'yes' && document.querySelector('.strip') !== null", 10)
    return {
        "live": live["found"],
        "apps": driver.execute_script("return [...document.querySelectorAll('.strip')].map(e => e.dataset.app)"),
        "routes": driver.execute_script("return [...document.querySelectorAll('[data-route]')].map(e => e.dataset.route)"),
        "current": driver.execute_script("const b = document.querySelector('[data-route][aria-pressed=true]'); return b && b.dataset.route"),
        "seconds": time.monotonic() - started,
    }


try:
    for line in sys.stdin:
        request = json.loads(line)
        verb = request[0]
        if verb == "open":
            driver.set_window_size(request[1], request[2])
            driver.get(url)
            emit(opened())
        elif verb == "reload":
            driver.refresh()
            emit(opened())
        elif verb == "size":
            driver.set_window_size(request[1], request[2])
            emit({"done": True})
        elif verb == "fader":
            driver.execute_script("""
                const slider = document.querySelector(`.strip[data-app="${arguments[0]}"] input[type=range]`);
                slider.value = arguments[1];
                slider.dispatchEvent(new Event('input', {bubbles: true}));
                slider.dispatchEvent(new Event('change', {bubbles: true}));
            """, request[1], request[2])
            emit({"done": True})
        elif verb == "click":
            driver.find_element(By.CSS_SELECTOR, request[1]).click()
            emit({"done": True})
        elif verb == "text":
            emit({"text": driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.textContent : ''", request[1])})
        elif verb == "attr":
            emit({"value": driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null",
                                                 request[1], request[2])})
        elif verb == "wait_text":
            emit(wait(request[1], f"return element.textContent.includes({json.dumps(request[2])})", request[3]))
        elif verb == "wait_attr":
            emit(wait(request[1], f"return element.getAttribute({json.dumps(request[2])}) === {json.dumps(request[3])}", request[4]))
        elif verb == "screenshot":
            # The whole page, not only the window: grow the window to the page's height first.
            width = driver.get_window_size()["width"]
            height = driver.execute_script("return document.documentElement.scrollHeight")
            original = driver.get_window_size()["height"]
            driver.set_window_size(width, max(original, height))
            driver.save_screenshot(request[1])
            driver.set_window_size(width, original)
            emit({"saved": request[1]})
        elif verb == "console":
            emit({"errors": [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]})
        elif verb == "quit":
            emit({"quit": True})
            break
finally:
    driver.quit()
    profile.cleanup()
