// parallelaxes.js: where a run's value lies on each axis of the parallel coordinates.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { axisOf, colorAt } from "../../../services/web/src/tuneplane/web/static/parallelaxes.js";

describe("axisOf", () => {
  test("numbers lie on a linear axis from the least to the greatest", () => {
    const axis = axisOf([2, null, 4, 3]);
    assert.equal(axis.kind, "linear");
    assert.deepEqual([2, 3, 4, null, "x"].map(axis.place), [0, 0.5, 1, null, null]);
    assert.deepEqual(axis.ticks.map((t) => t.at), [0, 0.25, 0.5, 0.75, 1]);
  });

  test("positive numbers spanning a hundredfold lie on a log axis with a tick per decade", () => {
    const axis = axisOf([1e-4, 1e-3, 1e-2]);
    assert.equal(axis.kind, "log");
    assert.deepEqual([1e-4, 1e-3, 1e-2].map((v) => Number(axis.place(v).toFixed(12))), [0, 0.5, 1]);
    assert.deepEqual(axis.ticks.map((t) => Number(t.at.toFixed(12))), [0, 0.5, 1]);
    assert.equal(axisOf([-1, 1000]).kind, "linear");  // not every value positive
  });

  test("one value sits in the middle; text and booleans lie on their sorted distinct values", () => {
    assert.equal(axisOf([5, 5]).place(5), 0.5);
    const axis = axisOf(["sgd", "adam", null, "adam", "rmsprop"]);
    assert.equal(axis.kind, "category");
    assert.deepEqual(["adam", "rmsprop", "sgd", null].map(axis.place), [0, 0.5, 1, null]);
    assert.deepEqual(axis.ticks.map((t) => t.label), ["adam", "rmsprop", "sgd"]);
    assert.deepEqual([true, false].map(axisOf([true, false]).place), [1, 0]);
    assert.equal(axisOf(["only"]).place("only"), 0.5);
    assert.equal(axisOf([1, "x"]).kind, "category");  // mixed: by name
  });
});

test("colors run from blue to orange, grey for none", () => {
  assert.equal(colorAt(0), "rgb(49,104,173)");
  assert.equal(colorAt(1), "rgb(231,111,81)");
  assert.equal(colorAt(null), "rgb(160,166,173)");
  assert.equal(colorAt(7), colorAt(1));
});
