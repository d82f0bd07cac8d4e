// paths.js: the addresses the pages read and link to.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { attemptApi, chartsPage, mediaPage, mediaUrl, runApi, runIdOf, runPage, withQuery } from
  "../../../services/web/src/tuneplane/web/static/paths.js";

describe("paths", () => {
  test("the run of a page's path, unescaped", () => {
    assert.equal(runIdOf("/runs/r1/charts"), "r1");
    assert.equal(runIdOf("/runs/a%2Fb%20c"), "a/b c");
    assert.equal(runIdOf("/runs"), "");
  });

  test("a run id is escaped where it goes into a path", () => {
    assert.equal(runApi("a/b c"), "/api/v1/runs/a%2Fb%20c");
    assert.equal(attemptApi("a/b", 2), "/api/v1/runs/a%2Fb/attempts/2");
    assert.equal(runPage("a/b", 2), "/runs/a%2Fb?attempt=2");
    assert.equal(chartsPage("a/b", 2), "/runs/a%2Fb/charts?attempt=2");
    assert.equal(chartsPage("r1"), "/runs/r1/charts");
    assert.equal(mediaPage("r1", 3), "/runs/r1/media?attempt=3");
  });

  test("a record's bytes: each part of the object key escaped, the slashes kept", () => {
    assert.equal(mediaUrl({ object_key: "rich/r 1/a#b/0.png" }), "/api/v1/media/rich/r%201/a%23b/0.png");
  });

  test("a query without what is undefined or null; 0 and empty strings kept", () => {
    const url = withQuery("/api/v1/x?keep=1", { a: 0, b: "", c: undefined, d: null, e: "x y" }, "http://h");
    assert.equal(url.href, "http://h/api/v1/x?keep=1&a=0&b=&e=x+y");
  });
});
