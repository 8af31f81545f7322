"use strict";
// duckrouter's control page (docs/HTTP.md, "The control page"). Plain JavaScript, no build step:
// osc.js (the wire), fader.js, meters.js, strips.js, timeline.js, show.js, and this file, which
// holds the connection, the routes, Now Playing, the system controls and the show lock.
//
// What it shows comes from the router: the namespace (GET /) when the WebSocket opens, then the
// values it LISTENs to, pushed on every change; /state for what the namespace does not carry (who
// holds each app back, loudness ducks, route latency, the show); notifications (it subscribes);
// the meter streams. What it changes goes as OSC messages in binary frames, as a control
// surface's over TCP. A control a person is moving shows the person's value until let go, then
// the router's again. When the connection goes, everything greys out and says since when; on
// reconnecting it reads everything again before it shows values as live.
//
// Rights (docs/HTTP.md, "Who may do what"): the link `duckctl page` prints carries the page's key
// in its fragment (#key=…), which no browser sends to a server or puts in a Referer. The page
// keeps it for this tab (sessionStorage), takes it out of the address bar, and presents it
// when it opens its WebSocket (?key=…: a browser cannot set headers on a WebSocket). The router
// says what the page may do (/rights); without the key it has its address's rights only, and
// says so at the top.

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
let reloads = 0;            // the namespace read last asked for: an older answer is dropped
let reloadTimer = null;
let live = false;           // the values shown are the router's, now
let lostAt = null;          // when the connection went (null: it has not)
let lastHeard = 0;          // performance.now() of the last message
let state = null;           // /state's settings, as last read
let stateTimer = null;
let waitingForState = false; // a new connection: live once /state has come
let loudnessShown = false;   // loudness meters come (asked for again with each connection)
let loudnessRetry = null;    // a refused /meters/loudness is asked again while none come

/** The paths the page sends that change nothing: they go even while the page is locked. */
const READS = new Set(["/state", "/timeline", "/rights", "/ping", "/subscribe", "/meters", "/meters/levels", "/meters/loudness"]);

function send(path, args = []) {
  if (locked && !READS.has(path)) return refusedByLock();
  // Not live (reconnecting, or reading everything again): what is shown may be old, and a change
  // made from it (a key stepping a fader from a stale level) is not sent.
  if (!live && !READS.has(path)) return;
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(oscMessage(path, args));
}

