// A points panel: lines, circles and markers in data coordinates (the lookup explorer's keys,
// query and values).

import { axes, niceTicks } from "./axes.js";
import { font } from "./colour.js";

const FAINT = 0.35;

/** Data coordinates -> CSS pixels inside the canvas. */
export function scales(panel, frame) {
  const [x0, x1] = panel.x_range;
  const [y0, y1] = panel.y_range;
  return {
    X: (x) => frame.left + (frame.w * (x - x0)) / (x1 - x0),
    Y: (y) => frame.top + frame.h * (1 - (y - y0) / (y1 - y0)),
  };
}

/** What the hover says over (x, y): the hover text of the topmost marker within 6 px (or its radius). */
export function pointsHover(panel, frame) {
  const { X, Y } = scales(panel, frame);
  const markers = panel.shapes.filter((shape) => shape.type === "marker");
  return (x, y) => {
    const near = markers.filter((shape) => {
      const reach = Math.max(shape.r, 6);
      return (x - X(shape.x)) ** 2 + (y - Y(shape.y)) ** 2 <= reach * reach;
    });
    return near.length ? near[near.length - 1].hover : null;
  };
}

function paintCircle(ctx, shape, X, Y) {
  ctx.globalAlpha = shape.faint ? FAINT : 1;
  ctx.beginPath();
  const rx = Math.abs(X(shape.radius) - X(0));
  const ry = Math.abs(Y(shape.radius) - Y(0));
  ctx.ellipse(X(shape.x), Y(shape.y), rx, ry, 0, 0, 2 * Math.PI);
  ctx.stroke();
  ctx.globalAlpha = 1;
}

function paintArrowHead(ctx, shape, X, Y) {
  const last = shape.x.length - 1;
  const tipX = X(shape.x[last]);
  const tipY = Y(shape.y[last]);
  const angle = Math.atan2(tipY - Y(shape.y[last - 1]), tipX - X(shape.x[last - 1]));
  ctx.beginPath();
  ctx.moveTo(tipX, tipY);
  for (const side of [2.6, -2.6]) {
    ctx.lineTo(tipX - 12 * Math.cos(angle + side / 6), tipY - 12 * Math.sin(angle + side / 6));
  }
  ctx.closePath();
  ctx.fill();
}

function paintLine(ctx, shape, X, Y) {
  ctx.globalAlpha = shape.faint ? FAINT : 1;
  ctx.beginPath();
  shape.x.forEach((x, i) => {
    if (i === 0) {
      ctx.moveTo(X(x), Y(shape.y[i]));
    } else {
      ctx.lineTo(X(x), Y(shape.y[i]));
    }
  });
  ctx.stroke();
  ctx.globalAlpha = 1;
  if (shape.arrow) {
    paintArrowHead(ctx, shape, X, Y);
  }
}

function traceStar(ctx, x, y, r) {
  for (let k = 0; k < 10; k++) {
    const reach = k % 2 ? r * 0.45 : r;
    const angle = -Math.PI / 2 + (k * Math.PI) / 5;
    ctx.lineTo(x + reach * Math.cos(angle), y + reach * Math.sin(angle));
  }
}

/** A dot (filled), a ring (outlined) or a star (filled). */
function paintMarker(ctx, shape, X, Y) {
  const x = X(shape.x);
  const y = Y(shape.y);
  ctx.beginPath();
  if (shape.shape === "star") {
    traceStar(ctx, x, y, shape.r);
  } else {
    ctx.arc(x, y, shape.r, 0, 2 * Math.PI);
  }
  ctx.closePath();
  if (shape.shape === "ring") {
    ctx.stroke();
  } else {
    ctx.globalAlpha = 0.85;
    ctx.fill();
    ctx.globalAlpha = 1;
  }
}

/** The markers' labels above them, with a halo in the background colour so lines do not cross them. */
function paintLabels(ctx, theme, markers, X, Y) {
  ctx.font = font(theme, 12);
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  ctx.lineWidth = 3;
  ctx.strokeStyle = theme.bg;
  ctx.fillStyle = theme.fg;
  for (const shape of markers) {
    if (shape.label) {
      const y = Y(shape.y) - shape.r - 3;
      ctx.strokeText(shape.label, X(shape.x), y);
      ctx.fillText(shape.label, X(shape.x), y);
    }
  }
}

const PAINT_SHAPE = { circle: paintCircle, line: paintLine, marker: paintMarker };

/** Paint a points panel, in the order of its shapes, labels last; returns its hover. */
export function paintPoints(ctx, theme, frame, panel) {
  const { X, Y } = scales(panel, frame);
  const [x0, x1] = panel.x_range;
  const [y0, y1] = panel.y_range;
  axes(ctx, theme, frame, panel, niceTicks(x0, x1), niceTicks(y0, y1), X, Y);
  for (const shape of panel.shapes) {
    const colour = shape.colour === "fg" ? theme.fg2 : shape.colour;
    ctx.strokeStyle = colour;
    ctx.fillStyle = colour;
    ctx.lineWidth = shape.width || 2;
    PAINT_SHAPE[shape.type](ctx, shape, X, Y);
  }
  const markers = panel.shapes.filter((shape) => shape.type === "marker");
  paintLabels(ctx, theme, markers, X, Y);
  return pointsHover(panel, frame);
}
