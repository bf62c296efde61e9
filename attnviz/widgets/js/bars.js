// Grouped bars (one slot per label, one bar per series in it) and histograms (bins side by side).

import { axes, fmt, niceTicks } from "./axes.js";
import { edgesOf, valuesOf } from "./scene.js";

/** The top of the value axis: the panel's `ymax`, else a tenth above the largest value. */
export function valueTop(panel, values) {
  return panel.ymax || Math.max(1e-12, ...values) * 1.1;
}

function yScale(frame, top) {
  return (value) => frame.top + frame.h * (1 - value / top);
}

/** Each bar's rectangle in CSS pixels, with its series `s` and label `i`. */
export function barRects(panel, frame, values) {
  const count = panel.x_labels.length;
  const slot = frame.w / count;
  const width = (slot * 0.8) / panel.series.length;
  const top = valueTop(panel, values);
  const yPos = yScale(frame, top);
  const rects = [];
  panel.series.forEach((_series, s) => {
    panel.x_labels.forEach((_label, i) => {
      const x = frame.left + i * slot + slot * 0.1 + s * width;
      const y = yPos(Math.min(values[s * count + i], top));
      rects.push({ x, y, w: width, h: frame.top + frame.h - y, s, i });
    });
  });
  return rects;
}

/** What the hover says over (x, y): the panel's own hover text, else the series, label and value. */
export function barsHover(panel, frame, values) {
  const rects = barRects(panel, frame, values);
  const count = panel.x_labels.length;
  return (x, y) => {
    const hit = rects.find((rect) => x >= rect.x && x < rect.x + rect.w);
    if (!hit || y < frame.top || y > frame.top + frame.h) {
      return null;
    }
    if (panel.hover) {
      return panel.hover[hit.s][hit.i];
    }
    const value = fmt(values[hit.s * count + hit.i]);
    return `${panel.series[hit.s].name}\n${panel.x_labels[hit.i]}: ${value}`;
  };
}

/** Paint a bars panel; returns its hover. */
export function paintBars(ctx, theme, frame, panel) {
  const values = valuesOf(panel);
  const slot = frame.w / panel.x_labels.length;
  const yPos = yScale(frame, valueTop(panel, values));
  const xPos = (_label, i) => frame.left + (i + 0.5) * slot;
  axes(ctx, theme, frame, panel, panel.x_labels, niceTicks(0, valueTop(panel, values)), xPos, yPos);
  for (const rect of barRects(panel, frame, values)) {
    ctx.fillStyle = panel.colours?.[rect.i] || panel.series[rect.s].colour;
    ctx.fillRect(rect.x, rect.y, rect.w - 1, rect.h);
    const words = panel.text?.[rect.s][rect.i];
    if (words) {
      ctx.fillStyle = theme.fg;
      ctx.textAlign = "center";
      ctx.textBaseline = "bottom";
      ctx.fillText(words, rect.x + rect.w / 2, rect.y - 2);
    }
  }
  return barsHover(panel, frame, values);
}

function binsOf(panel, values) {
  return values.length / panel.series.length;
}

/** What the hover says over (x, y): the bin, in the panel's x title, and each series' count. */
export function histogramHover(panel, frame, values) {
  const bins = binsOf(panel, values);
  const edges = edgesOf(panel, bins);
  const unit = panel.y_title ? ` ${panel.y_title}` : "";
  return (x, y) => {
    if (x < frame.left || x > frame.left + frame.w || y < frame.top || y > frame.top + frame.h) {
      return null;
    }
    const b = Math.min(bins - 1, Math.floor(((x - frame.left) / frame.w) * bins));
    const bin = `${panel.x_title || "bin"} ${fmt(edges[b], 3)} to ${fmt(edges[b + 1], 3)}`;
    const counts = panel.series.map((series, s) => `${series.name}: ${values[s * bins + b]}${unit}`);
    return [bin, ...counts].join("\n");
  };
}

function paintMarks(ctx, theme, frame, marks, xPos) {
  ctx.setLineDash([5, 4]);
  ctx.strokeStyle = theme.fg;
  ctx.fillStyle = theme.fg;
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  for (const mark of marks) {
    const x = xPos(mark.x);
    ctx.beginPath();
    ctx.moveTo(x, frame.top);
    ctx.lineTo(x, frame.top + frame.h);
    ctx.stroke();
    if (mark.label) {
      ctx.fillText(mark.label, x, frame.top - 2);
    }
  }
  ctx.setLineDash([]);
}

/** Paint a histogram panel (series over each other, see-through) and its marks; returns its hover. */
export function paintHistogram(ctx, theme, frame, panel) {
  const values = valuesOf(panel);
  const bins = binsOf(panel, values);
  const edges = edgesOf(panel, bins);
  const low = edges[0];
  const high = edges[bins];
  const xPos = (value) => frame.left + (frame.w * (value - low)) / (high - low || 1);
  const top = valueTop(panel, values);
  const yPos = yScale(frame, top);
  const xTicks = niceTicks(low, high, 6).filter((tick) => tick >= low && tick <= high);
  axes(ctx, theme, frame, panel, xTicks, niceTicks(0, top), xPos, yPos);
  ctx.globalAlpha = 0.65;
  panel.series.forEach((series, s) => {
    ctx.fillStyle = series.colour;
    for (let b = 0; b < bins; b++) {
      const y = yPos(values[s * bins + b]);
      const width = Math.max(1, xPos(edges[b + 1]) - xPos(edges[b]) - 0.5);
      ctx.fillRect(xPos(edges[b]), y, width, frame.top + frame.h - y);
    }
  });
  ctx.globalAlpha = 1;
  paintMarks(ctx, theme, frame, panel.marks, xPos);
  return histogramHover(panel, frame, values);
}
