// The Access over time page: "when" draws the ALLOWED intervals of a principal on a resource as
// a timeline (SVG drawn here), each edge linked to the change that opened or closed it; a click
// on the timeline asks "who" at that time.  Both are the command line's questions, asked
// through the node (history.js).
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const LEFT = 40;
const RIGHT = 980;
const BAR_Y = 18;
const BAR_H = 40;
const AXIS_Y = 72;
let domain = null;   // {lo, hi} in epoch ms, while a timeline is drawn
let asked = null;    // the fields of the "when" drawn

function svgElement(name, attributes, parent) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  parent.appendChild(element);
  return element;
}

function xOf(ms) {
  return LEFT + ((ms - domain.lo) / (domain.hi - domain.lo)) * (RIGHT - LEFT);
}

function msOf(x) {
  const clamped = Math.min(RIGHT, Math.max(LEFT, x));
  return Math.round(domain.lo + ((clamped - LEFT) / (RIGHT - LEFT)) * (domain.hi - domain.lo));
}

function edgeTitle(what, event) {
  if (!event) return `${what}: before the range asked`;
  return `${what} at offset ${event.offset} by ${event.actor || "?"}, ${event.time} (${event.type})`;
}

// The time range drawn: every edge, and the range asked, with a margin on each side.
function domainOf(intervals, fields) {
  const times = [];
  for (const i of intervals) {
    times.push(Date.parse(i.from));
    if (i.to !== null) times.push(Date.parse(i.to));
  }
  for (const key of ["from", "to"]) {
    if (fields[key] !== undefined) {
      const ms = /^\d+$/.test(fields[key]) ? Number(fields[key]) : Date.parse(fields[key]);
      if (!Number.isNaN(ms)) times.push(ms);
    }
  }
  const lo = Math.min(...times);
  const hi = Math.max(...times);
  const pad = Math.max((hi - lo) * 0.1, 1000);
  return {lo: lo - pad, hi: hi + pad};
}

function drawEdge(svg, x, event, what) {
  const parent = event ? svgElement("a", {href: changeLink(event).href}, svg) : svg;
  const line = svgElement("line", {x1: x, x2: x, y1: BAR_Y - 6, y2: BAR_Y + BAR_H + 6, class: "edge"}, parent);
  if (event) line.dataset.offset = String(event.offset);
  svgElement("title", {}, line).textContent = edgeTitle(what, event);
}

function drawTimeline(intervals) {
  const svg = document.getElementById("timeline");
  svg.replaceChildren();
  svgElement("rect", {x: 0, y: 0, width: 1000, height: 110, fill: "transparent", class: "ground"}, svg);
  svgElement("line", {x1: LEFT, x2: RIGHT, y1: AXIS_Y, y2: AXIS_Y, class: "axis"}, svg);
  for (let k = 0; k <= 4; k += 1) {
    const ms = domain.lo + (k / 4) * (domain.hi - domain.lo);
    const x = xOf(ms);
    svgElement("line", {x1: x, x2: x, y1: AXIS_Y, y2: AXIS_Y + 4, class: "axis"}, svg);
    const label = svgElement("text", {x, y: AXIS_Y + 18, "text-anchor": k === 0 ? "start" : k === 4 ? "end" : "middle", class: "tick"}, svg);
    label.textContent = new Date(ms).toISOString().replace("T", " ").replace("Z", "");
  }
  intervals.forEach((interval, n) => {
    const from = Date.parse(interval.from);
    const open = interval.to === null;
    const x1 = xOf(from);
    const x2 = open ? RIGHT : xOf(Date.parse(interval.to));
    const rect = svgElement("rect", {
      x: x1, y: BAR_Y, width: Math.max(x2 - x1, 1), height: BAR_H,
      class: open ? "interval open" : "interval",
    }, svg);
    rect.dataset.index = String(n);
    rect.dataset.fromOffset = String(interval.fromOffset);
    rect.dataset.toOffset = open ? "" : String(interval.toOffset);
    svgElement("title", {}, rect).textContent =
      `ALLOWED from ${interval.from} (offset ${interval.fromOffset}) to ` +
      `${open ? "now (still open)" : `${interval.to} (offset ${interval.toOffset})`}`;
    drawEdge(svg, x1, interval.openedBy, "opened");
    if (!open) drawEdge(svg, x2, interval.closedBy, "closed");
  });
}

function eventCell(row, event) {
  const td = document.createElement("td");
  if (event) td.appendChild(changeLink(event));
  else td.textContent = "(before the range asked)";
  row.appendChild(td);
}

