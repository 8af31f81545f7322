#!/usr/bin/env python3
"""Drives the control page in a real browser (Debian's chromium, headless, through
chromium-driver and selenium) for the integration tests.

Usage: control_page.py URL. Reads one JSON array per line on stdin, prints one JSON object per
line for each:
  ["open", W, H]                 -> {"apps": [...], "routes": [...], "current": route, "seconds": s}
                                    loads URL at W x H and waits until the page is live
  ["size", W, H]                 -> {"done": true}
  ["fader", APP, VALUE]          -> {"done": true}        sets APP's fader to position VALUE by typing its
                                    level in dB into the strip's level field (exact; 0 is -inf);
                                    {"done": false} when the field takes no typing (locked)
  ["drag_mark", APP, MARK]       -> {"done": true, "pixels": dy}  drags APP's fader cap with the mouse
                                    to the scale mark MARK ("20" for -20 dB), as a person would
  ["drag_by", CSS, DX, DY]       -> {"done": true}        presses on an element and drags it by DX, DY
  ["keys", [NAME, ...]]          -> {"done": true}        keys pressed where the keyboard is (tab,
                                    shift+tab, up, down, pageup, pagedown, home, end, enter, space, escape)
  ["type", CSS, TEXT]            -> {"done": true}        clicks a field, selects what is in it and types TEXT
  ["tab_to", CSS, MAX]           -> {"found": bool, "presses": n}  Tab until the focus is on CSS
  ["axe"]                        -> {"violations": [...]} axe-core's WCAG 2.1 A/AA violations (id,
                                    impact, help, targets)
  ["click", CSS]                 -> {"done": bool}        false when there is no such element
  ["key", NAME]                  -> {"done": true}        presses a key on the page (NAME: "space")
  ["double_click", CSS]          -> {"done": true}        two clicks in a row, as a person's double click
  ["focused"]                    -> {"selector": "..."}   the focused element, as tag#id or [data-x=y]
  ["text", CSS]                  -> {"text": "..."}       "" when there is no such element
  ["texts", CSS]                 -> {"texts": [...]}      every matching element's text, in page order
  ["attr", CSS, NAME]            -> {"value": "..."}      null when there is none
  ["wait_text", CSS, TEXT, S]    -> {"found": bool, "seconds": s}  until the element's text contains
                                    TEXT (watched in the page with a MutationObserver), S seconds at most
  ["wait_attr", CSS, NAME, VALUE, S] -> {"found": bool, "seconds": s}
  ["wait_value", CSS, VALUE, S]  -> {"found": bool, "seconds": s}  until an input's value is VALUE
  ["wait_meter", CSS, S]         -> {"found": bool, "seconds": s}  until a meter canvas shows a level
                                    over half its height (lit pixels, read back from the canvas)
  ["wait_slider", CSS, VALUE, S] -> {"found": bool, "seconds": s}  until a slider's position
                                    (aria-valuenow, percent) is VALUE (0..1) within 0.001
  ["screenshot", PATH]           -> {"saved": PATH}
  ["reload"]                     -> as "open", at the current size
  ["goto", URL]                  -> as "open", another URL at the current size
  ["location"]                   -> {"href": "..."}       the address bar as the page left it
  ["console"]                    -> {"errors": [...]}     severe messages in the browser's console
  ["quit"]                       -> {"quit": true}
"""
import json
import math
import sys
import tempfile
import time

import importlib.util
import os

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

KEYS = {"tab": Keys.TAB, "up": Keys.ARROW_UP, "down": Keys.ARROW_DOWN, "left": Keys.ARROW_LEFT, "right": Keys.ARROW_RIGHT,
        "pageup": Keys.PAGE_UP, "pagedown": Keys.PAGE_DOWN, "home": Keys.HOME, "end": Keys.END, "enter": Keys.ENTER,
        "space": Keys.SPACE, "escape": Keys.ESCAPE}

