// Save a picture: a "save" button beside each panel's "numbers" opens three formats: PNG at the
// screen's resolution, PNG at twice it (for slides), and CSV (a heatmap's every number; another
// panel's numbers table). A PNG is painted afresh by the panel's own painter on the theme's
// background, with the panel's title on top. Files are downloaded from a blob URL: nothing leaves
// the page. Each is named by the scene's `file` (notebook, explorer and settings, from Python:
// attnviz/widgets/_save.py), the panel and the size: 03_saturation_d_k-512_..._unscaled_2x.png.
// (An SVG writer, a 2D context that writes SVG elements for the same painters, cost 1.1 kB gzipped
// and would take the front-end over its byte budget, tests/test_widgets.py.)

import { frameFor } from "./axes.js";
import { font } from "./colour.js";
import { make } from "./dom.js";
import { FLAG_NAN } from "./heatmap.js";
import { flagsOf, valuesOf } from "./scene.js";
import { tableOf } from "./table.js";

const TITLE_PX = 13;
const LINE = 17;

/** The file name for panel `name` of `scene`: its `file` (or the explorer's kind), the panel, `extra`. */
export function fileName(scene, name, extra, extension) {
  const words = [scene.file || scene.explorer || "explorer", name, extra].filter(Boolean);
  return `${words.map((word) => word.replace(/[^\w.+-]+/g, "-")).join("_")}.${extension}`;
}

function csvCell(text) {
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * A panel's numbers as CSV. A heatmap: a row of key labels, then one row per query, every value as
 * the browser holds it (float32: 9 significant digits, which give back the very float32; big heatmaps
 * travel as bfloat16: 4), masked cells by their value (a weight of 0, a fill of -Infinity), NaN as
 * NaN. Other panels: their numbers table, headed by the axes' titles.
 */
export function panelCsv(panel) {
  let rows = [];
  if (panel.kind === "heatmap") {
    const values = valuesOf(panel);
    const flags = flagsOf(panel);
    const digits = panel.dtype === "bfloat16" ? 4 : 9;
    const label = (labels, i) => (labels ? labels[i] : String(i));
    rows.push(["query \\ key", ...Array.from({ length: panel.n_k }, (_, j) => label(panel.x_labels, j))]);
    for (let i = 0; i < panel.n_q; i++) {
      const row = [label(panel.y_labels, i)];
      for (let j = 0; j < panel.n_k; j++) {
        const k = i * panel.n_k + j;
        row.push(flags[k] & FLAG_NAN ? "NaN" : String(Number(values[k].toPrecision(digits))));
      }
      rows.push(row);
    }
  } else {
    const table = tableOf(panel);
    const header = [...table.header]; // (a points panel's table is the panel's own: left as it is)
    header[0] ||= panel.x_title || "";
    if (header.length === 2 && panel.y_title) {
      header[1] = panel.y_title; // one series: the value axis says what it is, and its unit
    }
    rows = [header, ...table.rows];
  }
  return `${rows.map((row) => row.map(csvCell).join(",")).join("\n")}\n`;
}

/** The title's words in lines no wider than `width` (measured in the title's font). */
function titleLines(ctx, theme, title, width) {
  ctx.font = font(theme, TITLE_PX);
  const lines = [];
  for (const word of (title || "").split(" ").filter(Boolean)) {
    const last = lines.length - 1;
    if (last >= 0 && ctx.measureText(`${lines[last]} ${word}`).width <= width) {
      lines[last] += ` ${word}`;
    } else {
      lines.push(word);
    }
  }
  return lines;
}

/**
 * Paint `panel` on `ctx` as the page shows it, its title above: returns the size in CSS pixels.
 * `begin(width, height)` is called once the size is known, before anything is painted.
 */
function paintPicture(ctx, theme, panel, painter, begin) {
  const frame = frameFor(ctx, theme, panel);
  const width = Math.ceil(frame.left + frame.w + frame.right);
  const lines = titleLines(ctx, theme, panel.title, width - 8);
  const top = lines.length * LINE + (lines.length ? 4 : 0);
  const height = Math.ceil(top + frame.top + frame.h + frame.bottom);
  begin(width, height);
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = theme.fg;
  ctx.font = font(theme, TITLE_PX);
  ctx.textAlign = "left";
  ctx.textBaseline = "top";
  lines.forEach((line, i) => {
    ctx.fillText(line, 4, 4 + i * LINE);
  });
  ctx.save();
  ctx.translate(0, top);
  painter(ctx, theme, frame, panel);
  ctx.restore();
  return { width, height };
}

/** A PNG of the panel at `ratio` device pixels per CSS pixel. */
function png(theme, panel, painter, ratio) {
  const canvas = make("canvas");
  const ctx = canvas.getContext("2d");
  paintPicture(ctx, theme, panel, painter, (width, height) => {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  });
  return new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
}

/** Hand `blob` to the browser as a download called `name`. */
function download(blob, name) {
  const link = make("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

/** The formats: the button's words, what the file name adds, and how the file is made. */
const FORMATS = [
  ["PNG", "", "png", (t, p, painter) => png(t, p, painter, window.devicePixelRatio || 1)],
  ["PNG 2×", "2x", "png", (t, p, painter) => png(t, p, painter, 2 * (window.devicePixelRatio || 1))],
  ["CSV", "", "csv", (_t, p) => new Blob([panelCsv(p)], { type: "text/csv" })],
];

/**
 * The save button of one panel box and its formats, put just before the box's numbers table.
 * `now()` gives what is on screen: `{panel, theme, scene, name}` (panel with its defaults filled in),
 * or nothing before the first paint. Returns the element holding them (hidden with "numbers").
 */
export function addSave(box, now, painters) {
  const holder = make("span", "attnviz-save");
  const button = make("button", "", holder, "save");
  const formats = make("span", "attnviz-save-as", holder);
  button.type = "button";
  button.setAttribute("aria-expanded", "false");
  formats.setAttribute("role", "group");
  formats.setAttribute("aria-label", "save as");
  formats.hidden = true;
  button.onclick = () => {
    formats.hidden = !formats.hidden;
    button.setAttribute("aria-expanded", String(!formats.hidden));
  };
  for (const [words, extra, extension, makeFile] of FORMATS) {
    const format = make("button", "", formats, words);
    format.type = "button";
    format.onclick = async () => {
      const shown = now();
      if (shown) {
        const blob = await makeFile(shown.theme, shown.panel, painters[shown.panel.kind]);
        download(blob, fileName(shown.scene, shown.name, extra, extension));
      }
    };
  }
  box.figure.insertBefore(holder, box.numbers);
  return holder;
}
