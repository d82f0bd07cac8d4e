// ticks.js: axis labels, the room they take, ranges uPlot can step through, and a
// histogram's nice ticks.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { compact } from "../../../services/web/src/tuneplane/web/static/format.js";
import { guarded, labelSize, niceTicks, tickSpace, ticks } from
  "../../../services/web/src/tuneplane/web/static/ticks.js";

describe("ticks (axis labels)", () => {
  test("ordinary values as uPlot writes them, up to 5 significant digits", () => {
    assert.deepEqual(ticks(null, [0, 0.5, 1, 1.5]), [0, 0.5, 1, 1.5].map((v) => compact.format(v)));
    assert.deepEqual(ticks(null, [0.123456]), [compact.format(0.12346)]);
  });

  test("a split uPlot leaves out is an empty label", () => {
    assert.deepEqual(ticks(null, [null, 1]), ["", compact.format(1)]);
  });

  test("near 1e17, 5000 apart (guarded keeps a range that wide): exponent form, digits enough to tell them apart", () => {
    const labels = ticks(null, [1e17, 1e17 + 5000, 1e17 + 10000]);
    assert.deepEqual(labels, ["1.000000000000000e+17", "1.000000000000050e+17", "1.000000000000100e+17"]);
  });

  test("very small values: exponent form (one digit more than tells them apart), 0 as 0", () => {
    assert.deepEqual(ticks(null, [0, 2e-5, 4e-5]), ["0", "2.00e-5", "4.00e-5"]);
  });

  test("huge values far apart need few digits", () => {
    assert.deepEqual(ticks(null, [1e10, 2e10, 3e10]), ["1.00e+10", "2.00e+10", "3.00e+10"]);
  });
});

describe("room for labels", () => {
  test("labelSize grows with the longest label, from 3 characters", () => {
    assert.equal(labelSize(null, ["1", "2"]), 18 + 8 * 3);
    assert.equal(labelSize(null, ["1.0000000000000002e+17"]), 18 + 8 * 22);
    assert.equal(labelSize(null, null), 18 + 8 * 3);
  });

  test("tickSpace: wide apart for exponent-form labels", () => {
    assert.equal(tickSpace(null, 0, 0, 100), 50);
    assert.equal(tickSpace(null, 0, 1e17, 1e17 + 64), 120);
    assert.equal(tickSpace(null, 0, 0, 1e-6), 120);
  });
});

describe("guarded", () => {
  test("an ordinary range is left as it is", () => {
    assert.deepEqual(guarded([0, 1]), [0, 1]);
    assert.deepEqual(guarded([-5, 5]), [-5, 5]);
  });

  test("a range narrower than 1e-13 of its magnitude is widened around its middle", () => {
    const [lo, hi] = guarded([1e17, 1e17 + 16]);
    assert.ok(hi - lo >= 1e17 * 1e-13 * 1.99);
    assert.ok(lo < 1e17 && hi > 1e17 + 16);
    const [a, b] = guarded([3, 3]);
    assert.ok(a < 3 && b > 3);
  });

  test("0..0 (nothing to widen by) and a range uPlot has not got stay as they are", () => {
    assert.deepEqual(guarded([0, 0]), [0, 0]);
    assert.deepEqual(guarded([null, null]), [null, null]);
    assert.deepEqual(guarded([-Infinity, 1]), [-Infinity, 1]);
  });
});

describe("niceTicks", () => {
  const isNice = (ticksFound) => {
    if (ticksFound.length < 2) return;
    const step = ticksFound[1] - ticksFound[0];
    const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
    assert.ok([1, 2, 5, 10].some((m) => Math.abs(mantissa - m) < 1e-6), `step ${step}`);
    ticksFound.forEach((t, i) => assert.ok(Math.abs(t - (ticksFound[0] + i * step)) <= 1e-9 * Math.max(1, Math.abs(t))));
  };

  test("worked by hand", () => {
    assert.deepEqual(niceTicks(0, 1, 5), [0, 0.2, 0.4, 0.6, 0.8, 1]);
    assert.deepEqual(niceTicks(-3, 7, 5), [-2, 0, 2, 4, 6]);
    assert.deepEqual(niceTicks(0.13, 0.61, 4), [0.2, 0.4, 0.6]);
    assert.deepEqual(niceTicks(0, 1000, 2), [0, 500, 1000]);
  });

  test("inside the range, evenly spaced by 1, 2 or 5 times a power of ten, about as many as wanted", () => {
    for (const [lo, hi, wanted] of [[0, 1, 5], [-0.0031, 0.0047, 6], [12, 13.7, 3], [-1e6, 3e6, 10], [5, 5.5, 8]]) {
      const found = niceTicks(lo, hi, wanted);
      assert.ok(found.length >= 1 && found.length <= wanted + 2, `${lo}..${hi}: ${found}`);
      assert.ok(found.every((t) => t >= lo - 1e-9 && t <= hi + 1e-9), `${lo}..${hi}: ${found}`);
      isNice(found);
    }
  });

  test("near 1e17, where the step is below the doubles' spacing: it ends, with at most wanted + 2 ticks", () => {
    const found = niceTicks(1e17, 1e17 + 64, 10);
    assert.ok(found.length <= 12);
  });

  test("an empty range has no ticks", () => {
    assert.deepEqual(niceTicks(1, 1, 5), []);
    assert.deepEqual(niceTicks(NaN, 1, 5), []);
  });
});
