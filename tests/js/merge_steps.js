// Merges the kernel's prepared steps the way the browser does (attnviz/widgets/js/scene.js) and says
// which ones do not give the kernel's own picture. Run by tests/test_ahead.py:
//
//   node tests/js/merge_steps.js < cases.json    prints the labels of the cases that differ, as JSON
//
// Each case is {label, base, step, expected}: a scene, a packed delta of it, and the scene the kernel
// sent once the controls held that step's setting. Binary buffers travel as {"$bytes": base64}.

import { merge, samePicture } from "../../attnviz/widgets/js/scene.js";

function decode(value) {
  if (Array.isArray(value)) {
    return value.map(decode);
  }
  if (value === null || typeof value !== "object") {
    return value;
  }
  if ("$bytes" in value) {
    const bytes = Buffer.from(value.$bytes, "base64");
    return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, decode(item)]));
}

/** The same picture: every panel (but its text alternative), the sections, the frame, the explorer. */
function samePictures(a, b) {
  const names = new Set([...Object.keys(a.panels), ...Object.keys(b.panels)]);
  for (const name of names) {
    if (!a.panels[name] || !b.panels[name] || !samePicture(a.panels[name], b.panels[name])) {
      return false;
    }
  }
  const rest = (scene) => JSON.stringify([scene.explorer, scene.sections, scene.selected]);
  return rest(a) === rest(b);
}

const chunks = [];
for await (const chunk of process.stdin) {
  chunks.push(chunk);
}
const cases = decode(JSON.parse(Buffer.concat(chunks).toString("utf8")));
const differ = cases
  .filter(({ base, step, expected }) => !samePictures(merge(base, step), expected))
  .map(({ label }) => label);
process.stdout.write(JSON.stringify(differ));
