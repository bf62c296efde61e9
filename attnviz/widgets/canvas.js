// The one front-end of every attnviz explorer: panels painted on <canvas> from the `scene` trait.
//
// Python (attnviz/widgets/canvas.py) computes everything: the arrays, labels, titles, the text
// alternative and the legend. This file only paints. Heatmap arrays arrive as binary buffers
// (float32 values, or bfloat16 for heatmaps over 32 x 32, uint16 for histogram counts; uint8 flags:
// 1 masked, 2 NaN, 4 leak; absent = none); ipywidgets hands them over as DataViews.
//
// Repaints coalesce: a change only asks for a frame (requestAnimationFrame); the frame paints the
// newest scene, so ten changes within one frame cost one paint and nothing queues.
//
// One step ahead (see _ahead.py): `links` names the controls (model id, attribute; `step`: a slider;
// `move`: in a burst, report its moves to the kernel at once) and `ahead` holds the kernel's prepared
// scenes (one step either side of the last-moved slider; in a burst, the next steps the way it moves)
// as deltas of scene `ahead.seq`; `scene.at` is what the controls hold for a scene. The browser keeps the
// newest 64 by what the controls hold; when they come to hold one of those, the next frame paints it.
// The kernel's own update follows (and is not painted again if the same). Else the kernel's picture.
//
// DOM contract (for tests and benchmarks):
//   root element           .attnviz-canvas[data-attnviz-explorer="<explorer>"][data-attnviz-paint="<n>"]
//                          n counts repaints; it is incremented after every frame that changed
//                          anything on screen (the kernel's copy of a picture already shown is not one).
//   each panel's canvas    canvas[data-attnviz-panel="<panel name>"], role="img" (or "button" if it can
//                          be picked), aria-label = what it shows (from Python); CSS size = drawn size.
//   a heatmap cell         query i, key j of a heatmap is the rectangle at x = data-x0 + j*data-cell,
//                          y = data-y0 + i*data-cell (CSS pixels inside its canvas), data-cell wide.
//                          Read its colour 25% across and 15% down the cell (times devicePixelRatio):
//                          clear of the value written in its middle and of a leak's red frame.
//                          Colours: weights = VIRIDIS below, linear between its 11 stops over 0..1;
//                          scores = RDBU over vmin..vmax; masked #c8c8c8; NaN #ff66cc.
//   numbers toggle         button.attnviz-numbers beside each panel shows its values as an html <table>.
//   picked panel           the panel box of scene.selected has the class "attnviz-selected".

const VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70",
  "#7ad151", "#bddf26", "#fde725"];
const RDBU = ["#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582",
  "#d6604d", "#b2182b", "#67001f"];                      // diverging, blue < 0 < red (RdBu reversed)
const MASKED = "#c8c8c8", NAN = "#ff66cc", LEAK = "#e4002b", MAY_ATTEND = "#3b528b";
let family = "system-ui, sans-serif";                // the theme's font, read at each paint (a canvas
const font = (px) => `${px}px ${family}`;               // cannot resolve CSS variables itself)
const rgb = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
const STOPS = { weights: VIRIDIS.map(rgb), scores: RDBU.map(rgb) };

function ramp(scale, t) {                               // t in [0, 1] -> "rgb(r,g,b)" and brightness
  const stops = STOPS[scale], x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
  return [`rgb(${c})`, (0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]) / 255];
}

function themeColours(el) {                             // JupyterLab theme variables, with fallbacks
  const s = getComputedStyle(el), v = (name, fallback) => s.getPropertyValue(name).trim() || fallback;
  family = v("--jp-ui-font-family", "system-ui, sans-serif");
  return { fg: v("--jp-ui-font-color1", "#222"), fg2: v("--jp-ui-font-color2", "#555"),
    bg: v("--jp-layout-color1", "#fff"), border: v("--jp-border-color1", "#999"),
    themed: !!s.getPropertyValue("--jp-ui-font-color1").trim() };
}

const fmt = (v, digits = 6) => (Number.isFinite(v) ? String(Number(v.toPrecision(digits))) : String(v));
const floats = (view) => (view.byteOffset % 4 ? new Float32Array(view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength))
  : new Float32Array(view.buffer, view.byteOffset, view.byteLength / 4));
const halves = (view) => Uint16Array.from({ length: view.byteLength / 2 }, (_x, i) => view.getUint16(i * 2, true));
const valuesOf = (p) => (p.dtype === "uint16" ? halves(p.values)           // counts
  : p.dtype === "bfloat16" ? new Float32Array(Uint32Array.from(halves(p.values), (h) => h << 16).buffer)
  : floats(p.values));
