// Every console page's call to the node: a POST of JSON with the console's header (which a form of
// another site cannot send), the session's cookie, and the answer's JSON; a 401 (the session
// ended) goes back to the login page, any other refusal is an Error naming the node's error.
"use strict";

async function consoleCall(path, body, keepalive) {
  const response = await fetch(path, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-Aclstore-Console": "1"},
    body: JSON.stringify(body),
    credentials: "same-origin",
    keepalive: Boolean(keepalive),
  });
  if (response.status === 401) {
    window.location.assign("/ui/login");
    throw new Error("the session has ended: log in again");
  }
  const answer = await response.json();
  if (!response.ok) {
    throw new Error(`${answer.error || response.status}: ${answer.message || ""}`);
  }
  return answer;
}
