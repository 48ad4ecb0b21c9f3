// The Audit page: `aclstore audit report` asked through the node's query path (a job the page
// polls, with its elapsed time), then its document shown: the denials over time (the command's
// own plot), the new denials each with the change that caused it (linked to Changes), the
// unused grants and the most denied principals and resources.  Values go in as text.
"use strict";

const call = consoleCall;  // call.js

function say(text, failed) {
  const element = document.getElementById("report-status");
  element.textContent = text;
  element.classList.toggle("error", Boolean(failed));
}

function row(values) {
  const tr = document.createElement("tr");
  for (const value of values) {
    const td = document.createElement("td");
    if (value instanceof Node) td.appendChild(value); else td.textContent = value === null ? "" : String(value);
    tr.appendChild(td);
  }
  return tr;
}

function fill(id, rows) {
  document.querySelector(`#${id} tbody`).replaceChildren(...rows);
}

function changeText(cause) {
  if (cause.binding) return `${cause.type} ${cause.binding.join(", ")}`;
  return `${cause.type} ${cause.config.name}=${cause.config.value === null ? "" : cause.config.value}`;
}

function causeLink(cause) {
  const link = document.createElement("a");
  link.href = `/ui/changes?offset=${encodeURIComponent(cause.offset)}`;
  link.textContent = `offset ${cause.offset} (${cause.time})`;
  link.className = "cause";
  return link;
}

function show(job, report) {
  const totals = report.totals;
  document.getElementById("totals").textContent =
    `Decisions: ALLOWED ${totals.ALLOWED}, DENIED ${totals.DENIED}, through log offset ${report.throughOffset}`;
  document.getElementById("plot").src = `/ui/api/audit/plot?job=${encodeURIComponent(job)}`;
  fill("new-denials", report.newDenials.map((d) => {
    const cause = d.cause;
    return row([d.time, d.principal, `${d.resourceType} '${d.resourceName}'`, d.operation, d.rule,
                d.causeStatus, cause ? changeText(cause) : "", cause ? cause.actor : "",
                cause ? causeLink(cause) : ""]);
  }));
  document.getElementById("new-count").textContent = String(report.newDenials.length);
  fill("unused", report.unusedGrants.map((g) => row([...g.binding, g.grantedOffset, g.granted,
                                                     g.grantedBy, g.lastUsed])));
  document.getElementById("unused-count").textContent = String(report.unusedGrants.length);
  fill("top-principals", report.topDeniedPrincipals.map((p) => row([p.principal, p.denials])));
  fill("top-resources", report.topDeniedResources.map((r) => row([r.resourceType, r.resourceName,
                                                                   r.denials])));
  document.getElementById("report-answer").hidden = false;
}

async function report(event) {
  event.preventDefault();
  const form = document.getElementById("report");
  const fields = {since: form.elements.since.value};
  for (const name of ["top", "windowDays"]) {
    if (form.elements[name].value !== "") fields[name] = form.elements[name].value;
  }
  document.getElementById("report-answer").hidden = true;
  delete document.getElementById("report-status").dataset.done;
  say("Asking…");
  try {
    let view = await call("/ui/api/audit/ask", {fields});
    while (view.phase === "running") {
      say(`Running on Spark: ${view.elapsedS.toFixed(1)} s`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      view = await call("/ui/api/history/status", {job: view.job});
    }
    if (view.phase !== "done") {
      say(`${view.phase}: ${view.error || ""}`, true);
      return;
    }
    show(view.job, view.answer);
    say(`Answered in ${view.elapsedS.toFixed(1)} s`);
    document.getElementById("report-status").dataset.done = "true";
  } catch (error) {
    say(error.message, true);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("report").addEventListener("submit", report);
});
