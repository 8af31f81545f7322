"use strict";
// Faders on the router's volume taper (docs/OSC.md, `/app/<app>/volume`): a position 0..1 is
// heard at position³, 60·log10(position) dB, so the marks of the scale sit where the router hears
// them. The meters beside a fader use the same scale, so a mark reads the same on both.
//
// A fader moves with the pointer from where it is (never jumps to a touch: a stray tap in a show
// changes nothing), snaps to the scale's marks, moves ten times finer with Shift held or a second
// finger down, goes to unity (0 dB, the top) on a double click or tap, and follows the keys:
// arrows 1 dB (Shift 0.1 dB), Page Up/Down 6 dB, Home unity, End -∞; a level can also be typed in
// dB (a strip's level field). It is a slider to assistive technology, its value text in dB.

const Taper = {
  /** The level heard at a position, dB (-Infinity at 0). */
  decibels(position) { return position <= 0 ? -Infinity : 60 * Math.log10(position); },
  /** The position heard at a level (above 1 for a level above 0 dB, which a gain can set). */
  position(decibels) { return decibels === -Infinity ? 0 : Math.max(0, Math.pow(10, decibels / 60)); },
  /** "-20.0 dB", "-∞ dB" (a typographic minus, as a desk prints it). */
  text(decibels, unit = " dB") {
    if (decibels === -Infinity || decibels <= -144) return `−∞${unit}`;
    const rounded = Math.round(decibels * 10) / 10;
    return `${rounded < 0 ? "−" : rounded > 0 ? "+" : ""}${Math.abs(rounded).toFixed(1)}${unit}`;
  },
};

/** A level typed by a person ("-20", "−20 dB", "-inf", "−∞"): dB, or null when it is not one. */
function parseDecibels(text) {
  const cleaned = text.trim().replace(/\u2212/g, "-").replace(/\s*db$/i, "").trim();
  if (/^-?(inf|infinity|∞)$/i.test(cleaned)) return -Infinity;
  if (!/^[-+]?\d*\.?\d+(e[-+]?\d+)?$/i.test(cleaned)) return null;
  const value = Number(cleaned);
  return Number.isFinite(value) ? value : null;
}

/** The marks of every fader's and meter's scale, dB. */
const SCALE_MARKS = [0, -6, -12, -20, -30, -40, -60, -Infinity];

/** A scale: the marks, as labelled ticks positioned on the taper (aria-hidden: the slider's value
 *  text says the level). */
function scaleElement(vertical) {
  const scale = document.createElement("div");
  scale.className = "scale";
  scale.setAttribute("aria-hidden", "true");
  for (const mark of SCALE_MARKS) {
    const tick = document.createElement("span");
    tick.textContent = mark === -Infinity ? "−∞" : mark === 0 ? "0" : `${Math.abs(mark)}`;
    const at = Taper.position(mark) * 100;
    if (vertical) tick.style.bottom = `${at}%`; else tick.style.left = `${at}%`;
    scale.append(tick);
  }
  return scale;
}

class Fader {
  /** `label`: what it sets ("music volume"); `send(position)`: a person moved it (at most once a
   *  frame while moving, and once more at the end); `vertical`: a strip's fader. */
  constructor({ label, vertical, send }) {
    this.sendValue = send;
    this.vertical = vertical;
    this.value = 0;          // the router's value
    this.shown = 0;          // what the cap shows: the person's while they hold it
    this.held = false;
    this.locked = false;
    this.pointers = new Map();
    this.pending = null;
    this.awaiting = null;    // the last value a key or a typed level sent, until the router says it
    this.sent = [];          // the values sent before it meanwhile, whose answers are not shown
    this.lastTap = 0;

    const element = document.createElement("div");
    element.className = `fader ${vertical ? "vertical" : "horizontal"}`;
    element.tabIndex = 0;
    element.setAttribute("role", "slider");
    element.setAttribute("aria-label", label);
    element.setAttribute("aria-orientation", vertical ? "vertical" : "horizontal");
    element.setAttribute("aria-valuemin", "0");
    element.setAttribute("aria-valuemax", "100");
    const track = document.createElement("div");
    track.className = "track";
    const fill = document.createElement("div");
    fill.className = "fill";
    const cap = document.createElement("div");
    cap.className = "cap";
    track.append(fill, cap);
    element.append(track);
    this.element = element;
    this.track = track;
    this.fill = fill;
    this.cap = cap;

    element.addEventListener("pointerdown", (event) => this.down(event));
    element.addEventListener("pointermove", (event) => this.move(event));
    element.addEventListener("pointerup", (event) => this.up(event));
    element.addEventListener("pointercancel", (event) => this.up(event, true));
    element.addEventListener("dblclick", (event) => { event.preventDefault(); this.commit(1); });
    element.addEventListener("keydown", (event) => this.key(event));
    element.addEventListener("blur", () => this.letGo());
    this.draw();
  }

