// Built by tools/build_canvas.js from attnviz/widgets/js/ (make canvas): edit those, not this.
// The front-end of every attnviz explorer; its contract with the page is at the top of js/render.js.

// attnviz/widgets/js/controls.js
function Lt(t, e) {
  return Boolean(t.move) && e < t.move;
}
function Z(t, e, n) {
  const o = {};
  const s = [];
  const r = t.widget_manager;
  for (const [l, a] of Object.entries(e)) {
    if (!r?.get_model) {
      break;
    }
    let f = Number.NEGATIVE_INFINITY;
    const u = () => {
      const d = performance.now();
      const g = Lt(a, d - f);
      f = d;
      n(l, o[l].get(a.attr), g);
    };
    Promise.resolve(r.get_model(a.id)).then((d) => {
      if (!d?.on) {
        return;
      }
      o[l] = d;
      d.on(`change:${a.attr}`, u);
      s.push(() => d.off(`change:${a.attr}`, u));
    }).catch(() => {
    });
  }
  const i = () => {
    const l = Object.keys(e);
    if (!l.every((a) => o[a])) {
      return void 0;
    }
    return Object.fromEntries(l.map((a) => [a, o[a].get(e[a].attr)]));
  };
  const c = () => {
    for (const l of s) {
      l();
    }
  };
  return { values: i, dispose: c };
}

// attnviz/widgets/js/scene.js
function Nt(t) {
  if (t.byteOffset % 4 === 0) {
    return new Float32Array(t.buffer, t.byteOffset, t.byteLength / 4);
  }
  const e = t.buffer.slice(t.byteOffset, t.byteOffset + t.byteLength);
  return new Float32Array(e);
}
function X(t) {
  const e = t.byteLength / 2;
  return Uint16Array.from({ length: e }, (n, o) => t.getUint16(o * 2, true));
}
function Et(t) {
  const e = Uint32Array.from(X(t), (n) => n << 16);
  return new Float32Array(e.buffer);
}
function p(t) {
  if (t.dtype === "uint16") {
    return X(t.values);
  }
  if (t.dtype === "bfloat16") {
    return Et(t.values);
  }
  return Nt(t.values);
}
function $(t) {
  return t.dtype === "bfloat16" ? 3 : 6;
}
function x(t) {
  if (!t.flags) {
    return new Uint8Array(t.n_q * t.n_k);
  }
  return new Uint8Array(t.flags.buffer, t.flags.byteOffset, t.flags.byteLength);
}
function v(t, e) {
  const [n, o] = t.edge_range;
  return Float64Array.from({ length: e + 1 }, (s, r) => n + (o - n) * r / e);
}
function S(t, e) {
  return t || [...Array(e).keys()].map(String);
}
function q(t, e) {
  if (t.kind !== "heatmap") {
    return t;
  }
  return { ...e.heatmap || {}, ...t };
}
function $t(t) {
  return "at" in t && "len" in t && Object.keys(t).length === 2;
}
function F(t, e) {
  if (Array.isArray(t)) {
    return t.map((o) => F(o, e));
  }
  if (!t || typeof t !== "object" || t instanceof DataView) {
    return t;
  }
  if ($t(t)) {
    return new DataView(e.buffer, e.byteOffset + t.at, t.len);
  }
  const n = Object.entries(t).map(([o, s]) => [o, F(s, e)]);
  return Object.fromEntries(n);
}
function Q(t, e) {
  const n = e.blob ? F({ ...e, blob: null }, e.blob) : e;
  const o = { ...t.panels || {} };
  for (const [r, i] of Object.entries(n.panels || {})) {
    const c = { ...o[r] || {}, ...i };
    for (const l of Object.keys(i)) {
      if (i[l] === null) {
        delete c[l];
      }
    }
    o[r] = c;
  }
  const s = { ...t, panels: o };
  if ("selected" in n) {
    s.selected = n.selected;
  }
  if (n.sections) {
    s.sections = n.sections.map((r, i) => r === null ? t.sections[i] : r);
  }
  return s;
}
function Ct(t, e) {
  if (t.byteLength !== e.byteLength) {
    return false;
  }
  const n = new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
  const o = new Uint8Array(e.buffer, e.byteOffset, e.byteLength);
  for (let s = 0; s < n.length; s++) {
    if (n[s] !== o[s]) {
      return false;
    }
  }
  return true;
}
function tt(t, e) {
  const n = /* @__PURE__ */ new Set([...Object.keys(t), ...Object.keys(e)]);
  n.delete("description");
  for (const o of n) {
    const s = t[o];
    const r = e[o];
    if (s instanceof DataView && r instanceof DataView) {
      if (!Ct(s, r)) {
        return false;
      }
    } else if (s !== r && JSON.stringify(s) !== JSON.stringify(r)) {
      return false;
    }
  }
  return true;
}

