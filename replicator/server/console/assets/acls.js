// The ACLs page: a page of the node's listing for the filter in the address, a next link, and a
// change previewed with the node's dry run before it is written.  Every value from the node is
// put in the page as text (textContent), never as markup.
"use strict";

const PAGE_ROWS = 100;
const ROW_FIELDS = ["resourceType", "resourceName", "patternType", "principal", "host",
                    "operation", "permissionType"];
const FILTER_FIELDS = ["principal", "resourceType", "resourceName", "patternType"];

const call = consoleCall;  // call.js

function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function say(id, text, failed) {
  const element = document.getElementById(id);
  element.textContent = text;
  element.classList.toggle("error", Boolean(failed));
}

// --- the listing --------------------------------------------------------------------------------

// A page's link carries its cursor: ``after``, the last row before the page (the node's listing
// resumes after it, so a deep page costs one page), and ``skip``, which only numbers the rows.
// The cursors of the pages this tab has shown are kept, so that "previous" carries one too.
function cursorKey(params, skip) {
  const filter = new URLSearchParams();
  for (const name of FILTER_FIELDS) {
    if (params.get(name) !== null) filter.set(name, params.get(name));
  }
  return `acls-cursor:${filter.toString()}:${skip}`;
}

function pageLink(id, params, skip, after) {
  const link = document.getElementById(id);
  const next = new URLSearchParams(params);
  next.set("skip", String(skip));
  next.delete("minOffset");
  if (after) next.set("after", after); else next.delete("after");
  link.href = `/ui/acls?${next.toString()}`;
  link.hidden = false;
}

function rowCursor(acl) {
  const binding = {};
  for (const field of ROW_FIELDS) binding[field] = acl[field];
  return JSON.stringify(binding);
}

async function loadListing(minOffset) {
  const params = new URLSearchParams(window.location.search);
  const form = document.getElementById("filter");
  const asked = {limit: PAGE_ROWS};
  for (const name of FILTER_FIELDS) {
    const value = params.get(name);
    if (value !== null) {
      form.elements[name].value = value;
      asked[name] = value;
    }
  }
  const skip = Number.parseInt(params.get("skip") || "0", 10);
  asked.skip = Number.isNaN(skip) || skip < 0 ? 0 : skip;
  const after = params.get("after");
  if (after !== null) {
    try {
      asked.after = JSON.parse(after);
    } catch (error) {
      say("listing-status", `after: not a row of the listing (${error.message}); open the first page`, true);
      return;
    }
  }
  const wanted = minOffset !== undefined ? minOffset : params.get("minOffset");
  if (wanted !== null && wanted !== undefined) asked.minOffset = Number(wanted);
  say("listing-status", "Listing…");
  let page;
  try {
    page = await call("/ui/api/acls/page", asked);
  } catch (error) {
    say("listing-status", error.message, true);
    return;
  }
  const body = document.getElementById("acl-rows");
  body.replaceChildren();
  for (const acl of page.rows) {
    const row = document.createElement("tr");
    for (const field of ROW_FIELDS) {
      const kind = field === "permissionType" ? acl[field].toLowerCase() : "";
      cell(row, acl[field], kind);
    }
    const actions = document.createElement("td");
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove…";
    remove.addEventListener("click", () => prepareRemove(acl));
    actions.appendChild(remove);
    row.appendChild(actions);
    body.appendChild(row);
  }
  const first = page.rows.length ? page.skip + 1 : page.skip;
  const last = page.skip + page.rows.length;
  const total = page.more ? "" : ` of ${last}`;
  say("listing-status", page.rows.length
      ? `ACLs ${first}–${last}${total}, at log offset ${page.offset}`
      : `No ACLs match, at log offset ${page.offset}`);
  document.getElementById("listing-status").dataset.offset = String(page.offset);
  performance.mark("acls-listed");  // the page's rows are in the document (bench console reads it)
  document.getElementById("next-page").hidden = true;
  document.getElementById("previous-page").hidden = true;
  try {
    if (after !== null) sessionStorage.setItem(cursorKey(params, page.skip), after);
  } catch (error) { /* no storage: "previous" then goes back to the first page */ }
  if (page.more) {
    pageLink("next-page", params, page.skip + page.rows.length, rowCursor(page.rows[page.rows.length - 1]));
  }
  if (page.skip > 0) {
    const back = Math.max(0, page.skip - PAGE_ROWS);
    let cursor = null;
    try { cursor = back > 0 ? sessionStorage.getItem(cursorKey(params, back)) : null; } catch (error) {}
    pageLink("previous-page", params, cursor === null ? 0 : back, cursor);
  }
}

