// Builds attnviz/widgets/canvas.js, the front-end every explorer runs, from the modules in
// attnviz/widgets/js/ with the pinned esbuild (package.json).
//
//   node tools/build_canvas.js           write attnviz/widgets/canvas.js (`make canvas` runs this)
//   node tools/build_canvas.js --check   exit 1 if the committed file differs from a fresh build
//
// The bundle keeps one statement per line (comments left out), so that what the browser runs can be
// read in its developer tools; only local names are shortened (minifyIdentifiers): every explorer's
// widget carries the bundle over the kernel websocket (gzipped; attnviz/widgets/loader.js unpacks
// it), so its bytes count once per explorer on the page. Measured on the modules as merged for the
// keys and save buttons: full minification 24.0 kB (9.7 kB gzipped, 8 lines up to 7,672 columns),
// this 35.6 kB (11.3 kB gzipped, 1,431 lines up to 104 columns), no minification 45.9 kB (13.1 kB).
// Read and edit the modules, not it. Its byte budgets are in tests/test_widgets.py (make check runs
// them; `.venv/bin/python -m pytest tests/test_widgets.py -k budget` alone). Renamed locals make a
// small change rewrite many lines of the bundle: on a merge conflict in canvas.js, take either side
// and run `make canvas` again.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..");
export const ENTRY = join(REPO, "attnviz", "widgets", "js", "render.js");
export const BUNDLE = join(REPO, "attnviz", "widgets", "canvas.js");
const BANNER = [
  "// Built by tools/build_canvas.js from attnviz/widgets/js/ (make canvas): edit those, not this.",
  "// The front-end of every attnviz explorer; its contract with the page is at the top of js/render.js.",
].join("\n");

/** The bundle's text, as a fresh build makes it. */
export async function build() {
  const result = await esbuild.build({
    entryPoints: [ENTRY],
    bundle: true,
    format: "esm",
    minifyIdentifiers: true,
    legalComments: "none",
    banner: { js: BANNER },
    write: false,
  });
  return result.outputFiles[0].text;
}

async function main(args) {
  const fresh = await build();
  if (!args.includes("--check")) {
    writeFileSync(BUNDLE, fresh);
    const gzipped = gzipSync(Buffer.from(fresh), { level: 9 }).length;
    console.log(`wrote ${BUNDLE} (${fresh.length} bytes, ${gzipped} gzipped)`);
    return 0;
  }
  if (readFileSync(BUNDLE, "utf8") === fresh) {
    return 0;
  }
  console.error(`${BUNDLE} is not what attnviz/widgets/js/ builds: run \`make canvas\` and commit it.`);
  return 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
