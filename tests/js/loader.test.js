// The loader (attnviz/widgets/loader.js) unpacks the gzipped front-end the widget sends.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { unpack } from "../../attnviz/widgets/loader.js";
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
