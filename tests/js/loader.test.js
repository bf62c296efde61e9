// The loader (attnviz/widgets/loader.js) unpacks the gzipped front-end the widget sends.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import loader, { unpack } from "../../attnviz/widgets/loader.js";
import { BUNDLE } from "../../tools/build_canvas.js";

test("the loader unpacks the gzipped bundle to its text, from a DataView as the widget model gives it", async () => {
  const text = readFileSync(BUNDLE, "utf8");
  const packed = gzipSync(Buffer.from(text), { level: 9 });
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  assert.equal(await unpack(view), text);
});

test("the loader refuses bytes that are not gzip", async () => {
  await assert.rejects(unpack(new Uint8Array([1, 2, 3, 4])));
});

/** A widget model as the loader sees it: `front_end` bytes under a `front_end_id`. */
function model(id, packed) {
  return { get: (name) => ({ front_end_id: id, front_end: packed })[name] };
}

test("a front-end that cannot be loaded is said in the explorer's place, not thrown", async () => {
  const el = { textContent: "" };
  const cleanup = await loader.render({ model: model("not-gzip", new Uint8Array([1, 2, 3])), el });
  assert.equal(cleanup, undefined);
  assert.match(el.textContent, /^This explorer could not start: the browser could not load its drawing code/);
});

// (node cannot import a blob: URL, so here each render then says it could not start; what is tested
// is that the text was unpacked once for all three)
test("explorers with the same front-end unpack it once per page", async () => {
  const packed = gzipSync(Buffer.from("export default { render() {} };"));
  const before = globalThis.__attnvizFrontEnds?.size ?? 0;
  for (let i = 0; i < 3; i++) {
    await loader.render({ model: model("same-id", packed), el: { textContent: "" } });
  }
  assert.equal(globalThis.__attnvizFrontEnds.size, before + 1);
});
