// A heatmap panel: query rows top to bottom, keys as columns; masked cells grey, NaN pink, a leak
// (masked, yet weight > 0) keeps its colour and gets a red frame and x.

import { fmt, LABELS_UP_TO, titles } from "./axes.js";
import {
  css,
  font,
  inkOn,
  LEAK,
  LUT_SIZE,
  lut,
  MASKED,
  MAY_ATTEND,
  NAN,
  rampChannels,
  rgb,
} from "./colour.js";
import { digitsOf, flagsOf, labelsOr, valuesOf } from "./scene.js";

export const FLAG_MASKED = 1;
export const FLAG_NAN = 2;
export const FLAG_LEAK = 4;

/** Where a value falls on the panel's scale, in [0, 1] (clamped). */
function position(panel, value) {
  const span = panel.vmax - panel.vmin || 1;
  return Math.min(1, Math.max(0, (value - panel.vmin) / span));
}

/** The fill of one cell, and the ink of the value written in it (black or white, by contrast). */
export function cellColour(panel, value, flag) {
  let fill = "";
  if (flag & FLAG_NAN) {
    fill = NAN;
  } else if (flag & FLAG_MASKED) {
    fill = MASKED;
  } else if (panel.scale === "mask") {
    fill = value > 0.5 ? MAY_ATTEND : MASKED;
  }
  if (fill) {
    return { fill, ink: inkOn(rgb(fill)) };
  }
  const channels = rampChannels(panel.scale, (value - panel.vmin) / (panel.vmax - panel.vmin || 1));
  return { fill: css(channels), ink: inkOn(channels) };
}

/** The words written in a cell: "NaN", the masked text, or its value (1 decimal for scores, else 2). */
export function cellText(panel, value, flag) {
  if (flag & FLAG_NAN) {
    return "NaN";
  }
  if (flag & FLAG_MASKED) {
    return panel.masked_text || "";
  }
  const decimals = panel.scale === "scores" ? 1 : 2;
  const rounded = Number(value.toFixed(decimals)) || 0;
  return rounded.toFixed(decimals);
}

/**
 * One RGBA pixel per cell (row-major, `n_q` x `n_k`): what a big heatmap draws, scaled up without
 * smoothing. Colours come from the scale's look-up table.
 */
export function cellPixels(panel, values, flags) {
  const pixels = new Uint8ClampedArray(values.length * 4);
  const table = panel.scale === "mask" ? null : lut(panel.scale);
  const masked = [...rgb(MASKED), 255];
  const nan = [...rgb(NAN), 255];
  const mayAttend = [...rgb(MAY_ATTEND), 255];
  for (let k = 0; k < values.length; k++) {
    const flag = flags[k];
    if (flag & FLAG_NAN) {
      pixels.set(nan, k * 4);
    } else if (flag & FLAG_MASKED) {
      pixels.set(masked, k * 4);
    } else if (!table) {
      pixels.set(values[k] > 0.5 ? mayAttend : masked, k * 4);
    } else {
      const at = Math.round(position(panel, values[k]) * (LUT_SIZE - 1)) * 4;
      pixels.set(table.subarray(at, at + 4), k * 4);
    }
  }
  return pixels;
}

function paintAsImage(ctx, frame, panel, values, flags) {
  const image = new ImageData(cellPixels(panel, values, flags), panel.n_k, panel.n_q);
  const scratch = new OffscreenCanvas(panel.n_k, panel.n_q);
  scratch.getContext("2d").putImageData(image, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(scratch, frame.left, frame.top, panel.n_k * panel.cell, panel.n_q * panel.cell);
}

/** A red x in the corner of a leaking cell, and (if the cell is big enough) a red frame round it. */
function paintLeak(ctx, x, y, cell, gap) {
  const big = cell >= 14;
  const lineWidth = Math.max(1, cell / 14);
  const x0 = big ? x + cell * 0.66 : x + cell * 0.2;
  const y0 = y + cell * (big ? 0.08 : 0.2);
  const size = big ? cell * 0.26 : cell * 0.6;
  ctx.strokeStyle = LEAK;
  ctx.lineWidth = lineWidth;
  ctx.beginPath();
  if (big) {
    ctx.rect(x + lineWidth / 2, y + lineWidth / 2, cell - gap - lineWidth, cell - gap - lineWidth);
  }
  ctx.moveTo(x0, y0);
  ctx.lineTo(x0 + size, y0 + size);
  ctx.moveTo(x0 + size, y0);
  ctx.lineTo(x0, y0 + size);
  ctx.stroke();
}

/**
 * The cells. Small cells (under 8 px, no values written) are one image; bigger ones are rectangles
 * with a 1 px gap, and their values when the panel says so. Leaks are drawn on top either way.
 */
function paintCells(ctx, theme, frame, panel, values, flags) {
  const cell = panel.cell;
  const gap = cell >= 8 ? 1 : 0;
  const asImage = !gap && !panel.text && typeof OffscreenCanvas !== "undefined";
  if (asImage) {
    paintAsImage(ctx, frame, panel, values, flags);
  }
  ctx.font = font(theme, Math.min(12, Math.max(8, cell / 3.2)));
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let i = 0; i < panel.n_q; i++) {
    for (let j = 0; j < panel.n_k; j++) {
      const k = i * panel.n_k + j;
      const flag = flags[k];
      const x = frame.left + j * cell;
      const y = frame.top + i * cell;
      if (!asImage) {
        const { fill, ink } = cellColour(panel, values[k], flag);
        ctx.fillStyle = fill;
        ctx.fillRect(x, y, cell - gap, cell - gap);
        const words = panel.text ? cellText(panel, values[k], flag) : "";
        if (words && cell >= 18) {
          ctx.fillStyle = ink;
          ctx.fillText(words, x + cell / 2, y + cell / 2);
        }
      }
      if (flag & FLAG_LEAK) {
        paintLeak(ctx, x, y, cell, gap);
      }
    }
  }
}

