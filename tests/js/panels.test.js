// What each panel kind shows without a canvas: cell colours and words, pixels, hover text, tables.

import assert from "node:assert/strict";
import { test } from "node:test";

import { barsHover, histogramHover } from "../../attnviz/widgets/js/bars.js";
import { MASKED, MAY_ATTEND, NAN, rampChannels, rgb } from "../../attnviz/widgets/js/colour.js";
import { cellColour, cellPixels, cellText, heatmapHover } from "../../attnviz/widgets/js/heatmap.js";
import { pointsHover } from "../../attnviz/widgets/js/points.js";
import { tableOf } from "../../attnviz/widgets/js/table.js";

function floatView(numbers) {
  return new DataView(new Float32Array(numbers).buffer);
}

function countView(counts) {
  return new DataView(new Uint16Array(counts).buffer);
}

const WEIGHTS = { kind: "heatmap", scale: "weights", vmin: 0, vmax: 1, value_name: "weight", cell: 20 };

test("a cell's colour: the ramp, or grey when masked, pink when NaN; the mask scale in two colours", () => {
  assert.deepEqual(cellColour(WEIGHTS, 1, 0).fill, `rgb(${rgb("#fde725")})`);
  assert.deepEqual(cellColour(WEIGHTS, 0.3, 1), { fill: MASKED, ink: "#000000" });
  assert.deepEqual(cellColour(WEIGHTS, 0.3, 2), { fill: NAN, ink: "#000000" });
  assert.equal(cellColour(WEIGHTS, 0.3, 4).fill, `rgb(${rampChannels("weights", 0.3)})`); // a leak keeps it
  const scores = { ...WEIGHTS, scale: "scores", vmin: -2, vmax: 2 };
  assert.equal(cellColour(scores, 0, 0).fill, `rgb(${rgb("#f7f7f7")})`);
  const mask = { ...WEIGHTS, scale: "mask" };
  assert.equal(cellColour(mask, 1, 0).fill, MAY_ATTEND);
  assert.equal(cellColour(mask, 0, 0).fill, MASKED);
});

test("the words in a cell: 2 decimals for weights, 1 for scores, never -0.00", () => {
  assert.equal(cellText(WEIGHTS, 0.256, 0), "0.26");
  assert.equal(cellText(WEIGHTS, -0.0001, 0), "0.00");
  assert.equal(cellText({ ...WEIGHTS, scale: "scores" }, -3.04159, 0), "-3.0");
  assert.equal(cellText(WEIGHTS, Number.NaN, 2), "NaN");
  assert.equal(cellText({ ...WEIGHTS, masked_text: "-inf" }, 0, 1), "-inf");
  assert.equal(cellText(WEIGHTS, 0, 1), "");
});

test("big heatmaps: one pixel per cell, from the look-up table", () => {
  const panel = { ...WEIGHTS, n_q: 1, n_k: 4 };
  const pixels = cellPixels(panel, new Float32Array([0, 1, 0.5, 0.5]), new Uint8Array([0, 0, 1, 2]));
  assert.deepEqual([...pixels.subarray(0, 4)], [...rgb("#440154"), 255]);
  assert.deepEqual([...pixels.subarray(4, 8)], [...rgb("#fde725"), 255]);
  assert.deepEqual([...pixels.subarray(8, 12)], [...rgb(MASKED), 255]);
  assert.deepEqual([...pixels.subarray(12, 16)], [...rgb(NAN), 255]);
  const mask = cellPixels({ ...panel, scale: "mask" }, new Float32Array([1, 0, 1, 1]), new Uint8Array(4));
  assert.deepEqual([...mask.subarray(0, 8)], [...rgb(MAY_ATTEND), 255, ...rgb(MASKED), 255]);
});

test("a heatmap's hover names the query, the key and the value (or why there is none)", () => {
  const panel = {
    ...WEIGHTS,
    n_q: 2,
    n_k: 2,
    y_labels: ["the", "cat"],
    x_labels: ["a", "b"],
    masked_hover: "masked: no",
  };
  const frame = { left: 10, top: 5 };
  const hover = heatmapHover(
    panel,
    frame,
    new Float32Array([0.25, 0.75, 0, 0.5]),
    new Uint8Array([0, 4, 1, 2]),
  );
  assert.equal(hover(15, 10), "query 0 'the' → key 0 'a'\nweight 0.25");
  assert.equal(hover(35, 10), "query 0 'the' → key 1 'b'\nweight 0.75\nmasked, yet weight > 0 (leak)");
  assert.equal(hover(15, 30), "query 1 'cat' → key 0 'a'\nmasked: no");
  assert.equal(hover(35, 30), "query 1 'cat' → key 1 'b'\nNaN: the softmax of a row of -inf is 0/0");
  assert.equal(hover(5, 10), null);
  assert.equal(hover(51, 10), null);
  const plain = heatmapHover(
    { ...panel, y_labels: undefined, x_labels: undefined, dtype: "bfloat16" },
    frame,
    new Float32Array([0.123456, 0, 0, 0]),
    new Uint8Array(4),
  );
  assert.equal(plain(15, 10), "query 0 → key 0\nweight 0.123");
});