const digits = (p) => (p.dtype === "bfloat16" ? 3 : 6);   // what the values carry: say no more
const bytes = (view) => new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
const flagsOf = (p) => (p.flags ? bytes(p.flags) : new Uint8Array(p.n_q * p.n_k));   // absent: all clear
const edgesOf = (p, nb) => { const [lo, hi] = p.edge_range; return Float64Array.from({ length: nb + 1 }, (_x, b) => lo + ((hi - lo) * b) / nb); };

function unpack(value, blob) {                          // {at, len} -> a DataView into the step's blob
  if (value && typeof value === "object" && !Array.isArray(value) && !(value instanceof DataView)) {
    if ("at" in value && "len" in value && Object.keys(value).length === 2) return new DataView(blob.buffer, blob.byteOffset + value.at, value.len);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unpack(v, blob)]));
  }
  return Array.isArray(value) ? value.map((v) => unpack(v, blob)) : value;
}

function samePicture(a, b) {                           // all but the text alternative; buffers by bytes
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  keys.delete("description");
  for (const k of keys) {
    const x = a[k], y = b[k];
    if (x instanceof DataView && y instanceof DataView) {
      if (x.byteLength !== y.byteLength) return false;
      const u = new Uint8Array(x.buffer, x.byteOffset, x.byteLength), v = new Uint8Array(y.buffer, y.byteOffset, y.byteLength);
      for (let i = 0; i < u.length; i++) if (u[i] !== v[i]) return false;
    } else if (x !== y && JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  return true;
}

function merge(base, packed) {                         // a scene plus an `ahead` delta (null = removed)
  const d = packed.blob ? unpack({ ...packed, blob: null }, packed.blob) : packed;
  const panels = { ...(base.panels || {}) };
  for (const [name, spec] of Object.entries(d.panels || {})) {
    const p = { ...(panels[name] || {}), ...spec };
    for (const key of Object.keys(spec)) if (spec[key] === null) delete p[key];
    panels[name] = p;
  }
  const out = { ...base, panels };
  if ("selected" in d) out.selected = d.selected;
  if (d.sections) out.sections = d.sections.map((sec, i) => (sec === null ? base.sections[i] : sec));
  return out;
}

const LUT_SIZE = 1024, LUTS = {};                       // big heatmaps: colours from a table
function lut(scale) {
  if (!LUTS[scale]) {
    const table = new Uint8ClampedArray(LUT_SIZE * 4);
    for (let i = 0; i < LUT_SIZE; i++) {
      const c = ramp(scale, i / (LUT_SIZE - 1))[0].slice(4, -1).split(",").map(Number);
      table.set([c[0], c[1], c[2], 255], i * 4);
    }
    LUTS[scale] = table;
  }
  return LUTS[scale];
}

function niceTicks(low, high, count = 5) {              // round numbers spanning [low, high]
  const span = high - low || 1, raw = span / count, p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  const ticks = [];
  for (let t = Math.ceil(low / step) * step; t <= high + step * 1e-9; t += step) ticks.push(+t.toPrecision(6));
  return ticks;
}

function make(tag, cls, parent, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

// -- geometry of one panel: where its plot area sits inside the canvas ---------------------------
function frameFor(ctx, p) {
  ctx.font = font(12);
  const widest = (labels) => Math.max(0, ...(labels || []).map((l) => ctx.measureText(l).width));
  if (p.kind === "heatmap") {
    const small = p.small, ticks = !small && (p.n_q <= 40);
    const left = small ? 2 : 22 + (ticks ? Math.max(14, widest(p.y_labels)) + 6 : 0);
    const rotate = !small && p.n_k <= 40 && widest(p.x_labels) > p.cell - 2;
    const bottom = small ? 2 : 26 + (p.n_k <= 40 ? (rotate ? Math.min(70, widest(p.x_labels)) : 12) + 6 : 0);
    const bar = p.scale === "mask" || small || p.bar === false ? 0 : 56;
    return { left, top: small ? 2 : 6, w: p.cell * p.n_k, h: p.cell * p.n_q, right: bar + 4, bottom, rotate };
  }
  const left = 48 + (p.kind === "bars" ? 0 : 6), w = p.width || 420, h = p.height || 240;
  return { left, top: 18, w, h, right: 12, bottom: p.kind === "bars" && widest(p.x_labels) > w / (p.x_labels || [1]).length ? 84 : 44 };
}

function axes(ctx, c, f, p, xTicks, yTicks, xPos, yPos) {
  ctx.strokeStyle = c.border; ctx.fillStyle = c.fg2; ctx.lineWidth = 1; ctx.font = font(12);
  ctx.strokeRect(f.left + 0.5, f.top + 0.5, f.w, f.h);
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  for (const t of yTicks) {
    const y = yPos(t); ctx.fillText(fmt(t, 4), f.left - 4, y);
    ctx.globalAlpha = 0.25; ctx.beginPath(); ctx.moveTo(f.left, y + 0.5); ctx.lineTo(f.left + f.w, y + 0.5); ctx.stroke();
    ctx.globalAlpha = 1;
  }
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  xTicks.forEach((t, i) => {
    const label = typeof t === "string" ? t : fmt(t, 4), x = xPos(t, i);
    if (f.bottom > 60) { ctx.save(); ctx.translate(x, f.top + f.h + 4); ctx.rotate(-Math.PI / 4); ctx.textAlign = "right"; ctx.fillText(label, 0, 0); ctx.restore(); } else ctx.fillText(label, x, f.top + f.h + 4);
  });
  titles(ctx, c, f, p);
}

function titles(ctx, c, f, p) {
  ctx.fillStyle = c.fg; ctx.font = font(12); ctx.textAlign = "center";
  ctx.textBaseline = "bottom"; if (p.x_title) ctx.fillText(p.x_title, f.left + f.w / 2, f.top + f.h + f.bottom - 2);
  if (p.y_title) {
    ctx.save(); ctx.translate(12, f.top + f.h / 2); ctx.rotate(-Math.PI / 2); ctx.textBaseline = "middle";
    ctx.fillText(p.y_title, 0, 0); ctx.restore();
  }
}

// -- painters: each draws one panel and returns hover(x, y) -> text or null -----------------------
function paintCells(ctx, f, p, v, flags) {              // one pixel per cell, scaled up: no gaps, no text
  const n = p.n_k, image = new ImageData(n, p.n_q), px = image.data, span = p.vmax - p.vmin || 1;
  const table = p.scale === "mask" ? null : lut(p.scale), rgba = (h) => [...rgb(h), 255];
  const special = { 1: rgba(MASKED), 2: rgba(NAN), may: rgba(MAY_ATTEND) };
  for (let k = 0; k < v.length; k++) {
    const flag = flags[k] & 3;
    if (flag & 2) px.set(special[2], k * 4);
    else if (flag & 1) px.set(special[1], k * 4);
    else if (!table) px.set(v[k] > 0.5 ? special.may : special[1], k * 4);
    else {
      const t = Math.min(1, Math.max(0, (v[k] - p.vmin) / span)), at = Math.round(t * (LUT_SIZE - 1)) * 4;
      px[k * 4] = table[at]; px[k * 4 + 1] = table[at + 1]; px[k * 4 + 2] = table[at + 2]; px[k * 4 + 3] = 255;
    }
  }
  const scratch = new OffscreenCanvas(n, p.n_q);
  scratch.getContext("2d").putImageData(image, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(scratch, f.left, f.top, n * p.cell, p.n_q * p.cell);
}

function paintHeatmap(ctx, c, f, p) {
  const v = valuesOf(p), flags = flagsOf(p), n = p.n_k, cell = p.cell, gap = cell >= 8 ? 1 : 0;
  const colour = (x) => (p.scale === "mask" ? [x > 0.5 ? MAY_ATTEND : MASKED, 0]
    : ramp(p.scale, (x - p.vmin) / (p.vmax - p.vmin || 1)));
  ctx.font = font(Math.min(12, Math.max(8, cell / 3.2)));
  ctx.textAlign = "center"; ctx.textBaseline = "middle";
  const image = !gap && !p.text && typeof OffscreenCanvas !== "undefined";
  if (image) paintCells(ctx, f, p, v, flags);
  for (let i = 0; i < p.n_q; i++) for (let j = 0; j < n; j++) {
    const k = i * n + j, x = f.left + j * cell, y = f.top + i * cell, flag = flags[k];
    if (image && !(flag & 4)) continue;                 // painted as an image above; leaks drawn on top
    const [fill, light] = flag & 2 ? [NAN, 0.7] : flag & 1 ? [MASKED, 0.8] : colour(v[k]);
    if (!image) { ctx.fillStyle = fill; ctx.fillRect(x, y, cell - gap, cell - gap); }
    const words = flag & 2 ? "NaN" : flag & 1 ? p.masked_text : (p.text ? (+v[k].toFixed(p.scale === "scores" ? 1 : 2) || 0).toFixed(p.scale === "scores" ? 1 : 2) : "");
    if (p.text && words && cell >= 18) { ctx.fillStyle = light > 0.55 ? "#111" : "#fff"; ctx.fillText(words, x + cell / 2, y + cell / 2); }
    if (flag & 4) {                                     // leak: a red frame and a red x (in the corner)
      const big = cell >= 14, lw = Math.max(1, cell / 14), x0 = big ? x + cell * 0.66 : x + cell * 0.2;
      const y0 = y + cell * (big ? 0.08 : 0.2), s = big ? cell * 0.26 : cell * 0.6;
      ctx.strokeStyle = LEAK; ctx.lineWidth = lw; ctx.beginPath();
      if (big) ctx.rect(x + lw / 2, y + lw / 2, cell - gap - lw, cell - gap - lw);
      ctx.moveTo(x0, y0); ctx.lineTo(x0 + s, y0 + s); ctx.moveTo(x0 + s, y0); ctx.lineTo(x0, y0 + s); ctx.stroke();
    }
  }
  if (!p.small) {
    ctx.font = font(12); ctx.fillStyle = c.fg2; ctx.textBaseline = "middle"; ctx.textAlign = "right";
    const ys = p.y_labels || [...Array(p.n_q).keys()].map(String), xs = p.x_labels || [...Array(n).keys()].map(String);
    if (p.n_q <= 40) ys.forEach((l, i) => ctx.fillText(l, f.left - 4, f.top + (i + 0.5) * cell));
    if (n <= 40) xs.forEach((l, j) => {
      const x = f.left + (j + 0.5) * cell, y = f.top + f.h + 4;
      ctx.save(); ctx.translate(x, y); if (f.rotate) { ctx.rotate(-Math.PI / 4); ctx.textAlign = "right"; } else { ctx.textAlign = "center"; }
      ctx.textBaseline = f.rotate ? "middle" : "top"; ctx.fillText(l, 0, 0); ctx.restore();
    });
    titles(ctx, c, { ...f, left: f.left, w: f.w }, p);
    if (p.scale !== "mask" && p.bar !== false) colourBar(ctx, c, f, p);
  }
  return (x, y) => {
    const j = Math.floor((x - f.left) / cell), i = Math.floor((y - f.top) / cell);
    if (i < 0 || j < 0 || i >= p.n_q || j >= n) return null;
    const k = i * n + j, q = p.y_labels ? ` '${p.y_labels[i]}'` : "", key = p.x_labels ? ` '${p.x_labels[j]}'` : "";
    const what = flags[k] & 2 ? "NaN: the softmax of a row of -inf is 0/0" : flags[k] & 1 ? p.masked_hover : `${p.value_name} ${fmt(v[k], digits(p))}`;
    return `${p.hover_prefix || ""}query ${i}${q} → key ${j}${key}\n${what}${flags[k] & 4 ? "\nmasked, yet weight > 0 (leak)" : ""}`;
  };
}

function colourBar(ctx, c, f, p) {
  const x = f.left + f.w + 10, h = Math.max(60, Math.min(f.h, 220));
  for (let y = 0; y < h; y++) { ctx.fillStyle = ramp(p.scale, 1 - y / h)[0]; ctx.fillRect(x, f.top + y, 12, 1); }
  ctx.fillStyle = c.fg2; ctx.textAlign = "left"; ctx.textBaseline = "middle"; ctx.font = font(12);
  for (const t of [p.vmax, (p.vmin + p.vmax) / 2, p.vmin]) ctx.fillText(fmt(t, 3), x + 15, f.top + h * (p.vmax - t) / (p.vmax - p.vmin || 1));
  ctx.textBaseline = "top"; ctx.fillText(p.value_name, x - 2, f.top + h + 6);
}

function paintBars(ctx, c, f, p) {                      // grouped bars; histogram: bins side by side
  const series = p.series, values = valuesOf(p), nb = p.kind === "bars" ? p.x_labels.length : values.length / series.length;
  const ymax = p.ymax || Math.max(1e-12, ...values) * 1.1, yPos = (t) => f.top + f.h * (1 - t / ymax);
  if (p.kind === "bars") {
    const slot = f.w / nb, bw = (slot * 0.8) / series.length;
    axes(ctx, c, f, p, p.x_labels, niceTicks(0, ymax), (_t, i) => f.left + (i + 0.5) * slot, yPos);
    const hit = [];
    series.forEach((s, si) => p.x_labels.forEach((_l, i) => {
      const val = values[si * nb + i], x = f.left + i * slot + slot * 0.1 + si * bw, y = yPos(Math.min(val, ymax));
      ctx.fillStyle = (p.colours && p.colours[i]) || s.colour; ctx.fillRect(x, y, bw - 1, f.top + f.h - y);
      const text = p.text && p.text[si][i];
      if (text) { ctx.fillStyle = c.fg; ctx.textAlign = "center"; ctx.textBaseline = "bottom"; ctx.fillText(text, x + bw / 2, y - 2); }
      hit.push([x, x + bw, si, i]);
    }));
    return (x, y) => {
      const h = hit.find(([a, b]) => x >= a && x < b); if (!h || y < f.top || y > f.top + f.h) return null;
      return p.hover ? p.hover[h[2]][h[3]] : `${series[h[2]].name}\n${p.x_labels[h[3]]}: ${fmt(values[h[2] * nb + h[3]])}`;
    };
  }
  const e = edgesOf(p, nb), lo = e[0], hi = e[nb], xPos = (t) => f.left + f.w * (t - lo) / (hi - lo || 1);
  axes(ctx, c, f, p, niceTicks(lo, hi, 6).filter((t) => t >= lo && t <= hi), niceTicks(0, ymax), xPos, yPos);
  ctx.globalAlpha = 0.65;
  series.forEach((s, si) => { ctx.fillStyle = s.colour; for (let b = 0; b < nb; b++) { const y = yPos(values[si * nb + b]); ctx.fillRect(xPos(e[b]), y, Math.max(1, xPos(e[b + 1]) - xPos(e[b]) - 0.5), f.top + f.h - y); } });
  ctx.globalAlpha = 1; ctx.setLineDash([5, 4]); ctx.strokeStyle = c.fg; ctx.fillStyle = c.fg; ctx.textAlign = "center"; ctx.textBaseline = "bottom";
  for (const m of p.marks || []) { const x = xPos(m.x); ctx.beginPath(); ctx.moveTo(x, f.top); ctx.lineTo(x, f.top + f.h); ctx.stroke(); if (m.label) ctx.fillText(m.label, x, f.top - 2); }
  ctx.setLineDash([]);
  return (x, y) => {
    if (x < f.left || x > f.left + f.w || y < f.top || y > f.top + f.h) return null;
    const b = Math.min(nb - 1, Math.floor(((x - f.left) / f.w) * nb));
    return `score ${fmt(e[b], 3)} to ${fmt(e[b + 1], 3)}\n` + series.map((s, si) => `${s.name}: ${values[si * nb + b]} pairs`).join("\n");
  };
}

function paintPoints(ctx, c, f, p) {                    // lines, arrows and markers in data coordinates
  const [x0, x1] = p.x_range, [y0, y1] = p.y_range;
  const X = (x) => f.left + f.w * (x - x0) / (x1 - x0), Y = (y) => f.top + f.h * (1 - (y - y0) / (y1 - y0));
  axes(ctx, c, f, p, niceTicks(x0, x1), niceTicks(y0, y1), X, Y);
  const hits = [], labels = [];
  for (const s of p.shapes) {
    ctx.strokeStyle = ctx.fillStyle = s.colour === "fg" ? c.fg2 : s.colour; ctx.lineWidth = s.width || 2;
    if (s.type === "circle") {
      ctx.globalAlpha = s.faint ? 0.35 : 1; ctx.beginPath();
      ctx.ellipse(X(s.x), Y(s.y), Math.abs(X(s.radius) - X(0)), Math.abs(Y(s.radius) - Y(0)), 0, 0, 2 * Math.PI);
      ctx.stroke(); ctx.globalAlpha = 1; continue;
    }
    if (s.type === "line") {
      ctx.globalAlpha = s.faint ? 0.35 : 1; ctx.beginPath();
      s.x.forEach((x, i) => (i ? ctx.lineTo(X(x), Y(s.y[i])) : ctx.moveTo(X(x), Y(s.y[i])))); ctx.stroke(); ctx.globalAlpha = 1;
      if (s.arrow) {
        const n = s.x.length - 1, ax = X(s.x[n]), ay = Y(s.y[n]), a = Math.atan2(ay - Y(s.y[n - 1]), ax - X(s.x[n - 1]));
        ctx.beginPath(); ctx.moveTo(ax, ay);
        for (const d of [2.6, -2.6]) ctx.lineTo(ax - 12 * Math.cos(a + d / 6), ay - 12 * Math.sin(a + d / 6));
        ctx.closePath(); ctx.fill();
      }
      continue;
    }
    const x = X(s.x), y = Y(s.y), r = s.r || 5;
    ctx.beginPath();
    if (s.shape === "star") for (let k = 0; k < 10; k++) { const rr = k % 2 ? r * 0.45 : r, a = -Math.PI / 2 + k * Math.PI / 5; ctx.lineTo(x + rr * Math.cos(a), y + rr * Math.sin(a)); }
    else ctx.arc(x, y, r, 0, 2 * Math.PI);
    ctx.closePath(); ctx.globalAlpha = s.shape === "ring" ? 1 : 0.85;
    if (s.shape === "ring") ctx.stroke(); else ctx.fill();
    ctx.globalAlpha = 1;
    if (s.label) labels.push([s.label, x, s.below ? y + r + 3 : y - r - 3, s.below]);
    hits.push([x, y, Math.max(r, 6), s.hover]);
  }
  ctx.font = font(12); ctx.textAlign = "center"; ctx.lineWidth = 3; ctx.strokeStyle = c.bg; ctx.fillStyle = c.fg;
  for (const [t, x, y, below] of labels) { ctx.textBaseline = below ? "top" : "bottom"; ctx.strokeText(t, x, y); ctx.fillText(t, x, y); }
  return (x, y) => { const h = hits.filter(([a, b, r]) => (x - a) ** 2 + (y - b) ** 2 <= r * r).pop(); return h ? h[3] : null; };
}

// -- the "numbers" table: a panel's values as html ----------------------------------------------
function numbersTable(box, p) {
  const table = make("table", "attnviz-table"), row = (cells, tag) => { const tr = make("tr", "", table); cells.forEach((t) => make(tag, "", tr, t)); };
  if (p.kind === "heatmap") {
    const v = valuesOf(p), flags = flagsOf(p), rows = Math.min(p.n_q, 32), cols = Math.min(p.n_k, 32);
    const xs = p.x_labels || [...Array(p.n_k).keys()].map(String), ys = p.y_labels || [...Array(p.n_q).keys()].map(String);
    row(["query \\ key", ...xs.slice(0, cols)], "th");
    for (let i = 0; i < rows; i++) row([ys[i], ...[...Array(cols).keys()].map((j) => { const k = i * p.n_k + j; return flags[k] & 2 ? "NaN" : flags[k] & 1 ? "masked" : fmt(v[k], Math.min(4, digits(p))); })], "td");
    if (rows < p.n_q || cols < p.n_k) make("caption", "", table, `first ${rows} x ${cols} of ${p.n_q} x ${p.n_k}`);
  } else if (p.kind === "bars") {
    const v = valuesOf(p), nb = p.x_labels.length;
    row(["", ...p.series.map((x) => x.name)], "th");
    p.x_labels.forEach((l, i) => row([l, ...p.series.map((_x, si) => fmt(v[si * nb + i]))], "td"));
  } else if (p.kind === "histogram") {
    const v = valuesOf(p), nb = v.length / p.series.length, e = edgesOf(p, nb);
    row(["bin", ...p.series.map((x) => x.name)], "th");
    for (let b = 0; b < nb; b++) if (p.series.some((_x, si) => v[si * nb + b])) row([`${fmt(e[b], 3)} to ${fmt(e[b + 1], 3)}`, ...p.series.map((_x, si) => String(v[si * nb + b]))], "td");
  } else { row(p.table.header, "th"); p.table.rows.forEach((r) => row(r, "td")); }
  box.replaceChildren(table);
}

// what canvas.py's HEATMAP_DEFAULTS leaves out of the scene
const HEATMAP = { x_title: "key (attended to)", y_title: "query (asking)", value_name: "weight", scale: "weights",
  masked_hover: "masked: may not attend", small: false, bar: true, text: false, vmin: 0, vmax: 1 };
const PAINT = { heatmap: paintHeatmap, bars: paintBars, histogram: paintBars, points: paintPoints };

function render({ model, el }) {
  el.classList.add("attnviz-canvas");
  el.dataset.attnvizPaint = "0";
  const tip = make("div", "attnviz-tip"), boxes = new Map();
  tip.hidden = true;
  let frame = 0, paints = 0, layout = "", colours = null;
  const schedule = () => { if (!frame) frame = requestAnimationFrame(paint); };

  function panelBox(name) {                             // title, canvas, numbers toggle, table; kept
    if (boxes.has(name)) return boxes.get(name);
    const box = make("figure", "attnviz-panel"), title = make("figcaption", "attnviz-title", box);
    const canvas = make("canvas", "", box), button = make("button", "attnviz-numbers", box, "numbers");
    const numbers = make("div", "attnviz-table-box", box);
    canvas.dataset.attnvizPanel = name; button.type = "button"; button.setAttribute("aria-expanded", "false");
    numbers.hidden = true;
    button.onclick = () => { numbers.hidden = !numbers.hidden; button.setAttribute("aria-expanded", String(!numbers.hidden)); schedule(); };
    const pick = () => { const p = scene().panels[name]; if (p && p.pick) model.send({ pick: p.pick }); };
    canvas.onclick = pick;
    canvas.onkeydown = (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); } };
    canvas.onmousemove = (e) => {
      const r = canvas.getBoundingClientRect(), text = canvas.hover && canvas.hover(e.clientX - r.left, e.clientY - r.top);
      tip.hidden = !text; if (text) { tip.textContent = text; tip.style.left = `${e.clientX + 14}px`; tip.style.top = `${e.clientY + 12}px`; }
    };
    canvas.onmouseleave = () => { tip.hidden = true; };
    const entry = { box, title, canvas, button, numbers };
    boxes.set(name, entry);
    return entry;
  }

  let speculative = null;                              // a prepared scene painted ahead of the kernel
  const controls = {};                                 // linked control name -> its model in the browser
  const scene = () => {
    const s = speculative || model.get("scene") || {}, fixed = model.get("fixed") || {};
    return { ...s, panels: { ...fixed, ...(s.panels || {}) } };
  };
  const cache = new Map();                             // what the controls hold -> the kernel's scene for it
  let steps = false;                                   // has the kernel prepared any (small pictures only)?
  const keyOf = (values) => JSON.stringify(Object.keys(model.get("links") || {}).map((n) =>
    (typeof values[n] === "number" ? Number(values[n].toPrecision(12)) : values[n])));
  const known = () => {                                // the kept scene for what the controls hold now
    const links = Object.entries(model.get("links") || {});
    if (!links.every(([name]) => controls[name])) return undefined;
    return cache.get(keyOf(Object.fromEntries(links.map(([name, l]) => [name, controls[name].get(l.attr)]))));
  };
  const keep = (values, sc) => {                       // the newest 64
    const k = keyOf(values); cache.delete(k); cache.set(k, sc);
    if (cache.size > 64) cache.delete(cache.keys().next().value);
  };
  function remember() {                                // a look-ahead came: keep its scenes
    const a = model.get("ahead") || {}, s = model.get("scene") || {};
    if (a.seq !== s.seq || !s.at) return;
    steps = steps || (a.entries || []).length > 0;
    for (const e of a.entries || []) keep({ ...s.at, [e.control]: e.value }, merge(s, e.scene));
  }
  const stepped = () => { const p = known(); if (p) { speculative = p; schedule(); } };   // else the kernel's
  const unlink = [];
  for (const [name, link] of Object.entries(model.get("links") || {})) {
    const manager = model.widget_manager;
    if (!manager || !manager.get_model) break;
    Promise.resolve(manager.get_model(link.id)).then((control) => {
      if (!control || !control.on) return;
      controls[name] = control;
      let last = -1e9;                   // in a burst (moves within `link.move` ms), report each move at
      const handler = () => {            // once: the slider's own message waits for the kernel's last (not
        const now = performance.now();   // for big pictures: then the slider's fewer messages are quicker)
        if (link.move && steps && now - last < link.move) model.send({ move: name, value: control.get(link.attr) });
        last = now; stepped();
      };
      control.on(`change:${link.attr}`, handler);
      unlink.push(() => control.off(`change:${link.attr}`, handler));
    }).catch(() => {});                                // no look-ahead then: every step waits for the kernel
  }

  function paint() {
    frame = 0;
    const c = colours || themeColours(el);              // read once per theme: getComputedStyle is slow
    if (el.isConnected && c.themed) colours = c;        // (not before the page shows it or its theme)
    const s = scene(), sections = s.sections || [];
    const signature = JSON.stringify(sections.map((x) => [x.title, x.panels]));
    let changed = false;                                // anything on screen different after this frame?
    if (signature !== layout) {                         // rebuild the sections only when they change
      layout = signature; changed = true;
      el.replaceChildren(...sections.map((sec) => {
        const node = make("section", "attnviz-section");
        if (sec.title) make("div", "attnviz-section-title", node);
        const row = make("div", sec.grid ? "attnviz-grid" : "attnviz-row", node);
        if (sec.grid) row.style.gridTemplateColumns = `repeat(${sec.grid}, max-content)`;
        sec.panels.forEach((name) => row.appendChild(panelBox(name).box));
        make("div", "attnviz-legend", node);
        return node;
      }), tip);
    }
    el.querySelectorAll(".attnviz-section").forEach((node, k) => {
      const sec = sections[k], title = node.querySelector(".attnviz-section-title");
      if (title && title.textContent !== sec.title) { title.textContent = sec.title; changed = true; }
      const legend = node.querySelector(".attnviz-legend"), words = JSON.stringify(sec.legend || []);
      if (legend.dataset.legend === words) return; legend.dataset.legend = words; changed = true;   // else no DOM work
      legend.replaceChildren(...(sec.legend || []).map((item) => {
        const chip = make("span", "attnviz-chip"), sw = make("i", `attnviz-swatch attnviz-${item.kind}`, chip);
        if (item.colour) sw.style.background = item.colour;
        chip.append(item.text); return chip;
      }));
    });
    const look = JSON.stringify(c);
    for (const [name, b] of boxes) {
      const raw = s.panels[name]; if (!raw) continue;
      const p = raw.kind === "heatmap" ? { ...HEATMAP, ...raw } : raw;
      if (b.box.classList.contains("attnviz-selected") !== (s.selected === name)) { b.box.classList.toggle("attnviz-selected"); changed = true; }
      const key = JSON.stringify([look, !b.numbers.hidden]);   // unchanged panel (the head grid, or the
      const unchanged = b.key === key && (b.spec === raw || samePicture(b.spec, raw));   // kernel's copy of
      if (b.spec !== raw && raw.description) b.canvas.setAttribute("aria-label", raw.description);  // a step)
      b.spec = raw;
      if (unchanged) continue;
      b.key = key; changed = true;
      if (b.title.textContent !== (p.title || "")) b.title.textContent = p.title || "";
      b.canvas.setAttribute("role", p.pick ? "button" : "img"); b.canvas.setAttribute("aria-label", p.description || p.title || p.kind);
      b.canvas.tabIndex = p.pick ? 0 : -1; b.button.hidden = !!p.small;
      const ctx = b.canvas.getContext("2d"), f = frameFor(ctx, p), dpr = window.devicePixelRatio || 1;
      const w = Math.ceil(f.left + f.w + f.right), h = Math.ceil(f.top + f.h + f.bottom);
      if (b.canvas.width !== w * dpr || b.canvas.height !== h * dpr) { b.canvas.width = w * dpr; b.canvas.height = h * dpr; }
      b.canvas.style.width = `${w}px`; b.canvas.style.height = `${h}px`;   // (resizing reallocates: only on change)
      Object.assign(b.canvas.dataset, { x0: f.left, y0: f.top, cell: p.cell || "" });
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0); ctx.clearRect(0, 0, w, h);
      try { b.canvas.hover = PAINT[p.kind](ctx, c, f, p); } catch (err) {   // say so, keep painting the rest
        b.title.textContent = `${p.title} (could not be drawn: ${err.message})`; b.canvas.hover = null;
      }
      b.title.style.maxWidth = `${Math.max(w, 120)}px`;
      if (!b.numbers.hidden) numbersTable(b.numbers, p);
    }
    el.dataset.attnvizExplorer = s.explorer || "";
    if (changed) el.dataset.attnvizPaint = String(++paints);
  }

  model.on("change:scene", () => {                   // the kernel's picture, unless the controls moved on
    const s = model.get("scene") || {};
    if (s.at) keep(s.at, s);
    const p = s.at && known();
    speculative = p && p !== s ? p : null; schedule();
  });
  model.on("change:ahead", () => { remember(); stepped(); });
  model.on("change:fixed", schedule);
  const watcher = new MutationObserver(() => { colours = null; schedule(); });   // theme switched: new colours
  watcher.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light"] });
  schedule();
  return () => { cancelAnimationFrame(frame); watcher.disconnect(); tip.remove(); unlink.forEach((f) => f()); };
}

export default { render };