url = sys.argv[1]
# axe-core, as the two packages carry it (scripts/install-python-deps.sh).
AXE_SELENIUM = os.path.join(importlib.util.find_spec("axe_selenium_python").submodule_search_locations[0], "node_modules", "axe-core", "axe.min.js")
AXE_CURRENT = os.path.join(importlib.util.find_spec("axe_playwright_python").submodule_search_locations[0], "axe.min.js")
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
  if (kind === "slider") return Math.abs(Number(element.getAttribute("aria-valuenow")) / 100 - Number(expected)) < 0.00101;
  if (kind === "meter") {
    // A level over half the scale: a lit pixel (not the meter's dark well) in the top half.
    const g = element.getContext("2d");
    // A strip's canvas has its gain-reduction lane, painted from the top, on its right: left out.
    const lanes = element.closest(".strip") ? Math.floor(element.width * 0.7) : element.width;
    const half = g.getImageData(0, 0, lanes, Math.floor(element.height / 2)).data;
    for (let i = 0; i < half.length; i += 4) if (half[i] + half[i + 1] + half[i + 2] > 240) return true;
    return false;
  }
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
            value = float(request[2])
            text = "-inf" if value <= 0 else repr(60 * math.log10(value))
            field = driver.find_element(By.CSS_SELECTOR, f'.strip[data-app="{request[1]}"] .level')
            if not field.is_enabled():
                emit({"done": False})   # a locked page: no typing
                continue
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", field)
            field.click()
            field.send_keys(Keys.CONTROL, "a")
            field.send_keys(text, Keys.ENTER)
            driver.execute_script("arguments[0].blur()", field)
            emit({"done": True})
        elif verb == "drag_mark":
            strip = f'.strip[data-app="{request[1]}"]'
            cap = driver.find_element(By.CSS_SELECTOR, f"{strip} .fader .cap")
            ticks = driver.find_elements(By.CSS_SELECTOR, f"{strip} .scale span")
            tick = next(t for t in ticks if t.text.strip() == request[2])
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cap)
            cap_box = driver.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.top + r.height / 2, r.left + r.width / 2]", cap)
            tick_y = driver.execute_script("const r = arguments[0].getBoundingClientRect(); return r.top + r.height / 2", tick)
            dy = round(tick_y - cap_box[0])
            # In steps, as a hand moves, each past the fader's 2-pixel start.
            chain = ActionChains(driver, duration=20).move_to_element(cap).click_and_hold()
            steps = 8
            done = 0
            for step in range(1, steps + 1):
                to = round(dy * step / steps)
                chain.move_by_offset(0, to - done)
                done = to
            chain.release().perform()
            emit({"done": True, "pixels": dy})
        elif verb == "type":
            field = driver.find_element(By.CSS_SELECTOR, request[1])
            field.click()
            field.send_keys(Keys.CONTROL, "a")
            field.send_keys(request[2])
            emit({"done": True})
        elif verb == "drag_by":
            element = driver.find_element(By.CSS_SELECTOR, request[1])
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
            ActionChains(driver, duration=20).move_to_element(element).click_and_hold() \
                .move_by_offset(request[2] // 2, request[3] // 2).move_by_offset(request[2] - request[2] // 2, request[3] - request[3] // 2) \
                .release().perform()
            emit({"done": True})
        elif verb == "keys":
            chain = ActionChains(driver)
            for name in request[1]:
                if name == "shift+tab":
                    chain.key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT)
                else:
                    chain.send_keys(KEYS[name])
            chain.perform()
            emit({"done": True})
        elif verb == "tab_to":
            found = False
            presses = 0
            while presses < request[2] and not found:
                ActionChains(driver).send_keys(Keys.TAB).perform()
                presses += 1
                found = driver.execute_script("return document.activeElement !== null && document.activeElement.matches(arguments[0])", request[1])
            emit({"found": found, "presses": presses})
        elif verb == "axe":
            # Both axe-cores: the one axe-selenium-python carries (3.1, which has no wcag21a tag)
            # and the current one axe-playwright-python carries. The page is loaded again between
            # them, so the second starts clean.
            found = []
            versions = []
            for script, tags in ((AXE_SELENIUM, ["wcag2a", "wcag2aa", "wcag21aa"]),
                                 (AXE_CURRENT, ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])):
                driver.refresh()
                opened()
                with open(script, encoding="utf8") as source:
                    driver.execute_script(source.read())
                results = driver.execute_async_script("""
                    const [tags, done] = arguments;
                    axe.run(document, {runOnly: {type: "tag", values: tags}})
                        .then((results) => done({version: axe.version, violations: results.violations}),
                              (error) => done({version: axe.version, error: String(error), violations: []}));
                """, tags)
                versions.append(results["version"])
                if "error" in results:
                    found.append({"id": "axe-error", "help": results["error"], "version": results["version"]})
                found += [{"id": v["id"], "impact": v.get("impact"), "help": v["help"], "version": results["version"],
                           "targets": [node["target"] for node in v["nodes"]][:5],
                           "summary": [node.get("failureSummary", "") for node in v["nodes"]][:2]}
                          for v in results["violations"]]
            emit({"violations": found, "versions": versions})
        elif verb == "click":
            found = driver.find_elements(By.CSS_SELECTOR, request[1])
            if found:
                # In the middle of the window: not under the sticky header.
                driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", found[0])
                found[0].click()
            emit({"done": bool(found)})
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
        elif verb == "texts":
            emit({"texts": driver.execute_script("return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)", request[1])})
        elif verb == "attr":
            emit({"value": driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null",
                                                 request[1], request[2])})
        elif verb == "wait_text":
            emit(wait(request[1], "text", None, request[2], request[3]))
        elif verb == "wait_meter":
            emit(wait(request[1], "meter", None, None, request[2]))
        elif verb == "wait_slider":
            emit(wait(request[1], "slider", None, request[2], request[3]))
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
