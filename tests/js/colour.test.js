// The colour ramps and numbers on axes (attnviz/widgets/js/colour.js, axes.js).

import assert from "node:assert/strict";
import { test } from "node:test";

import { fmt, niceTicks } from "../../attnviz/widgets/js/axes.js";
import {
  contrast,
  css,
  inkOn,
  LUT_SIZE,
  lut,
  MASKED,
  MAY_ATTEND,
  NAN,
  RDBU,
  rampChannels,
  rgb,
  VIRIDIS,
} from "../../attnviz/widgets/js/colour.js";

test("the weight ramp is viridis at its stops and linear between them", () => {
  assert.deepEqual(rampChannels("weights", 0), rgb(VIRIDIS[0]));
  assert.deepEqual(rampChannels("weights", 1), rgb("#fde725"));
  assert.deepEqual(rampChannels("weights", 0.5), rgb(VIRIDIS[5]));
  const [low, high] = [rgb(VIRIDIS[2]), rgb(VIRIDIS[3])];
  const halfway = low.map((v, k) => Math.round(v + 0.5 * (high[k] - v)));
  assert.deepEqual(rampChannels("weights", 0.25), halfway);
  assert.deepEqual(rampChannels("weights", -3), rampChannels("weights", 0)); // clamped
  assert.deepEqual(rampChannels("weights", 7), rampChannels("weights", 1));
});

test("the score ramp is RdBu reversed: blue below the middle, white at it, red above", () => {
  assert.deepEqual(rampChannels("scores", 0), rgb(RDBU[0]));
  assert.deepEqual(rampChannels("scores", 0.5), rgb("#f7f7f7"));
  const [r, g, b] = rampChannels("scores", 0.95);
  assert.ok(r > b && r > g, "the top of the score scale is red");
});

test("colours as css, and WCAG contrast", () => {
  assert.equal(css([1, 2, 3]), "rgb(1,2,3)");
  assert.equal(contrast([0, 0, 0], [255, 255, 255]), 21);
  assert.equal(contrast([90, 90, 90], [90, 90, 90]), 1);
  assert.ok(Math.abs(contrast(rgb("#1976d2"), [255, 255, 255]) - 4.6) < 0.05); // JupyterLab's brand blue
  assert.equal(inkOn(rgb("#fde725")), "#000000");
  assert.equal(inkOn(rgb("#440154")), "#ffffff");
});

test("a value written on a cell contrasts at least 4.5:1 with it, anywhere on either ramp", () => {
  const worst = {};
  for (const scale of ["weights", "scores"]) {
    worst[scale] = 21;
    for (let i = 0; i <= 1000; i++) {
      const cell = rampChannels(scale, i / 1000);
      worst[scale] = Math.min(worst[scale], contrast(rgb(inkOn(cell)), cell));
    }
    assert.ok(worst[scale] >= 4.5, `${scale}: ${worst[scale].toFixed(2)}:1`);
  }
  for (const special of [MASKED, NAN, MAY_ATTEND]) {
    assert.ok(contrast(rgb(inkOn(rgb(special))), rgb(special)) >= 4.5, special);
  }
  // the rule it replaces (white below a brightness of 0.55) wrote white on viridis at 2.5:1
  const old = rampChannels("weights", 0.6);
  assert.ok(contrast([255, 255, 255], old) < 3 && contrast([0, 0, 0], old) >= 4.5);
});

test("the look-up table holds the ramp, opaque", () => {
  const table = lut("weights");
  assert.equal(table.length, LUT_SIZE * 4);
  assert.deepEqual([...table.subarray(0, 4)], [...rgb(VIRIDIS[0]), 255]);
  assert.deepEqual([...table.subarray((LUT_SIZE - 1) * 4)], [...rgb(VIRIDIS[10]), 255]);
  assert.equal(lut("weights"), table); // made once
});

test("ticks are round numbers spanning the range", () => {
  assert.deepEqual(niceTicks(0, 1), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicks(-1.4, 1.4), [-1, 0, 1]); // the lookup's axes
  assert.deepEqual(niceTicks(0, 1.1), [0, 0.5, 1]);
  assert.deepEqual(niceTicks(3, 3), [3]); // no span
  assert.deepEqual(niceTicks(-23.4, 31.2, 6), [-20, -10, 0, 10, 20, 30]);
  for (const tick of niceTicks(0, 0.3)) {
    assert.equal(String(tick).length <= 4, true, `${tick} is written short`);
  }
});

test("numbers to a few significant digits, and NaN as such", () => {
  assert.equal(fmt(0.123456789), "0.123457");
  assert.equal(fmt(0.123456789, 3), "0.123");
  assert.equal(fmt(1200, 2), "1200");
  assert.equal(fmt(Number.NaN), "NaN");
  assert.equal(fmt(Number.NEGATIVE_INFINITY), "-Infinity");
});
