// Decoding what the kernel sends (attnviz/widgets/js/scene.js): buffers, defaults, merge, same-picture.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  bfloat16s,
  digitsOf,
  edgesOf,
  flagsOf,
  floats,
  halves,
  merge,
  samePicture,
  unpack,
  valuesOf,
  withDefaults,
} from "../../attnviz/widgets/js/scene.js";

/** A DataView on `bytes` placed `offset` bytes into a bigger buffer (as ipywidgets may hand it over). */
function view(bytes, offset = 0) {
  const buffer = new Uint8Array(offset + bytes.length);
  buffer.set(bytes, offset);
  return new DataView(buffer.buffer, offset, bytes.length);
}

function float32Bytes(numbers) {
  return new Uint8Array(new Float32Array(numbers).buffer);
}

test("float32 values are read in place, or copied when the buffer is not aligned", () => {
  const aligned = floats(view(float32Bytes([0.25, -1, 3.5]), 8));
  assert.deepEqual([...aligned], [0.25, -1, 3.5]);
  const odd = floats(view(float32Bytes([0.25, -1, 3.5]), 3));
  assert.deepEqual([...odd], [0.25, -1, 3.5]);
});

test("uint16 counts and bfloat16 values are little-endian words", () => {
  assert.deepEqual([...halves(view(new Uint8Array([1, 0, 0, 1, 255, 255])))], [1, 256, 65535]);
  // bfloat16 is float32's top half: 1.0 = 0x3f80, -2.0 = 0xc000, 0.5 = 0x3f00
  const words = view(new Uint8Array([0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f]), 1);
  assert.deepEqual([...bfloat16s(words)], [1, -2, 0.5]);
  assert.deepEqual([...valuesOf({ dtype: "bfloat16", values: words })], [1, -2, 0.5]);
  assert.deepEqual([...valuesOf({ dtype: "uint16", values: view(new Uint8Array([3, 0])) })], [3]);
  assert.equal(digitsOf({ dtype: "bfloat16" }), 3);
  assert.equal(digitsOf({}), 6);
});

test("absent flags mean every cell is clear", () => {
  assert.deepEqual([...flagsOf({ n_q: 2, n_k: 3 })], [0, 0, 0, 0, 0, 0]);
  assert.deepEqual([...flagsOf({ n_q: 1, n_k: 2, flags: view(new Uint8Array([1, 6]), 5) })], [1, 6]);
});

test("a histogram's edges are equal bins over its edge range", () => {
  assert.deepEqual([...edgesOf({ edge_range: [-1, 1] }, 4)], [-1, -0.5, 0, 0.5, 1]);
});

test("heatmaps take Python's defaults for what the scene left out, and keep what it says", () => {
  const defaults = { heatmap: { scale: "weights", vmin: 0, vmax: 1, bar: true } };
  assert.deepEqual(withDefaults({ kind: "heatmap", vmax: 2 }, defaults), {
    scale: "weights",
    vmin: 0,
    vmax: 2,
    bar: true,
    kind: "heatmap",
  });
  const bars = { kind: "bars", width: 300 };
  assert.equal(withDefaults(bars, defaults), bars);
});

test("a packed step unpacks to views of its one blob", () => {
  const blob = view(new Uint8Array([1, 2, 3, 4, 5, 0, 0, 0, 9, 8]));
  const out = unpack({ a: { at: 0, len: 5 }, b: [{ at: 8, len: 2 }], c: { at: 1 }, d: "x" }, blob);
  assert.deepEqual([...new Uint8Array(out.a.buffer, out.a.byteOffset, out.a.byteLength)], [1, 2, 3, 4, 5]);
  assert.deepEqual([...new Uint8Array(out.b[0].buffer, out.b[0].byteOffset, 2)], [9, 8]);
  assert.deepEqual(out.c, { at: 1 });
  assert.equal(out.d, "x");
});

test("merge: changed keys replace, null removes, untouched sections stay", () => {
  const base = {
    explorer: "x",
    panels: { a: { title: "t", values: 1, flags: 2 }, b: { title: "b" } },
    sections: [{ title: "one" }, { title: "two" }],
    selected: null,
  };
  const out = merge(base, { panels: { a: { values: 3, flags: null } }, sections: [null, { title: "2" }] });
  assert.deepEqual(out.panels.a, { title: "t", values: 3 });
  assert.equal(out.panels.b, base.panels.b);
  assert.deepEqual(out.sections, [{ title: "one" }, { title: "2" }]);
  assert.equal(out.selected, null);
  assert.equal(merge(base, { panels: {}, selected: "a" }).selected, "a");
  assert.deepEqual(base.panels.a, { title: "t", values: 1, flags: 2 });
  const more = merge(base, { panels: { c: { title: "new" } }, sections: [{ title: "only" }] });
  assert.deepEqual(more.sections, [{ title: "only" }]);
  assert.deepEqual(more.panels.c, { title: "new" });
});

test("merge unpacks a packed delta's buffers", () => {
  const base = { panels: { a: { values: view(new Uint8Array([0, 0])) } }, sections: [] };
  const packed = {
    panels: { a: { values: { at: 4, len: 2 } } },
    blob: view(new Uint8Array([0, 0, 0, 0, 7, 8])),
  };
  const values = merge(base, packed).panels.a.values;
  assert.deepEqual([...new Uint8Array(values.buffer, values.byteOffset, values.byteLength)], [7, 8]);
});

test("same picture: buffers compared by their bytes, the text alternative ignored", () => {
  const a = { kind: "heatmap", values: view(new Uint8Array([1, 2, 3])), title: "t", description: "one" };
  const b = { kind: "heatmap", values: view(new Uint8Array([1, 2, 3]), 5), title: "t", description: "two" };
  assert.equal(samePicture(a, b), true);
  assert.equal(samePicture(a, { ...b, values: view(new Uint8Array([1, 2, 4])) }), false);
  assert.equal(samePicture(a, { ...b, values: view(new Uint8Array([1, 2])) }), false);
  assert.equal(samePicture(a, { ...b, title: "u" }), false);
  assert.equal(samePicture({ ...a, labels: ["x"] }, { ...b, labels: ["x"] }), true);
  assert.equal(samePicture(a, { ...b, pick: [0, 1] }), false);
});