  /** The router's value; shown unless a person holds the fader. */
  set(position) {
    if (!Number.isFinite(position)) return;
    this.value = position;
    const same = (a, b) => Math.abs(a - b) < 1e-6;
    if (this.awaiting !== null) {
      if (same(position, this.awaiting)) {
        this.awaiting = null;
        this.sent = [];
      } else if (this.sent.some((value) => same(value, position))) {
        return;   // the answer to an earlier step of the person's: the last is on its way
      }
    }
    if (!this.held) { this.shown = position; this.draw(); }
  }

  setLocked(locked) {
    this.locked = locked;
    this.element.setAttribute("aria-disabled", String(locked));
    if (locked) this.letGo();
  }

  draw() {
    const percent = `${Math.min(1, this.shown) * 100}%`;
    if (this.vertical) { this.cap.style.bottom = percent; this.fill.style.height = percent; }
    else { this.cap.style.left = percent; this.fill.style.width = percent; }
    const text = Taper.text(Taper.decibels(this.shown));
    this.element.setAttribute("aria-valuenow", String(Math.round(this.shown * 1000) / 10));
    this.element.setAttribute("aria-valuetext", text);
    if (this.onShow) this.onShow(this.shown, text);
  }

  /** Pixels from one end of the track to the other: measured when a drag starts (reading the
   *  layout on every move, after the cap was moved, would make the browser lay out each time). */
  length() { return this.trackLength || this.measure(); }

  measure() {
    const box = this.track.getBoundingClientRect();
    return Math.max(1, this.vertical ? box.height : box.width);
  }

  down(event) {
    if (this.locked || event.button > 0) return;
    event.preventDefault();
    this.element.focus({ preventScroll: true });
    this.element.setPointerCapture?.(event.pointerId);
    this.pointers.set(event.pointerId, { x: event.clientX, y: event.clientY });
    if (this.pointers.size > 1) return;   // a second finger: finer, not a second drag
    this.held = true;
    this.trackLength = this.measure();
    this.drag = { x: event.clientX, y: event.clientY, from: this.shown, moved: false, fine: event.shiftKey };
  }

  move(event) {
    if (!this.drag || !this.pointers.has(event.pointerId) || this.pointers.keys().next().value !== event.pointerId) return;
    const along = this.vertical ? this.drag.y - event.clientY : event.clientX - this.drag.x;
    if (Math.abs(along) < 2 && !this.drag.moved) return;
    this.drag.moved = true;
    const fine = event.shiftKey || this.pointers.size > 1;
    // Fine: the drag goes on from here at a tenth of the speed.
    if (fine !== this.drag.fine) {
      this.drag = { ...this.drag, x: event.clientX, y: event.clientY, from: this.shown, fine };
      return;
    }
    let position = this.drag.from + along / this.length() / (fine ? 10 : 1);
    if (!fine) position = this.snap(position);
    this.show(position);
  }

