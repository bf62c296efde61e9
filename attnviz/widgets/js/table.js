// The "numbers" table beside each panel: its values as an html <table>, for reading exact numbers
// and for screen readers.

import { fmt } from "./axes.js";
import { make } from "./dom.js";
import { FLAG_MASKED, FLAG_NAN } from "./heatmap.js";
import { digitsOf, edgesOf, flagsOf, labelsOr, valuesOf } from "./scene.js";

/** A heatmap's table shows at most this many rows and columns (and says so). */
export const TABLE_UP_TO = 32;

function heatmapTable(panel) {
  const values = valuesOf(panel);
  const flags = flagsOf(panel);
  const rows = Math.min(panel.n_q, TABLE_UP_TO);
  const columns = Math.min(panel.n_k, TABLE_UP_TO);
  const keys = labelsOr(panel.x_labels, panel.n_k).slice(0, columns);
  const queries = labelsOr(panel.y_labels, panel.n_q);
  const cell = (k) => {
    if (flags[k] & FLAG_NAN) {
      return "NaN";
    }
    if (flags[k] & FLAG_MASKED) {
      return "masked";
    }
    return fmt(values[k], Math.min(4, digitsOf(panel)));
  };
  const body = [];
  for (let i = 0; i < rows; i++) {
    const row = [...Array(columns).keys()].map((j) => cell(i * panel.n_k + j));
    body.push([queries[i], ...row]);
  }
  const cut = rows < panel.n_q || columns < panel.n_k;
  const caption = cut ? `first ${rows} x ${columns} of ${panel.n_q} x ${panel.n_k}` : "";
  return { header: ["query \\ key", ...keys], rows: body, caption };
}

function barsTable(panel) {
  const values = valuesOf(panel);
  const count = panel.x_labels.length;
  const rows = panel.x_labels.map((label, i) => [
    label,
    ...panel.series.map((_series, s) => fmt(values[s * count + i])),
  ]);
  return { header: ["", ...panel.series.map((series) => series.name)], rows, caption: "" };
}

function histogramTable(panel) {
  const values = valuesOf(panel);
  const bins = values.length / panel.series.length;
  const edges = edgesOf(panel, bins);
  const rows = [];
  for (let b = 0; b < bins; b++) {
    const counts = panel.series.map((_series, s) => values[s * bins + b]);
    if (counts.some((count) => count)) {
      rows.push([`${fmt(edges[b], 3)} to ${fmt(edges[b + 1], 3)}`, ...counts.map(String)]);
    }
  }
  const header = [panel.x_title || "bin", ...panel.series.map((series) => series.name)];
  return { header, rows, caption: "" };
}

/**
 * A panel's numbers as a table: `header` (the first row), `rows` (each starting with its label) and
 * a `caption` when the table shows only part of them. Empty bins of a histogram are left out.
 * @returns {{header: string[], rows: string[][], caption: string}}
 */
export function tableOf(panel) {
  if (panel.kind === "heatmap") {
    return heatmapTable(panel);
  }
  if (panel.kind === "bars") {
    return barsTable(panel);
  }
  if (panel.kind === "histogram") {
    return histogramTable(panel);
  }
  return { header: panel.table.header, rows: panel.table.rows, caption: "" };
}

/** Fill `box` with the panel's numbers table. */
export function showTable(box, panel) {
  const { header, rows, caption } = tableOf(panel);
  const table = make("table", "attnviz-table");
  const addRow = (cells, tag) => {
    const tr = make("tr", "", table);
    for (const text of cells) {
      make(tag, "", tr, text);
    }
  };
  addRow(header, "th");
  for (const row of rows) {
    addRow(row, "td");
  }
  if (caption) {
    make("caption", "", table, caption);
  }
  box.replaceChildren(table);
}
