// TensorBoard's smoothing, as its scalars dashboard draws it (the "classic" smoothing of
// tensorboard/webapp/widgets/line_chart_v2/data_transformer.ts): an exponential moving
// average started at 0 and debiased by 1 - weight^n, n the finite values seen so far;
// values that are not finite (NaN, ±Infinity, and null, which the charts use for a gap)
// are passed through and do not count; a series whose values all equal the first (==) is
// left as it is. The weight is clamped to [0, 1]; at 1 there is no debiasing, as in
// TensorBoard. Pure: no DOM; tests/web/static/smoothing.test.mjs.

// ``ys`` smoothed with ``weight``; ``ys`` itself (the same array) when nothing is smoothed
// (a weight of 0 or less, or not a number), so that a caller can tell.
export function smooth(ys, weight) {
  if (!(weight > 0)) return ys;
  const w = Math.min(weight, 1);
  if (ys.every((y) => y == ys[0])) return ys;  // == as TensorBoard compares
  let last = 0;
  let n = 0;
  return ys.map((y) => {
    if (!Number.isFinite(y)) return y;
    last = last * w + (1 - w) * y;
    n += 1;
    return last / (w === 1 ? 1 : 1 - Math.pow(w, n));
  });
}
