// The colour ramps and numbers on axes (attnviz/widgets/js/colour.js, axes.js).

import assert from "node:assert/strict";
import { test } from "node:test";

import { fmt, niceTicks } from "../../attnviz/widgets/js/axes.js";
import {
  brightness,
  css,
  LUT_SIZE,
  lut,
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

test("colours as css and brightness", () => {
  assert.equal(css([1, 2, 3]), "rgb(1,2,3)");
  assert.equal(brightness([255, 255, 255]), 1);
  assert.equal(brightness([0, 0, 0]), 0);
  assert.ok(brightness(rgb("#fde725")) > 0.55 && brightness(rgb("#440154")) < 0.55);
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
