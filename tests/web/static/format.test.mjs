// format.js: legend values, durations, histogram labels, UTC times and ages.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ago, compact, count, duration, histogramLabel, huge, localTime, utcMinute, utcSecond, value } from
  "../../../services/web/src/tuneplane/web/static/format.js";

describe("value (a legend's)", () => {
  test("none, NaN and the infinities as words", () => {
    assert.equal(value(null), "–");
    assert.equal(value(undefined), "–");
    assert.equal(value(NaN), "NaN");
    assert.equal(value(Infinity), "Infinity");
    assert.equal(value(-Infinity), "-Infinity");
  });

  test("ordinary values with up to 5 significant digits", () => {
    assert.equal(value(1.23456789), compact.format(1.2346));
    assert.equal(value(0), compact.format(0));
    assert.equal(value(0.5), compact.format(0.5));
  });

  test("from 1e9 and below 1e-4: exponent form with 4 decimals", () => {
    assert.equal(value(1e9), "1.0000e+9");
    assert.equal(value(-2.5e17), "-2.5000e+17");
    assert.equal(value(5e-5), "5.0000e-5");
    assert.equal(huge(999999999), false);
    assert.equal(huge(0), false);
    assert.equal(huge(1e-4), false);
  });
});

describe("duration", () => {
  test("worked by hand", () => {
    const cases = [[0, "0s"], [12.34, "12.3s"], [59.9, "59.9s"], [60, "1m"], [200, "3m 20s"], [180, "3m"],
      [3600, "1h"], [7500, "2h 5m"], [-90, "-1m 30s"], [86400 * 2 + 60, "48h 1m"]];
    for (const [seconds, text] of cases) assert.equal(duration(seconds), text, `${seconds}`);
  });

  test("rounded as a whole: never 60 seconds or 60 minutes", () => {
    assert.equal(duration(59.96), "1m");
    assert.equal(duration(119.6), "2m");
    assert.equal(duration(3599.6), "1h");
    assert.equal(duration(7199), "2h");
  });

  test("a value that is not finite has no label", () => {
    assert.equal(duration(NaN), "");
    assert.equal(duration(Infinity), "");
  });
});

describe("histogramLabel", () => {
  test("4 significant digits; exponent form from 1e4 and below 1e-3", () => {
    assert.equal(histogramLabel(0), "0");
    assert.equal(histogramLabel(1.23456), "1.235");
    assert.equal(histogramLabel(100), "100");
    assert.equal(histogramLabel(-0.5), "-0.5");
    assert.equal(histogramLabel(12345), "1.2e+4");
    assert.equal(histogramLabel(0.0005), "5.0e-4");
    assert.equal(histogramLabel(1e17), "1.0e+17");
  });
});

describe("times", () => {
  test("UTC to the minute and to the second; nothing for none", () => {
    assert.equal(utcMinute("2025-01-02T03:04:05.678Z"), "2025-01-02 03:04");
    assert.equal(utcSecond("2025-01-02T03:04:05.678Z"), "2025-01-02 03:04:05");
    assert.equal(utcMinute("2025-01-02T05:04:05+02:00"), "2025-01-02 03:04");
    assert.equal(utcMinute(null), null);
    assert.equal(utcSecond(""), null);
  });

  test("ago: days, hours, minutes, or just now (a time after now too)", () => {
    const now = Date.parse("2025-06-10T12:00:00Z");
    assert.equal(ago("2025-06-07T11:00:00Z", now), "3d ago");
    assert.equal(ago("2025-06-10T07:30:00Z", now), "4h ago");
    assert.equal(ago("2025-06-10T11:59:00Z", now), "1m ago");
    assert.equal(ago("2025-06-10T11:59:01Z", now), "just now");
    assert.equal(ago("2025-06-10T12:05:00Z", now), "just now");
  });

  test("localTime: a wall time in seconds, to the second", () => {
    const wall = Date.parse("2023-11-14T22:13:20Z") / 1000;
    const text = localTime(wall);
    assert.match(text, /2023/);
    assert.equal(text, new Date(wall * 1000).toLocaleString(undefined, { year: "numeric", month: "short",
      day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" }));
  });

  test("count: nothing for none, else in the reader's locale", () => {
    assert.equal(count(null), null);
    assert.equal(count(undefined), null);
    assert.equal(count(0), "0");
    assert.equal(count(1234567), (1234567).toLocaleString());
  });
});