test("a histogram's hover says its own bin and count words, not another histogram's", () => {
  const frame = { left: 0, top: 0, w: 100, h: 50 };
  const series = [{ name: "raw scores q·k" }, { name: "softmax input" }];
  const scores = {
    kind: "histogram",
    series,
    edge_range: [-2, 2],
    x_title: "score",
    y_title: "(query, key) pairs",
  };
  const hover = histogramHover(scores, frame, new Uint16Array([1, 2, 3, 4, 5, 6, 7, 8]));
  assert.equal(
    hover(10, 10),
    "score -2 to -1\nraw scores q·k: 1 (query, key) pairs\nsoftmax input: 5 (query, key) pairs",
  );
  assert.equal(
    hover(99, 10),
    "score 1 to 2\nraw scores q·k: 4 (query, key) pairs\nsoftmax input: 8 (query, key) pairs",
  );
  assert.equal(hover(101, 10), null);
  const lengths = { kind: "histogram", series: [{ name: "loss" }], edge_range: [0, 1] };
  assert.equal(histogramHover(lengths, frame, new Uint16Array([3, 9]))(80, 1), "bin 0.5 to 1\nloss: 9");
});

test("a bar's hover: the panel's own words, else the series, the label and the value", () => {
  const frame = { left: 0, top: 0, w: 100, h: 50 };
  const panel = { kind: "bars", x_labels: ["a", "b"], series: [{ name: "weight" }], ymax: 1 };
  const hover = barsHover(panel, frame, new Float32Array([0.25, 0.5]));
  assert.equal(hover(20, 40), "weight\na: 0.25");
  assert.equal(hover(60, 40), "weight\nb: 0.5");
  assert.equal(hover(50, 40), null); // between the bars
  assert.equal(hover(20, 51), null); // below the plot
  const own = barsHover({ ...panel, hover: [["first", "second"]] }, frame, new Float32Array([0.25, 0.5]));
  assert.equal(own(60, 40), "second");
});

test("a point's hover: the topmost marker under the mouse", () => {
  const panel = {
    x_range: [0, 10],
    y_range: [0, 10],
    shapes: [
      { type: "line", x: [0, 5], y: [0, 5], colour: "red" },
      { type: "marker", x: 5, y: 5, r: 3, hover: "below" },
      { type: "marker", x: 5, y: 5, r: 10, hover: "on top" },
      { type: "marker", x: 0, y: 0, r: 3, hover: "corner" },
    ],
  };
  const hover = pointsHover(panel, { left: 0, top: 0, w: 100, h: 100 });
  assert.equal(hover(50, 50), "on top");
  assert.equal(hover(2, 98), "corner");
  assert.equal(hover(80, 20), null);
});

test("the numbers table of each panel kind", () => {
  const heatmap = {
    ...WEIGHTS,
    n_q: 2,
    n_k: 2,
    values: floatView([0.5, 0.25, 0, 1]),
    flags: new DataView(new Uint8Array([0, 1, 2, 0]).buffer),
  };
  assert.deepEqual(tableOf(heatmap), {
    header: ["query \\ key", "0", "1"],
    rows: [
      ["0", "0.5", "masked"],
      ["1", "NaN", "1"],
    ],
    caption: "",
  });
  const big = { ...WEIGHTS, n_q: 40, n_k: 33, values: floatView(new Array(40 * 33).fill(0.5)) };
  const cut = tableOf(big);
  assert.equal(cut.rows.length, 32);
  assert.equal(cut.header.length, 33);
  assert.equal(cut.caption, "first 32 x 32 of 40 x 33");
  const bars = {
    kind: "bars",
    x_labels: ["a", "b"],
    series: [{ name: "s" }, { name: "t" }],
    values: floatView([1, 2, 3, 4]),
  };
  assert.deepEqual(tableOf(bars).rows, [
    ["a", "1", "3"],
    ["b", "2", "4"],
  ]);
  const histogram = {
    kind: "histogram",
    x_title: "score",
    edge_range: [0, 3],
    series: [{ name: "s" }],
    dtype: "uint16",
    values: countView([2, 0, 5]),
  };
  assert.deepEqual(tableOf(histogram), {
    header: ["score", "s"],
    rows: [
      ["0 to 1", "2"],
      ["2 to 3", "5"],
    ],
    caption: "",
  });
  const points = { kind: "points", table: { header: ["word"], rows: [["cat"]] } };
  assert.deepEqual(tableOf(points), { header: ["word"], rows: [["cat"]], caption: "" });
});
