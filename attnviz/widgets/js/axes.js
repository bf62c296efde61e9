// Numbers on axes, and where a panel's plot area sits inside its canvas.

import { font } from "./colour.js";

/** Row and column labels are written for heatmaps up to this many queries or keys. */
export const LABELS_UP_TO = 40;

/** A number to `digits` significant digits, without trailing zeros ("NaN" and "Infinity" as such). */
export function fmt(value, digits = 6) {
  if (!Number.isFinite(value)) {
    return String(value);
  }
  return String(Number(value.toPrecision(digits)));
}

/** About `count` round numbers (steps of 1, 2 or 5 times a power of ten) spanning [low, high]. */
export function niceTicks(low, high, count = 5) {
  const span = high - low || 1;
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  for (let t = Math.ceil(low / step) * step; t <= high + step * 1e-9; t += step) {
    ticks.push(Number(t.toPrecision(6)));
  }
  return ticks;
}

/**
 * Where the plot area of a panel sits in its canvas, in CSS pixels: `left`, `top`, width `w`,
 * height `h`, and the room `right` and `bottom` of it; `rotate`: heatmap key labels at 45 degrees.
 * @typedef {Object} Frame
 * @property {number} left
 * @property {number} top
 * @property {number} w
 * @property {number} h
 * @property {number} right
 * @property {number} bottom
 * @property {boolean} [rotate]
 */

function widest(ctx, labels) {
  const widths = (labels || []).map((label) => ctx.measureText(label).width);
  return Math.max(0, ...widths);
}

function heatmapFrame(ctx, panel) {
  const small = panel.small;
  const rowLabels = !small && panel.n_q <= LABELS_UP_TO;
  const columnLabels = !small && panel.n_k <= LABELS_UP_TO;
  const left = small ? 2 : 22 + (rowLabels ? Math.max(14, widest(ctx, panel.y_labels)) + 6 : 0);
  const rotate = columnLabels && widest(ctx, panel.x_labels) > panel.cell - 2;
  let bottom = 2;
  if (!small) {
    const labels = rotate ? Math.min(70, widest(ctx, panel.x_labels)) : 12;
    bottom = 26 + (columnLabels ? labels + 6 : 0);
  }
  const bar = panel.scale === "mask" || small || !panel.bar ? 0 : 56;
  return {
    left,
    top: small ? 2 : 6,
    w: panel.cell * panel.n_k,
    h: panel.cell * panel.n_q,
    right: bar + 4,
    bottom,
    rotate,
  };
}

/** @returns {Frame} */
export function frameFor(ctx, theme, panel) {
  ctx.font = font(theme, 12);
  if (panel.kind === "heatmap") {
    return heatmapFrame(ctx, panel);
  }
  const bars = panel.kind === "bars";
  const crowded = bars && widest(ctx, panel.x_labels) > panel.width / panel.x_labels.length;
  return {
    left: bars ? 48 : 54,
    top: 18,
    w: panel.width,
    h: panel.height,
    right: 12,
    bottom: crowded ? 84 : 44,
  };
}

/** The axis titles: x below the plot, y turned up along its left edge. */
export function titles(ctx, theme, frame, panel) {
  ctx.fillStyle = theme.fg;
  ctx.font = font(theme, 12);
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  if (panel.x_title) {
    ctx.fillText(panel.x_title, frame.left + frame.w / 2, frame.top + frame.h + frame.bottom - 2);
  }
  if (panel.y_title) {
    ctx.save();
    ctx.translate(12, frame.top + frame.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle";
    ctx.fillText(panel.y_title, 0, 0);
    ctx.restore();
  }
}

function yTick(ctx, frame, y, label) {
  ctx.fillText(label, frame.left - 4, y);
  ctx.globalAlpha = 0.25;
  ctx.beginPath();
  ctx.moveTo(frame.left, y + 0.5);
  ctx.lineTo(frame.left + frame.w, y + 0.5);
  ctx.stroke();
  ctx.globalAlpha = 1;
}

function xTick(ctx, frame, x, label) {
  const y = frame.top + frame.h + 4;
  if (frame.bottom <= 60) {
    ctx.fillText(label, x, y);
    return;
  }
  ctx.save();
  ctx.translate(x, y);
  ctx.rotate(-Math.PI / 4);
  ctx.textAlign = "right";
  ctx.fillText(label, 0, 0);
  ctx.restore();
}

/**
 * A box round the plot area, y ticks with faint grid lines, x ticks (numbers, or labels: strings),
 * and the axis titles. `xPos(tick, i)` and `yPos(tick)` map ticks to CSS pixels.
 */
export function axes(ctx, theme, frame, panel, xTicks, yTicks, xPos, yPos) {
  ctx.strokeStyle = theme.border;
  ctx.fillStyle = theme.fg2;
  ctx.lineWidth = 1;
  ctx.font = font(theme, 12);
  ctx.strokeRect(frame.left + 0.5, frame.top + 0.5, frame.w, frame.h);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const tick of yTicks) {
    yTick(ctx, frame, yPos(tick), fmt(tick, 4));
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  xTicks.forEach((tick, i) => {
    const label = typeof tick === "string" ? tick : fmt(tick, 4);
    xTick(ctx, frame, xPos(tick, i), label);
  });
  titles(ctx, theme, frame, panel);
}
