// chartsview.js: the Charts tab's view read from and written to its URL, its layers,
// which sections start open, the index's pages and the point budget.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CHART_PAGE, DEFAULT_SMOOTHING, SECTION_PAGE, SMALL_INDEX, encodeChartView, layersOf, maxPointsFor,
  parseChartView, parseView, startsOpen, withParams } from "../../../services/web/src/tuneplane/web/static/chartsview.js";

describe("parseView", () => {
  test("defaults", () => {
    assert.deepEqual(parseView(""), { attempt: null, filter: "", smoothing: DEFAULT_SMOOTHING, logY: false,
      x: "step", compare: [], inspect: null });
  });

  test("everything set", () => {
    const v = parseView("?attempt=2&q=%5Etrain%2F&smooth=0.9&log=1&x=wall&cmp=r1%401,r2%403&inspect=a%7Cb%7C%7Closs");
    assert.deepEqual(v, { attempt: "2", filter: "^train/", smoothing: 0.9, logY: true, x: "wall",
      compare: ["r1@1", "r2@3"], inspect: "a|b||loss" });
  });

  test("smoothing from 0 up to, not to, 1; anything else is the default", () => {
    assert.equal(parseView("?smooth=0").smoothing, 0);
    assert.equal(parseView("?smooth=0.99").smoothing, 0.99);
    for (const bad of ["1", "-0.1", "abc", "Infinity"]) assert.equal(parseView(`?smooth=${bad}`).smoothing, DEFAULT_SMOOTHING, bad);
  });

  test("an unknown x axis is by step; log only when 1; overlays without @ are dropped", () => {
    assert.equal(parseView("?x=bogus").x, "step");
    assert.equal(parseView("?x=relative").x, "relative");
    assert.equal(parseView("?log=true").logY, false);
    assert.deepEqual(parseView("?cmp=r1,,r2%402").compare, ["r2@2"]);
  });
});

describe("a chart's own view", () => {
  const search = (value, key = "tag:train/loss") => `?${new URLSearchParams({ [`c.${key}`]: value })}`;

  test("smoothing, log and zoom read back", () => {
    assert.deepEqual(parseChartView(search("s=0.9;log=1;z=100..250"), "tag:train/loss"), { s: "0.9", log: "1", z: [100, 250] });
    assert.deepEqual(parseChartView(search("s=0;log=0"), "tag:train/loss"), { s: "0", log: "0" });
    assert.deepEqual(parseChartView("", "tag:train/loss"), {});
  });

  test("another chart's settings are not this one's", () => {
    assert.deepEqual(parseChartView(search("s=0.9", "curve:loss"), "tag:train/loss"), {});
  });

  test("what is not valid is left out, and nothing throws", () => {
    const bad = ["z=5..1", "z=1.5..3", "z=..4", "z=4", "z", "z=a..b", "s=1", "s=-0.5", "s=x", "s=", "log=2",
      "other=1", ";;", "=", "s"];
    for (const raw of bad) assert.deepEqual(parseChartView(search(raw), "tag:train/loss"), {}, raw);
    assert.deepEqual(parseChartView(search("z=-10..-2"), "tag:train/loss"), { z: [-10, -2] });
  });

  test("encodeChartView writes what parseChartView reads, leaving out what is unset", () => {
    const own = { s: "0.95", log: "1", z: [3, 9] };
    const text = encodeChartView(own);
    assert.equal(text, "s=0.95;log=1;z=3..9");
    assert.deepEqual(parseChartView(search(text), "tag:train/loss"), own);
    assert.equal(encodeChartView({ s: "", log: null, z: undefined }), "");
    assert.equal(encodeChartView({ s: "0.6", z: null }), "s=0.6");
  });
});

describe("withParams", () => {
  test("sets, replaces and removes parameters, keeping the others", () => {
    assert.equal(withParams("?attempt=1&q=loss", { q: "acc", log: "1" }), "?attempt=1&q=acc&log=1");
    assert.equal(withParams("?attempt=1&q=loss", { q: "", log: null, x: undefined }), "?attempt=1");
  });

  test("no parameter left: no query", () => {
    assert.equal(withParams("?q=loss", { q: null }), "");
    assert.equal(withParams("", {}), "");
  });

  test("keys and values with URL characters survive the round trip", () => {
    const key = "c.tag:train/loss & more";
    const query = withParams("", { [key]: "s=0.9;z=1..2", cmp: "run a@1" });
    assert.deepEqual(Object.fromEntries(new URLSearchParams(query)), { [key]: "s=0.9;z=1..2", cmp: "run a@1" });
  });
});

describe("layersOf", () => {
  test("alone: this attempt, no prefix", () => {
    assert.deepEqual(layersOf("r1", { attempt: "2", compare: [] }), [{ run: "r1", attempt: "2", index: 0, prefix: "" }]);
  });

  test("overlays: this run's attempts by number, other runs by name and number; this attempt then prefixed too", () => {
    assert.deepEqual(layersOf("r1", { attempt: "2", compare: ["r1@1", "other@3"] }), [
      { run: "r1", attempt: "2", index: 0, prefix: "#2" },
      { run: "r1", attempt: "1", index: 1, prefix: "#1" },
      { run: "other", attempt: "3", index: 2, prefix: "other#3" },
    ]);
  });

  test("a run id with @ in it: the attempt is after the last @", () => {
    assert.deepEqual(layersOf("r1", { attempt: "1", compare: ["a@b@4"] })[1], { run: "a@b", attempt: "4", index: 1, prefix: "a@b#4" });
  });
});

describe("sections and points", () => {
  test("a small index opens every section; a bigger one its first; the user's choice stays", () => {
    const none = new Map();
    assert.equal(startsOpen("train", 7, SMALL_INDEX, none), true);
    assert.equal(startsOpen("group00", 0, SMALL_INDEX + 1, none), true);
    assert.equal(startsOpen("group01", 1, SMALL_INDEX + 1, none), false);
    const chosen = new Map([["group00", false], ["group01", true]]);
    assert.equal(startsOpen("group00", 0, 100_000, chosen), false);
    assert.equal(startsOpen("group01", 1, 100_000, chosen), true);
    assert.equal(startsOpen("train", 3, 15, new Map([["train", false]])), false);
  });

  test("the pages the index is asked for are within the API's bounds", () => {
    assert.ok(CHART_PAGE <= 500 && SMALL_INDEX <= 500 && SECTION_PAGE <= 1000);
  });

  test("about a point per pixel, 200 to 2000; 500 when the width is not known", () => {
    assert.equal(maxPointsFor(undefined), 500);
    assert.equal(maxPointsFor(0), 200);
    assert.equal(maxPointsFor(640.4), 640);
    assert.equal(maxPointsFor(5000), 2000);
  });
});
