"use strict";
// The show lock: the page becomes read-only (meters, values and the timeline live; no control sends
// anything) until unlocked, so no stray touch changes a live show. Unlocking takes a second press
// within three seconds. Kept for the browser (localStorage), so a reload stays locked.

let locked = (() => { try { return localStorage.getItem("duckrouter.locked") === "yes"; } catch (error) { return false; } })();
let unlockArmed = null;

/** Every control that changes something, as the page stands now. */
function changingControls() {
  return document.querySelectorAll("main button:not(.event):not(.clip), main input, main [role=slider]");
}

function applyLock() {
  document.body.dataset.locked = locked ? "yes" : "no";
  const button = $("lock");
  button.setAttribute("aria-pressed", String(locked));
  button.textContent = locked ? (unlockArmed ? "Press again to unlock" : "Locked") : "Lock";
  button.title = locked ? "the page is read-only: press twice to unlock" : "make the page read-only for the show";
  for (const control of changingControls()) {
    if (control.matches("input")) control.disabled = locked;
    else control.setAttribute("aria-disabled", String(locked));
  }
  for (const strip of strips.values()) strip.fader.setLocked(locked);
  systemFader.setLocked(locked);
  $("locked-note").hidden = !locked;
}

/** A change asked for while locked: said, not sent. */
function refusedByLock() {
  const note = $("locked-note");
  note.classList.remove("flash");
  void note.offsetWidth;
  note.classList.add("flash");
}

$("lock").onclick = () => {
  if (!locked) {
    locked = true;
  } else if (!unlockArmed) {
    unlockArmed = setTimeout(() => { unlockArmed = null; applyLock(); }, 3000);
  } else {
    clearTimeout(unlockArmed);
    unlockArmed = null;
    locked = false;
  }
  try { localStorage.setItem("duckrouter.locked", locked ? "yes" : "no"); } catch (error) { /* private mode: this tab only */ }
  applyLock();
};
