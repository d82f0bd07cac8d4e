// The addresses the pages read and link to. Pure: no DOM; tests/web/static/paths.test.mjs.

// The run a page is about, from its path (/runs/<run>/...).
export const runIdOf = (pathname) => decodeURIComponent(pathname.split("/")[2] ?? "");

// A run's API, and one attempt's.
export const runApi = (run) => `/api/v1/runs/${encodeURIComponent(run)}`;
export const attemptApi = (run, attempt) => `${runApi(run)}/attempts/${attempt}`;

// A run's pages: its page, Charts and Media tabs, at an attempt.
export const runPage = (run, attempt) => `/runs/${encodeURIComponent(run)}?attempt=${attempt}`;
export const chartsPage = (run, attempt) => `/runs/${encodeURIComponent(run)}/charts${attempt === undefined ? "" : `?attempt=${attempt}`}`;
export const mediaPage = (run, attempt) => `/runs/${encodeURIComponent(run)}/media?attempt=${attempt}`;

// A rich record's bytes (each part of its object key escaped, the slashes kept).
export const mediaUrl = (record) => `/api/v1/media/${record.object_key.split("/").map(encodeURIComponent).join("/")}`;

// ``path`` with ``params`` as its query, those undefined or null left out (an absolute URL
// on ``origin``).
export function withQuery(path, params, origin) {
  const url = new URL(path, origin);
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) for (const each of v) url.searchParams.append(k, each);  // repeated
    else if (v !== undefined && v !== null) url.searchParams.set(k, v);
  }
  return url;
}
