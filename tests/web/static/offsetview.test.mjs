// offsetview.js: rebinning onto shared bins, and the offset view's ridges, ticks and
// step labels.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BINS, MARGIN, NEW, OLD, layout, mix, rebinned } from
  "../../../services/web/src/tuneplane/web/static/offsetview.js";

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const close = (a, b, tolerance = 1e-9) => assert.ok(Math.abs(a - b) <= tolerance * Math.max(1, Math.abs(b)), `${a} is not about ${b}`);

describe("rebinned", () => {
  test("one range over every step, split into BINS even bins", () => {
    const { lo, hi, width, rows } = rebinned([
      { step: 0, buckets: [[-1, 0, 4]] },
      { step: 10, buckets: [[1, 2, 4]] },
    ]);
    assert.equal(lo, -1);
    assert.equal(hi, 2);
    close(width, 3 / BINS);
    assert.deepEqual(rows.map((r) => r.step), [0, 10]);
    assert.ok(rows.every((r) => r.counts.length === BINS));
  });

  test("a bucket's count is spread over the bins it overlaps, in proportion", () => {
    // [0, 3] in 3 bins of 1: [0.5, 2] covers half of bin 0 and all of bin 1
    const { rows } = rebinned([{ step: 0, buckets: [[0, 0.5, 0], [0.5, 2, 6], [2, 3, 0]] }], 3);
    assert.deepEqual(rows[0].counts, [2, 4, 0]);
  });

  test("counts are kept: each row's bins add up to its buckets' counts", () => {
    const histograms = [0, 1, 2].map((step) => ({ step, buckets: Array.from({ length: 17 }, (_, i) =>
      [-2 + i * 0.23 + step * 0.1, -2 + (i + 1) * 0.23 + step * 0.1, (i * 7 + step) % 11]) }));
    const { rows } = rebinned(histograms);
    rows.forEach((row, i) => close(sum(row.counts), sum(histograms[i].buckets.map((b) => b[2]))));
  });

  test("a bucket of one value (right <= left) counts whole in the bin of its value; the top edge in the last bin", () => {
    const { rows } = rebinned([{ step: 0, buckets: [[0, 0, 5], [1, 1, 3], [10, 10, 2]] }], 10);
    assert.equal(rows[0].counts[0], 5);
    assert.equal(rows[0].counts[1], 3);
    assert.equal(rows[0].counts[9], 2);
    assert.equal(sum(rows[0].counts), 10);
  });

  test("a single value overall: a unit-wide range around it", () => {
    const { lo, hi, rows } = rebinned([{ step: 3, buckets: [[7, 7, 9]] }]);
    assert.deepEqual([lo, hi], [6.5, 7.5]);
    assert.equal(sum(rows[0].counts), 9);
  });

  test("no buckets at all: a unit range around 0, nothing counted", () => {
    const { lo, hi, rows } = rebinned([{ step: 0, buckets: [] }]);
    assert.deepEqual([lo, hi], [-0.5, 0.5]);
    assert.equal(sum(rows[0].counts), 0);
  });
});

describe("layout", () => {
  const W = 400, H = 240;
  const plotW = W - MARGIN.left - MARGIN.right, plotH = H - MARGIN.top - MARGIN.bottom;
  const bottom = MARGIN.top + plotH;
  const steps = [0, 100, 200, 300, 400];
  const histograms = steps.map((step) => ({ step, buckets: [[-1, 0, 10 + step / 100], [0, 1, 20 - step / 50]] }));

  test("ridges oldest first; the oldest at the back (top), the newest in front, at the bottom", () => {
    const view = layout(histograms, W, H);
    assert.deepEqual(view.ridges.map((r) => r.step), steps);
    const bases = view.ridges.map((r) => r.base);
    close(bases[0], MARGIN.top + plotH * 0.45);
    close(bases.at(-1), bottom);
    bases.slice(1).forEach((b, i) => assert.ok(b > bases[i]));
    close(bases[2] - bases[1], bases[1] - bases[0]);  // by step, evenly here
  });

  test("each ridge a closed outline across the plot at its baseline; the tallest peak 0.45 of the height", () => {
    const view = layout(histograms, W, H);
    for (const ridge of view.ridges) {
      assert.equal(ridge.points.length, BINS + 2);
      assert.deepEqual(ridge.points[0], [MARGIN.left, ridge.base]);
      assert.deepEqual(ridge.points.at(-1), [MARGIN.left + plotW, ridge.base]);
      assert.ok(ridge.points.every(([, y]) => y <= ridge.base + 1e-9));
    }
    const height = Math.max(...view.ridges.map((r) => Math.max(...r.points.map(([, y]) => r.base - y))));
    close(height, plotH * 0.45);
  });

  test("colors from TensorBoard's dark old to light new", () => {
    const view = layout(histograms, W, H);
    assert.equal(view.ridges[0].fill, `rgb(${OLD.join(",")})`);
    assert.equal(view.ridges.at(-1).fill, `rgb(${NEW.join(",")})`);
    assert.equal(mix(0.5), "rgb(198,106,54)");
  });

  test("one step: a ridge of the whole height, drawn as the newest", () => {
    const view = layout(histograms.slice(0, 1), W, H);
    close(view.ridges[0].base, bottom);
    assert.equal(view.ridges[0].fill, `rgb(${NEW.join(",")})`);
    const peak = Math.max(...view.ridges[0].points.map(([, y]) => bottom - y));
    close(peak, plotH);
    assert.deepEqual(view.steps.map((s) => s.step), [0]);
  });

  test("value ticks inside the range and the plot, labelled under the axis", () => {
    const view = layout(histograms, W, H);
    assert.ok(view.ticks.length >= 2);
    for (const t of view.ticks) {
      assert.ok(t.value >= view.lo && t.value <= view.hi);
      assert.ok(t.x >= MARGIN.left - 1e-9 && t.x <= MARGIN.left + plotW + 1e-9);
    }
    assert.deepEqual(view.ticks.map((t) => t.label), view.ticks.map((t) => `${+t.value.toPrecision(4)}`));
    assert.equal(view.axis.y, bottom + 4);
    assert.ok(view.axis.labelY > view.axis.y);
  });

  test("step labels newest first, right of the plot, never closer than 13 px", () => {
    const many = Array.from({ length: 50 }, (_, i) => ({ step: i * 10, buckets: [[0, 1, i + 1]] }));
    const view = layout(many, W, H);
    assert.equal(view.steps[0].step, 490);
    assert.ok(view.steps.length < 50);
    assert.ok(view.steps.every((s) => s.x === MARGIN.left + plotW + 8));
    view.steps.slice(1).forEach((s, i) => assert.ok(view.steps[i].y - s.y >= 13));
  });

  test("huge, narrow buckets near 1e17: a finite layout and a bounded number of ticks", () => {
    const view = layout([{ step: 1, buckets: [[1e17, 1e17 + 16, 3], [1e17 + 16, 1e17 + 32, 5]] }], W, H);
    assert.ok(view.ridges[0].points.every(([x, y]) => Number.isFinite(x) && Number.isFinite(y)));
    assert.ok(view.ticks.length <= Math.floor(plotW / 60) + 2);
  });
});