// attnviz/widgets/js/ahead.js
var Bt = 64;
var R = class {
  constructor(e, n = Bt) {
    this.names = e;
    this.limit = n;
    this.scenes = /* @__PURE__ */ new Map();
    this.hasSteps = false;
  }
  /** One key per setting of the controls (numbers to 12 digits: 0.1 + 0.2 finds 0.3). */
  keyOf(e) {
    const n = this.names.map((o) => {
      const s = e[o];
      return typeof s === "number" ? Number(s.toPrecision(12)) : s;
    });
    return JSON.stringify(n);
  }
  keep(e, n) {
    const o = this.keyOf(e);
    this.scenes.delete(o);
    this.scenes.set(o, n);
    if (this.scenes.size > this.limit) {
      this.scenes.delete(this.scenes.keys().next().value);
    }
  }
  find(e) {
    return this.scenes.get(this.keyOf(e));
  }
  /** Keep the steps of `ahead` that extend `scene` (each: the scene with its control at one value). */
  keepSteps(e, n) {
    if (n.seq !== e.seq || !e.at) {
      return 0;
    }
    const o = n.entries || [];
    this.hasSteps = this.hasSteps || o.length > 0;
    for (const s of o) {
      this.keep({ ...e.at, [s.control]: s.value }, Q(e, s.scene));
    }
    return o.length;
  }
};
function et(t, e) {
  const n = t.get("links") || {};
  const o = new R(Object.keys(n));
  let s = null;
  const r = () => {
    const f = c.values();
    return f === void 0 ? void 0 : o.find(f);
  };
  const i = () => {
    const f = r();
    if (f) {
      s = f;
      e();
    }
  };
  const c = Z(t, n, (f, u, d) => {
    if (d && o.hasSteps) {
      t.send({ move: f, value: u });
    }
    i();
  });
  const l = () => {
    const f = t.get("scene") || {};
    if (f.at) {
      o.keep(f.at, f);
    }
    const u = f.at && r();
    s = u && u !== f ? u : null;
    e();
  };
  const a = () => {
    o.keepSteps(t.get("scene") || {}, t.get("ahead") || {});
    i();
  };
  t.on("change:scene", l);
  t.on("change:ahead", a);
  return {
    scene: () => s || t.get("scene") || {},
    dispose: () => {
      c.dispose();
      t.off("change:scene", l);
      t.off("change:ahead", a);
    }
  };
}

