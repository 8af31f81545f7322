"use strict";
// Meters: each strip's channels (peak and RMS, a peak hold that decays, a clip light that stays lit
// until touched) and its gain reduction (how far the policy pulls it down now, downward from the
// top as on a compressor), and each route's output; drawn on canvases at the display's rate from
// the router's meter stream (20 bundles a second), on the faders' scale (fader.js, Taper).
//
// Nothing here touches layout while drawing: the canvases are sized when the page is built or
// resized, and a frame only paints those whose picture changed (falling meters, a ramp), so a
// quiet page draws nothing. With reduced motion the meters still move (they are the sound) but
// jump rather than fall smoothly, and hold no decay.

const METER = {
  fallDbPerSecond: 12,     // peak fall (IEC 60268-18 class: 20 dB in 1.7 s)
  rmsSeconds: 0.3,         // RMS integration shown
  holdSeconds: 2,
  clipDb: -0.1,            // a sample this close to full scale lights the clip light
  floorDb: -144,
};

const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)");
const meters = new Map();   // "app/music", "route/speaker" → meter
let meterFrame = null;
let lastFrameTime = 0;

function meterKey(kind, name) { return `${kind}/${name}`; }

/** A meter for a strip (vertical, with a gain reduction lane) or a route (horizontal). */
function makeMeter(kind, name, canvas, clip) {
  const meter = {
    kind, name, canvas, clip,
    context: canvas.getContext("2d"),
    channels: [],          // per channel: {peak, rms, shownPeak, shownRms, hold, holdUntil}
    reduction: { from: 0, to: 0, start: 0, ms: 0 },   // dB, linear in gain over ms
    clipped: false,
    dirty: true,
    width: 0, height: 0,
  };
  if (clip) {
    clip.addEventListener("click", () => { meter.clipped = false; renderClip(meter); });
  }
  meters.set(meterKey(kind, name), meter);
  if (clipsLit.has(meterKey(kind, name))) { meter.clipped = true; renderClip(meter); }
  sizeMeter(meter);
  return meter;
}

function sizeMeter(meter) {
  const ratio = window.devicePixelRatio || 1;
  const box = meter.canvas.getBoundingClientRect();
  const width = Math.max(1, Math.round(box.width * ratio));
  const height = Math.max(1, Math.round(box.height * ratio));
  if (width !== meter.canvas.width || height !== meter.canvas.height) {
    meter.canvas.width = width;
    meter.canvas.height = height;
  }
  meter.width = width;
  meter.height = height;
  meter.dirty = true;
  wake();
}

const meterResize = new ResizeObserver(() => { for (const meter of meters.values()) sizeMeter(meter); });

/** The page is built again (apps came or went): the meters go, but a lit clip light stays lit on
 *  the strip or route of the same name, until a person clicks it. */
const clipsLit = new Set();
function forgetMeters() {
  clipsLit.clear();
  for (const [key, meter] of meters) if (meter.clipped) clipsLit.add(key);
  meters.clear();
  meterResize.disconnect();
}

function watchMeter(meter) { meterResize.observe(meter.canvas); }

/** `/duckrouter/meter kind name peak…` or `/duckrouter/levels kind name (peak rms)…`, dBFS. */
function meterReading(kind, name, peaks, rms) {
  const meter = meters.get(meterKey(kind, name));
  if (!meter) return;
  const now = performance.now();
  let changed = meter.channels.length !== peaks.length;
  peaks.forEach((peak, index) => {
    const channel = meter.channels[index] ||= { peak: METER.floorDb, rms: null, shownPeak: METER.floorDb, shownRms: METER.floorDb, hold: METER.floorDb, holdUntil: 0 };
    const level = rms ? rms[index] : null;
    if (peak !== channel.peak || level !== channel.rms) changed = true;
    channel.peak = peak;
    channel.rms = level;
    if (peak >= channel.shownPeak) channel.shownPeak = peak;
    if (peak >= channel.hold) { channel.hold = peak; channel.holdUntil = now + METER.holdSeconds * 1000; }
    if (peak >= METER.clipDb && !meter.clipped) { meter.clipped = true; renderClip(meter); }
  });
  meter.channels.length = peaks.length;
  // The same reading again (silence, a steady tone) paints nothing.
  if (!changed) return;
  meter.dirty = true;
  wake();
}

function renderClip(meter) {
  if (!meter.clip) return;
  meter.clip.dataset.lit = meter.clipped ? "yes" : "no";
  meter.clip.setAttribute("aria-pressed", String(meter.clipped));
  meter.clip.title = meter.clipped ? "clipped: click to clear" : "clip light";
}

/** The gain reduction to show: moves to `decibels` over `ms`, linearly in gain (as the mix does). */
function setReduction(kind, name, decibels, ms) {
  const meter = meters.get(meterKey(kind, name));
  if (!meter || meter.reduction.to === decibels) return;
  const now = performance.now();
  meter.reduction = { from: currentReduction(meter, now), to: decibels, start: now, ms: reducedMotion.matches ? 0 : Math.max(0, ms) };
  meter.dirty = true;
  wake();
}

