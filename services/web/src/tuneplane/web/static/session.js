// What every page does with the signed-in session: ask the API (the browser's session
// cookie goes along: same origin, HttpOnly; no token in the page), go to /login when it has
// ended, and sign out (a change: it needs the session's CSRF token).
import { withQuery } from "./paths.js";

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
    const response = await fetch(withQuery(path, params, location.origin));
    if (response.status === 401) Session.signIn();
    if (!response.ok) {
      const body = await response.json().catch(() => ({ detail: response.statusText }));
      const error = new Error(`${response.status} ${body.detail}`);
      error.status = response.status;
      throw error;
    }
    return response.json();
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