/** Query labels down the left, key labels along the bottom (turned 45 degrees when they crowd). */
function paintLabels(ctx, theme, frame, panel) {
  const cell = panel.cell;
  ctx.font = font(theme, 12);
  ctx.fillStyle = theme.fg2;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  if (panel.n_q <= LABELS_UP_TO) {
    const rows = labelsOr(panel.y_labels, panel.n_q);
    rows.forEach((label, i) => {
      ctx.fillText(label, frame.left - 4, frame.top + (i + 0.5) * cell);
    });
  }
  if (panel.n_k > LABELS_UP_TO) {
    return;
  }
  const columns = labelsOr(panel.x_labels, panel.n_k);
  columns.forEach((label, j) => {
    ctx.save();
    ctx.translate(frame.left + (j + 0.5) * cell, frame.top + frame.h + 4);
    if (frame.rotate) {
      ctx.rotate(-Math.PI / 4);
      ctx.textAlign = "right";
    } else {
      ctx.textAlign = "center";
    }
    ctx.textBaseline = frame.rotate ? "middle" : "top";
    ctx.fillText(label, 0, 0);
    ctx.restore();
  });
}

/** The colour scale beside the heatmap: its top, middle and bottom value, and what a cell holds. */
function paintColourBar(ctx, theme, frame, panel) {
  const x = frame.left + frame.w + 10;
  const height = Math.max(60, Math.min(frame.h, 220));
  for (let y = 0; y < height; y++) {
    ctx.fillStyle = css(rampChannels(panel.scale, 1 - y / height));
    ctx.fillRect(x, frame.top + y, 12, 1);
  }
  ctx.fillStyle = theme.fg2;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.font = font(theme, 12);
  const span = panel.vmax - panel.vmin || 1;
  for (const tick of [panel.vmax, (panel.vmin + panel.vmax) / 2, panel.vmin]) {
    ctx.fillText(fmt(tick, 3), x + 15, frame.top + (height * (panel.vmax - tick)) / span);
  }
  ctx.textBaseline = "top";
  ctx.fillText(panel.value_name, x - 2, frame.top + height + 6);
}

/** What the hover says over (x, y), in CSS pixels inside the canvas: the cell and its value. */
export function heatmapHover(panel, frame, values, flags) {
  return (x, y) => {
    const j = Math.floor((x - frame.left) / panel.cell);
    const i = Math.floor((y - frame.top) / panel.cell);
    if (i < 0 || j < 0 || i >= panel.n_q || j >= panel.n_k) {
      return null;
    }
    const k = i * panel.n_k + j;
    const query = panel.y_labels ? ` '${panel.y_labels[i]}'` : "";
    const key = panel.x_labels ? ` '${panel.x_labels[j]}'` : "";
    let what = `${panel.value_name} ${fmt(values[k], digitsOf(panel))}`;
    if (flags[k] & FLAG_NAN) {
      what = "NaN: the softmax of a row of -inf is 0/0";
    } else if (flags[k] & FLAG_MASKED) {
      what = panel.masked_hover;
    }
    const leak = flags[k] & FLAG_LEAK ? "\nmasked, yet weight > 0 (leak)" : "";
    return `query ${i}${query} → key ${j}${key}\n${what}${leak}`;
  };
}

/** Paint a heatmap panel; returns its hover. */
export function paintHeatmap(ctx, theme, frame, panel) {
  const values = valuesOf(panel);
  const flags = flagsOf(panel);
  paintCells(ctx, theme, frame, panel, values, flags);
  if (!panel.small) {
    paintLabels(ctx, theme, frame, panel);
    titles(ctx, theme, frame, panel);
    if (panel.scale !== "mask" && panel.bar) {
      paintColourBar(ctx, theme, frame, panel);
    }
  }
  return heatmapHover(panel, frame, values, flags);
}
