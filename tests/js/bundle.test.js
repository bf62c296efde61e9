// The explorers' front-end (attnviz/widgets/canvas.js, which loader.js unpacks) is what attnviz/widgets/js/ builds.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";

import { BUNDLE, build } from "../../tools/build_canvas.js";

const MODULES = join(dirname(BUNDLE), "js");

test("the committed bundle is up to date with its modules (else: make canvas)", async () => {
  const committed = readFileSync(BUNDLE, "utf8");
  assert.ok(committed === (await build()), "attnviz/widgets/canvas.js is stale: run `make canvas`");
});

test("the bundle exports the render function anywidget calls", async () => {
  const module = await import(`data:text/javascript;base64,${Buffer.from(await build()).toString("base64")}`);
  assert.equal(typeof module.default.render, "function");
});

/** A line's code with its comment, string and template contents taken out (enough for this code:
 * a line inside a block comment starts with `*`). */
function codeOf(line) {
  if (/^\s*(\*|\/\*)/.test(line)) {
    return "";
  }
  return line
    .replace(/\/\/.*$/, "")
    .replace(/\/\*.*?\*\//g, "")
    .replace(/"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`/g, '""');
}

/** Lines holding a statement and then more code after its semicolon (a `for (;;)` head excepted). */
export function crowdedLines(text) {
  return text
    .split("\n")
    .map((line, index) => [index + 1, codeOf(line).trim()])
    .filter(([, code]) => !code.startsWith("for (") && /;\s*\S/.test(code));
}

test("the crowded-line rule finds two statements on a line and passes one", () => {
  const text = "let a = 1; let b = 2;\nfor (let i = 0; i < 3; i++) {\nf(';');\n * a; b in a comment";
  assert.deepEqual(crowdedLines(text), [[1, "let a = 1; let b = 2;"]]);
});

test("no line of the bundle, of its modules or of the loader holds more than one statement", async () => {
  const loader = join(dirname(BUNDLE), "loader.js");
  const files = [BUNDLE, loader, ...readdirSync(MODULES).map((name) => join(MODULES, name))];
  for (const file of files.filter((name) => name.endsWith(".js"))) {
    const crowded = crowdedLines(readFileSync(file, "utf8"));
    assert.deepEqual(crowded.slice(0, 3), [], `${file}: lines with more than one statement`);
  }
});
