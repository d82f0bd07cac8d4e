// runsview.js: the runs list's view read from and written to its URL, and its run-table query.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULTS, columnLabel, dayStart, filterParam, nextDayStart, pageOf, parseView, pathFor, sortBy,
  tableParams, withColumn, withoutColumn } from "../../../services/web/src/tuneplane/web/static/runsview.js";

const defaults = { q: "", project: "", state: "", time: "created", since: "", until: "", size: "50",
  sort: "created", dir: "desc", page: 1, col: [], filter: [], parallel: false };

describe("parseView", () => {
  test("defaults", () => {
    assert.deepEqual(parseView(""), defaults);
  });

  test("a size not offered is the default; the page is a whole number from 1", () => {
    assert.equal(parseView("?size=7").size, "50");
    assert.equal(parseView("?size=200").size, "200");
    for (const [page, want] of [["3", 3], ["abc", 1], ["-3", 1], ["0", 1], ["2.7", 2]]) {
      assert.equal(parseView(`?page=${page}`).page, want, page);
    }
  });
});

describe("pathFor", () => {
  test("the defaults are left out of the URL", () => {
    assert.equal(pathFor(defaults, {}), "/runs");
    assert.equal(pathFor(defaults, { sort: DEFAULTS.sort }), "/runs");
  });

  test("a change goes back to the first page; a change of page does not", () => {
    const on3 = { ...defaults, page: 3 };
    assert.equal(pathFor(on3, { state: "running" }), "/runs?state=running");
    assert.equal(pathFor(on3, { page: 4 }), "/runs?page=4");
    assert.equal(pathFor(on3, { q: "x" }, { resetPage: false }), "/runs?q=x&page=3");
  });

  test("what it writes reads back", () => {
    const path = pathFor(defaults, { q: "a b&c", project: "vision", since: "2025-01-01", sort: "points", dir: "asc" });
    assert.deepEqual(parseView(path.slice("/runs".length)),
      { ...defaults, q: "a b&c", project: "vision", since: "2025-01-01", sort: "points", dir: "asc" });
  });
});

describe("tableParams", () => {
  test("the defaults: sort, time, size and offset only", () => {
    assert.deepEqual(tableParams(defaults), { time: "created", sort: "created", dir: "desc", limit: "50", offset: "0" });
  });

  test("the search trimmed, the days as UTC instants with the 'to' day included, the page as an offset", () => {
    const v = { ...defaults, q: "  resnet ", project: "vision", state: "failed", time: "last_telemetry",
      since: "2024-02-28", until: "2024-02-28", size: "25", page: 3 };
    assert.deepEqual(tableParams(v), { q: "resnet", project: "vision", state: "failed", time: "last_telemetry",
      since: "2024-02-28T00:00:00Z", until: "2024-02-29T00:00:00.000Z", sort: "created", dir: "desc",
      limit: "25", offset: "50" });
  });

  test("a search of spaces only is no search", () => {
    assert.equal("q" in tableParams({ ...defaults, q: "   " }), false);
  });

  test("the next day across a month and a year", () => {
    assert.equal(dayStart("2025-03-09"), "2025-03-09T00:00:00Z");
    assert.equal(nextDayStart("2024-02-29"), "2024-03-01T00:00:00.000Z");
    assert.equal(nextDayStart("2024-12-31"), "2025-01-01T00:00:00.000Z");
  });
});

describe("sortBy", () => {
  test("a new column: text A to Z, the others newest or most first", () => {
    assert.deepEqual(sortBy(defaults, "run_id"), { sort: "run_id", dir: "asc" });
    assert.deepEqual(sortBy(defaults, "project"), { sort: "project", dir: "asc" });
    assert.deepEqual(sortBy(defaults, "points"), { sort: "points", dir: "desc" });
  });

  test("the column sorted by already: the other direction", () => {
    assert.deepEqual(sortBy(defaults, "created"), { sort: "created", dir: "asc" });
    assert.deepEqual(sortBy({ ...defaults, sort: "run_id", dir: "asc" }, "run_id"), { sort: "run_id", dir: "desc" });
  });
});

describe("pageOf", () => {
  const n = (x) => x.toLocaleString();

  test("the rows shown of the total, and which way there are more", () => {
    assert.deepEqual(pageOf({ ...defaults, page: 2 }, 50, 230), { range: `${n(51)}–${n(100)} of ${n(230)}`, previous: true, next: true });
    assert.deepEqual(pageOf({ ...defaults, page: 5 }, 30, 230), { range: `${n(201)}–${n(230)} of ${n(230)}`, previous: true, next: false });
    assert.deepEqual(pageOf(defaults, 3, 3), { range: "1–3 of 3", previous: false, next: false });
  });

  test("none at all", () => {
    assert.deepEqual(pageOf(defaults, 0, 0), { range: "0 runs", previous: false, next: false });
  });
});

describe("added columns", () => {
  const cols = ["config:optimizer.lr", "metric:eval/loss:min", "config:opt"];

  test("columns, their filters and the parallel view read back from the URL, in order", () => {
    const path = pathFor(defaults, { col: cols, filter: ["", "<0.5", ""], parallel: true, sort: "col1",
      dir: "asc" });
    assert.equal(path, "/runs?sort=col1&dir=asc&col=config%3Aoptimizer.lr&col=metric%3Aeval%2Floss%3Amin"
      + "&col=config%3Aopt&filter=&filter=%3C0.5&filter=&parallel=1");
    assert.deepEqual(parseView(path.slice("/runs".length)),
      { ...defaults, col: cols, filter: ["", "<0.5", ""], parallel: true, sort: "col1", dir: "asc" });
    assert.equal(pathFor(defaults, { col: cols, filter: ["", "", ""] }),
      "/runs?col=config%3Aoptimizer.lr&col=metric%3Aeval%2Floss%3Amin&col=config%3Aopt");
  });

  test("the table's query carries the columns and each typed filter as index, operator, value", () => {
    const params = tableParams({ ...defaults, col: cols, filter: ["0.01", " >= 2", "~ada"] });
    assert.deepEqual(params.col, cols);
    assert.deepEqual(params.filter, ["0=0.01", "1>=2", "2~ada"]);
    assert.equal(tableParams(defaults).col, undefined);
    assert.equal(filterParam(3, "  "), null);
    assert.equal(filterParam(0, "!=sgd"), "0!=sgd");
  });

  test("labels, adding and removing keep sorts and filters on their columns", () => {
    assert.equal(columnLabel("config:optimizer.lr"), "optimizer.lr");
    assert.equal(columnLabel("metric:eval/loss:min"), "eval/loss (min)");
    const v = { ...defaults, col: cols, filter: ["a", "b", "c"], sort: "col2", dir: "asc" };
    assert.deepEqual(withColumn(v, "config:opt"), {});  // already there
    assert.deepEqual(withColumn(v, "metric:acc:max").col, [...cols, "metric:acc:max"]);
    assert.deepEqual(withoutColumn(v, 0), { col: cols.slice(1), filter: ["b", "c"], sort: "col1" });
    assert.deepEqual(withoutColumn(v, 2), { col: cols.slice(0, 2), filter: ["a", "b"], sort: "created",
      dir: "desc" });
    const full = { ...defaults, col: Array.from({ length: 8 }, (_, i) => `config:k${i}`) };
    assert.deepEqual(withColumn(full, "config:k9"), {});
  });
});