function listIntervals(intervals) {
  const body = document.getElementById("interval-rows");
  body.replaceChildren();
  intervals.forEach((interval, n) => {
    const row = document.createElement("tr");
    row.dataset.fromOffset = String(interval.fromOffset);
    row.dataset.toOffset = interval.toOffset === null ? "" : String(interval.toOffset);
    textCell(row, n + 1);
    textCell(row, `${interval.from} (offset ${interval.fromOffset})`);
    eventCell(row, interval.openedBy);
    if (interval.to === null) {
      textCell(row, "still open");
      textCell(row, "");
    } else {
      textCell(row, `${interval.to} (offset ${interval.toOffset})`);
      eventCell(row, interval.closedBy);
    }
    body.appendChild(row);
  });
}

async function askWhen(event) {
  event.preventDefault();
  performance.mark("when-asked");  // the answer's time is measured from here (bench console)
  const fields = formFields(document.getElementById("when-form"));
  const params = new URLSearchParams(fields);
  window.history.replaceState(null, "", `/ui/access?${params.toString()}`);
  let answer;
  try {
    answer = await askHistory("when", fields, "when-status");
  } catch (error) {
    showStatus("when-status", error.message, "failed");
    return;
  }
  asked = fields;
  const box = document.getElementById("timeline-box");
  const status = document.getElementById("when-status");
  status.dataset.offset = String(answer.offset);
  if (answer.intervals.length === 0) {
    domain = null;
    box.hidden = true;
    status.textContent += ` — never ALLOWED in this range (log offset ${answer.offset})`;
    performance.mark("when-drawn");
    return;
  }
  domain = domainOf(answer.intervals, fields);
  drawTimeline(answer.intervals);
  listIntervals(answer.intervals);
  status.textContent += ` — ${answer.intervals.length} ALLOWED interval(s), log offset ${answer.offset}`;
  box.hidden = false;
  performance.mark("when-drawn");  // the intervals are in the document
}

function whoRow(body, decision, principal, deciding, binding) {
  const row = document.createElement("tr");
  textCell(row, decision, decision.toLowerCase());
  textCell(row, principal);
  textCell(row, deciding);
  const cell = textCell(row, binding ? bindingText(binding) : "");
  cell.dataset.binding = binding ? JSON.stringify(binding) : "";
  body.appendChild(row);
}

async function askWho(event) {
  if (domain === null || asked === null) return;
  const svg = document.getElementById("timeline");
  const point = svg.createSVGPoint();
  point.x = event.clientX;
  point.y = event.clientY;
  const x = point.matrixTransform(svg.getScreenCTM().inverse()).x;
  const at = msOf(x);
  for (const old of svg.querySelectorAll(".picked")) old.remove();
  svgElement("line", {x1: xOf(at), x2: xOf(at), y1: 4, y2: AXIS_Y, class: "picked"}, svg);
  const section = document.getElementById("who-section");
  section.hidden = false;
  const shown = document.getElementById("who-at");
  shown.textContent = `${new Date(at).toISOString()} (${at} ms)`;
  shown.dataset.ms = String(at);
  const body = document.getElementById("who-rows");
  body.replaceChildren();
  const fields = {resourceType: asked.resourceType, resourceName: asked.resourceName,
                  operation: asked.operation, host: asked.host || "*", at: String(at)};
  let answer;
  try {
    answer = await askHistory("who", fields, "who-status");
  } catch (error) {
    showStatus("who-status", error.message, "failed");
    return;
  }
  for (const user of answer.superUsers) whoRow(body, "ALLOWED", user, "super.users", null);
  for (const e of answer.allowed) whoRow(body, "ALLOWED", e.principal, e.deciding, e.binding);
  for (const e of answer.denied) whoRow(body, "DENIED", e.principal, e.deciding, e.binding);
  const status = document.getElementById("who-status");
  status.dataset.offset = String(answer.offset);
  status.textContent += ` — at log offset ${answer.offset}` +
    (answer.everyone ? "; every principal not denied is allowed" : "");
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("when-form");
  form.addEventListener("submit", askWhen);
  document.getElementById("timeline").addEventListener("click", (event) => {
    if (event.target.closest("a")) return;  // an edge: its link opens the change
    askWho(event);
  });
  const params = new URLSearchParams(window.location.search);
  let given = false;
  for (const [name, value] of params) {
    if (form.elements[name]) {
      form.elements[name].value = value;
      given = true;
    }
  }
  if (given && form.checkValidity()) form.requestSubmit();
});
