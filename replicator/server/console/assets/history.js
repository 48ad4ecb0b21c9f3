// The history's questions, shared by the Access over time and Changes pages: ask one through the
// node's job (/ui/api/history/ask), show its progress while it runs, and answer the command's own
// JSON document.  The page asks one question at a time: a newer one replaces the earlier on the
// node, and leaving the page cancels the one running.  Values are put in the page as text only.
"use strict";

const POLL_MS = 250;
let runningJob = null;

function showStatus(id, text, state) {
  const element = document.getElementById(id);
  element.textContent = text;
  element.classList.toggle("error", state === "failed" || state === "cancelled");
  element.dataset.phase = state;
}

function progressText(view) {
  const records = view.records === null || view.records === undefined ? "" : `, ${view.records} record(s)`;
  return `${view.question}: ${view.phase}, ${view.elapsedS.toFixed(1)} s${records}`;
}

// Ask `question` with `fields`; progress is written into the element `statusId`.  Resolves with
// the answer, or rejects with the command's own message.
async function askHistory(question, fields, statusId) {
  showStatus(statusId, `${question}: asking…`, "running");
  let view = await consoleCall("/ui/api/history/ask", {question, fields});
  runningJob = view.job;
  const mine = view.job;
  while (view.phase === "running") {
    showStatus(statusId, progressText(view), "running");
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (runningJob !== mine) throw new Error(`${question}: replaced by a newer question`);
    view = await consoleCall("/ui/api/history/status", {job: mine});
  }
  if (runningJob === mine) runningJob = null;
  if (view.phase !== "done") {
    showStatus(statusId, `${question} ${view.phase}: ${view.error}`, view.phase);
    throw new Error(view.error);
  }
  showStatus(statusId, progressText(view), "done");
  return view.answer;
}

// The page goes away: its question is cancelled now (the node would after a while anyway).
window.addEventListener("pagehide", () => {
  if (runningJob !== null) {
    consoleCall("/ui/api/history/cancel", {job: runningJob}, true).catch(() => {});
    runningJob = null;
  }
});

const BINDING_FIELDS = ["resourceType", "resourceName", "patternType", "principal", "host",
                        "operation", "permissionType"];

// A binding of the history's JSON (its seven fields as a list) as the admin API's object.
function bindingObject(fields) {
  const binding = {};
  BINDING_FIELDS.forEach((name, i) => { binding[name] = fields[i]; });
  return binding;
}

function bindingText(fields) {
  const b = bindingObject(fields);
  return `${b.permissionType} ${b.principal} from ${b.host}: ${b.operation} on ` +
    `${b.resourceType} ${b.patternType} '${b.resourceName}'`;
}

function textCell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

// The fields of a form as an object, empty values left out.
function formFields(form) {
  const fields = {};
  for (const element of form.elements) {
    if (element.name && element.value.trim() !== "") fields[element.name] = element.value.trim();
  }
  return fields;
}

// A link to the Changes page showing the change at `event.offset` in the feed.
function changeLink(event) {
  const link = document.createElement("a");
  const params = new URLSearchParams({from: event.time, to: event.time, offset: String(event.offset)});
  link.href = `/ui/changes?${params.toString()}`;
  link.className = "change";
  link.dataset.offset = String(event.offset);
  link.textContent = `offset ${event.offset}, ${event.type} by ${event.actor || "?"} at ${event.time}`;
  return link;
}
