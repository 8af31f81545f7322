"use strict";
// The output routes (each one's volume in dB, its latency, whether it is there, its level and
// loudness; the current one unmistakable) and Now Playing (the remote commands its app handles,
// with their names and symbols).

function buildRoutes(names) {
  $("route-list").replaceChildren(...names.map((route) => {
    const card = document.createElement("div");
    card.className = "route";
    card.dataset.current = "no";
    const button = document.createElement("button");
    button.className = "route-select";
    button.dataset.route = route;
    button.setAttribute("aria-pressed", "false");
    const name = Object.assign(document.createElement("span"), { className: "route-name", textContent: route });
    const badge = Object.assign(document.createElement("span"), { className: "route-badge" });
    button.append(name, badge);
    button.onclick = () => send("/route/select", [["s", route]]);
    const info = Object.assign(document.createElement("div"), { className: "route-info" });
    const canvas = Object.assign(document.createElement("canvas"), { className: "route-meter" });
    canvas.setAttribute("aria-hidden", "true");
    const lufs = Object.assign(document.createElement("div"), { className: "route-lufs" });
    card.append(button, info, canvas, lufs);
    return card;
  }));
}

function attachRouteMeters() {
  for (const canvas of document.querySelectorAll(".route-meter")) {
    const route = canvas.closest(".route").querySelector("[data-route]").dataset.route;
    watchMeter(makeMeter("route", route, canvas, null));
  }
}

function routeCard(route) {
  const button = document.querySelector(`[data-route="${CSS.escape(route)}"]`);
  return button && button.closest(".route");
}

function renderRoute(route, leaf, value) {
  const card = routeCard(route);
  if (!card) return;
  const button = card.querySelector("[data-route]");
  if (leaf === "available") {
    button.disabled = value[0] !== 1;
    card.dataset.available = value[0] === 1 ? "yes" : "no";
  }
  renderRouteDetails();
}

/** Each route's line: its volume in dB, its latency (from /state), and whether it is there. */
function renderRouteDetails() {
  for (const card of document.querySelectorAll(".route")) {
    const route = card.querySelector("[data-route]").dataset.route;
    const volume = (values[`/route/${route}/volume`] || [])[0];
    const available = (values[`/route/${route}/available`] || [1])[0] === 1;
    const known = state && (state.routes || []).find((r) => r.name === route);
    const parts = [];
    if (volume !== undefined) parts.push(Taper.text(Taper.decibels(volume)));
    if (known && known.latencyMs && available) {
      const [low, high] = known.latencyMs;
      parts.push(`${Math.abs(high - low) < 0.05 ? low.toFixed(1) : `${low.toFixed(1)}–${high.toFixed(1)}`} ms`);
    }
    if (known && known.farEndAnswers === false) parts.push("far end silent");
    if (!available) parts.push("unavailable");
    card.querySelector(".route-info").textContent = parts.join(" · ");
    card.querySelector(".route-badge").textContent = card.dataset.current === "yes" ? "current" : "";
  }
}

function renderRouteLoudness(route) {
  const card = routeCard(route);
  const reading = loudness.get(meterKey("route", route));
  if (!card || !reading) return;
  card.querySelector(".route-lufs").textContent = `M ${lufsText(reading.momentary)} · S ${lufsText(reading.shortTerm)} LUFS`;
}

// ---- Now Playing ----

/** The remote commands a person presses, in a transport's order, with their symbols (⏮ ⏪ ▶ ⏯ ⏸
 *  ⏹ ⏩ ⏭, drawn rather than taken from a font, which may lack them). `seek` and
 *  `changePlaybackRate` need a value and are for apps and surfaces, not buttons. */
const REMOTE_BUTTONS = [
  ["previousTrack", "M6 6h2v12H6zM9.5 12L18 18V6z", "Previous"],
  ["skipBackward", "M11 18V6l-8.5 6zM11.5 12l8.5 6V6z", "Back"],
  ["play", "M8 5v14l11-7z", "Play"],
  ["togglePlayPause", "M2 5v14l9-7zM13 5h3v14h-3zM19 5h3v14h-3z", "Play/Pause"],
  ["pause", "M6 5h4v14H6zM14 5h4v14h-4z", "Pause"],
  ["stop", "M6 6h12v12H6z", "Stop"],
  ["skipForward", "M4 18l8.5-6L4 6zM13 6v12l8.5-6z", "Forward"],
  ["nextTrack", "M16 6h2v12h-2zM6 18l8.5-6L6 6z", "Next"],
];

function transportSymbol(path) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.classList.add("symbol");
  const shape = document.createElementNS("http://www.w3.org/2000/svg", "path");
  shape.setAttribute("d", path);
  svg.append(shape);
  return svg;
}

function renderNowPlaying() {
  const app = (values["/remote/nowPlaying"] || [""])[0];
  $("now-playing-app").textContent = app || "nothing";
  const handled = new Set(app ? ((values[`/app/${app}/remote`] || [""])[0] || "").split(",").filter(Boolean) : []);
  $("remote-buttons").replaceChildren(...REMOTE_BUTTONS.filter(([command]) => handled.has(command)).map(([command, symbol, label]) => {
    const button = document.createElement("button");
    button.className = "remote";
    button.dataset.remote = command;
    button.setAttribute("aria-label", `${label} (${app})`);
    button.title = `${label}: /remote/${command}`;
    button.append(transportSymbol(symbol), Object.assign(document.createElement("span"), { className: "label", textContent: label }));
    button.onclick = () => send(`/remote/${command}`);
    return button;
  }));
  applyLock();
}
