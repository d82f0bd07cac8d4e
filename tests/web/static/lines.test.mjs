// lines.js: an answer's columns, a line in x order, what uPlot is given for a set of lines,
// and the steps a zoom covers.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DASHES, PALETTE, build, columnsOf, line, num, stepRange } from
  "../../../services/web/src/tuneplane/web/static/lines.js";
import { smooth } from "../../../services/web/src/tuneplane/web/static/smoothing.js";

const exact = (steps, walls, values, extra = {}) => ({ reduced: false, points: { steps, walls, values },
  member: "rank-0", run_path: "", wall_first: walls[0], ...extra });
const layer = { index: 0, prefix: "" };

describe("columnsOf", () => {
  test("exact points, as columns and as rows", () => {
    const want = { steps: [0, 1], walls: [10, 11], ys: [0.5, 0.25], lows: null, highs: null };
    assert.deepEqual(columnsOf({ reduced: false, points: { steps: [0, 1], walls: [10, 11], values: [0.5, 0.25] } }), want);
    assert.deepEqual(columnsOf({ reduced: false, points: [[0, 10, 0.5], [1, 11, 0.25]] }), want);
  });

  test("reduced buckets: the last value with the min/max envelope, at the bucket's last step", () => {
    const want = { steps: [9, 19], walls: [1, 2], ys: [3, 4], lows: [0, 1], highs: [5, 6] };
    assert.deepEqual(columnsOf({ reduced: true, buckets: { step_hi: [9, 19], wall: [1, 2], last: [3, 4], min: [0, 1], max: [5, 6] } }), want);
    assert.deepEqual(columnsOf({ reduced: true, buckets: [
      { step_hi: 9, wall: 1, last: 3, min: 0, max: 5 }, { step_hi: 19, wall: 2, last: 4, min: 1, max: 6 }] }), want);
  });
});

describe("line", () => {
  test("by step keeps the answer's order; values given as words become numbers", () => {
    const l = line(exact([0, 1, 2], [100, 90, 95], [1, "NaN", "-inf"]), layer, "step");
    assert.deepEqual(l.xs, [0, 1, 2]);
    assert.equal(l.ys[0], 1);
    assert.ok(Number.isNaN(l.ys[1]));
    assert.equal(l.ys[2], -Infinity);
  });

  test("by wall or relative time: sorted by time, steps following their points", () => {
    const s = exact([0, 1, 2], [100, 90, 95], [1, 2, 3], { wall_first: 90 });
    const wall = line(s, layer, "wall");
    assert.deepEqual(wall.xs, [90, 95, 100]);
    assert.deepEqual(wall.steps, [1, 2, 0]);
    assert.deepEqual(wall.ys, [2, 3, 1]);
    assert.deepEqual(line(s, layer, "relative").xs, [0, 5, 10]);
  });

  test("its label: member and run path, after the layer's prefix", () => {
    assert.equal(line(exact([0], [1], [1], { run_path: "train" }), layer, "step").label, "rank-0 train");
    assert.equal(line(exact([0], [1], [1]), { index: 2, prefix: "other#1" }, "step").label, "other#1 rank-0");
    assert.equal(line(exact([0], [1], [1]), { index: 2, prefix: "#2" }, "step").layer, 2);
  });

  test("num: numbers as they are, the API's words for what is not finite", () => {
    assert.equal(num(1.5), 1.5);
    assert.equal(num(null), null);
    assert.equal(num("inf"), Infinity);
    assert.equal(num("-inf"), -Infinity);
    assert.ok(Number.isNaN(num("NaN")));
  });
});

describe("build", () => {
  const a = { label: "a", layer: 0, reduced: false, xs: [0, 1, 2], steps: [0, 1, 2], ys: [1, 2, 3], lows: null, highs: null };
  const b = { label: "b", layer: 1, reduced: true, xs: [0, 2], steps: [0, 2], ys: [4, -1], lows: [3, -2], highs: [5, 0] };

  test("unsmoothed: one value column per line, no faint raw line", () => {
    const built = build([a], { smoothing: 0, logY: false });
    assert.deepEqual(built.tables, [[a.xs, a.ys]]);
    assert.equal(built.series.length, 2);
    assert.deepEqual(built.drawn, [1]);
    assert.equal(built.series[1].stroke, PALETTE[0]);
    assert.equal(built.hidden, 0);
  });

  test("smoothed: the raw values faint under the smoothed line, which the legend reads", () => {
    const built = build([a], { smoothing: 0.6, logY: false });
    assert.deepEqual(built.tables, [[a.xs, a.ys, smooth(a.ys, 0.6)]]);
    assert.equal(built.series[1].stroke, `${PALETTE[0]}50`);
    assert.deepEqual(built.drawn, [2]);
  });

  test("a reduced line: its min/max as a band, then its values; dash by layer, color by line", () => {
    const built = build([a, b], { smoothing: 0, logY: false });
    assert.deepEqual(built.tables[1], [b.xs, b.lows, b.highs, b.ys]);
    // series: x, a's value, b's min, b's max, b's value
    assert.equal(built.series.length, 5);
    assert.deepEqual(built.bands, [{ series: [3, 2], fill: `${PALETTE[1]}2e` }]);
    assert.deepEqual(built.drawn, [1, 4]);
    assert.deepEqual(built.series[4].dash, DASHES[1]);
    assert.equal(built.series[1].dash, undefined);
  });

  test("log y: what is not positive is a gap, and the finite ones are counted as hidden", () => {
    const c = { ...a, ys: [1, 0, -2, NaN, 5] , xs: [0, 1, 2, 3, 4], steps: [0, 1, 2, 3, 4] };
    const built = build([c], { smoothing: 0, logY: true });
    assert.deepEqual(built.tables[0][1], [1, null, null, null, 5]);
    assert.equal(built.hidden, 2);
    const reduced = build([b], { smoothing: 0, logY: true });
    assert.deepEqual(reduced.tables[0].slice(1), [[3, null], [5, null], [4, null]]);
  });

  test("no lines: no tables, only uPlot's x series", () => {
    assert.deepEqual(build([], { smoothing: 0.6, logY: false }), { tables: [], series: [{}], bands: [], drawn: [], hidden: 0 });
  });
});

describe("stepRange", () => {
  test("by step: the whole steps around the x range", () => {
    assert.deepEqual(stepRange([], "step", 10.2, 19.7), { lo: 10, hi: 20 });
  });

  test("by time: the steps of the points inside, over every line", () => {
    const l1 = { xs: [0, 5, 10], steps: [100, 200, 300] };
    const l2 = { xs: [4, 6], steps: [150, 250] };
    assert.deepEqual(stepRange([l1, l2], "wall", 4, 6), { lo: 150, hi: 250 });
    assert.deepEqual(stepRange([l1], "relative", 5, 5), { lo: 200, hi: 200 });
  });

  test("by time with no point inside: none", () => {
    assert.equal(stepRange([{ xs: [0, 10], steps: [1, 2] }], "wall", 3, 7), null);
  });
});
