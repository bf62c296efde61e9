// What travels from the kernel (attnviz/widgets/canvas.py) and how it is read back: the Scene, its
// Panels, their binary buffers, and the look-ahead's deltas. Pure functions: no DOM, no canvas.

/**
 * One picture of an explorer, as `Panel.to_scene()` sends it. Keys that are absent take
 * `HEATMAP_DEFAULTS` (heatmaps: see `withDefaults`) or mean "none".
 * @typedef {Object} Panel
 * @property {"heatmap" | "bars" | "histogram" | "points"} kind
 * @property {string} [title]
 * @property {string} [description] the text alternative a screen reader reads
 * @property {DataView} [values] the numbers, as bytes: float32, or `dtype`
 * @property {"uint16" | "bfloat16"} [dtype] uint16: histogram counts; bfloat16: heatmaps over 32 x 32
 * @property {string[]} [x_labels]
 * @property {string[]} [y_labels]
 * @property {string} [x_title]
 * @property {string} [y_title]
 * @property {number} [n_q] heatmap: rows (queries)
 * @property {number} [n_k] heatmap: columns (keys)
 * @property {DataView} [flags] heatmap: one uint8 per cell, 1 masked, 2 NaN, 4 leak (absent: none)
 * @property {"weights" | "scores" | "mask"} [scale] heatmap colour scale
 * @property {number} [vmin] heatmap: the value drawn at the bottom of the scale
 * @property {number} [vmax] heatmap: the value drawn at the top of the scale
 * @property {string} [value_name] heatmap: what a cell holds ("weight")
 * @property {number} [cell] heatmap: a cell's side in CSS pixels
 * @property {boolean} [small] heatmap: a thumbnail (no axes, labels or colour bar)
 * @property {boolean | string[][]} [text] heatmap: write each cell's value in it; bars: the words
 *   above each bar, per series
 * @property {boolean} [bar] heatmap: draw the colour bar
 * @property {string} [masked_text] heatmap: written into masked cells
 * @property {string} [masked_hover] heatmap: the hover text of a masked cell
 * @property {*} [pick] clicking the panel sends `{pick}` to the kernel
 * @property {{name: string, colour: string}[]} [series] bars and histogram
 * @property {number} [ymax] bars: the top of the value axis
 * @property {string[]} [colours] bars: one colour per bar (else the series' colour)
 * @property {string[][]} [hover] bars: hover text per series and bar
 * @property {[number, number]} [edge_range] histogram: first and last bin edge (bins are equal)
 * @property {{x: number, label?: string}[]} [marks] histogram: dashed vertical lines
 * @property {Shape[]} [shapes] points
 * @property {[number, number]} [x_range] points
 * @property {[number, number]} [y_range] points
 * @property {{header: string[], rows: string[][]}} [table] points: the numbers table
 * @property {number} [width] bars, histogram, points: plot area in CSS pixels
 * @property {number} [height]
 */

/**
 * A line, circle or marker of a points panel, in data coordinates.
 * @typedef {Object} Shape
 * @property {"line" | "circle" | "marker"} type
 * @property {number | number[]} x a number, or a line's points
 * @property {number | number[]} y
 * @property {string} colour a CSS colour, or "fg" for the theme's second text colour
 * @property {number} [width] line width
 * @property {boolean} [faint] drawn at a third of full strength
 * @property {boolean} [arrow] a line ends in an arrow head
 * @property {number} [radius] circle, in data units
 * @property {number} [r] marker radius in CSS pixels
 * @property {"dot" | "ring" | "star"} [shape] marker
 * @property {string} [label] written above a marker
 * @property {string} [hover] a marker's hover text
 */

/**
 * What one update of an explorer shows.
 * @typedef {Object} Scene
 * @property {string} explorer the explorer's kind (data-attnviz-explorer)
 * @property {Section[]} sections
 * @property {Object<string, Panel>} panels this update's panels (the `fixed` ones come apart)
 * @property {string | null} selected the panel drawn with a frame
 * @property {Object<string, *>} [at] what the linked controls hold for this scene (browser values)
 * @property {number} [seq] which scene this is (a look-ahead names the scene it extends)
 * @property {string} [file] what a saved picture is called: notebook, explorer, settings (save.js);
 *   a step of the look-ahead keeps its base's
 */

/**
 * @typedef {Object} Section
 * @property {string} title
 * @property {string[]} panels names, in order
 * @property {number} [grid] columns of a grid, else one wrapping row
 * @property {{kind: string, text: string, colour?: string}[]} [legend]
 */

