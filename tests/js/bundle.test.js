// The file anywidget loads (attnviz/widgets/canvas.js) is what attnviz/widgets/js/ builds.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { BUNDLE, build } from "../../tools/build_canvas.js";

test("the committed bundle is up to date with its modules (else: make canvas)", async () => {
  const committed = readFileSync(BUNDLE, "utf8");
  assert.ok(committed === (await build()), "attnviz/widgets/canvas.js is stale: run `make canvas`");
});

test("the bundle exports the render function anywidget calls", async () => {
  const module = await import(`data:text/javascript;base64,${Buffer.from(await build()).toString("base64")}`);
  assert.equal(typeof module.default.render, "function");
});