// --- a change: preview, then confirm --------------------------------------------------------------

let pending = null;

function prepareRemove(acl) {
  const form = document.getElementById("change");
  form.elements.action.value = "remove";
  for (const field of ROW_FIELDS) form.elements[field].value = acl[field];
  form.scrollIntoView();
}

function bindingOf(form) {
  const binding = {};
  for (const field of ROW_FIELDS) binding[field] = form.elements[field].value.trim();
  return binding;
}

function resourceText(delta) {
  const names = delta.names;
  let text = `${delta.resourceType} ${names.patternType === "PREFIXED" ? "prefix " : ""}'${names.name}'`;
  const except = [...names.exceptNames, ...names.exceptPrefixes.map((p) => `${p}*`)];
  if (except.length) text += ` except ${except.join(", ")}`;
  return text;
}

function whoText(delta) {
  if (delta.principal !== "*") return delta.principal;
  let text = delta.principalType ? `any ${delta.principalType}` : "any principal";
  if (delta.principalExcept.length) text += ` but ${delta.principalExcept.join(", ")}`;
  return text;
}

function whereText(delta) {
  if (delta.host !== "*") return delta.host;
  return delta.hostExcept.length ? `any host but ${delta.hostExcept.join(", ")}` : "any host";
}

function showDeltas(id, deltas) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren();
  for (const delta of deltas) {
    const row = document.createElement("tr");
    const w = delta.witness;
    cell(row, delta.operation);
    cell(row, resourceText(delta));
    cell(row, whoText(delta));
    cell(row, whereText(delta));
    cell(row, `${w.principal} from ${w.host}: ${w.operation} ${w.resourceType} '${w.resourceName}'`);
    body.appendChild(row);
  }
  document.getElementById(`${id}-count`).textContent = String(deltas.length);
}

async function preview(event) {
  event.preventDefault();
  const form = document.getElementById("change");
  const binding = bindingOf(form);
  const action = form.elements.action.value;
  const change = action === "add" ? {creates: [binding]} : {deletes: [binding]};
  say("change-result", "Asking the node for the dry run…");
  let answer;
  try {
    answer = await call("/ui/api/v1/acls/dry-run", change);
  } catch (error) {
    say("change-result", error.message, true);
    return;
  }
  pending = {action, binding, previewOffset: answer.offset};
  document.getElementById("preview-offset").textContent = String(answer.offset);
  say("preview-summary",
      `${answer.added.length} ACL(s) to add, ${answer.removed.length} to remove`);
  const list = document.getElementById("preview-bindings");
  list.replaceChildren();
  for (const [sign, bindings] of [["+", answer.added], ["−", answer.removed]]) {
    for (const b of bindings) {
      const item = document.createElement("li");
      item.textContent = `${sign} ${b.permissionType} ${b.principal} from ${b.host}: ` +
        `${b.operation} on ${b.resourceType} ${b.patternType} '${b.resourceName}'`;
      list.appendChild(item);
    }
  }
  showDeltas("widened", answer.widened);
  showDeltas("narrowed", answer.narrowed);
  say("change-result", "");
  document.getElementById("preview").hidden = false;
}

function itemErrors(results) {
  return results.filter((r) => r.error).map((r) => `${r.error.error}: ${r.error.message}`);
}

async function confirmChange() {
  if (pending === null) return;
  const {action, binding, previewOffset} = pending;
  pending = null;
  document.getElementById("preview").hidden = true;
  let answer;
  try {
    // written only if nothing the preview judged changed since its offset (409 otherwise,
    // naming each change: preview again)
    answer = await call("/ui/api/acls/change", {action, binding, previewOffset});
  } catch (error) {
    say("change-result", `${error.message} (nothing was written)`, true);
    return;
  }
  const errors = itemErrors([...answer.deleteResults, ...answer.createResults]);
  const result = document.getElementById("change-result");
  if (errors.length) {
    say("change-result", errors.join("; "), true);
    return;
  }
  const written = answer.recordsWritten === 0 ? "Nothing to write (already so)" : "Written";
  result.textContent = `${written}; the log is at offset `;
  const offset = document.createElement("span");
  offset.id = "write-offset";
  offset.textContent = String(answer.offset);
  result.appendChild(offset);
  result.classList.remove("error");
  await loadListing(answer.offset);
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("change").addEventListener("submit", preview);
  document.getElementById("confirm").addEventListener("click", confirmChange);
  document.getElementById("cancel").addEventListener("click", () => {
    pending = null;
    document.getElementById("preview").hidden = true;
  });
  loadListing();
});