function currentReduction(meter, now) {
  const { from, to, start, ms } = meter.reduction;
  const t = ms > 0 ? Math.min(1, (now - start) / ms) : 1;
  if (t >= 1) return to;
  const gain = (d) => (d === -Infinity ? 0 : Math.pow(10, d / 20));
  const mixed = gain(from) + (gain(to) - gain(from)) * t;
  return mixed <= 0 ? -Infinity : 20 * Math.log10(mixed);
}

/** Stops every meter where it is (the router is gone: nothing shown is live). */
function silenceMeters() {
  for (const meter of meters.values()) {
    for (const channel of meter.channels) { channel.peak = METER.floorDb; channel.rms = null; }
    meter.dirty = true;
  }
  wake();
}

function wake() {
  if (meterFrame === null) meterFrame = requestAnimationFrame(drawMeters);
}

function drawMeters(time) {
  meterFrame = null;
  const seconds = lastFrameTime ? Math.min(0.25, (time - lastFrameTime) / 1000) : 0;
  lastFrameTime = time;
  let moving = false;
  for (const meter of meters.values()) {
    if (advance(meter, time, seconds)) meter.dirty = true;
    if (!meter.dirty) continue;
    meter.dirty = false;
    paint(meter, time);
    moving = true;
  }
  if (moving) meterFrame = requestAnimationFrame(drawMeters);
  else lastFrameTime = 0;
}

/** Moves the shown levels on by a frame; true while anything still moves. */
function advance(meter, now, seconds) {
  let moving = false;
  const smooth = reducedMotion.matches;
  for (const channel of meter.channels) {
    if (channel.shownPeak > channel.peak) {
      channel.shownPeak = smooth ? channel.peak : Math.max(channel.peak, channel.shownPeak - METER.fallDbPerSecond * seconds);
      moving = true;
    }
    if (channel.rms !== null && channel.shownRms !== channel.rms) {
      const k = smooth ? 1 : 1 - Math.exp(-seconds / METER.rmsSeconds);
      channel.shownRms += (channel.rms - channel.shownRms) * k;
      if (Math.abs(channel.rms - channel.shownRms) < 0.05 || !Number.isFinite(channel.shownRms)) channel.shownRms = channel.rms;
      moving = true;
    }
    if (channel.hold > channel.shownPeak && now > channel.holdUntil) {
      channel.hold = smooth ? channel.shownPeak : Math.max(channel.shownPeak, channel.hold - METER.fallDbPerSecond * seconds);
      moving = true;
    }
  }
  const { start, ms } = meter.reduction;
  if (ms > 0 && now - start < ms + 20) moving = true;
  return moving;
}

// Colours of the level: green, then amber from -18 dBFS, red from -6 (the contrast of each against
// the track meets WCAG's 3:1 for graphics).
const LEVEL_ZONES = [[-18, "#35c46a"], [-6, "#f0b429"], [0, "#ff5d5d"]];

function paint(meter, now) {
  const { context: g, width, height } = meter;
  g.clearRect(0, 0, width, height);
  const vertical = meter.kind === "app";
  const lanes = meter.channels.length || 1;
  const reductionLane = vertical ? Math.round(width * 0.28) : 0;
  const gap = Math.max(1, Math.round((window.devicePixelRatio || 1)));
  const laneSize = ((vertical ? width - reductionLane - gap : height) - gap * (lanes - 1)) / lanes;
  const length = vertical ? height : width;
  const at = (decibels) => Taper.position(Math.min(0, decibels)) * length;
  meter.channels.forEach((channel, index) => {
    const offset = index * (laneSize + gap);
    const rect = (from, to, colour) => {
      g.fillStyle = colour;
      if (vertical) g.fillRect(offset, height - to, laneSize, to - from);
      else g.fillRect(from, offset, to - from, laneSize);
    };
    rect(0, length, "#0b0e11");
    // RMS solid, the peak above it lighter; each in its zone's colour.
    const rms = channel.rms === null ? null : at(channel.shownRms);
    const peak = at(channel.shownPeak);
    let from = 0;
    for (const [limit, colour] of LEVEL_ZONES) {
      const to = at(limit);
      if (rms !== null && rms > from) rect(from, Math.min(rms, to), colour);
      const top = Math.min(peak, to);
      const bottom = Math.max(from, rms === null ? from : rms);
      if (top > bottom) { g.globalAlpha = rms === null ? 1 : 0.55; rect(bottom, top, colour); g.globalAlpha = 1; }
      from = to;
    }
    if (channel.hold > METER.floorDb) {
      const hold = at(channel.hold);
      rect(Math.max(0, hold - 2 * gap), hold, channel.hold >= METER.clipDb ? "#ff5d5d" : "#e8edf2");
    }
  });
  if (vertical) {
    const reduction = currentReduction(meter, now);
    const x = width - reductionLane;
    g.fillStyle = "#0b0e11";
    g.fillRect(x, 0, reductionLane, height);
    if (reduction < 0) {
      const depth = height - Taper.position(reduction) * height;
      g.fillStyle = "#f0b429";
      g.fillRect(x, 0, reductionLane, depth);
    }
  }
}
