// The Safety page: the node's downgrade check, run once and read back a page at a time (the
// answer stays on the node), with the node's walk shown while it runs; and the plan of a pasted
// ACLs file.  Every value from the node is put in the page as text (textContent).
"use strict";

const LIST_ROWS = 100;
const OUTSIDE_ROWS = 100;
const BINDING_FIELDS = ["resourceType", "resourceName", "patternType", "principal", "host",
                        "operation", "permissionType"];

const call = consoleCall;  // call.js

function say(id, text, failed) {
  const element = document.getElementById(id);
  element.textContent = text;
  element.classList.toggle("error", Boolean(failed));
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text;
  row.appendChild(td);
}

function deltaRow(delta) {
  const row = document.createElement("tr");
  const names = delta.names;
  let resource = `${delta.resourceType} ${names.patternType === "PREFIXED" ? "prefix " : ""}'${names.name}'`;
  const except = [...names.exceptNames, ...names.exceptPrefixes.map((p) => `${p}*`)];
  if (except.length) resource += ` except ${except.join(", ")}`;
  let who = delta.principal;
  if (who === "*") {
    who = delta.principalType ? `any ${delta.principalType}` : "any principal";
    if (delta.principalExcept.length) who += ` but ${delta.principalExcept.join(", ")}`;
  }
  let where = delta.host;
  if (where === "*") {
    where = delta.hostExcept.length ? `any host but ${delta.hostExcept.join(", ")}` : "any host";
  }
  const w = delta.witness;
  cell(row, delta.operation);
  cell(row, resource);
  cell(row, who);
  cell(row, where);
  cell(row, `${w.principal} from ${w.host}: ${w.operation} ${w.resourceType} '${w.resourceName}'`);
  return row;
}

function bindingRow(binding) {
  const row = document.createElement("tr");
  for (const field of BINDING_FIELDS) cell(row, binding[field]);
  return row;
}

// --- the downgrade check --------------------------------------------------------------------------

let check = null;

function progressText(progress) {
  if (!progress || !progress.running) return "Waiting for the node's walk to start…";
  const total = progress.total === null || progress.total === undefined ? "?" : progress.total;
  return `The node's walk: ${progress.read} of ${total} bindings read, ` +
    `${(progress.elapsedMs / 1000).toFixed(1)} s`;
}

async function showList(name, skip) {
  const box = document.querySelector(`.witness-list[data-list="${name}"]`);
  const page = await call("/ui/api/safety/downgrade/page",
                          {check, list: name, skip, limit: LIST_ROWS});
  const body = box.querySelector("tbody");
  body.replaceChildren(...page.items.map(name === "ignored" ? bindingRow : deltaRow));
  box.querySelector(".count").textContent = String(page.total);
  const last = page.skip + page.items.length;
  box.querySelector(".shown").textContent = page.items.length
    ? `${page.skip + 1}–${last} of ${page.total}` : "none";
  const previous = box.querySelector(".previous");
  const next = box.querySelector(".next");
  previous.hidden = page.skip === 0;
  next.hidden = last >= page.total;
  previous.onclick = () => showList(name, Math.max(0, page.skip - LIST_ROWS));
  next.onclick = () => showList(name, last);
  box.dataset.skip = String(page.skip);
}

async function follow(status) {
  while (status.state === "running") {
    say("downgrade-status", progressText(status.progress));
    await new Promise((resolve) => setTimeout(resolve, 250));
    status = await call("/ui/api/safety/downgrade/status", {check: status.check, waitS: 0.25});
  }
  if (status.state === "failed") {
    const error = status.error || {};
    say("downgrade-status", `${error.error || status.status}: ${error.message || ""}`, true);
    return;
  }
  const verdict = document.getElementById("verdict");
  verdict.textContent = status.safe
    ? `SAFE: no access would widen on event format v${status.to}`
    : `UNSAFE: access would widen on event format v${status.to}`;
  verdict.className = status.safe ? "safe" : "unsafe";
  verdict.dataset.safe = String(status.safe);
  for (const name of ["widened", "narrowed", "ignored"]) await showList(name, 0);
  document.getElementById("downgrade-answer").hidden = false;
  say("downgrade-status", `${status.counts.ignored} binding(s) need a newer format; ` +
      `judged at log offset ${status.offset}`);
  document.getElementById("downgrade-status").dataset.offset = String(status.offset);
}

