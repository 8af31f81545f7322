"use strict";
// The show: the cue list with the cue last fired and the one at the playhead, a GO button (and
// the space bar), a button per scene, and what the scene last recalled is doing. It is read from
// /state's settings.show (app.js reads /state again whenever the router says a scene or a cue
// moved). docs/HTTP.md, "The control page".

let show = null;
let fadeShown = null;    // the recall whose fade the bar is showing

/** What a running fade is doing: a bar that fills over the fade's time from when the page learnt
 *  of it (a page opened in the middle of a fade shows its whole length from then). */
function showFade() {
  const bar = $("fade-bar").firstElementChild;
  const key = show && show.fading ? `${show.scene}:${show.fade}:${show.cue}` : null;
  if (key === fadeShown) return;
  fadeShown = key;
  bar.style.transition = "none";
  bar.style.width = key ? "0%" : (show && show.scene ? "100%" : "0%");
  if (!key) return;
  void bar.offsetWidth;   // the start, drawn before the transition to the end
  bar.style.transition = `width ${show.fade}ms linear`;
  bar.style.width = "100%";
}

function cueName(number) {
  const cue = show && number ? show.cues[number - 1] : null;
  return cue ? `${number} · ${cue.scene}` : "—";
}

/** The show as /state has it (settings.show; null: none). */
function renderShow(showState) {
  show = showState;
  const section = $("show");
  const scenes = (show && show.scenes) || [];
  const cues = (show && show.cues) || [];
  section.hidden = scenes.length === 0 && cues.length === 0;
  if (section.hidden) return;
  $("scene-now").textContent = show.scene
    ? `${show.scene}${show.fading ? ` · fading over ${Math.round(show.fade / 100) / 10} s` : ""}` : "";
  section.dataset.fading = show.fading ? "yes" : "no";
  showFade();
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
  applyLock();   // the buttons just made look as locked as the rest
}

// GO, once: a second GO within a quarter of a second (a double click, a bounced key) is taken
// for the first one, not the next cue.
let lastGo = 0;
function go() {
  const now = performance.now();
  if ($("go").disabled || now - lastGo < 250) return;
  lastGo = now;
  send("/cue/go");
}

$("go").onclick = go;
$("cue-back").onclick = () => send("/cue/back");
// With a show, the space bar is GO wherever the keyboard is, as on a show controller: a focused
// button (the last one clicked, or one reached with Tab, which Enter presses) does not take it.
// Controls only the space bar works keep it: a checkbox, a fader, the Lock; and so does a field one
// types into. Without a show (no scenes, no cues) the space bar is the page's.
function typing(target) {
  return target instanceof HTMLElement && target.matches("textarea, select, input:not([type=range]):not([type=checkbox]):not([type=button])");
}
function keepsSpace(target) {
  return target instanceof HTMLElement && (typing(target) || target.matches("input[type=checkbox], [role=slider], #lock"));
}
function spaceIsGo(event) {
  return event.code === "Space" && !$("show").hidden && !keepsSpace(event.target);
}
document.addEventListener("keydown", (event) => {
  if (!spaceIsGo(event) || event.ctrlKey || event.altKey || event.metaKey) return;
  event.preventDefault();
  if (!event.repeat) go();
}, true);
document.addEventListener("keyup", (event) => {
  if (spaceIsGo(event)) event.preventDefault();
}, true);
