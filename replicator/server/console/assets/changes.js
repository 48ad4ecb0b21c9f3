// The Changes page: the history's feed (who changed what, when), the diff between two points,
// and a restore previewed as the command line's dry run, then written as one request guarded by
// the offset the plan was made at.  The questions are the command line's (history.js).
"use strict";

const FEED_ROWS = 100;
let feed = [];
let feedSkip = 0;
let plan = null;

function eventWhat(event) {
  if (event.binding) return bindingText(event.binding);
  const value = event.config.value === null ? "(default)" : event.config.value;
  return `${event.config.name} = ${value}`;
}

function showFeedPage() {
  const body = document.getElementById("feed-rows");
  body.replaceChildren();
  const wanted = new URLSearchParams(window.location.search).get("offset");
  for (const event of feed.slice(feedSkip, feedSkip + FEED_ROWS)) {
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
  const previous = document.getElementById("feed-previous");
  const next = document.getElementById("feed-next");
  previous.hidden = feedSkip === 0;
  next.hidden = feedSkip + FEED_ROWS >= feed.length;
  const shown = document.getElementById("feed-status");
  shown.dataset.count = String(feed.length);
  const last = Math.min(feedSkip + FEED_ROWS, feed.length);
  shown.dataset.page = `${feedSkip + 1}-${last}`;
}

async function askFeed(event) {
  if (event) event.preventDefault();
  const fields = formFields(document.getElementById("feed-form"));
  try {
    feed = await askHistory("events", fields, "feed-status");
  } catch (error) {
    showStatus("feed-status", error.message, "failed");
    return;
  }
  feedSkip = 0;
  const wanted = new URLSearchParams(window.location.search).get("offset");
  const at = feed.findIndex((e) => String(e.offset) === wanted);
  if (at >= 0) feedSkip = at - (at % FEED_ROWS);
  showFeedPage();
  const status = document.getElementById("feed-status");
  status.textContent += feed.length ? ` — ${feed.length} change(s)` : " — no changes in this range";
  const highlighted = document.querySelector("#feed-rows tr.highlight");
  if (highlighted) highlighted.scrollIntoView({block: "center"});
}

function pageFeed(step) {
  return (event) => {
    event.preventDefault();
    feedSkip = Math.max(0, Math.min(feedSkip + step, Math.max(0, feed.length - 1)));
    showFeedPage();
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
  document.getElementById("feed-previous").addEventListener("click", pageFeed(-FEED_ROWS));
  document.getElementById("feed-next").addEventListener("click", pageFeed(FEED_ROWS));
  document.getElementById("diff-form").addEventListener("submit", askDiff);
  document.getElementById("restore-form").addEventListener("submit", previewRestore);
  document.getElementById("restore-confirm").addEventListener("click", confirmRestore);
  document.getElementById("restore-cancel").addEventListener("click", () => {
    plan = null;
    document.getElementById("plan").hidden = true;
  });
  if (params.get("feed") !== "off") askFeed();
});
