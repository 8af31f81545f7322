"use strict";
// OSC 1.0 for the control page: strings, int32, float32; messages and bundles. The page speaks
// OSC to the router in the WebSocket's binary frames, as a control surface does over TCP.
// Loaded first: the page's other scripts use its `$` too.

const $ = (id) => document.getElementById(id);

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
