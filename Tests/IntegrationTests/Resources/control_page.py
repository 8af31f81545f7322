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
  ["key", NAME]                  -> {"done": true}        presses a key on the page (NAME: "space")
  ["double_click", CSS]          -> {"done": true}        two clicks in a row, as a person's double click
  ["focused"]                    -> {"selector": "..."}   the focused element, as tag#id or [data-x=y]
  ["text", CSS]                  -> {"text": "..."}       "" when there is no such element
  ["attr", CSS, NAME]            -> {"value": "..."}      null when there is none
  ["wait_text", CSS, TEXT, S]    -> {"found": bool, "seconds": s}  until the element's text contains
                                    TEXT (watched in the page with a MutationObserver), S seconds at most
  ["wait_attr", CSS, NAME, VALUE, S] -> {"found": bool, "seconds": s}
  ["wait_value", CSS, VALUE, S]  -> {"found": bool, "seconds": s}  until an input's value is VALUE
  ["wait_meter", CSS, S]         -> {"found": bool, "seconds": s}  until a meter bar is over half wide
  ["screenshot", PATH]           -> {"saved": PATH}
  ["reload"]                     -> as "open", at the current size
  ["goto", URL]                  -> as "open", another URL at the current size
  ["location"]                   -> {"href": "..."}       the address bar as the page left it
  ["console"]                    -> {"errors": [...]}     severe messages in the browser's console
  ["quit"]                       -> {"quit": true}
"""
import json
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

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


# No eval in the page (its Content-Security-Policy forbids it, as it should): the condition is
# one of three fixed tests, chosen by name.
WAIT = """
const [selector, kind, name, expected, seconds, done] = arguments;
const started = performance.now();
function ok() {
  const element = document.querySelector(selector);
  if (element === null) return false;
  if (kind === "text") return element.textContent.includes(expected);
  if (kind === "attr") return element.getAttribute(name) === expected;
  if (kind === "value") return Math.abs(Number(element.value) - Number(expected)) < 1e-6;
  if (kind === "meter") return parseFloat(element.style.width || "0") > 50;
  return element.dataset.connected === "yes" && document.querySelector(".strip") !== null;
}
if (ok()) { done({found: true, seconds: 0}); return; }
// A slider's value is a property, not an attribute: no mutation tells of it, so also look every frame.
let frame = null;
function finish(found) {
  observer.disconnect(); clearTimeout(timer); cancelAnimationFrame(frame);
  done({found, seconds: found ? (performance.now() - started) / 1000 : seconds});
}
function check() { if (ok()) finish(true); else frame = requestAnimationFrame(check); }
const observer = new MutationObserver(() => { if (ok()) finish(true); });
observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
const timer = setTimeout(() => finish(false), seconds * 1000);
frame = requestAnimationFrame(check);
"""


def wait(selector, kind, name, expected, seconds):
    return driver.execute_async_script(WAIT, selector, kind, name, expected, seconds)


def opened():
    started = time.monotonic()
    live = wait("body", "live", None, None, 10)
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
        elif verb == "goto":
            driver.get(request[1])
            emit(opened())
        elif verb == "location":
            emit({"href": driver.current_url})
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
        elif verb == "key":
            # Pressed where the keyboard is: on the last control clicked, as a person would.
            ActionChains(driver).send_keys({"space": Keys.SPACE}[request[1]]).perform()
            emit({"done": True})
        elif verb == "double_click":
            ActionChains(driver).double_click(driver.find_element(By.CSS_SELECTOR, request[1])).perform()
            emit({"done": True})
        elif verb == "focused":
            emit({"selector": driver.execute_script("""
                const e = document.activeElement;
                if (!e || e === document.body) return "body";
                for (const [name, value] of Object.entries(e.dataset)) return `[data-${name}=${value}]`;
                return e.id ? `#${e.id}` : e.tagName.toLowerCase();
            """)})
        elif verb == "text":
            emit({"text": driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.textContent : ''", request[1])})
        elif verb == "attr":
            emit({"value": driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null",
                                                 request[1], request[2])})
        elif verb == "wait_text":
            emit(wait(request[1], "text", None, request[2], request[3]))
        elif verb == "wait_meter":
            emit(wait(request[1], "meter", None, None, request[2]))
        elif verb == "wait_value":
            emit(wait(request[1], "value", None, request[2], request[3]))
        elif verb == "wait_attr":
            emit(wait(request[1], "attr", request[2], request[3], request[4]))
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
