"use strict";
// The apps' strips, as a console's: name and state, who holds it back and by which rule, the gain
// reduction in dB, its meters and fader on one scale, the level the fader sets in dB, loudness
// when the router meters it, mute and activate.

const strips = new Map();   // app → strip

/** What the router told of each app's place in the mix: its state, gain heard (dB, volume
 *  included), who holds it back and by which rule, a loudness duck's target and difference. */
const held = new Map();

function buildStrip(app) {
  const element = document.createElement("div");
  element.className = "strip";
  element.dataset.app = app;
  element.setAttribute("role", "group");
  element.setAttribute("aria-label", app);
  element.innerHTML = `
    <h3 class="strip-name"></h3>
    <div class="state" role="status"></div>
    <div class="category"></div>
    <div class="why"></div>
    <div class="reduction" title="gain reduction: how far the policy pulls it down now"></div>
    <div class="loudness" hidden>
      <div class="lufs" title="loudness in LUFS: momentary (M, 400 ms) and short-term (S, 3 s)"></div>
      <div class="lufs-bar" aria-hidden="true"><div class="momentary"></div><div class="short-term"></div><div class="heard"></div><div class="target"></div></div>
      <div class="target-text"></div>
    </div>
    <div class="strip-body">
      <button class="clip" aria-pressed="false">clip</button>
      <div class="meter-area"><canvas class="meter" aria-hidden="true"></canvas></div>
    </div>
    <input class="level" type="text" inputmode="decimal" spellcheck="false" autocomplete="off">
    <div class="strip-buttons">
      <button class="mute" aria-pressed="false">Mute</button>
      <button class="activate"></button>
    </div>`;
  element.querySelector(".strip-name").textContent = app;
  const fader = new Fader({ label: `${app} volume`, vertical: true, send: (position) => send(`/app/${app}/volume`, [["f", position]]) });
  const level = element.querySelector(".level");
  level.setAttribute("aria-label", `${app} level in dB`);
  level.title = "type a level in dB (-20, -inf) and press Enter";
  fader.onShow = (position, text) => { if (document.activeElement !== level) level.value = text; };
  level.addEventListener("change", () => fader.typed(level.value, showError));
  // Escape gives up what was typed: the field shows the fader's level again before it loses the
  // focus, so the change that blur brings sends nothing.
  level.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    level.value = Taper.text(Taper.decibels(fader.shown));
    level.blur();
  });
  level.addEventListener("blur", () => fader.draw());
  fader.draw();
  const body = element.querySelector(".strip-body");
  body.append(scaleElement(true), fader.element);
  const clip = element.querySelector(".clip");
  clip.setAttribute("aria-label", `${app} clip light`);
  const mute = element.querySelector(".mute");
  mute.setAttribute("aria-label", `mute ${app}`);
  mute.onclick = () => send(`/app/${app}/mute`, [["i", mute.getAttribute("aria-pressed") === "true" ? 0 : 1]]);
  const activate = element.querySelector(".activate");
  activate.onclick = () => {
    const state = (values[`/app/${app}/state`] || [""])[0];
    send(`/app/${app}/${state === "inactive" || state === "listening" ? "activate" : "deactivate"}`);
  };
  const strip = { app, element, fader, meter: null };
  strips.set(app, strip);
  return element;
}

/** After the strips are in the page: their meters, sized to their canvases. */
function attachStripMeters() {
  for (const strip of strips.values()) {
    strip.meter = makeMeter("app", strip.app, strip.element.querySelector("canvas"), strip.element.querySelector(".clip"));
    watchMeter(strip.meter);
  }
}

function renderApp(app, leaf, value) {
  const strip = strips.get(app);
  if (!strip) return;
  const element = strip.element;
  switch (leaf) {
    case "state": {
      const state = value[0] || "";
      element.dataset.state = state;
      element.querySelector(".state").textContent = state;
      element.querySelector(".activate").textContent = state === "inactive" || state === "listening" ? "Activate" : "Deactivate";
      renderReduction(app);
      return;
    }
    case "why":
      return renderReduction(app);   // the why in words, with the rule
    case "category":
      element.querySelector(".category").textContent =
        [value[0], (value[1] || "").split(",").join(", "), value[2] !== "default" ? value[2] : ""].filter(Boolean).join(" · ");
      return;
    case "volume":
      strip.fader.set(value[0]);
      renderReduction(app);
      return;
    case "mute":
      element.querySelector(".mute").setAttribute("aria-pressed", String(value[0] === 1));
      renderReduction(app);
      return;
    case "remote":
      return renderNowPlaying();
  }
}

/** `/duckrouter/app s app, s state, f gain dB, s because, [s by, s rule, [f target, [f difference]]]`. */
function appNotification([app, state, gainDb, because, by, rule, target, difference]) {
  // A loudness duck's difference is /state's, read twice a second while one holds (app.js): it
  // is measured now, where a notification's is as of the duck's last step.
  const before = held.get(app);
  const same = before && before.by === (by || "") && before.target === target;
  held.set(app, { state, gainDb, because, by: by || "", rule: rule || "", target,
                  difference: same && before.difference !== undefined ? before.difference : difference });
  renderReduction(app);
}