async function startCheck(event) {
  event.preventDefault();
  const to = Number(document.getElementById("downgrade").elements.to.value);
  document.getElementById("downgrade-answer").hidden = true;
  delete document.getElementById("downgrade-status").dataset.offset;
  say("downgrade-status", "Asking the node…");
  try {
    const status = await call("/ui/api/safety/downgrade", {to});
    check = status.check;
    await follow(status);
  } catch (error) {
    say("downgrade-status", error.message, true);
  }
}

// --- the plan of a file -----------------------------------------------------------------------------

async function plan(event) {
  event.preventDefault();
  const form = document.getElementById("plan");
  document.getElementById("plan-answer").hidden = true;
  delete document.getElementById("plan-status").dataset.offset;
  say("plan-status", "Planning…");
  let answer;
  try {
    answer = await call("/ui/api/safety/plan",
                        {text: form.elements.text.value, source: form.elements.source.value});
  } catch (error) {
    say("plan-status", error.message, true);
    return;
  }
  const fill = (id, rows, render) => {
    document.querySelector(`#${id} tbody`).replaceChildren(...rows.map(render));
  };
  fill("plan-add", answer.add, bindingRow);
  fill("plan-remove", answer.remove, bindingRow);
  fill("plan-widened", answer.widened, deltaRow);
  fill("plan-narrowed", answer.narrowed, deltaRow);
  document.getElementById("add-count").textContent = String(answer.add.length);
  document.getElementById("remove-count").textContent = String(answer.remove.length);
  document.getElementById("plan-widened-count").textContent = String(answer.widened.length);
  document.getElementById("plan-narrowed-count").textContent = String(answer.narrowed.length);
  const judged = answer.accessJudgedAt === null ? "" : `; access judged at offset ${answer.accessJudgedAt}`;
  say("plan-status", answer.changes
    ? `Plan: ${answer.add.length} to add, ${answer.remove.length} to remove (planned at log offset ` +
      `${answer.offset}${judged})`
    : `No changes: the ${answer.counts.liveInScope} live binding(s) in scope are the declared ones ` +
      `(planned at log offset ${answer.offset})`);
  document.getElementById("plan-status").dataset.offset = String(answer.offset);
  document.getElementById("plan-answer").hidden = false;
}

// --- the drift of a file: `aclstore drift -f FILE`, a job on the node the page polls ----------

async function drift() {
  const form = document.getElementById("plan");
  document.getElementById("drift-answer").hidden = true;
  delete document.getElementById("drift-status").dataset.offset;
  say("drift-status", "Asking…");
  try {
    let view = await call("/ui/api/safety/drift",
                          {text: form.elements.text.value, source: form.elements.source.value});
    while (view.phase === "running") {
      say("drift-status", `Reading the change log: ${view.elapsedS.toFixed(1)} s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
      view = await call("/ui/api/history/status", {job: view.job});
    }
    if (view.phase !== "done") {
      say("drift-status", `${view.phase}: ${view.error || ""}`, true);
      return;
    }
    const answer = view.answer;
    const rows = [];
    for (const kind of ["undeclared", "missing", "outside"]) {
      // outside every scope is the rest of the state: its first rows and its count only
      const shown = kind === "outside" ? answer[kind].slice(0, OUTSIDE_ROWS) : answer[kind];
      for (const d of shown) {
        const row = bindingRow(d.binding);
        const first = document.createElement("td");
        first.textContent = kind;
        row.insertBefore(first, row.firstChild);
        cell(row, d.offset === null ? "" : String(d.offset));
        cell(row, d.actor === null ? "" : d.actor);
        cell(row, d.time === null ? "" : d.time);
        rows.push(row);
      }
    }
    document.querySelector("#drift-rows tbody").replaceChildren(...rows);
    const inScope = answer.undeclared.length + answer.missing.length;
    const outside = answer.outside.length;
    const apart = outside > OUTSIDE_ROWS
      ? `; ${outside} binding(s) outside every scope, the first ${OUTSIDE_ROWS} shown`
      : `; ${outside} binding(s) outside every scope`;
    say("drift-status", (inScope
      ? `Drift in scope: ${inScope} (read to log offset ${answer.offset})`
      : `No drift in scope (read to log offset ${answer.offset})`) + apart);
    document.getElementById("drift-status").dataset.outside = String(outside);
    document.getElementById("drift-status").dataset.offset = String(answer.offset);
    document.getElementById("drift-answer").hidden = false;
  } catch (error) {
    say("drift-status", error.message, true);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("drift-button").addEventListener("click", drift);
  document.getElementById("downgrade").addEventListener("submit", startCheck);
  document.getElementById("plan").addEventListener("submit", plan);
});
