// What every page does with the signed-in session: ask the API (the browser's session
// cookie goes along: same origin, HttpOnly; no token in the page), go to /login when it has
// ended, make a change (it needs the session's CSRF token), and sign out (one).
import { withQuery } from "./paths.js";

// A response's JSON (null for 204); off to /login on 401; otherwise an error whose message
// is the API's detail, and ``status`` its HTTP status.
async function answered(response) {
  if (response.status === 401) Session.signIn();
  if (!response.ok) {
    const body = await response.json().catch(() => ({ detail: response.statusText }));
    const error = new Error(`${response.status} ${body.detail}`);
    error.status = response.status;
    throw error;
  }
  return response.status === 204 ? null : response.json();
}

export const Session = {
  signIn() {
    location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
  },

  async signOut() {
    const session = await (await fetch("/auth/session")).json();
    await fetch("/auth/logout", { method: "POST", headers: { "X-CSRF-Token": session.csrf_token } });
    location.assign(`/login?next=${encodeURIComponent(location.pathname)}`);
  },

  // The JSON at ``path`` with ``params`` (those undefined or null left out); an error whose
  // message is the API's detail, and ``status`` its HTTP status.
  async get(path, params = {}) {
    return answered(await fetch(withQuery(path, params, location.origin)));
  },

  // A change (``method`` on ``path`` with the JSON ``body``) in the session's name, with its
  // CSRF token; its JSON answer (null when none); errors as ``get``'s.
  async change(method, path, body) {
    const session = await (await fetch("/auth/session")).json();
    const response = await fetch(path, {
      method,
      headers: { "X-CSRF-Token": session.csrf_token, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return answered(response);
  },

  // Shows who is signed in in #who and wires #sign-out; false (and off to /login) if nobody is.
  async header() {
    const who = await fetch("/auth/session");
    if (who.status === 401) {
      Session.signIn();
      return false;
    }
    document.getElementById("who").textContent = (await who.json()).user;
    document.getElementById("sign-out").onclick = () => Session.signOut();
    return true;
  },
};