/** How far the policy pulls the app down now: its gain heard less its volume (0 when it is not
 *  held back), −∞ when it is not heard at all (interrupted, silenced). */
function reductionOf(app) {
  const state = (values[`/app/${app}/state`] || [""])[0];
  if (state === "interrupted" || state === "silenced") return -Infinity;
  const known = held.get(app);
  if (!known || state !== "ducked") return 0;
  if (!(known.gainDb > -144)) return -Infinity;   // -144: silence
  const volume = (values[`/app/${app}/volume`] || [1])[0];
  if (!(volume > 0)) return 0;
  return Math.min(0, Math.round((known.gainDb - Taper.decibels(volume)) * 10) / 10);
}

const shownReduction = new Map();   // app → the reduction last shown, dB

/** The why in words and the rule, the gain reduction in dB, and its meter moving to it at the
 *  ramp the mix moves at (the attack going down, the release coming back). */
function renderReduction(app) {
  const strip = strips.get(app);
  if (!strip) return;
  const element = strip.element;
  const known = held.get(app);
  const state = (values[`/app/${app}/state`] || [""])[0];
  const reduction = reductionOf(app);
  const text = element.querySelector(".reduction");
  text.textContent = reduction === 0 ? "" : reduction === -Infinity ? "GR −∞ (not heard)" : `GR ${Taper.text(reduction)}`;
  text.dataset.reduction = String(reduction);
  const why = (values[`/app/${app}/why`] || [""])[0] || "";
  const heldBack = known && known.by && (state === "ducked" || state === "interrupted");
  element.querySelector(".why").textContent = heldBack ? `${why || known.by} · ${known.rule} rule` : why;
  const before = shownReduction.has(app) ? shownReduction.get(app) : 0;
  shownReduction.set(app, reduction);
  const ms = reduction === -Infinity || before === -Infinity ? 50
    : (values[reduction < before ? "/duck/attack" : "/duck/release"] || [0])[0];
  setReduction("app", app, reduction, ms);
  renderLoudnessTarget(app);
}

// ---- Loudness (when the router meters it) ----

const loudness = new Map();   // "app/music" → {momentary, shortTerm}
const LUFS_FLOOR = -60;

function lufsPercent(lufs) { return Math.max(0, Math.min(100, (lufs - LUFS_FLOOR) / -LUFS_FLOOR * 100)); }
function lufsText(lufs) { return lufs <= -144 ? "−∞" : `${lufs < 0 ? "−" : ""}${Math.abs(lufs).toFixed(1)}`; }

/** `/duckrouter/loudness kind name momentary short-term`, LUFS (-144: not yet heard). */
function loudnessReading(kind, name, momentary, shortTerm) {
  loudness.set(meterKey(kind, name), { momentary, shortTerm });
  if (kind === "route") return renderRouteLoudness(name);
  const strip = strips.get(name);
  if (!strip) return;
  const box = strip.element.querySelector(".loudness");
  box.hidden = false;
  box.querySelector(".lufs").textContent = `M ${lufsText(momentary)} S ${lufsText(shortTerm)}`;
  box.querySelector(".momentary").style.transform = `scaleX(${lufsPercent(momentary) / 100})`;
  box.querySelector(".short-term").style.left = `${lufsPercent(shortTerm)}%`;
  renderLoudnessTarget(name);
}

/** A loudness-targeted duck: the target under the ducker and the difference heard now, in LU;
 *  on the bar, where the app is heard (its short-term loudness with its gain) and where the
 *  target would have it (the ducker's, heard, less the target). */
function renderLoudnessTarget(app) {
  const strip = strips.get(app);
  const known = held.get(app);
  if (!strip) return;
  const box = strip.element.querySelector(".loudness");
  const targetText = box.querySelector(".target-text");
  const line = box.querySelector(".target");
  const heardMark = box.querySelector(".heard");
  const duck = known && known.state === "ducked" && known.target !== undefined ? known : null;
  if (!duck) {
    targetText.textContent = "";
    line.hidden = true;
    heardMark.hidden = true;
    return;
  }
  box.hidden = false;
  // Two lines: the target, then what is heard now.
  const difference = duck.difference !== undefined ? `now ${duck.difference.toFixed(1)} LU` : "measuring";
  targetText.replaceChildren(`${Number(duck.target.toFixed(1))} LU under ${duck.by}`, document.createElement("br"), difference);
  const own = loudness.get(meterKey("app", app));
  const ducker = loudness.get(meterKey("app", duck.by));
  const duckerHeld = held.get(duck.by);
  if (own && ducker && own.shortTerm > -144 && ducker.shortTerm > -144) {
    heardMark.hidden = false;
    heardMark.style.left = `${lufsPercent(own.shortTerm + duck.gainDb)}%`;
    line.hidden = false;
    line.style.left = `${lufsPercent(ducker.shortTerm + (duckerHeld ? duckerHeld.gainDb : 0) - duck.target)}%`;
  }
}
