// smoothing.js against TensorBoard's debiased EMA written out here from its definition,
// against its closed form, and against numbers worked by hand.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { smooth } from "../../../services/web/src/tuneplane/web/static/smoothing.js";

// TensorBoard's classic smoothing (tensorboard/webapp/widgets/line_chart_v2/
// data_transformer.ts, classicSmoothing), one series: the weight clamped to [0, 1], a
// series whose values all equal the first left as it is, non-finite values passed through
// and not counted, an EMA from 0 debiased by 1 - w^n (not at w = 1).
function tensorboard(ys, weight) {
  let w = Number.isFinite(weight) ? weight : 0;
  w = Math.max(0, Math.min(w, 1));
  const first = ys[0];
  if (ys.every((y) => y == first)) return ys.slice();
  let last = ys.length > 0 ? 0 : NaN;
  let numAccum = 0;
  const out = [];
  for (const nextVal of ys) {
    if (!Number.isFinite(nextVal)) {
      out.push(nextVal);
      continue;
    }
    last = last * w + (1 - w) * nextVal;
    numAccum++;
    let debiasWeight = 1;
    if (w !== 1) debiasWeight = 1 - Math.pow(w, numAccum);
    out.push(last / debiasWeight);
  }
  return out;
}

// The same average in closed form: the n-th finite value smoothed is
// sum_k (1 - w) w^(n-k) y_k / (1 - w^n), over the finite values y_1..y_n so far.
function closedForm(ys, w) {
  const finite = [];
  return ys.map((y) => {
    if (!Number.isFinite(y)) return y;
    finite.push(y);
    const n = finite.length;
    const sum = finite.reduce((acc, yk, k) => acc + (1 - w) * w ** (n - 1 - k) * yk, 0);
    return sum / (1 - w ** n);
  });
}

// A noisy decaying curve, as training losses are; deterministic.
function loss(n, seed = 1) {
  let state = seed;
  const rand = () => { state = (state * 1103515245 + 12345) % 2147483648; return state / 2147483648; };
  return Array.from({ length: n }, (_, i) => 2 * Math.exp(-i / 200) + 0.3 * (rand() - 0.5));
}

const near = (actual, expected, relative = 1e-12) => {
  assert.equal(actual.length, expected.length);
  actual.forEach((a, i) => {
    const e = expected[i];
    if (!Number.isFinite(e)) return assert.ok(Object.is(a, e), `at ${i}: ${a} is not ${e}`);
    assert.ok(Math.abs(a - e) <= relative * Math.max(1, Math.abs(e)), `at ${i}: ${a} is not about ${e}`);
  });
};

describe("smooth is TensorBoard's smoothing", () => {
  for (const weight of [0.001, 0.1, 0.5, 0.6, 0.9, 0.95, 0.99, 0.999, 1]) {
    test(`value for value, bit for bit, at weight ${weight}`, () => {
      const ys = loss(2000, Math.round(weight * 1000));
      assert.deepEqual(smooth(ys, weight), tensorboard(ys, weight));
    });
  }

  test("with NaN, ±Infinity and gaps (null) among the values", () => {
    const ys = loss(300);
    for (const [i, v] of [[0, NaN], [7, Infinity], [8, -Infinity], [50, null], [51, NaN], [299, null]]) ys[i] = v;
    for (const weight of [0.3, 0.6, 0.999]) assert.deepEqual(smooth(ys, weight), tensorboard(ys, weight));
  });

  test("agrees with the closed form of the debiased average", () => {
    const ys = loss(500);
    ys[10] = NaN;
    for (const weight of [0.25, 0.6, 0.9, 0.99, 0.999]) near(smooth(ys, weight), closedForm(ys, weight), 1e-9);
  });
});

describe("numbers worked by hand", () => {
  test("1, 2, 3 at weight 0.5 are 1, 5/3, 17/7", () => {
    // last: 0.5, 1.25, 2.125; debiased by 1 - 0.5^n: 0.5, 0.75, 0.875
    near(smooth([1, 2, 3], 0.5), [1, 5 / 3, 17 / 7]);
  });

  test("0, 10 at weight 0.6 are 0 and 6.25", () => {
    // last: 0, then 0.4 * 10 = 4; debiased by 1 - 0.36 = 0.64
    near(smooth([0, 10], 0.6), [0, 6.25]);
  });

  test("the second of two values at weight w is (w a + b) / (1 + w)", () => {
    for (const [a, b, w] of [[0, 1, 0.999], [3, -1, 0.9], [100, 50, 0.6]]) {
      near(smooth([a, b], w), [a, (w * a + b) / (1 + w)]);
    }
    near(smooth([0, 1], 0.999), [0, 0.5002501250625313]);
  });

  test("the first value is itself: debiasing removes the pull towards 0", () => {
    for (const w of [0.1, 0.6, 0.99, 0.999]) near(smooth([42, 0], w).slice(0, 1), [42]);
  });

  test("a step from 0 to 1 at weight 0.9 reaches 1 - 0.9^k after k more values (from a long run of 0s)", () => {
    const ys = [...new Array(400).fill(0), ...new Array(20).fill(1)];
    const out = smooth(ys, 0.9);
    // after 400 zeros the debiasing is 1 - 0.9^n ~ 1; k ones later: (1 - 0.9^k) / (1 - 0.9^(400+k))
    for (const k of [1, 5, 20]) near([out[399 + k]], [(1 - 0.9 ** k) / (1 - 0.9 ** (400 + k))]);
  });
});

describe("edge cases", () => {
  test("an empty series stays empty", () => {
    assert.deepEqual(smooth([], 0.6), []);
  });

  test("weight 0 (or less, or not a number) smooths nothing and says so with the same array", () => {
    const ys = loss(10);
    for (const w of [0, -0.5, NaN, undefined]) assert.equal(smooth(ys, w), ys);
  });

  test("weight 0.999 follows the closed form over a long series", () => {
    const ys = loss(3000, 7);
    near(smooth(ys, 0.999), closedForm(ys, 0.999), 1e-9);
  });

  test("weight 1: no debiasing, as TensorBoard (the average never leaves 0); above 1 clamps to 1", () => {
    assert.deepEqual(smooth([1, 2, 3], 1), [0, 0, 0]);
    assert.deepEqual(smooth([1, 2, 3], 7), [0, 0, 0]);
  });

  test("NaN, Infinity, -Infinity and null pass through, and the others smooth as if they were not there", () => {
    const out = smooth([1, NaN, Infinity, null, -Infinity, 3], 0.5);
    assert.ok(Number.isNaN(out[1]));
    assert.equal(out[2], Infinity);
    assert.equal(out[3], null);
    assert.equal(out[4], -Infinity);
    near([out[0], out[5]], smooth([1, 3], 0.5));
    near([out[5]], [7 / 3]);
  });

  test("a constant series is left as it is (TensorBoard #786: no rounding wiggle)", () => {
    const ys = new Array(1000).fill(0.1);
    assert.equal(smooth(ys, 0.99), ys);
  });

  test("a series of one value is left as it is", () => {
    assert.deepEqual(smooth([5], 0.6), [5]);
  });

  test("all values not finite: nothing to average, all passed through", () => {
    const out = smooth([NaN, Infinity, null], 0.6);
    assert.ok(Number.isNaN(out[0]));
    assert.deepEqual(out.slice(1), [Infinity, null]);
  });

  test("the input is not changed", () => {
    const ys = [1, 2, 3];
    smooth(ys, 0.6);
    assert.deepEqual(ys, [1, 2, 3]);
  });
});
