// duckrouter's control page (docs/HTTP.md, "The control page"). Plain JavaScript, no build step.
//
// What it shows comes from the router: the namespace (GET /) when the WebSocket opens, then the
// values it LISTENs to, pushed on every change, and the peak meters it asks for over OSC. What it
// changes goes as OSC messages in binary frames, as a control surface's over TCP. A control a
// person is moving shows the person's value until let go, then the router's again (and a
// switch or a field the router's within a second). After a lost connection it says so, greys out,
// reconnects, and reads everything again.
//
// Rights (docs/HTTP.md, "Who may do what"): the link `duckctl page` prints carries the page's key
// in its fragment (#key=…), which no browser sends to a server or puts in a Referer. The page
// keeps it for this tab (sessionStorage), takes it out of the address bar, and presents it
// when it opens its WebSocket (?key=…: a browser cannot set headers on a WebSocket). The router
// says what the page may do (/rights); without the key it has its address's rights only, and
// says so at the top.
"use strict";

// ---- OSC 1.0: strings, int32, float32; messages and bundles ----

function oscString(text) {
  const bytes = new TextEncoder().encode(text);
  const out = new Uint8Array((bytes.length + 4) & ~3);
  out.set(bytes);
  return out;
}

/** An OSC message: args are [type, value] pairs with type "s", "i" or "f". */
function oscMessage(path, args = []) {
  const parts = [oscString(path), oscString("," + args.map(([type]) => type).join(""))];
  for (const [type, value] of args) {
    if (type === "s") { parts.push(oscString(String(value))); continue; }
    const word = new DataView(new ArrayBuffer(4));
    if (type === "i") word.setInt32(0, value); else word.setFloat32(0, value);
    parts.push(new Uint8Array(word.buffer));
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

/** The messages of a packet (bundles opened), as {path, args}; [] for anything malformed. */
function oscDecode(view, start = 0, end = view.byteLength) {
  function readString(at) {
    let stop = at;
    while (stop < end && view.getUint8(stop) !== 0) stop++;
    if (stop >= end) throw new Error("unterminated string");
    const text = new TextDecoder().decode(new Uint8Array(view.buffer, view.byteOffset + at, stop - at));
    return [text, (stop + 4) & ~3];
  }
  try {
    const [head, afterHead] = readString(start);
    if (head === "#bundle") {
      const messages = [];
      let at = afterHead + 8;
      while (at + 4 <= end) {
        const size = view.getInt32(at);
        if (size <= 0 || at + 4 + size > end) break;
        messages.push(...oscDecode(view, at + 4, at + 4 + size));
        at += 4 + size;
      }
      return messages;
    }
    let [types, at] = readString(afterHead);
    if (!types.startsWith(",")) return [];
    const args = [];
    for (const type of types.slice(1)) {
      if (type === "s") { const [text, next] = readString(at); args.push(text); at = next; }
      else if (type === "i") { args.push(view.getInt32(at)); at += 4; }
      else if (type === "f") { args.push(view.getFloat32(at)); at += 4; }
      else if (type === "T") args.push(true);
      else if (type === "F") args.push(false);
      else return [];
    }
    return [{ path: head, args }];
  } catch (error) {
    return [];
  }
}

// ---- The key ----

const pageKey = (() => {
  const found = /(?:^#|&)key=([A-Za-z0-9_-]+)/.exec(location.hash);
  try {
    if (found) sessionStorage.setItem("duckrouter.key", found[1]);
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
    return sessionStorage.getItem("duckrouter.key") || (found && found[1]);
  } catch (error) {
    return found && found[1];
  }
})();

// ---- The connection ----

const values = {};          // path → the arguments the router last sent for it
let socket = null;
let tree = null;            // the namespace as last read
const holding = new Set();  // controls a person is moving: the router's values wait until they let go
let reloads = 0;            // the namespace read last asked for: an older answer is dropped
let reloadTimer = null;
const $ = (id) => document.getElementById(id);

function send(path, args = []) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(oscMessage(path, args));
}

function connect() {
  const key = pageKey ? `?key=${encodeURIComponent(pageKey)}` : "";
  socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/${key}`);
  socket.binaryType = "arraybuffer";
  socket.onopen = () => reload();
  socket.onmessage = (event) => {
    if (typeof event.data === "string") {
      const command = JSON.parse(event.data);
      // Apps that come together (a session reload) make one read, not one each.
      if (command.COMMAND === "PATH_ADDED" || command.COMMAND === "PATH_REMOVED") {
        clearTimeout(reloadTimer);
        reloadTimer = setTimeout(reload, 50);
      }
      else if (command.COMMAND === "ERROR") showError(`${command.DATA.path}: ${command.DATA.message}`);
      return;
    }
    for (const message of oscDecode(new DataView(event.data))) received(message);
  };
  socket.onclose = () => {
    setLink(false, "disconnected: reconnecting…");
    setTimeout(connect, 1000);
  };
}

function setLink(up, text) {
  const link = $("link");
  link.className = `link ${up ? "up" : "down"}`;
  link.textContent = text;
  document.body.dataset.connected = up ? "yes" : "no";
}

/** Reads the whole namespace again, rebuilds the page, and listens to every value in it: each
 *  LISTEN sends the value now, after the rebuild, so nothing the read missed stays on screen. */
async function reload() {
  const ws = socket;
  const generation = ++reloads;
  let root;
  try {
    const response = await fetch("/", { headers: { Accept: "application/json" }, cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    root = await response.json();
  } catch (error) {
    if (ws === socket && ws.readyState === WebSocket.OPEN) {
      setLink(false, "cannot read the router: trying again…");
      setTimeout(() => { if (ws === socket && generation === reloads) reload(); }, 1000);
    }
    return;
  }
  // A newer read was asked for, or this connection is gone: this answer is stale.
  if (generation !== reloads || ws !== socket || ws.readyState !== WebSocket.OPEN) return;
  tree = root;
  for (const key of Object.keys(values)) delete values[key];
  build();
  for (const path of readablePaths(tree)) ws.send(JSON.stringify({ COMMAND: "LISTEN", DATA: path }));
  send("/meters", [["f", 20]]);
  send("/rights");
  // The show comes with /state, and again when a scene or cue moves (show.js).
  send("/subscribe");
  send("/state");
  setLink(true, "live");
}

/** What the router says this page may do: every app (admin), or its address's rights only. */
function showRights([, level, because]) {
  const rights = $("rights");
  document.body.dataset.rights = level === "admin" ? "admin" : "address";
  if (level === "admin") {
    rights.hidden = true;
    return;
  }
  rights.textContent = (pageKey
    ? "This link's key is not the router's (it may have been changed): "
    : "Opened without the page's key: ")
    + "this page has its address's rights only, and apps other programs registered refuse its changes. "
    + "Open the link that duckctl page prints to control every app.";
  rights.hidden = false;
}

/** The values the page listens to; meters come as /meters bundles (one subscription for all). */
function readablePaths(node, out = []) {
  if (node.VALUE !== undefined && (node.ACCESS & 1) && !node.FULL_PATH.endsWith("/meter")) out.push(node.FULL_PATH);
  for (const child of Object.values(node.CONTENTS || {})) readablePaths(child, out);
  return out;
}

function childNames(path, skip) {
  let node = tree;
  for (const part of path.split("/").filter(Boolean)) node = node && node.CONTENTS && node.CONTENTS[part];
  return Object.keys((node && node.CONTENTS) || {}).filter((name) => name !== skip).sort();
}

// ---- Building the page from the namespace ----

function build() {
  holding.clear();
  const routes = $("route-list");
  routes.replaceChildren(...childNames("/route", "select").map((route) => {
    const button = document.createElement("button");
    button.dataset.route = route;
    button.setAttribute("aria-pressed", "false");
    button.append(route, Object.assign(document.createElement("span"), { className: "route-volume" }));
    button.onclick = () => send("/route/select", [["s", route]]);
    return button;
  }));
  const apps = $("app-list");
  apps.replaceChildren(...childNames("/app", "register").map(buildStrip));
  for (const path of readablePaths(tree)) {
    values[path] = valueOf(path);
    render(path);
  }
}

function valueOf(path) {
  let node = tree;
  for (const part of path.split("/").filter(Boolean)) node = node && node.CONTENTS && node.CONTENTS[part];
  return node && node.VALUE;
}

function buildStrip(app) {
  const strip = document.createElement("div");
  strip.className = "strip";
  strip.dataset.app = app;
  strip.innerHTML = `
    <div class="strip-head"><span class="strip-name"></span><span class="state"></span></div>
    <div class="category"></div>
    <div class="why"></div>
    <div class="meter" aria-hidden="true"><div></div></div>
    <div class="strip-controls">
      <input type="range" min="0" max="1" step="0.001" aria-label="volume">
      <button class="mute" aria-pressed="false">Mute</button>
      <button class="activate"></button>
    </div>`;
  strip.querySelector(".strip-name").textContent = app;
  const fader = strip.querySelector("input");
  fader.setAttribute("aria-label", `${app} volume`);
  fader.dataset.path = `/app/${app}/volume`;
  hold(fader, (value) => send(`/app/${app}/volume`, [["f", value]]));
  const mute = strip.querySelector(".mute");
  mute.setAttribute("aria-label", `mute ${app}`);
  mute.onclick = () => send(`/app/${app}/mute`, [["i", mute.getAttribute("aria-pressed") === "true" ? 0 : 1]]);
  strip.querySelector(".activate").onclick = () => {
    const state = (values[`/app/${app}/state`] || [""])[0];
    send(`/app/${app}/${state === "inactive" || state === "listening" ? "activate" : "deactivate"}`);
  };
  return strip;
}

/** A slider a person moves: sends while it moves (at most once a frame), ignores the router's
 *  value for it meanwhile, and shows the router's value again once let go. */
function hold(slider, sendValue) {
  let pending = null;
  // Let go: the router's values show again from its next push on (its answer to the last
  // position, normally), and in any case its own value a second later.
  const letGo = () => {
    if (holding.delete(slider.dataset.path)) settle(slider.dataset.path);
  };
  let moved = 0;
  slider.addEventListener("input", () => {
    holding.add(slider.dataset.path);
    moved = Number(slider.value);
    if (pending === null) {
      pending = requestAnimationFrame(() => { pending = null; sendValue(moved); });
    }
  });
  slider.addEventListener("change", () => {
    // The last position goes now; a send still waiting for its frame would follow it with an
    // older one (or, once the router's value is shown again, with that).
    if (pending !== null) { cancelAnimationFrame(pending); pending = null; }
    sendValue(Number(slider.value));
    letGo();
  });
  slider.addEventListener("pointercancel", letGo);
  slider.addEventListener("blur", letGo);
}

/** After a person's change, what the router says wins: if it refused or changed the value, the
 *  control shows the router's value once its answer has had time to come. */
function settle(path) {
  setTimeout(() => render(path), 1000);
}

// ---- Values from the router ----

function received(message) {
  if (message.path === "/duckrouter/meter") return meter(message.args);
  if (receivedShow(message)) return;
  if (message.path === "/error") {
    // Not permitted: the rights may have changed (the key was changed): ask again.
    if (message.args[1] === -5) send("/rights");
    return showError(`${message.args[0]}: ${message.args[2]}`);
  }
  if (message.path === "/reply" && message.args[0] === "/rights") return showRights(message.args);
  if (message.path.startsWith("/duckrouter/") || message.path === "/reply") return;
  values[message.path] = message.args;
  render(message.path);
}

function meter([kind, name, ...peaks]) {
  if (kind !== "app") return;
  const bar = document.querySelector(`.strip[data-app="${CSS.escape(name)}"] .meter > div`);
  if (!bar) return;
  const peak = Math.max(...peaks);
  bar.style.width = `${Math.max(0, Math.min(100, (peak + 60) / 60 * 100))}%`;
}

function render(path) {
  const value = values[path] || [];
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "app" && parts.length === 3) return renderApp(parts[1], parts[2], value);
  if (parts[0] === "route" && parts.length === 3) return renderRoute(parts[1], parts[2], value);
  switch (path) {
    case "/route/select":
      for (const button of document.querySelectorAll("[data-route]")) {
        button.setAttribute("aria-pressed", String(button.dataset.route === value[0]));
      }
      return;
    case "/system/volume":
      return setSlider($("system-volume"), value[0], $("system-volume-label"));
    case "/system/silent":
      $("silent").checked = value[0] === 1;
      return;
    case "/system/interruption/sources": {
      const sources = (value[0] || "").split(",").filter(Boolean);
      $("outside").checked = sources.includes("page");
      $("outside-sources").textContent = sources.length ? `(${sources.join(", ")})` : "";
      return;
    }
    case "/duck/level": case "/duck/attack": case "/duck/release": {
      const input = $(`duck-${parts[1]}`);
      if (value[0] !== undefined && (document.activeElement !== input || input.value === "")) input.value = Math.round(value[0] * 10) / 10;
      return;
    }
    case "/remote/nowPlaying":
      return renderNowPlaying();
  }
}

function renderApp(app, leaf, value) {
  const strip = document.querySelector(`.strip[data-app="${CSS.escape(app)}"]`);
  if (!strip) return;
  switch (leaf) {
    case "state": {
      const state = value[0] || "";
      strip.dataset.state = state;
      strip.querySelector(".state").textContent = state;
      strip.querySelector(".activate").textContent = state === "inactive" || state === "listening" ? "Activate" : "Deactivate";
      return;
    }
    case "why":
      strip.querySelector(".why").textContent = value[0] || "";
      return;
    case "category":
      strip.querySelector(".category").textContent =
        [value[0], (value[1] || "").split(",").join(", "), value[2] !== "default" ? value[2] : ""].filter(Boolean).join(" · ");
      return;
    case "volume":
      return setSlider(strip.querySelector("input"), value[0]);
    case "mute":
      strip.querySelector(".mute").setAttribute("aria-pressed", String(value[0] === 1));
      return;
    case "remote":
      return renderNowPlaying();
  }
}

function renderRoute(route, leaf, value) {
  const button = document.querySelector(`[data-route="${CSS.escape(route)}"]`);
  if (!button) return;
  if (leaf === "available") button.disabled = value[0] !== 1;
  if (leaf === "volume") button.querySelector(".route-volume").textContent = percent(value[0]);
}

function renderNowPlaying() {
  const app = (values["/remote/nowPlaying"] || [""])[0];
  $("now-playing-app").textContent = app || "—";
  const commands = app ? ((values[`/app/${app}/remote`] || [""])[0] || "").split(",").filter(Boolean) : [];
  $("remote-buttons").replaceChildren(...commands.map((command) => {
    const button = document.createElement("button");
    button.textContent = command;
    button.dataset.remote = command;
    button.onclick = () => send(`/remote/${command}`);
    return button;
  }));
}

function setSlider(slider, value, label) {
  if (value === undefined) return;
  if (!holding.has(slider.dataset.path)) slider.value = value;
  if (label) label.textContent = percent(value);
}

function percent(value) {
  return value === undefined ? "" : `${Math.round(value * 100)}%`;
}

let errorTimer = null;
function showError(text) {
  const error = $("error");
  error.textContent = text;
  error.hidden = false;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(() => { error.hidden = true; }, 5000);
}

// ---- The page's own controls ----

$("system-volume").dataset.path = "/system/volume";
hold($("system-volume"), (value) => send("/system/volume", [["f", value]]));
$("silent").onchange = (event) => {
  send("/system/silent", [["i", event.target.checked ? 1 : 0]]);
  settle("/system/silent");
};
$("outside").onchange = (event) => {
  if (event.target.checked) send("/system/interruption/begin", [["s", "page"]]);
  else send("/system/interruption/end", [["s", "page"], ["i", 1]]);
  settle("/system/interruption/sources");
};
for (const leaf of ["level", "attack", "release"]) {
  $(`duck-${leaf}`).onchange = (event) => {
    const value = Number(event.target.value);
    // An emptied field is not 0 dB (which would stop ducking in the middle of a show).
    if (event.target.value.trim() !== "" && Number.isFinite(value)) send(`/duck/${leaf}`, [["f", value]]);
    settle(`/duck/${leaf}`);
  };
  $(`duck-${leaf}`).onblur = () => render(`/duck/${leaf}`);
}

setLink(false, "connecting…");
connect();
