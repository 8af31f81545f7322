"use strict";
// The show: the cue list with the cue last fired and the one at the playhead, a GO button (and
// the space bar), a button per scene, and what the scene last recalled is doing. It is read from
// /state's settings.show over the page's WebSocket, and read again whenever the router says a
// scene or a cue moved (the page subscribes to the notifications). docs/HTTP.md, "The control page".

let show = null;
let showTimer = null;

/** Asks for the show again, once for a burst of notifications. */
function askShow() {
  clearTimeout(showTimer);
  showTimer = setTimeout(() => send("/state"), 30);
}

/** The show's part of a message; true when it was one. */
function receivedShow(message) {
  if (message.path === "/reply" && message.args[0] === "/state") {
    try {
      show = (JSON.parse(message.args[1]).settings || {}).show || null;
    } catch (error) {
      show = null;
    }
    renderShow();
    return true;
  }
  if (message.path === "/duckrouter/cue" || message.path === "/duckrouter/scene" || message.path === "/duckrouter/playhead") {
    askShow();
    return true;
  }
  return false;
}

function cueName(number) {
  const cue = show && number ? show.cues[number - 1] : null;
  return cue ? `${number} · ${cue.scene}` : "—";
}

function renderShow() {
  const section = $("show");
  const scenes = (show && show.scenes) || [];
  const cues = (show && show.cues) || [];
  section.hidden = scenes.length === 0 && cues.length === 0;
  if (section.hidden) return;
  $("scene-now").textContent = show.scene ? `${show.scene}${show.fading ? " · fading" : ""}` : "";
  section.dataset.fading = show.fading ? "yes" : "no";
  $("cue-current").textContent = cueName(show.cue);
  $("cue-next").textContent = cueName(show.next);
  const go = $("go");
  go.disabled = !show.next;
  go.title = show.next ? `GO: ${cueName(show.next)} (space bar)` : "the cue list is at its end";
  $("cue-back").disabled = !cues.length;
  $("cue-list").replaceChildren(...cues.map((cue, index) => {
    const number = index + 1;
    const item = document.createElement("li");
    item.dataset.cue = String(number);
    if (number === show.cue) item.classList.add("current");
    if (number === show.next) item.classList.add("next");
    const button = document.createElement("button");
    button.textContent = `${number} ${cue.scene}`;
    button.title = "put the playhead here (nothing is recalled)";
    button.onclick = () => send("/cue/goto", [["i", number]]);
    item.append(button);
    if (cue.continue) item.append(Object.assign(document.createElement("span"), {
      className: "continues", textContent: `→ ${Math.round(cue.wait / 100) / 10} s after its fade`,
    }));
    return item;
  }));
  $("scene-buttons").replaceChildren(...scenes.map((name) => {
    const button = document.createElement("button");
    button.textContent = name;
    button.dataset.scene = name;
    button.setAttribute("aria-pressed", String(name === show.scene));
    button.onclick = () => send("/scene/recall", [["s", name]]);
    return button;
  }));
}

$("go").onclick = () => send("/cue/go");
$("cue-back").onclick = () => send("/cue/back");
// The space bar is GO, unless a field or a control has the keyboard (a slider, a number).
document.addEventListener("keydown", (event) => {
  if (event.code !== "Space" || event.repeat || event.ctrlKey || event.altKey || event.metaKey) return;
  const target = event.target;
  if (target && target !== document.body && target.closest("input, textarea, select, button")) return;
  event.preventDefault();
  if (!$("go").disabled) send("/cue/go");
});