/**
 * The kernel's prepared next pictures: deltas of scene `seq`, one per slider value.
 * @typedef {Object} Ahead
 * @property {number} seq
 * @property {{control: string, value: *, scene: Object}[]} entries `scene`: a packed delta
 */

/** A panel's float32 values (copied only when the buffer is not 4-byte aligned). */
export function floats(view) {
  if (view.byteOffset % 4 === 0) {
    return new Float32Array(view.buffer, view.byteOffset, view.byteLength / 4);
  }
  const copy = view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength);
  return new Float32Array(copy);
}

/** Little-endian 16-bit words. */
export function halves(view) {
  const count = view.byteLength / 2;
  return Uint16Array.from({ length: count }, (_unused, i) => view.getUint16(i * 2, true));
}

/** bfloat16 words as float32: the top 16 bits of a float32. */
export function bfloat16s(view) {
  const bits = Uint32Array.from(halves(view), (word) => word << 16);
  return new Float32Array(bits.buffer);
}

/** A panel's values as numbers, whatever they travelled as. */
export function valuesOf(panel) {
  if (panel.dtype === "uint16") {
    return halves(panel.values);
  }
  if (panel.dtype === "bfloat16") {
    return bfloat16s(panel.values);
  }
  return floats(panel.values);
}

/** Significant digits the values carry (bfloat16 carries about 3): hover and tables say no more. */
export function digitsOf(panel) {
  return panel.dtype === "bfloat16" ? 3 : 6;
}

/** A heatmap's flags, one byte per cell (absent: every cell clear). */
export function flagsOf(panel) {
  if (!panel.flags) {
    return new Uint8Array(panel.n_q * panel.n_k);
  }
  return new Uint8Array(panel.flags.buffer, panel.flags.byteOffset, panel.flags.byteLength);
}

/** The `bins + 1` equal bin edges of a histogram. */
export function edgesOf(panel, bins) {
  const [low, high] = panel.edge_range;
  return Float64Array.from({ length: bins + 1 }, (_unused, b) => low + ((high - low) * b) / bins);
}

/** A panel's labels along one side, or the positions 0, 1, ... when it has none. */
export function labelsOr(labels, count) {
  return labels || [...Array(count).keys()].map(String);
}

/** A heatmap with the defaults Python leaves out of the scene filled in. */
export function withDefaults(panel, defaults) {
  if (panel.kind !== "heatmap") {
    return panel;
  }
  return { ...(defaults.heatmap || {}), ...panel };
}

function isBufferRef(value) {
  return "at" in value && "len" in value && Object.keys(value).length === 2;
}

/** A packed step's `{at, len}` leaves turned back into DataViews of its one `blob`. */
export function unpack(value, blob) {
  if (Array.isArray(value)) {
    return value.map((item) => unpack(item, blob));
  }
  if (!value || typeof value !== "object" || value instanceof DataView) {
    return value;
  }
  if (isBufferRef(value)) {
    return new DataView(blob.buffer, blob.byteOffset + value.at, value.len);
  }
  const entries = Object.entries(value).map(([key, item]) => [key, unpack(item, blob)]);
  return Object.fromEntries(entries);
}

/** A scene plus a delta from the look-ahead (packed or not; a null key = removed). */
export function merge(base, packed) {
  const delta = packed.blob ? unpack({ ...packed, blob: null }, packed.blob) : packed;
  const panels = { ...(base.panels || {}) };
  for (const [name, spec] of Object.entries(delta.panels || {})) {
    const panel = { ...(panels[name] || {}), ...spec };
    for (const key of Object.keys(spec)) {
      if (spec[key] === null) {
        delete panel[key];
      }
    }
    panels[name] = panel;
  }
  const out = { ...base, panels };
  if ("selected" in delta) {
    out.selected = delta.selected;
  }
  if (delta.sections) {
    out.sections = delta.sections.map((section, i) => (section === null ? base.sections[i] : section));
  }
  return out;
}

function sameBytes(x, y) {
  if (x.byteLength !== y.byteLength) {
    return false;
  }
  const u = new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  const v = new Uint8Array(y.buffer, y.byteOffset, y.byteLength);
  for (let i = 0; i < u.length; i++) {
    if (u[i] !== v[i]) {
      return false;
    }
  }
  return true;
}

/** Do two panels draw the same picture? All keys but the text alternative; buffers by their bytes. */
export function samePicture(a, b) {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  keys.delete("description");
  for (const key of keys) {
    const x = a[key];
    const y = b[key];
    if (x instanceof DataView && y instanceof DataView) {
      if (!sameBytes(x, y)) {
        return false;
      }
    } else if (x !== y && JSON.stringify(x) !== JSON.stringify(y)) {
      return false;
    }
  }
  return true;
}
