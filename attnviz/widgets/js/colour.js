// Colours: the weight and score ramps, the special cells, and the JupyterLab theme.

/** matplotlib's viridis at 0, 0.1, ..., 1: the weights (sequential, colour-blind safe). */
export const VIRIDIS = [
  "#440154",
  "#482475",
  "#414487",
  "#355f8d",
  "#2a788e",
  "#21918c",
  "#22a884",
  "#44bf70",
  "#7ad151",
  "#bddf26",
  "#fde725",
];

/** RdBu reversed: the scores, diverging, blue below 0 and red above. */
export const RDBU = [
  "#053061",
  "#2166ac",
  "#4393c3",
  "#92c5de",
  "#d1e5f0",
  "#f7f7f7",
  "#fddbc7",
  "#f4a582",
  "#d6604d",
  "#b2182b",
  "#67001f",
];

export const MASKED = "#c8c8c8";
export const NAN = "#ff66cc";
export const LEAK = "#e4002b";
export const MAY_ATTEND = "#3b528b";

/** "#rrggbb" -> [r, g, b]. */
export function rgb(hex) {
  return [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
}

const STOPS = { weights: VIRIDIS.map(rgb), scores: RDBU.map(rgb) };

/** The colour at `t` in [0, 1] (clamped) of scale "weights" or "scores": linear between its 11 stops. */
export function rampChannels(scale, t) {
  const stops = STOPS[scale];
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  return stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
}

/** [r, g, b] -> "rgb(r,g,b)". */
export function css(channels) {
  return `rgb(${channels})`;
}

/** WCAG 2's relative luminance of [r, g, b], in [0, 1]. */
export function luminance(channels) {
  const linear = channels.map((v) => {
    const c = v / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2];
}

/** WCAG 2's contrast ratio between two colours (1 to 21; text needs 4.5, a focus ring 3). */
export function contrast(a, b) {
  const [x, y] = [luminance(a), luminance(b)];
  return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
}

/** Black or white, whichever contrasts more with `channels`: the colour of a value written on a cell. */
export function inkOn(channels) {
  return contrast(channels, [0, 0, 0]) >= contrast(channels, [255, 255, 255]) ? "#000000" : "#ffffff";
}

export const LUT_SIZE = 1024;
const LUTS = {};

/** `LUT_SIZE` colours of a scale as RGBA bytes: big heatmaps look colours up instead of mixing them. */
export function lut(scale) {
  if (!LUTS[scale]) {
    const table = new Uint8ClampedArray(LUT_SIZE * 4);
    for (let i = 0; i < LUT_SIZE; i++) {
      const [r, g, b] = rampChannels(scale, i / (LUT_SIZE - 1));
      table.set([r, g, b, 255], i * 4);
    }
    LUTS[scale] = table;
  }
  return LUTS[scale];
}

/**
 * The page's theme: JupyterLab's CSS variables, with fallbacks outside JupyterLab. A canvas cannot
 * resolve CSS variables itself, so they are read here (getComputedStyle is slow: once per theme).
 * @typedef {Object} Theme
 * @property {string} fg text
 * @property {string} fg2 secondary text: ticks, labels, the "fg" shapes
 * @property {string} bg the background (the halo around point labels)
 * @property {string} border axes
 * @property {string} family the font family
 * @property {boolean} themed whether JupyterLab's variables were there (else read again later)
 */

/** @returns {Theme} */
export function themeOf(el) {
  const style = getComputedStyle(el);
  const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
  return {
    fg: read("--jp-ui-font-color1", "#222"),
    fg2: read("--jp-ui-font-color2", "#555"),
    bg: read("--jp-layout-color1", "#fff"),
    border: read("--jp-border-color1", "#999"),
    family: read("--jp-ui-font-family", "system-ui, sans-serif"),
    themed: Boolean(style.getPropertyValue("--jp-ui-font-color1").trim()),
  };
}

/** A canvas font of `px` pixels in the theme's family. */
export function font(theme, px) {
  return `${px}px ${theme.family}`;
}