function connect() {
  const key = pageKey ? `?key=${encodeURIComponent(pageKey)}` : "";
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/${key}`);
  socket = ws;
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { lastHeard = performance.now(); reload(); };
  ws.onmessage = (event) => {
    if (ws !== socket) return;
    lastHeard = performance.now();
    if (typeof event.data === "string") {
      const command = JSON.parse(event.data);
      if (command.COMMAND === "PATH_ADDED" || command.COMMAND === "PATH_REMOVED") rebuildSoon();
      else if (command.COMMAND === "ERROR") showError(`${command.DATA.path}: ${command.DATA.message}`);
      return;
    }
    for (const message of oscDecode(new DataView(event.data))) received(message);
  };
  ws.onclose = () => {
    if (ws !== socket) return;
    lost();
    setTimeout(connect, 1000);
  };
}

/** Apps that come together (a session reload) make one read, not one each; a read waits while a
 *  person holds a fader (a rebuild would take it from under their finger). */
function rebuildSoon() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(() => {
    if ([...strips.values()].some((strip) => strip.fader.held) || systemFader.held) return rebuildSoon();
    reload();
  }, 50);
}

/** The connection is gone (closed, or silent for 3 s): nothing shown is live from now on. */
function lost() {
  live = false;
  waitingForState = false;
  clearTimeout(stateTimer);
  stateDue = Infinity;
  if (lostAt === null) lostAt = new Date();
  document.body.dataset.connected = "no";
  silenceMeters();
  renderLink();
}

function renderLink() {
  const link = $("link");
  if (live) {
    link.className = "link up";
    link.textContent = "live";
    $("lost").hidden = true;
    return;
  }
  link.className = "link down";
  if (lostAt === null) {
    link.textContent = "connecting…";
    return;
  }
  const since = lostAt.toLocaleTimeString([], { hour12: false });
  link.textContent = `not live since ${since}`;
  // Said once (a live region that changed every second would be read out every second); how
  // long it has been is beside it, outside the region.
  const banner = $("lost");
  const text = `Not connected to the router since ${since}: what is shown is as it was then, and nothing can be changed. Reconnecting…`;
  if ($("lost-text").textContent !== text) $("lost-text").textContent = text;
  $("lost-for").textContent = ` (${Math.round((Date.now() - lostAt.getTime()) / 1000)} s)`;
  banner.hidden = false;
}

// A connection that carries nothing for a second is asked for a sign of life; one silent for
// three is taken for lost (a router on a machine that vanished closes nothing).
setInterval(() => {
  if (!socket || socket.readyState !== WebSocket.OPEN) { if (lostAt !== null) renderLink(); return; }
  const quiet = performance.now() - lastHeard;
  // A dead link may take a minute to close: leave it and connect again now.
  if (quiet > 3000) { const ws = socket; socket = null; lost(); ws.close(); connect(); return; }
  if (quiet > 1000) socket.send(oscMessage("/ping"));
}, 1000);

/** Reads the whole namespace again, rebuilds the page, and listens to every value in it: each
 *  LISTEN sends the value now, after the rebuild, so nothing the read missed stays on screen.
 *  The page is live again once /state has come too. */
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
      $("link").textContent = "cannot read the router: trying again…";
      setTimeout(() => { if (ws === socket && generation === reloads) reload(); }, 1000);
    }
    return;
  }
  // A newer read was asked for, or this connection is gone: this answer is stale.
  if (generation !== reloads || ws !== socket || ws.readyState !== WebSocket.OPEN) return;
  tree = root;
  for (const key of Object.keys(values)) delete values[key];
  held.clear();
  build();
  for (const path of readablePaths(tree)) ws.send(JSON.stringify({ COMMAND: "LISTEN", DATA: path }));
  send("/meters/levels", [["f", 20]]);
  loudnessShown = false;
  send("/meters/loudness", [["f", 10]]);
  send("/rights");
  send("/subscribe");
  waitingForState = true;
  send("/state");
  reloadTimeline();
}

/** What the router says this page may do: every app (admin), or its address's rights only. */
function showRights([, level]) {
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

/** The values the page listens to: those the namespace has now (a null is the placeholder of a
 * value there is not); meters come as bundles of their own (one subscription for all). */
function readablePaths(node, out = []) {
  const has = Array.isArray(node.VALUE) && node.VALUE.length > 0 && !node.VALUE.includes(null);
  if (has && (node.ACCESS & 1) && !node.FULL_PATH.endsWith("/meter")) out.push(node.FULL_PATH);
  for (const child of Object.values(node.CONTENTS || {})) readablePaths(child, out);
  return out;
}

function childNames(path, skip) {
  let node = tree;
  for (const part of path.split("/").filter(Boolean)) node = node && node.CONTENTS && node.CONTENTS[part];
  return Object.keys((node && node.CONTENTS) || {}).filter((name) => name !== skip).sort();
}

function valueOf(path) {
  let node = tree;
  for (const part of path.split("/").filter(Boolean)) node = node && node.CONTENTS && node.CONTENTS[part];
  return node && node.VALUE;
}

// ---- Building the page from the namespace ----

function build() {
  forgetMeters();
  strips.clear();
  buildRoutes(childNames("/route", "select"));
  $("app-list").replaceChildren(...childNames("/app", "register").map(buildStrip));
  attachStripMeters();
  attachRouteMeters();
  for (const path of readablePaths(tree)) {
    values[path] = valueOf(path);
    render(path);
  }
  applyLock();
}

// ---- What the router sends ----

function received(message) {
  const { path, args } = message;
  if (path === "/duckrouter/levels") return meterReading(args[0], args[1], args.slice(2).filter((_, i) => i % 2 === 0), args.slice(2).filter((_, i) => i % 2 === 1));
  if (path === "/duckrouter/meter") return meterReading(args[0], args[1], args.slice(2), null);
  if (path === "/duckrouter/loudness") { loudnessShown = true; return loudnessReading(args[0], args[1], args[2], args[3]); }
  if (path === "/reply" && args[0] === "/state") return stateReply(args[1]);
  if (path === "/reply" && args[0] === "/timeline") return timelineReply(args[1]);
  if (path === "/reply" && args[0] === "/rights") return showRights(args);
  if (path === "/error") return refused(args);
  if (path.startsWith("/duckrouter/")) {
    if (path === "/duckrouter/app") appNotification(args);
    if (path !== "/duckrouter/volume") askTimeline();
    if (path === "/duckrouter/cue" || path === "/duckrouter/scene" || path === "/duckrouter/playhead"
        || path === "/duckrouter/route" || path === "/duckrouter/jack") askState();
    // A loudness-targeted duck: its difference is /state's (read again while one holds).
    if (path === "/duckrouter/app" && args[6] !== undefined) askState(loudnessShown ? 500 : 30);
    return;
  }
  if (path === "/reply") return;
  values[path] = args;
  render(path);
}

/** An /error: the page's own reads that this router cannot serve are quietly left out. */
function refused([path, code, text]) {
  if (path === "/meters/levels") return send("/meters", [["f", 20]]);   // a router without RMS levels
  if (path === "/meters/loudness") {                                      // none metered yet
    clearTimeout(loudnessRetry);
    loudnessRetry = setTimeout(() => { if (socket && !loudnessShown) send("/meters/loudness", [["f", 10]]); }, 1000);
    return;
  }
  if (code === -5) send("/rights");   // the rights may have changed (the key was changed)
  showError(`${path}: ${text}`);
}

/** Asks for /state again within `delay` ms: once for a burst, and never later than a read
 *  already due. */
let stateDue = Infinity;
function askState(delay = 30) {
  const due = performance.now() + delay;
  if (due >= stateDue) return;
  clearTimeout(stateTimer);
  stateDue = due;
  stateTimer = setTimeout(() => { stateDue = Infinity; send("/state"); }, delay);
}

function stateReply(json) {
  let document_;
  try { document_ = JSON.parse(json); } catch (error) { return; }
  state = document_.settings || {};
  const engine = document_.engine || {};
  for (const app of state.apps || []) held.set(app.name, heldFromState(app));
  for (const app of strips.keys()) renderReduction(app);
  renderRouteDetails();
  renderShow(state.show || null);
  // Loudness meters once the router meters loudness (a ducking target may start it).
  if (engine.loudnessLufs && !loudnessShown) send("/meters/loudness", [["f", 10]]);
  // A loudness duck's difference moves with the sound: read again while one holds.
  if ((state.apps || []).some((app) => (app.ducking || []).some((duck) => duck.target !== undefined))) askState(500);
  if (waitingForState) {
    waitingForState = false;
    live = true;
    lostAt = null;
    document.body.dataset.connected = "yes";
    renderLink();
  }
}


/** An app's place in the mix as /state has it: the deepest duck, or who interrupts it. */
function heldFromState(app) {
  const deepest = (app.ducking || []).reduce((a, b) => (a && a.gainDb <= b.gainDb ? a : b), null);
  const interrupted = app.interruptedBy ? app.interruptedBy.split(":") : null;
  return {
    state: app.state, gainDb: app.gainDb, because: app.activeBecause || "",
    by: deepest ? deepest.by : interrupted ? interrupted.slice(1).join(":") : "",
    rule: deepest ? deepest.rule : interrupted ? interrupted[0] : "",
    target: deepest && deepest.target !== undefined ? deepest.target : undefined,
    difference: deepest && deepest.differenceLu !== undefined ? deepest.differenceLu : undefined,
  };
}

function render(path) {
  const value = values[path] || [];
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "app" && parts.length === 3) return renderApp(parts[1], parts[2], value);
  if (parts[0] === "route" && parts.length === 3) return renderRoute(parts[1], parts[2], value);
  switch (path) {
    case "/route/select":
      for (const button of document.querySelectorAll("[data-route]")) {
        const current = button.dataset.route === value[0];
        button.setAttribute("aria-pressed", String(current));
        button.closest(".route").dataset.current = current ? "yes" : "no";
      }
      return;
    case "/system/volume":
      return systemFader.set(value[0]);
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

let errorTimer = null;
function showError(text) {
  const error = $("error");
  error.textContent = text;
  error.hidden = false;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(() => { error.hidden = true; }, 5000);
}

// ---- The page's own controls ----

const systemFader = new Fader({ label: "System volume", vertical: false, send: (position) => send("/system/volume", [["f", position]]) });
systemFader.onShow = (position, text) => { $("system-volume-label").textContent = text; };
$("system-volume").append(systemFader.element, scaleElement(false));
systemFader.draw();

$("silent").onchange = (event) => {
  send("/system/silent", [["i", event.target.checked ? 1 : 0]]);
  setTimeout(() => render("/system/silent"), 1000);
};
$("outside").onchange = (event) => {
  if (event.target.checked) send("/system/interruption/begin", [["s", "page"]]);
  else send("/system/interruption/end", [["s", "page"], ["i", 1]]);
  setTimeout(() => render("/system/interruption/sources"), 1000);
};
for (const leaf of ["level", "attack", "release"]) {
  $(`duck-${leaf}`).onchange = (event) => {
    const value = Number(event.target.value);
    // An emptied field is not 0 dB (which would stop ducking in the middle of a show).
    if (event.target.value.trim() !== "" && Number.isFinite(value)) send(`/duck/${leaf}`, [["f", value]]);
    setTimeout(() => render(`/duck/${leaf}`), 1000);
  };
  $(`duck-${leaf}`).onblur = () => render(`/duck/${leaf}`);
}

document.body.dataset.connected = "no";
applyLock();   // a locked page is locked from its first paint
renderLink();
connect();
