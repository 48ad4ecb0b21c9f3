// The Changes page: the history's feed (who changed what, when), the diff between two points,
// and a restore previewed as the command line's dry run, then written as one request guarded by
// the offset the plan was made at.  The questions are the command line's (history.js); the feed
// is asked a page at a time by its cursor, as `history events --limit N --after OFFSET` pages it.
"use strict";

// The feed is asked a page at a time (history events --limit --after): never a whole range.
// `rows` in the address sets the page's size (1 to 1000).
const FEED_ROWS = feedRows();
let feedFields = {};
let feedCursors = [null];  // the cursor (`after`) of each page shown so far: back is one pop
let feedNext = null;       // the answer's `next`: the cursor of the page after this one
let plan = null;

function feedRows() {
  const asked = Number(new URLSearchParams(window.location.search).get("rows"));
  return Number.isInteger(asked) && asked >= 1 && asked <= 1000 ? asked : 100;
}

function eventWhat(event) {
  if (event.binding) return bindingText(event.binding);
  const value = event.config.value === null ? "(default)" : event.config.value;
  return `${event.config.name} = ${value}`;
}

function showFeedPage(events) {
  const body = document.getElementById("feed-rows");
  body.replaceChildren();
  const wanted = new URLSearchParams(window.location.search).get("offset");
  for (const event of events) {
    const row = document.createElement("tr");
    row.id = `event-${event.offset}`;
    row.dataset.offset = String(event.offset);
    textCell(row, event.offset);
    textCell(row, event.time);
    textCell(row, event.type);
    textCell(row, event.actor);
    const what = textCell(row, eventWhat(event));
    what.dataset.binding = event.binding ? JSON.stringify(event.binding) : "";
    if (wanted !== null && String(event.offset) === wanted) row.classList.add("highlight");
    body.appendChild(row);
  }
  const cursor = feedCursors[feedCursors.length - 1];
  document.getElementById("feed-first").hidden = cursor === null;
  document.getElementById("feed-previous").hidden = feedCursors.length < 2;
  document.getElementById("feed-next").hidden = feedNext === null;
  const shown = document.getElementById("feed-status");
  shown.dataset.count = String(events.length);
  shown.dataset.page = String(feedCursors.length);
  shown.dataset.after = cursor === null ? "" : String(cursor);
  shown.dataset.next = feedNext === null ? "" : String(feedNext);
}

// Ask the page after `cursor` (null: the first) of the range in `feedFields`; whether it came.
async function askFeedPage(cursor) {
  const fields = {...feedFields, limit: FEED_ROWS};
  if (cursor !== null) fields.after = cursor;
  performance.clearMarks("feed-asked");
  performance.clearMarks("feed-shown");
  performance.mark("feed-asked");  // the page's time is measured from here (bench console)
  let answer;
  try {
    answer = await askHistory("events", fields, "feed-status");
  } catch (error) {
    showStatus("feed-status", error.message, "failed");
    return false;
  }
  feedNext = answer.next;
  showFeedPage(answer.events);
  performance.mark("feed-shown");  // the page's rows are in the document
  const status = document.getElementById("feed-status");
  const events = answer.events;
  status.textContent += events.length
    ? ` — page ${feedCursors.length}: offsets ${events[0].offset} to ${events[events.length - 1].offset}` +
      (feedNext === null ? ", the last in this range" : "")
    : " — no changes in this range";
  const highlighted = document.querySelector("#feed-rows tr.highlight");
  if (highlighted) highlighted.scrollIntoView({block: "center"});
  return true;
}

async function askFeed(event) {
  if (event) event.preventDefault();
  feedFields = formFields(document.getElementById("feed-form"));
  feedCursors = [null];
  feedNext = null;
  await askFeedPage(null);
}

let feedPaging = false;  // a page link's question is running: further clicks wait for it

function pageFeed(move) {
  return async (event) => {
    event.preventDefault();
    if (feedPaging) return;
    const shown = feedCursors.slice();
    if (move === "next" && feedNext !== null) feedCursors.push(feedNext);
    else if (move === "previous" && feedCursors.length > 1) feedCursors.pop();
    else if (move === "first") feedCursors = [null];
    else return;
    feedPaging = true;
    try {
      // a page that did not come keeps the cursors of the one still shown
      if (!await askFeedPage(feedCursors[feedCursors.length - 1])) feedCursors = shown;
    } finally {
      feedPaging = false;
    }
  };
}

function changeRow(body, action, text, binding) {
  const row = document.createElement("tr");
  row.dataset.action = action;
  textCell(row, action);
  const cell = textCell(row, text);
  cell.dataset.binding = binding ? JSON.stringify(binding) : "";
  body.appendChild(row);
}

