"use strict";
// The timeline: what happened lately (activations, interruptions with their reasons, ducks, route
// changes, scenes and cues, the JACK server lost and back, xruns), newest first, each with its
// time; a tap on one shows the state it changed. The router keeps the events (`/timeline`,
// docs/OSC.md), so a page opened later shows what happened before it; the page asks for what is
// new whenever a notification tells it something happened.

const timelineEvents = [];   // oldest first, as the router numbers them
let timelineNewest = 0;
let timelineTimer = null;
const TIMELINE_SHOWN = 200;

/** Asks for the events after the newest the page has, once for a burst of notifications, and
 *  never later than 60 ms after the first of them. */
function askTimeline(delay = 60) {
  if (timelineTimer !== null) return;
  timelineTimer = setTimeout(() => { timelineTimer = null; send("/timeline", [["i", timelineNewest]]); }, delay);
}

/** Reads the whole timeline again (a new connection: the router may have restarted). */
function reloadTimeline() {
  clearTimeout(timelineTimer);
  timelineTimer = null;
  timelineEvents.length = 0;
  timelineNewest = 0;
  $("timeline-list").replaceChildren();
  send("/timeline", [["i", 0]]);
}

/** `/reply /timeline s json`. */
function timelineReply(json) {
  let answer;
  try { answer = JSON.parse(json); } catch (error) { return; }
  // A router that started again counts from 1: what the page had is from before.
  if (answer.newest < timelineNewest) {
    timelineEvents.length = 0;
    timelineNewest = 0;
    $("timeline-list").replaceChildren();
  }
  const list = $("timeline-list");
  const known = new Set(timelineEvents.map((event) => event.number));
  const fresh = (answer.events || []).filter((event) => !known.has(event.number));
  const newest = timelineEvents.length ? timelineEvents[timelineEvents.length - 1].number : 0;
  if (fresh.some((event) => event.number < newest)) {
    // An answer that overtook another (a read of everything after a read of what was new):
    // in the order the router numbered them, built again.
    timelineEvents.push(...fresh);
    timelineEvents.sort((a, b) => a.number - b.number);
    list.replaceChildren(...timelineEvents.map(timelineItem).reverse());
  } else {
    for (const event of fresh) {
      timelineEvents.push(event);
      list.prepend(timelineItem(event));
    }
  }
  timelineNewest = Math.max(timelineNewest, answer.newest);
  while (timelineEvents.length > TIMELINE_SHOWN) {
    timelineEvents.shift();
    list.lastElementChild.remove();
  }
  $("timeline-empty").hidden = timelineEvents.length > 0;
}

function clockTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleTimeString([], { hour12: false });
}

function timelineItem(event) {
  const item = document.createElement("li");
  item.dataset.kind = event.kind;
  item.dataset.number = String(event.number);
  const button = document.createElement("button");
  button.className = "event";
  button.setAttribute("aria-expanded", "false");
  const time = document.createElement("time");
  time.dateTime = event.at;
  time.textContent = clockTime(event.at);
  const kind = document.createElement("span");
  kind.className = "kind";
  kind.textContent = event.kind;
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = event.text;
  button.append(time, kind, text);
  const details = document.createElement("dl");
  details.hidden = true;
  for (const [field, value] of Object.entries(event.changed || {}).sort()) {
    const name = document.createElement("dt");
    name.textContent = field;
    const shown = document.createElement("dd");
    shown.textContent = value;
    details.append(name, shown);
  }
  button.onclick = () => {
    details.hidden = !details.hidden;
    button.setAttribute("aria-expanded", String(!details.hidden));
  };
  item.append(button, details);
  return item;
}
