// The module each explorer's widget sends to anywidget: it unpacks the front-end (canvas.js, sent
// gzipped in the widget's `front_end` bytes) and hands the view to it. Over the kernel websocket the
// front-end then costs its gzipped size, about a third of its text, once per explorer on the page;
// a page that shows several explorers decompresses it once and imports it in each, as anywidget
// imports a module. A browser that cannot unpack it says so in the explorer's place.

const UNPACKED = "__attnvizFrontEnds";

/**
 * The text of a gzipped front-end.
 * @param {DataView | ArrayBuffer | Uint8Array} packed
 * @returns {Promise<string>}
 */
export function unpack(packed) {
  const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

/** The front-end's text for this widget, unpacked once per page for each version (`front_end_id`). */
function frontEndText(model) {
  globalThis[UNPACKED] ??= new Map();
  const texts = globalThis[UNPACKED];
  const id = model.get("front_end_id");
  if (!texts.has(id)) {
    texts.set(id, unpack(model.get("front_end")));
  }
  return texts.get(id);
}

/** The front-end as a module of its own, imported the way anywidget imports `_esm`. */
async function importText(text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
  try {
    return (await import(/* webpackIgnore: true */ url)).default;
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function render(props) {
  let frontEnd;
  try {
    frontEnd = await importText(await frontEndText(props.model));
  } catch (error) {
    props.el.textContent =
      "This explorer could not start: the browser could not load its drawing code " +
      `(${error?.message ?? error}). A current Chrome, Edge, Firefox or Safari can.`;
    return undefined;
  }
  return frontEnd.render(props);
}

export default { render };