async function askDiff(event) {
  event.preventDefault();
  const fields = formFields(document.getElementById("diff-form"));
  const body = document.getElementById("diff-rows");
  body.replaceChildren();
  let diff;
  try {
    diff = await askHistory("diff", fields, "diff-status");
  } catch (error) {
    showStatus("diff-status", error.message, "failed");
    return;
  }
  for (const b of diff.added) changeRow(body, "added", bindingText(b), b);
  for (const b of diff.removed) changeRow(body, "removed", bindingText(b), b);
  for (const s of diff.settings) {
    changeRow(body, "setting", `${s.name}: ${s.old === null ? "(default)" : s.old} → ` +
      `${s.new === null ? "(default)" : s.new}`, null);
  }
  const status = document.getElementById("diff-status");
  status.textContent += ` — from offset ${diff.fromOffset} to offset ${diff.toOffset}`;
}

async function previewRestore(event) {
  event.preventDefault();
  plan = null;
  document.getElementById("plan").hidden = true;
  document.getElementById("restore-result").textContent = "";
  const fields = formFields(document.getElementById("restore-form"));
  let answer;
  try {
    answer = await askHistory("restore", fields, "restore-status");
  } catch (error) {
    showStatus("restore-status", error.message, "failed");
    return;
  }
  const body = document.getElementById("plan-rows");
  body.replaceChildren();
  for (const b of answer.deletes) changeRow(body, "delete", bindingText(b), b);
  for (const b of answer.creates) changeRow(body, "create", bindingText(b), b);
  for (const [name, value] of Object.entries(answer.settings)) {
    changeRow(body, "set", `${name} = ${value === null ? "(default)" : value}`, null);
  }
  document.getElementById("plan-at").textContent = String(answer.atOffset);
  document.getElementById("plan-offset").textContent = String(answer.offset);
  document.getElementById("plan-guard").textContent = String(answer.offset);
  const nothing = !answer.deletes.length && !answer.creates.length && !Object.keys(answer.settings).length;
  document.getElementById("restore-confirm").hidden = nothing;
  if (nothing) {
    changeRow(body, "none", "the live state is already the state asked", null);
  } else {
    plan = answer;
  }
  document.getElementById("plan").hidden = false;
}

async function confirmRestore() {
  if (plan === null) return;
  const asked = plan;
  plan = null;
  document.getElementById("plan").hidden = true;
  const request = {
    deletes: asked.deletes.map(bindingObject),
    creates: asked.creates.map(bindingObject),
    configs: asked.settings,
    scope: {all: true},
    ifScopeUnchangedSince: asked.offset,
  };
  const result = document.getElementById("restore-result");
  let answer;
  try {
    answer = await consoleCall("/ui/api/v1/acls/alter", request);
  } catch (error) {
    result.textContent = `Not restored: ${error.message}`;
    result.classList.add("error");
    result.dataset.outcome = "refused";
    return;
  }
  const failed = [...answer.deleteResults, ...answer.createResults].filter((r) => r.error);
  if (failed.length) {
    result.textContent = failed.map((r) => `${r.error.error}: ${r.error.message}`).join("; ");
    result.classList.add("error");
    result.dataset.outcome = "refused";
    return;
  }
  result.classList.remove("error");
  result.textContent = `Restored to offset ${asked.atOffset}; the log is at offset `;
  const offset = document.createElement("span");
  offset.id = "restore-offset";
  offset.textContent = String(answer.offset);
  result.appendChild(offset);
  result.dataset.outcome = "written";
}

document.addEventListener("DOMContentLoaded", () => {
  const params = new URLSearchParams(window.location.search);
  const form = document.getElementById("feed-form");
  for (const name of ["from", "to"]) {
    if (params.get(name) !== null) form.elements[name].value = params.get(name);
  }
  form.addEventListener("submit", askFeed);
  document.getElementById("feed-first").addEventListener("click", pageFeed("first"));
  document.getElementById("feed-previous").addEventListener("click", pageFeed("previous"));
  document.getElementById("feed-next").addEventListener("click", pageFeed("next"));
  document.getElementById("diff-form").addEventListener("submit", askDiff);
  document.getElementById("restore-form").addEventListener("submit", previewRestore);
  document.getElementById("restore-confirm").addEventListener("click", confirmRestore);
  document.getElementById("restore-cancel").addEventListener("click", () => {
    plan = null;
    document.getElementById("plan").hidden = true;
  });
  if (params.get("feed") !== "off") {
    // a link to one change (?offset=N): its page starts at it; "First page" shows what precedes
    const wanted = Number(params.get("offset"));
    feedFields = formFields(form);
    feedCursors = [Number.isInteger(wanted) && wanted > 0 ? wanted - 1 : null];
    askFeedPage(feedCursors[0]);
  }
});