  up(event, cancelled = false) {
    const first = this.pointers.keys().next().value === event.pointerId;
    this.pointers.delete(event.pointerId);
    if (!first || !this.drag) return;
    const moved = this.drag.moved;
    this.drag = null;
    if (cancelled) return this.letGo();
    if (moved) return this.commit(this.shown);
    // A tap: two within 350 ms are a double tap (unity); a click's dblclick does the same.
    const now = performance.now();
    if (event.pointerType === "touch" && now - this.lastTap < 350) { this.lastTap = 0; return this.commit(1); }
    this.lastTap = now;
    this.letGo();
  }

  /** Within 3 px of a mark, the mark. */
  snap(position) {
    const near = 3 / this.length();
    for (const mark of SCALE_MARKS) {
      const at = Taper.position(mark);
      if (Math.abs(position - at) < near) return at;
    }
    return position;
  }

  key(event) {
    if (this.locked) return;
    // Keys pressed faster than the router answers step from the person's last value, not from
    // an older answer shown meanwhile.
    const decibels = Taper.decibels(this.awaiting ?? this.shown);
    const step = event.shiftKey ? 0.1 : 1;
    const from = decibels === -Infinity ? -90 : decibels;
    let to;
    switch (event.key) {
      case "ArrowUp": case "ArrowRight": to = from + step; break;
      case "ArrowDown": case "ArrowLeft": to = from - step; break;
      case "PageUp": to = from + 6; break;
      case "PageDown": to = from - 6; break;
      case "Home": to = 0; break;
      case "End": to = -Infinity; break;
      default: return;
    }
    event.preventDefault();
    // Below -90 dB a step down is silence; from silence a step up is -89 dB. Steps never go
    // above 0 dB, the top, nor pull a level set above it (a gain) down to it but by their size.
    if (to !== -Infinity && to < -90) to = -Infinity;
    this.commit(Taper.position(Math.min(Math.max(0, decibels), to)));
  }

  /** What the person has it at, sent at most once a frame. */
  show(position) {
    this.held = true;
    this.shown = Math.max(0, Math.min(this.top(), position));
    this.draw();
    if (this.pending === null) {
      this.pending = requestAnimationFrame(() => {
        this.pending = null;
        if (!this.held) return;
        this.remember(Math.fround(this.shown));
        this.sendValue(this.shown);
      });
    }
  }

  /** The highest position a person can move it to: the top (0 dB), or where a gain above 0 dB
   *  put it, so that touching such a fader does not pull it down to 0 dB. */
  top() { return Math.max(1, this.value); }

  /** A value sent whose answer, when it comes after a later one was sent, is not shown. */
  remember(value) {
    this.sent.push(value);
    if (this.sent.length > 64) this.sent.shift();
  }

  /** A value set at once (a key, unity, the end of a drag): sent now, then the router's shown. */
  commit(position) {
    if (this.locked) return;
    if (this.pending !== null) { cancelAnimationFrame(this.pending); this.pending = null; }
    this.held = true;
    this.shown = Math.max(0, Math.min(this.top(), position));
    this.draw();
    if (this.awaiting !== null) this.remember(this.awaiting);
    this.awaiting = Math.fround(this.shown);
    this.sendValue(this.shown);
    this.letGo();
  }

  /** Let go: the router's value shows again from its next push, and in any case a second later
   *  (if it refused or changed the value, that is what shows). */
  letGo() {
    if (!this.held) return;
    this.held = false;
    this.drag = null;
    clearTimeout(this.settle);
    this.settle = setTimeout(() => {
      if (this.held) return;
      this.awaiting = null;
      this.sent = [];
      this.shown = this.value;
      this.draw();
    }, 1000);
  }

  /** A level typed in dB: set at once; above 0 dB (the fader's top) or not a number is refused
   *  and said (`refuse`), and the field shows the fader's level again. */
  typed(text, refuse) {
    const decibels = parseDecibels(text);
    if (decibels === null || decibels > 0) {
      refuse(decibels === null ? `not a level in dB: ${text}` : "the top of the fader is 0 dB");
      this.draw();
      return;
    }
    this.commit(Taper.position(decibels));
  }
}