// attnviz/widgets/js/colour.js
var jt = [
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
  "#fde725"
];
var zt = [
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
  "#67001f"
];
var C = "#c8c8c8";
var U = "#ff66cc";
var st = "#e4002b";
var K = "#3b528b";
function w(t) {
  return [1, 3, 5].map((e) => Number.parseInt(t.slice(e, e + 2), 16));
}
var It = { weights: jt.map(w), scores: zt.map(w) };
function B(t, e) {
  const n = It[t];
  const o = Math.min(1, Math.max(0, e)) * (n.length - 1);
  const s = Math.min(n.length - 2, Math.floor(o));
  const r = o - s;
  return n[s].map((i, c) => Math.round(i + r * (n[s + 1][c] - i)));
}
function H(t) {
  return `rgb(${t})`;
}
function nt(t) {
  const e = t.map((n) => {
    const o = n / 255;
    return o <= 0.04045 ? o / 12.92 : ((o + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * e[0] + 0.7152 * e[1] + 0.0722 * e[2];
}
function ot(t, e) {
  const [n, o] = [nt(t), nt(e)];
  return (Math.max(n, o) + 0.05) / (Math.min(n, o) + 0.05);
}
function V(t) {
  return ot(t, [0, 0, 0]) >= ot(t, [255, 255, 255]) ? "#000000" : "#ffffff";
}
var T = 1024;
var D = {};
function rt(t) {
  if (!D[t]) {
    const e = new Uint8ClampedArray(T * 4);
    for (let n = 0; n < T; n++) {
      const [o, s, r] = B(t, n / (T - 1));
      e.set([o, s, r, 255], n * 4);
    }
    D[t] = e;
  }
  return D[t];
}
function it(t) {
  const e = getComputedStyle(t);
  const n = (o, s) => e.getPropertyValue(o).trim() || s;
  return {
    fg: n("--jp-ui-font-color1", "#222"),
    fg2: n("--jp-ui-font-color2", "#555"),
    bg: n("--jp-layout-color1", "#fff"),
    border: n("--jp-border-color1", "#999"),
    family: n("--jp-ui-font-family", "system-ui, sans-serif"),
    themed: Boolean(e.getPropertyValue("--jp-ui-font-color1").trim())
  };
}
function m(t, e) {
  return `${e}px ${t.family}`;
}

// attnviz/widgets/js/axes.js
var M = 40;
function b(t, e = 6) {
  if (!Number.isFinite(t)) {
    return String(t);
  }
  return String(Number(t.toPrecision(e)));
}
function A(t, e, n = 5) {
  const o = e - t || 1;
  const s = o / n;
  const r = 10 ** Math.floor(Math.log10(s));
  const i = [1, 2, 5, 10].map((l) => l * r).find((l) => l >= s);
  const c = [];
  for (let l = Math.ceil(t / i) * i; l <= e + i * 1e-9; l += i) {
    c.push(Number(l.toPrecision(6)));
  }
  return c;
}
function j(t, e) {
  const n = (e || []).map((o) => t.measureText(o).width);
  return Math.max(0, ...n);
}
function Ft(t, e) {
  const n = e.small;
  const o = !n && e.n_q <= M;
  const s = !n && e.n_k <= M;
  const r = n ? 2 : 22 + (o ? Math.max(14, j(t, e.y_labels)) + 6 : 0);
  const i = s && j(t, e.x_labels) > e.cell - 2;
  let c = 2;
  if (!n) {
    const a = i ? Math.min(70, j(t, e.x_labels)) : 12;
    c = 26 + (s ? a + 6 : 0);
  }
  const l = e.scale === "mask" || n || !e.bar ? 0 : 56;
  return {
    left: r,
    top: n ? 2 : 6,
    w: e.cell * e.n_k,
    h: e.cell * e.n_q,
    right: l + 4,
    bottom: c,
    rotate: i
  };
}
function z(t, e, n) {
  t.font = m(e, 12);
  if (n.kind === "heatmap") {
    return Ft(t, n);
  }
  const o = n.kind === "bars";
  const s = o && j(t, n.x_labels) > n.width / n.x_labels.length;
  return {
    left: o ? 48 : 54,
    top: 18,
    w: n.width,
    h: n.height,
    right: 12,
    bottom: s ? 84 : 44
  };
}
function G(t, e, n, o) {
  t.fillStyle = e.fg;
  t.font = m(e, 12);
  t.textAlign = "center";
  t.textBaseline = "bottom";
  if (o.x_title) {
    t.fillText(o.x_title, n.left + n.w / 2, n.top + n.h + n.bottom - 2);
  }
  if (o.y_title) {
    t.save();
    t.translate(12, n.top + n.h / 2);
    t.rotate(-Math.PI / 2);
    t.textBaseline = "middle";
    t.fillText(o.y_title, 0, 0);
    t.restore();
  }
}
function qt(t, e, n, o) {
  t.fillText(o, e.left - 4, n);
  t.globalAlpha = 0.25;
  t.beginPath();
  t.moveTo(e.left, n + 0.5);
  t.lineTo(e.left + e.w, n + 0.5);
  t.stroke();
  t.globalAlpha = 1;
}
function Rt(t, e, n, o) {
  const s = e.top + e.h + 4;
  if (e.bottom <= 60) {
    t.fillText(o, n, s);
    return;
  }
  t.save();
  t.translate(n, s);
  t.rotate(-Math.PI / 4);
  t.textAlign = "right";
  t.fillText(o, 0, 0);
  t.restore();
}
function P(t, e, n, o, s, r, i, c) {
  t.strokeStyle = e.border;
  t.fillStyle = e.fg2;
  t.lineWidth = 1;
  t.font = m(e, 12);
  t.strokeRect(n.left + 0.5, n.top + 0.5, n.w, n.h);
  t.textAlign = "right";
  t.textBaseline = "middle";
  for (const l of r) {
    qt(t, n, c(l), b(l, 4));
  }
  t.textAlign = "center";
  t.textBaseline = "top";
  s.forEach((l, a) => {
    const f = typeof l === "string" ? l : b(l, 4);
    Rt(t, n, i(l, a), f);
  });
  G(t, e, n, o);
}

// attnviz/widgets/js/bars.js
function I(t, e) {
  return t.ymax || Math.max(1e-12, ...e) * 1.1;
}
function W(t, e) {
  return (n) => t.top + t.h * (1 - n / e);
}
function ct(t, e, n) {
  const o = t.x_labels.length;
  const s = e.w / o;
  const r = s * 0.8 / t.series.length;
  const i = I(t, n);
  const c = W(e, i);
  const l = [];
  t.series.forEach((a, f) => {
    t.x_labels.forEach((u, d) => {
      const g = e.left + d * s + s * 0.1 + f * r;
      const y = c(Math.min(n[f * o + d], i));
      l.push({ x: g, y, w: r, h: e.top + e.h - y, s: f, i: d });
    });
  });
  return l;
}
function Dt(t, e, n) {
  const o = ct(t, e, n);
  const s = t.x_labels.length;
  return (r, i) => {
    const c = o.find((a) => r >= a.x && r < a.x + a.w);
    if (!c || i < e.top || i > e.top + e.h) {
      return null;
    }
    if (t.hover) {
      return t.hover[c.s][c.i];
    }
    const l = b(n[c.s * s + c.i]);
    return `${t.series[c.s].name}
${t.x_labels[c.i]}: ${l}`;
  };
}
function lt(t, e, n, o) {
  const s = p(o);
  const r = n.w / o.x_labels.length;
  const i = W(n, I(o, s));
  const c = (l, a) => n.left + (a + 0.5) * r;
  P(t, e, n, o, o.x_labels, A(0, I(o, s)), c, i);
  for (const l of ct(o, n, s)) {
    t.fillStyle = o.colours?.[l.i] || o.series[l.s].colour;
    t.fillRect(l.x, l.y, l.w - 1, l.h);
    const a = o.text?.[l.s][l.i];
    if (a) {
      t.fillStyle = e.fg;
      t.textAlign = "center";
      t.textBaseline = "bottom";
      t.fillText(a, l.x + l.w / 2, l.y - 2);
    }
  }
  return Dt(o, n, s);
}
function at(t, e) {
  return e.length / t.series.length;
}
function Ut(t, e, n) {
  const o = at(t, n);
  const s = v(t, o);
  const r = t.y_title ? ` ${t.y_title}` : "";
  return (i, c) => {
    if (i < e.left || i > e.left + e.w || c < e.top || c > e.top + e.h) {
      return null;
    }
    const l = Math.min(o - 1, Math.floor((i - e.left) / e.w * o));
    const a = `${t.x_title || "bin"} ${b(s[l], 3)} to ${b(s[l + 1], 3)}`;
    const f = t.series.map((u, d) => `${u.name}: ${n[d * o + l]}${r}`);
    return [a, ...f].join("\n");
  };
}
function Kt(t, e, n, o, s) {
  t.setLineDash([5, 4]);
  t.strokeStyle = e.fg;
  t.fillStyle = e.fg;
  t.textAlign = "center";
  t.textBaseline = "bottom";
  for (const r of o) {
    const i = s(r.x);
    t.beginPath();
    t.moveTo(i, n.top);
    t.lineTo(i, n.top + n.h);
    t.stroke();
    if (r.label) {
      t.fillText(r.label, i, n.top - 2);
    }
  }
  t.setLineDash([]);
}
function ft(t, e, n, o) {
  const s = p(o);
  const r = at(o, s);
  const i = v(o, r);
  const c = i[0];
  const l = i[r];
  const a = (g) => n.left + n.w * (g - c) / (l - c || 1);
  const f = I(o, s);
  const u = W(n, f);
  const d = A(c, l, 6).filter((g) => g >= c && g <= l);
  P(t, e, n, o, d, A(0, f), a, u);
  t.globalAlpha = 0.65;
  o.series.forEach((g, y) => {
    t.fillStyle = g.colour;
    for (let k = 0; k < r; k++) {
      const N = u(s[y * r + k]);
      const E = Math.max(1, a(i[k + 1]) - a(i[k]) - 0.5);
      t.fillRect(a(i[k]), N, E, n.top + n.h - N);
    }
  });
  t.globalAlpha = 1;
  Kt(t, e, n, o.marks, a);
  return Ut(o, n, s);
}

// attnviz/widgets/js/connection.js
var Ht = "jupyter-widgets-disconnected";
var Vt = "The kernel was restarted or stopped: this explorer no longer follows its controls. Run its cell again (Shift+Enter).";
function ut(t) {
  return t.contains(Ht);
}
function dt(t, e) {
  let n = null;
  let o = null;
  const s = (c) => {
    if (ut(c.classList) && !n) {
      n = e("div", "attnviz-lost", null, Vt);
      n.setAttribute("role", "status");
      t.prepend(n);
    } else if (!ut(c.classList) && n) {
      n.remove();
      n = null;
    }
  };
  const r = () => {
    const c = t.closest(".attnviz-explorer");
    if (o || !c) {
      return;
    }
    o = new MutationObserver(() => s(c));
    o.observe(c, { attributes: true, attributeFilter: ["class"] });
    s(c);
  };
  const i = () => {
    o?.disconnect();
    n?.remove();
  };
  return { bind: r, dispose: i };
}

// attnviz/widgets/js/dom.js
function h(t, e, n, o) {
  const s = document.createElement(t);
  if (e) {
    s.className = e;
  }
  if (o !== void 0) {
    s.textContent = o;
  }
  if (n) {
    n.appendChild(s);
  }
  return s;
}

// attnviz/widgets/js/heatmap.js
var O = 1;
var _ = 2;
var ht = 4;
function Gt(t, e) {
  const n = t.vmax - t.vmin || 1;
  return Math.min(1, Math.max(0, (e - t.vmin) / n));
}
function Wt(t, e, n) {
  let o = "";
  if (n & _) {
    o = U;
  } else if (n & O) {
    o = C;
  } else if (t.scale === "mask") {
    o = e > 0.5 ? K : C;
  }
  if (o) {
    return { fill: o, ink: V(w(o)) };
  }
  const s = B(t.scale, (e - t.vmin) / (t.vmax - t.vmin || 1));
  return { fill: H(s), ink: V(s) };
}
function Jt(t, e, n) {
  if (n & _) {
    return "NaN";
  }
  if (n & O) {
    return t.masked_text || "";
  }
  const o = t.scale === "scores" ? 1 : 2;
  const s = Number(e.toFixed(o)) || 0;
  return s.toFixed(o);
}
function Yt(t, e, n) {
  const o = new Uint8ClampedArray(e.length * 4);
  const s = t.scale === "mask" ? null : rt(t.scale);
  const r = [...w(C), 255];
  const i = [...w(U), 255];
  const c = [...w(K), 255];
  for (let l = 0; l < e.length; l++) {
    const a = n[l];
    if (a & _) {
      o.set(i, l * 4);
    } else if (a & O) {
      o.set(r, l * 4);
    } else if (!s) {
      o.set(e[l] > 0.5 ? c : r, l * 4);
    } else {
      const f = Math.round(Gt(t, e[l]) * (T - 1)) * 4;
      o.set(s.subarray(f, f + 4), l * 4);
    }
  }
  return o;
}
function Zt(t, e, n, o, s) {
  const r = new ImageData(Yt(n, o, s), n.n_k, n.n_q);
  const i = new OffscreenCanvas(n.n_k, n.n_q);
  i.getContext("2d").putImageData(r, 0, 0);
  t.imageSmoothingEnabled = false;
  t.drawImage(i, e.left, e.top, n.n_k * n.cell, n.n_q * n.cell);
}
function Xt(t, e, n, o, s) {
  const r = o >= 14;
  const i = Math.max(1, o / 14);
  const c = r ? e + o * 0.66 : e + o * 0.2;
  const l = n + o * (r ? 0.08 : 0.2);
  const a = r ? o * 0.26 : o * 0.6;
  t.strokeStyle = st;
  t.lineWidth = i;
  t.beginPath();
  if (r) {
    t.rect(e + i / 2, n + i / 2, o - s - i, o - s - i);
  }
  t.moveTo(c, l);
  t.lineTo(c + a, l + a);
  t.moveTo(c + a, l);
  t.lineTo(c, l + a);
  t.stroke();
}
function Qt(t, e, n, o, s, r) {
  const i = o.cell;
  const c = i >= 8 ? 1 : 0;
  const l = !c && !o.text && typeof OffscreenCanvas !== "undefined";
  if (l) {
    Zt(t, n, o, s, r);
  }
  t.font = m(e, Math.min(12, Math.max(8, i / 3.2)));
  t.textAlign = "center";
  t.textBaseline = "middle";
  for (let a = 0; a < o.n_q; a++) {
    for (let f = 0; f < o.n_k; f++) {
      const u = a * o.n_k + f;
      const d = r[u];
      const g = n.left + f * i;
      const y = n.top + a * i;
      if (!l) {
        const { fill: k, ink: N } = Wt(o, s[u], d);
        t.fillStyle = k;
        t.fillRect(g, y, i - c, i - c);
        const E = o.text ? Jt(o, s[u], d) : "";
        if (E && i >= 18) {
          t.fillStyle = N;
          t.fillText(E, g + i / 2, y + i / 2);
        }
      }
      if (d & ht) {
        Xt(t, g, y, i, c);
      }
    }
  }
}
function te(t, e, n, o) {
  const s = o.cell;
  t.font = m(e, 12);
  t.fillStyle = e.fg2;
  t.textBaseline = "middle";
  t.textAlign = "right";
  if (o.n_q <= M) {
    const i = S(o.y_labels, o.n_q);
    i.forEach((c, l) => {
      t.fillText(c, n.left - 4, n.top + (l + 0.5) * s);
    });
  }
  if (o.n_k > M) {
    return;
  }
  const r = S(o.x_labels, o.n_k);
  r.forEach((i, c) => {
    t.save();
    t.translate(n.left + (c + 0.5) * s, n.top + n.h + 4);
    if (n.rotate) {
      t.rotate(-Math.PI / 4);
      t.textAlign = "right";
    } else {
      t.textAlign = "center";
    }
    t.textBaseline = n.rotate ? "middle" : "top";
    t.fillText(i, 0, 0);
    t.restore();
  });
}
function ee(t, e, n, o) {
  const s = n.left + n.w + 10;
  const r = Math.max(60, Math.min(n.h, 220));
  for (let c = 0; c < r; c++) {
    t.fillStyle = H(B(o.scale, 1 - c / r));
    t.fillRect(s, n.top + c, 12, 1);
  }
  t.fillStyle = e.fg2;
  t.textAlign = "left";
  t.textBaseline = "middle";
  t.font = m(e, 12);
  const i = o.vmax - o.vmin || 1;
  for (const c of [o.vmax, (o.vmin + o.vmax) / 2, o.vmin]) {
    t.fillText(b(c, 3), s + 15, n.top + r * (o.vmax - c) / i);
  }
  t.textBaseline = "top";
  t.fillText(o.value_name, s - 2, n.top + r + 6);
}
function ne(t, e, n, o) {
  return (s, r) => {
    const i = Math.floor((s - e.left) / t.cell);
    const c = Math.floor((r - e.top) / t.cell);
    if (c < 0 || i < 0 || c >= t.n_q || i >= t.n_k) {
      return null;
    }
    const l = c * t.n_k + i;
    const a = t.y_labels ? ` '${t.y_labels[c]}'` : "";
    const f = t.x_labels ? ` '${t.x_labels[i]}'` : "";
    let u = `${t.value_name} ${b(n[l], $(t))}`;
    if (o[l] & _) {
      u = "NaN: the softmax of a row of -inf is 0/0";
    } else if (o[l] & O) {
      u = t.masked_hover;
    }
    const d = o[l] & ht ? "\nmasked, yet weight > 0 (leak)" : "";
    return `query ${c}${a} \u2192 key ${i}${f}
${u}${d}`;
  };
}
function gt(t, e, n, o) {
  const s = p(o);
  const r = x(o);
  Qt(t, e, n, o, s, r);
  if (!o.small) {
    te(t, e, n, o);
    G(t, e, n, o);
    if (o.scale !== "mask" && o.bar) {
      ee(t, e, n, o);
    }
  }
  return ne(o, n, s, r);
}

// attnviz/widgets/js/keys.js
var bt = "data-lm-suppress-shortcuts";
var oe = "attnviz-explorer";
var se = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"];
function re(t) {
  const e = t.getAttribute("role");
  if (e === "slider" || e === "button") {
    return e;
  }
  const n = t.tagName.toLowerCase();
  return n === "select" || n === "button" ? n : "";
}
function ie(t, e, n) {
  if (n || !t) {
    return false;
  }
  if (t === "button") {
    return e === "Enter" || e === " ";
  }
  return se.includes(e) || t === "select" && e.length === 1;
}
function ce(t) {
  const e = (n) => {
    const o = n.target;
    const s = t();
    if (!(o instanceof Element) || !s?.contains(o)) {
      return;
    }
    const r = n.ctrlKey || n.altKey || n.metaKey;
    if (ie(re(o), n.key, r)) {
      o.setAttribute(bt, "");
    } else {
      o.removeAttribute(bt);
    }
  };
  window.addEventListener("keydown", e, true);
  return () => window.removeEventListener("keydown", e, true);
}
function mt(t) {
  const e = t.querySelector('[role="slider"]');
  const n = t.querySelector(".widget-label")?.textContent.trim();
  const o = t.querySelector(".widget-readout")?.textContent.trim();
  if (!e) {
    return;
  }
  if (n && e.getAttribute("aria-label") !== n) {
    e.setAttribute("aria-label", n);
  }
  if (o && e.getAttribute("aria-valuetext") !== o) {
    e.setAttribute("aria-valuetext", o);
  }
}
function pt(t) {
  const e = () => t.closest(`.${oe}`);
  const n = ce(e);
  const o = /* @__PURE__ */ new Map();
  let s = null;
  const r = () => {
    const c = e();
    if (c && !s) {
      s = new MutationObserver(() => r());
      s.observe(c, { childList: true, subtree: true });
    }
    for (const l of c?.querySelectorAll(".widget-slider") || []) {
      if (o.has(l)) {
        continue;
      }
      mt(l);
      const a = new MutationObserver(() => mt(l));
      a.observe(l, {
        subtree: true,
        childList: true,
        characterData: true,
        attributeFilter: ["aria-valuetext", "aria-label"]
      });
      o.set(l, a);
    }
  };
  const i = () => {
    n();
    s?.disconnect();
    for (const c of o.values()) {
      c.disconnect();
    }
  };
  return { connect: r, dispose: i };
}

// attnviz/widgets/js/points.js
var yt = 0.35;
function kt(t, e) {
  const [n, o] = t.x_range;
  const [s, r] = t.y_range;
  return {
    X: (i) => e.left + e.w * (i - n) / (o - n),
    Y: (i) => e.top + e.h * (1 - (i - s) / (r - s))
  };
}
function le(t, e) {
  const { X: n, Y: o } = kt(t, e);
  const s = t.shapes.filter((r) => r.type === "marker");
  return (r, i) => {
    const c = s.filter((l) => {
      const a = Math.max(l.r, 6);
      return (r - n(l.x)) ** 2 + (i - o(l.y)) ** 2 <= a * a;
    });
    return c.length ? c[c.length - 1].hover : null;
  };
}
function ae(t, e, n, o) {
  t.globalAlpha = e.faint ? yt : 1;
  t.beginPath();
  const s = Math.abs(n(e.radius) - n(0));
  const r = Math.abs(o(e.radius) - o(0));
  t.ellipse(n(e.x), o(e.y), s, r, 0, 0, 2 * Math.PI);
  t.stroke();
  t.globalAlpha = 1;
}
function fe(t, e, n, o) {
  const s = e.x.length - 1;
  const r = n(e.x[s]);
  const i = o(e.y[s]);
  const c = Math.atan2(i - o(e.y[s - 1]), r - n(e.x[s - 1]));
  t.beginPath();
  t.moveTo(r, i);
  for (const l of [2.6, -2.6]) {
    t.lineTo(r - 12 * Math.cos(c + l / 6), i - 12 * Math.sin(c + l / 6));
  }
  t.closePath();
  t.fill();
}
function ue(t, e, n, o) {
  t.globalAlpha = e.faint ? yt : 1;
  t.beginPath();
  e.x.forEach((s, r) => {
    if (r === 0) {
      t.moveTo(n(s), o(e.y[r]));
    } else {
      t.lineTo(n(s), o(e.y[r]));
    }
  });
  t.stroke();
  t.globalAlpha = 1;
  if (e.arrow) {
    fe(t, e, n, o);
  }
}
function de(t, e, n, o) {
  for (let s = 0; s < 10; s++) {
    const r = s % 2 ? o * 0.45 : o;
    const i = -Math.PI / 2 + s * Math.PI / 5;
    t.lineTo(e + r * Math.cos(i), n + r * Math.sin(i));
  }
}
function he(t, e, n, o) {
  const s = n(e.x);
  const r = o(e.y);
  t.beginPath();
  if (e.shape === "star") {
    de(t, s, r, e.r);
  } else {
    t.arc(s, r, e.r, 0, 2 * Math.PI);
  }
  t.closePath();
  if (e.shape === "ring") {
    t.stroke();
  } else {
    t.globalAlpha = 0.85;
    t.fill();
    t.globalAlpha = 1;
  }
}
function ge(t, e, n, o, s) {
  t.font = m(e, 12);
  t.textAlign = "center";
  t.textBaseline = "bottom";
  t.lineWidth = 3;
  t.strokeStyle = e.bg;
  t.fillStyle = e.fg;
  for (const r of n) {
    if (r.label) {
      const i = s(r.y) - r.r - 3;
      t.strokeText(r.label, o(r.x), i);
      t.fillText(r.label, o(r.x), i);
    }
  }
}
var be = { circle: ae, line: ue, marker: he };
function _t(t, e, n, o) {
  const { X: s, Y: r } = kt(o, n);
  const [i, c] = o.x_range;
  const [l, a] = o.y_range;
  P(t, e, n, o, A(i, c), A(l, a), s, r);
  for (const u of o.shapes) {
    const d = u.colour === "fg" ? e.fg2 : u.colour;
    t.strokeStyle = d;
    t.fillStyle = d;
    t.lineWidth = u.width || 2;
    be[u.type](t, u, s, r);
  }
  const f = o.shapes.filter((u) => u.type === "marker");
  ge(t, e, f, s, r);
  return le(o, n);
}

// attnviz/widgets/js/table.js
var wt = 32;
function me(t) {
  const e = p(t);
  const n = x(t);
  const o = Math.min(t.n_q, wt);
  const s = Math.min(t.n_k, wt);
  const r = S(t.x_labels, t.n_k).slice(0, s);
  const i = S(t.y_labels, t.n_q);
  const c = (u) => {
    if (n[u] & _) {
      return "NaN";
    }
    if (n[u] & O) {
      return "masked";
    }
    return b(e[u], Math.min(4, $(t)));
  };
  const l = [];
  for (let u = 0; u < o; u++) {
    const d = [...Array(s).keys()].map((g) => c(u * t.n_k + g));
    l.push([i[u], ...d]);
  }
  const a = o < t.n_q || s < t.n_k;
  const f = a ? `first ${o} x ${s} of ${t.n_q} x ${t.n_k}` : "";
  return { header: ["query \\ key", ...r], rows: l, caption: f };
}
function pe(t) {
  const e = p(t);
  const n = t.x_labels.length;
  const o = t.x_labels.map((s, r) => [
    s,
    ...t.series.map((i, c) => b(e[c * n + r]))
  ]);
  return { header: ["", ...t.series.map((s) => s.name)], rows: o, caption: "" };
}
function ye(t) {
  const e = p(t);
  const n = e.length / t.series.length;
  const o = v(t, n);
  const s = [];
  for (let i = 0; i < n; i++) {
    const c = t.series.map((l, a) => e[a * n + i]);
    if (c.some((l) => l)) {
      s.push([`${b(o[i], 3)} to ${b(o[i + 1], 3)}`, ...c.map(String)]);
    }
  }
  const r = [t.x_title || "bin", ...t.series.map((i) => i.name)];
  return { header: r, rows: s, caption: "" };
}
function J(t) {
  if (t.kind === "heatmap") {
    return me(t);
  }
  if (t.kind === "bars") {
    return pe(t);
  }
  if (t.kind === "histogram") {
    return ye(t);
  }
  return { header: t.table.header, rows: t.table.rows, caption: "" };
}
function At(t, e) {
  const { header: n, rows: o, caption: s } = J(e);
  const r = h("table", "attnviz-table");
  const i = (c, l) => {
    const a = h("tr", "", r);
    for (const f of c) {
      h(l, "", a, f);
    }
  };
  i(n, "th");
  for (const c of o) {
    i(c, "td");
  }
  if (s) {
    h("caption", "", r, s);
  }
  t.replaceChildren(r);
}

// attnviz/widgets/js/save.js
var Ot = 13;
var xt = 17;
function ke(t, e, n, o) {
  const s = [t.file || t.explorer || "explorer", e, n].filter(Boolean);
  return `${s.map((r) => r.replace(/[^\w.+-]+/g, "-")).join("_")}.${o}`;
}
function _e(t) {
  return /[",\n]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
}
function we(t) {
  let e = [];
  if (t.kind === "heatmap") {
    const n = p(t);
    const o = x(t);
    const s = t.dtype === "bfloat16" ? 4 : 9;
    const r = (i, c) => i ? i[c] : String(c);
    e.push(["query \\ key", ...Array.from({ length: t.n_k }, (i, c) => r(t.x_labels, c))]);
    for (let i = 0; i < t.n_q; i++) {
      const c = [r(t.y_labels, i)];
      for (let l = 0; l < t.n_k; l++) {
        const a = i * t.n_k + l;
        c.push(o[a] & _ ? "NaN" : String(Number(n[a].toPrecision(s))));
      }
      e.push(c);
    }
  } else {
    const n = J(t);
    const o = [...n.header];
    o[0] ||= t.x_title || "";
    if (o.length === 2 && t.y_title) {
      o[1] = t.y_title;
    }
    e = [o, ...n.rows];
  }
  return `${e.map((n) => n.map(_e).join(",")).join("\n")}
`;
}
function Ae(t, e, n, o) {
  t.font = m(e, Ot);
  const s = [];
  for (const r of (n || "").split(" ").filter(Boolean)) {
    const i = s.length - 1;
    if (i >= 0 && t.measureText(`${s[i]} ${r}`).width <= o) {
      s[i] += ` ${r}`;
    } else {
      s.push(r);
    }
  }
  return s;
}
function xe(t, e, n, o, s) {
  const r = z(t, e, n);
  const i = Math.ceil(r.left + r.w + r.right);
  const c = Ae(t, e, n.title, i - 8);
  const l = c.length * xt + (c.length ? 4 : 0);
  const a = Math.ceil(l + r.top + r.h + r.bottom);
  s(i, a);
  t.fillStyle = e.bg;
  t.fillRect(0, 0, i, a);
  t.fillStyle = e.fg;
  t.font = m(e, Ot);
  t.textAlign = "left";
  t.textBaseline = "top";
  c.forEach((f, u) => {
    t.fillText(f, 4, 4 + u * xt);
  });
  t.save();
  t.translate(0, l);
  o(t, e, r, n);
  t.restore();
  return { width: i, height: a };
}
function St(t, e, n, o) {
  const s = h("canvas");
  const r = s.getContext("2d");
  xe(r, t, e, n, (i, c) => {
    s.width = Math.round(i * o);
    s.height = Math.round(c * o);
    r.setTransform(o, 0, 0, o, 0, 0);
  });
  return new Promise((i) => s.toBlob(i, "image/png"));
}
function Se(t, e) {
  const n = h("a");
  n.href = URL.createObjectURL(t);
  n.download = e;
  n.click();
  setTimeout(() => URL.revokeObjectURL(n.href), 6e4);
}
var Oe = [
  ["PNG", "", "png", (t, e, n) => St(t, e, n, window.devicePixelRatio || 1)],
  ["PNG 2\xD7", "2x", "png", (t, e, n) => St(t, e, n, 2 * (window.devicePixelRatio || 1))],
  ["CSV", "", "csv", (t, e) => new Blob([we(e)], { type: "text/csv" })]
];
function vt(t, e, n) {
  const o = h("span", "attnviz-save");
  const s = h("button", "", o, "save");
  const r = h("span", "attnviz-save-as", o);
  s.type = "button";
  s.setAttribute("aria-expanded", "false");
  r.setAttribute("role", "group");
  r.setAttribute("aria-label", "save as");
  r.hidden = true;
  s.onclick = () => {
    r.hidden = !r.hidden;
    s.setAttribute("aria-expanded", String(!r.hidden));
  };
  for (const [i, c, l, a] of Oe) {
    const f = h("button", "", r, i);
    f.type = "button";
    f.onclick = async () => {
      const u = e();
      if (u) {
        const d = await a(u.theme, u.panel, n[u.panel.kind]);
        Se(d, ke(u.scene, u.name, c, l));
      }
    };
  }
  t.figure.insertBefore(o, t.numbers);
  return o;
}

// attnviz/widgets/js/render.js
var Mt = { heatmap: gt, bars: lt, histogram: ft, points: _t };
function Y(t) {
  const e = t.scene();
  const n = t.model.get("fixed") || {};
  return { ...e, panels: { ...n, ...e.panels || {} } };
}
function L(t) {
  if (!t.frame) {
    t.frame = requestAnimationFrame(() => Ce(t));
  }
}
function ve(t, e, n) {
  const o = e.canvas.getBoundingClientRect();
  const s = e.hover?.(n.clientX - o.left, n.clientY - o.top);
  t.tip.hidden = !s;
  if (s) {
    t.tip.textContent = s;
    t.tip.style.left = `${n.clientX + 14}px`;
    t.tip.style.top = `${n.clientY + 12}px`;
  }
}
function Tt(t, e) {
  const n = Y(t).panels[e];
  if (n?.pick) {
    t.model.send({ pick: n.pick });
  }
}
function Te(t, e) {
  if (t.boxes.has(e)) {
    return t.boxes.get(e);
  }
  const n = h("figure", "attnviz-panel");
  const o = h("figcaption", "attnviz-title", n);
  const s = h("canvas", "", n);
  const r = h("button", "attnviz-numbers", n, "numbers");
  const i = h("div", "attnviz-table-box", n);
  s.dataset.attnvizPanel = e;
  r.type = "button";
  r.setAttribute("aria-expanded", "false");
  i.hidden = true;
  const c = { figure: n, title: o, canvas: s, button: r, numbers: i, spec: null, key: "", hover: null };
  const l = () => c.spec && {
    panel: q(c.spec, t.model.get("defaults") || {}),
    theme: Pt(t),
    scene: Y(t),
    name: e
  };
  c.save = vt(c, l, Mt);
  r.onclick = () => {
    i.hidden = !i.hidden;
    r.setAttribute("aria-expanded", String(!i.hidden));
    L(t);
  };
  s.onclick = () => Tt(t, e);
  s.onkeydown = (a) => {
    if (a.key === "Enter" || a.key === " ") {
      a.preventDefault();
      Tt(t, e);
    }
  };
  s.onmousemove = (a) => ve(t, c, a);
  s.onmouseleave = () => {
    t.tip.hidden = true;
  };
  t.boxes.set(e, c);
  return c;
}
function Me(t, e) {
  const n = JSON.stringify(
    e.map((s) => [Boolean(s.title), s.panels, s.grid])
  );
  if (n === t.layout) {
    return false;
  }
  t.layout = n;
  t.sections = [];
  const o = e.map((s) => {
    const r = h("section", "attnviz-section");
    const i = s.title ? h("div", "attnviz-section-title", r) : null;
    const c = h("div", s.grid ? "attnviz-grid" : "attnviz-row", r);
    if (s.grid) {
      c.style.gridTemplateColumns = `repeat(${s.grid}, max-content)`;
    }
    for (const a of s.panels) {
      c.appendChild(Te(t, a).figure);
    }
    const l = h("div", "attnviz-legend", r);
    t.sections.push({ title: i, legend: l });
    return r;
  });
  t.el.replaceChildren(...o, t.tip);
  return true;
}
function Pe(t) {
  const e = h("span", "attnviz-chip");
  const n = h("i", `attnviz-swatch attnviz-${t.kind}`, e);
  if (t.colour) {
    n.style.background = t.colour;
  }
  e.append(t.text);
  return e;
}
function Le(t, e) {
  let n = false;
  t.sections.forEach((o, s) => {
    const r = e[s];
    if (o.title && o.title.textContent !== r.title) {
      o.title.textContent = r.title;
      n = true;
    }
    const i = JSON.stringify(r.legend || []);
    if (o.legend.dataset.legend !== i) {
      o.legend.dataset.legend = i;
      o.legend.replaceChildren(...(r.legend || []).map(Pe));
      n = true;
    }
  });
  return n;
}
function Ne(t, e) {
  const n = window.devicePixelRatio || 1;
  const o = Math.ceil(e.left + e.w + e.right);
  const s = Math.ceil(e.top + e.h + e.bottom);
  if (t.width !== o * n || t.height !== s * n) {
    t.width = o * n;
    t.height = s * n;
  }
  t.style.width = `${o}px`;
  t.style.height = `${s}px`;
  const r = t.getContext("2d");
  r.setTransform(n, 0, 0, n, 0, 0);
  r.clearRect(0, 0, o, s);
  return { ctx: r, width: o };
}
function Ee(t, e, n) {
  if (t.title.textContent !== (e.title || "")) {
    t.title.textContent = e.title || "";
  }
  t.canvas.setAttribute("role", e.pick ? "button" : "img");
  t.canvas.setAttribute("aria-label", e.description || e.title || e.kind);
  t.canvas.tabIndex = e.pick ? 0 : -1;
  t.button.hidden = Boolean(e.small);
  t.save.hidden = t.button.hidden;
  const o = z(t.canvas.getContext("2d"), n, e);
  const { ctx: s, width: r } = Ne(t.canvas, o);
  Object.assign(t.canvas.dataset, { x0: o.left, y0: o.top, cell: e.cell || "" });
  try {
    t.hover = Mt[e.kind](s, n, o, e);
  } catch (c) {
    t.title.textContent = `${e.title} (could not be drawn: ${c.message})`;
    t.hover = null;
  }
  const i = `${Math.max(r, 120)}px`;
  if (t.title.style.maxWidth !== i) {
    t.title.style.maxWidth = i;
    t.numbers.style.maxWidth = i;
  }
  if (!t.numbers.hidden) {
    At(t.numbers, e);
  }
}
function $e(t, e, n, o, s) {
  const r = o.panels[n];
  let i = false;
  if (e.figure.classList.contains("attnviz-selected") !== (o.selected === n)) {
    e.figure.classList.toggle("attnviz-selected");
    i = true;
  }
  const c = JSON.stringify([s, !e.numbers.hidden]);
  const l = e.key === c && (e.spec === r || tt(e.spec, r));
  if (e.spec !== r && r.description) {
    e.canvas.setAttribute("aria-label", r.description);
  }
  e.spec = r;
  if (l) {
    return i;
  }
  e.key = c;
  Ee(e, q(r, t.model.get("defaults") || {}), s);
  return true;
}
function Pt(t) {
  const e = t.theme || it(t.el);
  if (t.el.isConnected && e.themed) {
    t.theme = e;
  }
  return e;
}
function Ce(t) {
  t.frame = 0;
  const e = Pt(t);
  const n = Y(t);
  const o = n.sections || [];
  let s = Me(t, o);
  s = Le(t, o) || s;
  for (const [r, i] of t.boxes) {
    if (n.panels[r]) {
      s = $e(t, i, r, n, e) || s;
    }
  }
  t.el.dataset.attnvizExplorer = n.explorer || "";
  t.keys.connect();
  t.connection.bind();
  if (s) {
    t.paints += 1;
    t.el.dataset.attnvizPaint = String(t.paints);
  }
}
function Be({ model: t, el: e }) {
  e.classList.add("attnviz-canvas");
  e.dataset.attnvizPaint = "0";
  const n = h("div", "attnviz-tip");
  n.hidden = true;
  const o = {
    model: t,
    el: e,
    tip: n,
    boxes: /* @__PURE__ */ new Map(),
    sections: [],
    layout: "",
    theme: null,
    frame: 0,
    paints: 0
  };
  o.keys = pt(e);
  o.connection = dt(e, h);
  const s = et(t, () => L(o));
  o.scene = s.scene;
  const r = () => L(o);
  t.on("change:fixed", r);
  const i = new MutationObserver(() => {
    o.theme = null;
    L(o);
  });
  i.observe(document.body, {
    attributes: true,
    attributeFilter: ["data-jp-theme-name", "data-jp-theme-light"]
  });
  L(o);
  return () => {
    cancelAnimationFrame(o.frame);
    i.disconnect();
    o.connection.dispose();
    o.keys.dispose();
    n.remove();
    s.dispose();
    t.off("change:fixed", r);
  };
}
var Mn = { render: Be };
export {
  Mn as default
};
