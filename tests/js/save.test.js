// What a saved picture is called and what its CSV holds (attnviz/widgets/js/save.js). The PNGs
// themselves are read back from real downloads by the browser test (tests/test_browser.py).

import assert from "node:assert/strict";
import { test } from "node:test";

import { fileName, panelCsv } from "../../attnviz/widgets/js/save.js";

function floatView(numbers) {
  return new DataView(new Float32Array(numbers).buffer);
}

test("a file is named by the scene's file, the panel and the size", () => {
  const scene = { explorer: "saturation", file: "03_saturation_d_k-512_temperature-1" };
  assert.equal(fileName(scene, "unscaled", "", "png"), "03_saturation_d_k-512_temperature-1_unscaled.png");
  assert.equal(
    fileName(scene, "unscaled", "2x", "png"),
    "03_saturation_d_k-512_temperature-1_unscaled_2x.png",
  );
  assert.equal(fileName({ explorer: "mask" }, "weights/0", "", "csv"), "mask_weights-0.csv"); // no file: the kind
  assert.equal(fileName({ explorer: "head" }, "L0 H1", "", "png"), "head_L0-H1.png");
});

test("a heatmap's CSV: key labels, then each query's values as the browser holds them", () => {
  const values = [1 / 3, 0, 0.1, Number.NaN];
  const panel = { kind: "heatmap", n_q: 2, n_k: 2, values: floatView(values), x_labels: ["a,b", 'say "hi"'] };
  panel.flags = new DataView(new Uint8Array([0, 1, 0, 2]).buffer);
  const lines = panelCsv(panel).trimEnd().split("\n");
  assert.equal(lines[0], 'query \\ key,"a,b","say ""hi"""');
  const third = Math.fround(1 / 3);
  assert.equal(lines[1], `0,${Number(third.toPrecision(9))},0`); // a masked weight: its value, 0
  assert.equal(Math.fround(Number(lines[1].split(",")[1])), third, "9 digits give back the float32");
  assert.equal(lines[2], `1,${Number(Math.fround(0.1).toPrecision(9))},NaN`);
  const scores = { ...panel, values: floatView([Number.NEGATIVE_INFINITY, 2, 3, 4]), flags: undefined };
  assert.ok(
    panelCsv(scores).includes("\n0,-Infinity,2\n"),
    "a fill of -inf is written so Python reads it back",
  );
});

test("a big heatmap (bfloat16) is written to the 4 digits it carries", () => {
  const words = new Uint16Array([0x3eab, 0x3f80]); // bfloat16 0.333984375 and 1
  const panel = { kind: "heatmap", n_q: 1, n_k: 2, dtype: "bfloat16", values: new DataView(words.buffer) };
  assert.equal(panelCsv(panel).trimEnd().split("\n")[1], "0,0.334,1");
});

test("other panels: their numbers table, headed by the axes' titles", () => {
  const bars = {
    kind: "bars",
    x_labels: ["MHA", "GQA"],
    series: [{ name: "KV cache", colour: "#000" }],
    values: floatView([2, 0.5]),
    x_title: "attention variant",
    y_title: "KV cache (GiB)",
  };
  assert.equal(panelCsv(bars), "attention variant,KV cache (GiB)\nMHA,2\nGQA,0.5\n");
  const table = { header: ["word", "weight"], rows: [["cat", "0.39"]] };
  const points = { kind: "points", table };
  assert.equal(panelCsv(points), "word,weight\ncat,0.39\n");
  assert.deepEqual(table.header, ["word", "weight"], "the panel's own table is left as it is");
});
