// Built by tools/build_canvas.js from attnviz/widgets/js/ (make canvas): edit those, not this.
// The front-end of every attnviz explorer; its contract with the page is at the top of js/render.js.

// attnviz/widgets/js/controls.js
function vt(t, e) {
  return Boolean(t.move) && e < t.move;
}
function Z(t, e, n) {
  const o = {};
  const s = [];
  const r = t.widget_manager;
  for (const [l, f] of Object.entries(e)) {
    if (!r?.get_model) {
      break;
    }
    let a = Number.NEGATIVE_INFINITY;
    const u = () => {
      const d = performance.now();
      const g = vt(f, d - a);
      a = d;
      n(l, o[l].get(f.attr), g);
    };
    Promise.resolve(r.get_model(f.id)).then((d) => {
      if (!d?.on) {
        return;
      }
      o[l] = d;
      d.on(`change:${f.attr}`, u);
      s.push(() => d.off(`change:${f.attr}`, u));
    }).catch(() => {
    });
  }
  const i = () => {
    const l = Object.keys(e);
    if (!l.every((f) => o[f])) {
      return void 0;
    }
    return Object.fromEntries(l.map((f) => [f, o[f].get(e[f].attr)]));
  };
  const c = () => {
    for (const l of s) {
      l();
    }
  };
  return { values: i, dispose: c };
}

// attnviz/widgets/js/scene.js
function Pt(t) {
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
function Lt(t) {
  const e = Uint32Array.from(X(t), (n) => n << 16);
  return new Float32Array(e.buffer);
}
function y(t) {
  if (t.dtype === "uint16") {
    return X(t.values);
  }
  if (t.dtype === "bfloat16") {
    return Lt(t.values);
  }
  return Pt(t.values);
}
function E(t) {
  return t.dtype === "bfloat16" ? 3 : 6;
}
function x(t) {
  if (!t.flags) {
    return new Uint8Array(t.n_q * t.n_k);
  }
  return new Uint8Array(t.flags.buffer, t.flags.byteOffset, t.flags.byteLength);
}
function T(t, e) {
  const [n, o] = t.edge_range;
  return Float64Array.from({ length: e + 1 }, (s, r) => n + (o - n) * r / e);
}
function S(t, e) {
  return t || [...Array(e).keys()].map(String);
}
function F(t, e) {
  if (t.kind !== "heatmap") {
    return t;
  }
  return { ...e.heatmap || {}, ...t };
}
function Nt(t) {
  return "at" in t && "len" in t && Object.keys(t).length === 2;
}
function z(t, e) {
  if (Array.isArray(t)) {
    return t.map((o) => z(o, e));
  }
  if (!t || typeof t !== "object" || t instanceof DataView) {
    return t;
  }
  if (Nt(t)) {
    return new DataView(e.buffer, e.byteOffset + t.at, t.len);
  }
  const n = Object.entries(t).map(([o, s]) => [o, z(s, e)]);
  return Object.fromEntries(n);
}
function Q(t, e) {
  const n = e.blob ? z({ ...e, blob: null }, e.blob) : e;
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
function $t(t, e) {
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
      if (!$t(s, r)) {
        return false;
      }
    } else if (s !== r && JSON.stringify(s) !== JSON.stringify(r)) {
      return false;
    }
  }
  return true;
}

// attnviz/widgets/js/ahead.js
var Et = 64;
var R = class {
  constructor(e, n = Et) {
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
    const a = c.values();
    return a === void 0 ? void 0 : o.find(a);
  };
  const i = () => {
    const a = r();
    if (a) {
      s = a;
      e();
    }
  };
  const c = Z(t, n, (a, u, d) => {
    if (d && o.hasSteps) {
      t.send({ move: a, value: u });
    }
    i();
  });
  const l = () => {
    const a = t.get("scene") || {};
    if (a.at) {
      o.keep(a.at, a);
    }
    const u = a.at && r();
    s = u && u !== a ? u : null;
    e();
  };
  const f = () => {
    o.keepSteps(t.get("scene") || {}, t.get("ahead") || {});
    i();
  };
  t.on("change:scene", l);
  t.on("change:ahead", f);
  return {
    scene: () => s || t.get("scene") || {},
    dispose: () => {
      c.dispose();
      t.off("change:scene", l);
      t.off("change:ahead", f);
    }
  };
}

// attnviz/widgets/js/colour.js
var Ct = [
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
var Bt = [
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
var D = "#ff66cc";
var st = "#e4002b";
var K = "#3b528b";
function A(t) {
  return [1, 3, 5].map((e) => Number.parseInt(t.slice(e, e + 2), 16));
}
var jt = { weights: Ct.map(A), scores: Bt.map(A) };
function B(t, e) {
  const n = jt[t];
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
var M = 1024;
var U = {};
function rt(t) {
  if (!U[t]) {
    const e = new Uint8ClampedArray(M * 4);
    for (let n = 0; n < M; n++) {
      const [o, s, r] = B(t, n / (M - 1));
      e.set([o, s, r, 255], n * 4);
    }
    U[t] = e;
  }
  return U[t];
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
function b(t, e) {
  return `${e}px ${t.family}`;
}

// attnviz/widgets/js/axes.js
var v = 40;
function m(t, e = 6) {
  if (!Number.isFinite(t)) {
    return String(t);
  }
  return String(Number(t.toPrecision(e)));
}
function w(t, e, n = 5) {
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
function It(t, e) {
  const n = e.small;
  const o = !n && e.n_q <= v;
  const s = !n && e.n_k <= v;
  const r = n ? 2 : 22 + (o ? Math.max(14, j(t, e.y_labels)) + 6 : 0);
  const i = s && j(t, e.x_labels) > e.cell - 2;
  let c = 2;
  if (!n) {
    const f = i ? Math.min(70, j(t, e.x_labels)) : 12;
    c = 26 + (s ? f + 6 : 0);
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
function I(t, e, n) {
  t.font = b(e, 12);
  if (n.kind === "heatmap") {
    return It(t, n);
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
  t.font = b(e, 12);
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
function zt(t, e, n, o) {
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
  t.font = b(e, 12);
  t.strokeRect(n.left + 0.5, n.top + 0.5, n.w, n.h);
  t.textAlign = "right";
  t.textBaseline = "middle";
  for (const l of r) {
    qt(t, n, c(l), m(l, 4));
  }
  t.textAlign = "center";
  t.textBaseline = "top";
  s.forEach((l, f) => {
    const a = typeof l === "string" ? l : m(l, 4);
    zt(t, n, i(l, f), a);
  });
  G(t, e, n, o);
}

// attnviz/widgets/js/bars.js
function q(t, e) {
  return t.ymax || Math.max(1e-12, ...e) * 1.1;
}
function W(t, e) {
  return (n) => t.top + t.h * (1 - n / e);
}
function ct(t, e, n) {
  const o = t.x_labels.length;
  const s = e.w / o;
  const r = s * 0.8 / t.series.length;
  const i = q(t, n);
  const c = W(e, i);
  const l = [];
  t.series.forEach((f, a) => {
    t.x_labels.forEach((u, d) => {
      const g = e.left + d * s + s * 0.1 + a * r;
      const p = c(Math.min(n[a * o + d], i));
      l.push({ x: g, y: p, w: r, h: e.top + e.h - p, s: a, i: d });
    });
  });
  return l;
}
function Ft(t, e, n) {
  const o = ct(t, e, n);
  const s = t.x_labels.length;
  return (r, i) => {
    const c = o.find((f) => r >= f.x && r < f.x + f.w);
    if (!c || i < e.top || i > e.top + e.h) {
      return null;
    }
    if (t.hover) {
      return t.hover[c.s][c.i];
    }
    const l = m(n[c.s * s + c.i]);
    return `${t.series[c.s].name}
${t.x_labels[c.i]}: ${l}`;
  };
}
function lt(t, e, n, o) {
  const s = y(o);
  const r = n.w / o.x_labels.length;
  const i = W(n, q(o, s));
  const c = (l, f) => n.left + (f + 0.5) * r;
  P(t, e, n, o, o.x_labels, w(0, q(o, s)), c, i);
  for (const l of ct(o, n, s)) {
    t.fillStyle = o.colours?.[l.i] || o.series[l.s].colour;
    t.fillRect(l.x, l.y, l.w - 1, l.h);
    const f = o.text?.[l.s][l.i];
    if (f) {
      t.fillStyle = e.fg;
      t.textAlign = "center";
      t.textBaseline = "bottom";
      t.fillText(f, l.x + l.w / 2, l.y - 2);
    }
  }
  return Ft(o, n, s);
}
function ft(t, e) {
  return e.length / t.series.length;
}
function Rt(t, e, n) {
  const o = ft(t, n);
  const s = T(t, o);
  const r = t.y_title ? ` ${t.y_title}` : "";
  return (i, c) => {
    if (i < e.left || i > e.left + e.w || c < e.top || c > e.top + e.h) {
      return null;
    }
    const l = Math.min(o - 1, Math.floor((i - e.left) / e.w * o));
    const f = `${t.x_title || "bin"} ${m(s[l], 3)} to ${m(s[l + 1], 3)}`;
    const a = t.series.map((u, d) => `${u.name}: ${n[d * o + l]}${r}`);
    return [f, ...a].join("\n");
  };
}
function Ut(t, e, n, o, s) {
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
function at(t, e, n, o) {
  const s = y(o);
  const r = ft(o, s);
  const i = T(o, r);
  const c = i[0];
  const l = i[r];
  const f = (g) => n.left + n.w * (g - c) / (l - c || 1);
  const a = q(o, s);
  const u = W(n, a);
  const d = w(c, l, 6).filter((g) => g >= c && g <= l);
  P(t, e, n, o, d, w(0, a), f, u);
  t.globalAlpha = 0.65;
  o.series.forEach((g, p) => {
    t.fillStyle = g.colour;
    for (let k = 0; k < r; k++) {
      const N = u(s[p * r + k]);
      const $ = Math.max(1, f(i[k + 1]) - f(i[k]) - 0.5);
      t.fillRect(f(i[k]), N, $, n.top + n.h - N);
    }
  });
  t.globalAlpha = 1;
  Ut(t, e, n, o.marks, f);
  return Rt(o, n, s);
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
var ut = 4;
function Dt(t, e) {
  const n = t.vmax - t.vmin || 1;
  return Math.min(1, Math.max(0, (e - t.vmin) / n));
}
function Kt(t, e, n) {
  let o = "";
  if (n & _) {
    o = D;
  } else if (n & O) {
    o = C;
  } else if (t.scale === "mask") {
    o = e > 0.5 ? K : C;
  }
  if (o) {
    return { fill: o, ink: V(A(o)) };
  }
  const s = B(t.scale, (e - t.vmin) / (t.vmax - t.vmin || 1));
  return { fill: H(s), ink: V(s) };
}
function Ht(t, e, n) {
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
function Vt(t, e, n) {
  const o = new Uint8ClampedArray(e.length * 4);
  const s = t.scale === "mask" ? null : rt(t.scale);
  const r = [...A(C), 255];
  const i = [...A(D), 255];
  const c = [...A(K), 255];
  for (let l = 0; l < e.length; l++) {
    const f = n[l];
    if (f & _) {
      o.set(i, l * 4);
    } else if (f & O) {
      o.set(r, l * 4);
    } else if (!s) {
      o.set(e[l] > 0.5 ? c : r, l * 4);
    } else {
      const a = Math.round(Dt(t, e[l]) * (M - 1)) * 4;
      o.set(s.subarray(a, a + 4), l * 4);
    }
  }
  return o;
}
function Gt(t, e, n, o, s) {
  const r = new ImageData(Vt(n, o, s), n.n_k, n.n_q);
  const i = new OffscreenCanvas(n.n_k, n.n_q);
  i.getContext("2d").putImageData(r, 0, 0);
  t.imageSmoothingEnabled = false;
  t.drawImage(i, e.left, e.top, n.n_k * n.cell, n.n_q * n.cell);
}
function Wt(t, e, n, o, s) {
  const r = o >= 14;
  const i = Math.max(1, o / 14);
  const c = r ? e + o * 0.66 : e + o * 0.2;
  const l = n + o * (r ? 0.08 : 0.2);
  const f = r ? o * 0.26 : o * 0.6;
  t.strokeStyle = st;
  t.lineWidth = i;
  t.beginPath();
  if (r) {
    t.rect(e + i / 2, n + i / 2, o - s - i, o - s - i);
  }
  t.moveTo(c, l);
  t.lineTo(c + f, l + f);
  t.moveTo(c + f, l);
  t.lineTo(c, l + f);
  t.stroke();
}
function Jt(t, e, n, o, s, r) {
  const i = o.cell;
  const c = i >= 8 ? 1 : 0;
  const l = !c && !o.text && typeof OffscreenCanvas !== "undefined";
  if (l) {
    Gt(t, n, o, s, r);
  }
  t.font = b(e, Math.min(12, Math.max(8, i / 3.2)));
  t.textAlign = "center";
  t.textBaseline = "middle";
  for (let f = 0; f < o.n_q; f++) {
    for (let a = 0; a < o.n_k; a++) {
      const u = f * o.n_k + a;
      const d = r[u];
      const g = n.left + a * i;
      const p = n.top + f * i;
      if (!l) {
        const { fill: k, ink: N } = Kt(o, s[u], d);
        t.fillStyle = k;
        t.fillRect(g, p, i - c, i - c);
        const $ = o.text ? Ht(o, s[u], d) : "";
        if ($ && i >= 18) {
          t.fillStyle = N;
          t.fillText($, g + i / 2, p + i / 2);
        }
      }
      if (d & ut) {
        Wt(t, g, p, i, c);
      }
    }
  }
}
function Yt(t, e, n, o) {
  const s = o.cell;
  t.font = b(e, 12);
  t.fillStyle = e.fg2;
  t.textBaseline = "middle";
  t.textAlign = "right";
  if (o.n_q <= v) {
    const i = S(o.y_labels, o.n_q);
    i.forEach((c, l) => {
      t.fillText(c, n.left - 4, n.top + (l + 0.5) * s);
    });
  }
  if (o.n_k > v) {
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
function Zt(t, e, n, o) {
  const s = n.left + n.w + 10;
  const r = Math.max(60, Math.min(n.h, 220));
  for (let c = 0; c < r; c++) {
    t.fillStyle = H(B(o.scale, 1 - c / r));
    t.fillRect(s, n.top + c, 12, 1);
  }
  t.fillStyle = e.fg2;
  t.textAlign = "left";
  t.textBaseline = "middle";
  t.font = b(e, 12);
  const i = o.vmax - o.vmin || 1;
  for (const c of [o.vmax, (o.vmin + o.vmax) / 2, o.vmin]) {
    t.fillText(m(c, 3), s + 15, n.top + r * (o.vmax - c) / i);
  }
  t.textBaseline = "top";
  t.fillText(o.value_name, s - 2, n.top + r + 6);
}
function Xt(t, e, n, o) {
  return (s, r) => {
    const i = Math.floor((s - e.left) / t.cell);
    const c = Math.floor((r - e.top) / t.cell);
    if (c < 0 || i < 0 || c >= t.n_q || i >= t.n_k) {
      return null;
    }
    const l = c * t.n_k + i;
    const f = t.y_labels ? ` '${t.y_labels[c]}'` : "";
    const a = t.x_labels ? ` '${t.x_labels[i]}'` : "";
    let u = `${t.value_name} ${m(n[l], E(t))}`;
    if (o[l] & _) {
      u = "NaN: the softmax of a row of -inf is 0/0";
    } else if (o[l] & O) {
      u = t.masked_hover;
    }
    const d = o[l] & ut ? "\nmasked, yet weight > 0 (leak)" : "";
    return `query ${c}${f} \u2192 key ${i}${a}
${u}${d}`;
  };
}
function dt(t, e, n, o) {
  const s = y(o);
  const r = x(o);
  Jt(t, e, n, o, s, r);
  if (!o.small) {
    Yt(t, e, n, o);
    G(t, e, n, o);
    if (o.scale !== "mask" && o.bar) {
      Zt(t, e, n, o);
    }
  }
  return Xt(o, n, s, r);
}

// attnviz/widgets/js/keys.js
var ht = "data-lm-suppress-shortcuts";
var Qt = "attnviz-explorer";
var te = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"];
function ee(t) {
  const e = t.getAttribute("role");
  if (e === "slider" || e === "button") {
    return e;
  }
  const n = t.tagName.toLowerCase();
  return n === "select" || n === "button" ? n : "";
}
function ne(t, e, n) {
  if (n || !t) {
    return false;
  }
  if (t === "button") {
    return e === "Enter" || e === " ";
  }
  return te.includes(e) || t === "select" && e.length === 1;
}
function oe(t) {
  const e = (n) => {
    const o = n.target;
    const s = t();
    if (!(o instanceof Element) || !s?.contains(o)) {
      return;
    }
    const r = n.ctrlKey || n.altKey || n.metaKey;
    if (ne(ee(o), n.key, r)) {
      o.setAttribute(ht, "");
    } else {
      o.removeAttribute(ht);
    }
  };
  window.addEventListener("keydown", e, true);
  return () => window.removeEventListener("keydown", e, true);
}
function gt(t) {
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
function mt(t) {
  const e = () => t.closest(`.${Qt}`);
  const n = oe(e);
  const o = /* @__PURE__ */ new Map();
  const s = () => {
    for (const i of e()?.querySelectorAll(".widget-slider") || []) {
      if (o.has(i)) {
        continue;
      }
      gt(i);
      const c = new MutationObserver(() => gt(i));
      c.observe(i, {
        subtree: true,
        childList: true,
        characterData: true,
        attributeFilter: ["aria-valuetext", "aria-label"]
      });
      o.set(i, c);
    }
  };
  const r = () => {
    n();
    for (const i of o.values()) {
      i.disconnect();
    }
  };
  return { connect: s, dispose: r };
}

// attnviz/widgets/js/points.js
var bt = 0.35;
function yt(t, e) {
  const [n, o] = t.x_range;
  const [s, r] = t.y_range;
  return {
    X: (i) => e.left + e.w * (i - n) / (o - n),
    Y: (i) => e.top + e.h * (1 - (i - s) / (r - s))
  };
}
function se(t, e) {
  const { X: n, Y: o } = yt(t, e);
  const s = t.shapes.filter((r) => r.type === "marker");
  return (r, i) => {
    const c = s.filter((l) => {
      const f = Math.max(l.r, 6);
      return (r - n(l.x)) ** 2 + (i - o(l.y)) ** 2 <= f * f;
    });
    return c.length ? c[c.length - 1].hover : null;
  };
}
function re(t, e, n, o) {
  t.globalAlpha = e.faint ? bt : 1;
  t.beginPath();
  const s = Math.abs(n(e.radius) - n(0));
  const r = Math.abs(o(e.radius) - o(0));
  t.ellipse(n(e.x), o(e.y), s, r, 0, 0, 2 * Math.PI);
  t.stroke();
  t.globalAlpha = 1;
}
function ie(t, e, n, o) {
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
function ce(t, e, n, o) {
  t.globalAlpha = e.faint ? bt : 1;
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
    ie(t, e, n, o);
  }
}
function le(t, e, n, o) {
  for (let s = 0; s < 10; s++) {
    const r = s % 2 ? o * 0.45 : o;
    const i = -Math.PI / 2 + s * Math.PI / 5;
    t.lineTo(e + r * Math.cos(i), n + r * Math.sin(i));
  }
}
function fe(t, e, n, o) {
  const s = n(e.x);
  const r = o(e.y);
  t.beginPath();
  if (e.shape === "star") {
    le(t, s, r, e.r);
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
function ae(t, e, n, o, s) {
  t.font = b(e, 12);
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
var ue = { circle: re, line: ce, marker: fe };
function pt(t, e, n, o) {
  const { X: s, Y: r } = yt(o, n);
  const [i, c] = o.x_range;
  const [l, f] = o.y_range;
  P(t, e, n, o, w(i, c), w(l, f), s, r);
  for (const u of o.shapes) {
    const d = u.colour === "fg" ? e.fg2 : u.colour;
    t.strokeStyle = d;
    t.fillStyle = d;
    t.lineWidth = u.width || 2;
    ue[u.type](t, u, s, r);
  }
  const a = o.shapes.filter((u) => u.type === "marker");
  ae(t, e, a, s, r);
  return se(o, n);
}

// attnviz/widgets/js/table.js
var kt = 32;
function de(t) {
  const e = y(t);
  const n = x(t);
  const o = Math.min(t.n_q, kt);
  const s = Math.min(t.n_k, kt);
  const r = S(t.x_labels, t.n_k).slice(0, s);
  const i = S(t.y_labels, t.n_q);
  const c = (u) => {
    if (n[u] & _) {
      return "NaN";
    }
    if (n[u] & O) {
      return "masked";
    }
    return m(e[u], Math.min(4, E(t)));
  };
  const l = [];
  for (let u = 0; u < o; u++) {
    const d = [...Array(s).keys()].map((g) => c(u * t.n_k + g));
    l.push([i[u], ...d]);
  }
  const f = o < t.n_q || s < t.n_k;
  const a = f ? `first ${o} x ${s} of ${t.n_q} x ${t.n_k}` : "";
  return { header: ["query \\ key", ...r], rows: l, caption: a };
}
function he(t) {
  const e = y(t);
  const n = t.x_labels.length;
  const o = t.x_labels.map((s, r) => [
    s,
    ...t.series.map((i, c) => m(e[c * n + r]))
  ]);
  return { header: ["", ...t.series.map((s) => s.name)], rows: o, caption: "" };
}
function ge(t) {
  const e = y(t);
  const n = e.length / t.series.length;
  const o = T(t, n);
  const s = [];
  for (let i = 0; i < n; i++) {
    const c = t.series.map((l, f) => e[f * n + i]);
    if (c.some((l) => l)) {
      s.push([`${m(o[i], 3)} to ${m(o[i + 1], 3)}`, ...c.map(String)]);
    }
  }
  const r = [t.x_title || "bin", ...t.series.map((i) => i.name)];
  return { header: r, rows: s, caption: "" };
}
function J(t) {
  if (t.kind === "heatmap") {
    return de(t);
  }
  if (t.kind === "bars") {
    return he(t);
  }
  if (t.kind === "histogram") {
    return ge(t);
  }
  return { header: t.table.header, rows: t.table.rows, caption: "" };
}
function _t(t, e) {
  const { header: n, rows: o, caption: s } = J(e);
  const r = h("table", "attnviz-table");
  const i = (c, l) => {
    const f = h("tr", "", r);
    for (const a of c) {
      h(l, "", f, a);
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
var xt = 13;
var At = 17;
function me(t, e, n, o) {
  const s = [t.file || t.explorer || "explorer", e, n].filter(Boolean);
  return `${s.map((r) => r.replace(/[^\w.+-]+/g, "-")).join("_")}.${o}`;
}
function be(t) {
  return /[",\n]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
}
function ye(t) {
  let e = [];
  if (t.kind === "heatmap") {
    const n = y(t);
    const o = x(t);
    const s = t.dtype === "bfloat16" ? 4 : 9;
    const r = (i, c) => i ? i[c] : String(c);
    e.push(["query \\ key", ...Array.from({ length: t.n_k }, (i, c) => r(t.x_labels, c))]);
    for (let i = 0; i < t.n_q; i++) {
      const c = [r(t.y_labels, i)];
      for (let l = 0; l < t.n_k; l++) {
        const f = i * t.n_k + l;
        c.push(o[f] & _ ? "NaN" : String(Number(n[f].toPrecision(s))));
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
  return `${e.map((n) => n.map(be).join(",")).join("\n")}
`;
}
function pe(t, e, n, o) {
  t.font = b(e, xt);
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
function ke(t, e, n, o, s) {
  const r = I(t, e, n);
  const i = Math.ceil(r.left + r.w + r.right);
  const c = pe(t, e, n.title, i - 8);
  const l = c.length * At + (c.length ? 4 : 0);
  const f = Math.ceil(l + r.top + r.h + r.bottom);
  s(i, f);
  t.fillStyle = e.bg;
  t.fillRect(0, 0, i, f);
  t.fillStyle = e.fg;
  t.font = b(e, xt);
  t.textAlign = "left";
  t.textBaseline = "top";
  c.forEach((a, u) => {
    t.fillText(a, 4, 4 + u * At);
  });
  t.save();
  t.translate(0, l);
  o(t, e, r, n);
  t.restore();
  return { width: i, height: f };
}
function wt(t, e, n, o) {
  const s = h("canvas");
  const r = s.getContext("2d");
  ke(r, t, e, n, (i, c) => {
    s.width = Math.round(i * o);
    s.height = Math.round(c * o);
    r.setTransform(o, 0, 0, o, 0, 0);
  });
  return new Promise((i) => s.toBlob(i, "image/png"));
}
function _e(t, e) {
  const n = h("a");
  n.href = URL.createObjectURL(t);
  n.download = e;
  n.click();
  setTimeout(() => URL.revokeObjectURL(n.href), 6e4);
}
var Ae = [
  ["PNG", "", "png", (t, e, n) => wt(t, e, n, window.devicePixelRatio || 1)],
  ["PNG 2\xD7", "2x", "png", (t, e, n) => wt(t, e, n, 2 * (window.devicePixelRatio || 1))],
  ["CSV", "", "csv", (t, e) => new Blob([ye(e)], { type: "text/csv" })]
];
function St(t, e, n) {
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
  for (const [i, c, l, f] of Ae) {
    const a = h("button", "", r, i);
    a.type = "button";
    a.onclick = async () => {
      const u = e();
      if (u) {
        const d = await f(u.theme, u.panel, n[u.panel.kind]);
        _e(d, me(u.scene, u.name, c, l));
      }
    };
  }
  t.figure.insertBefore(o, t.numbers);
  return o;
}

// attnviz/widgets/js/render.js
var Tt = { heatmap: dt, bars: lt, histogram: at, points: pt };
function Y(t) {
  const e = t.scene();
  const n = t.model.get("fixed") || {};
  return { ...e, panels: { ...n, ...e.panels || {} } };
}
function L(t) {
  if (!t.frame) {
    t.frame = requestAnimationFrame(() => Le(t));
  }
}
function we(t, e, n) {
  const o = e.canvas.getBoundingClientRect();
  const s = e.hover?.(n.clientX - o.left, n.clientY - o.top);
  t.tip.hidden = !s;
  if (s) {
    t.tip.textContent = s;
    t.tip.style.left = `${n.clientX + 14}px`;
    t.tip.style.top = `${n.clientY + 12}px`;
  }
}
function Ot(t, e) {
  const n = Y(t).panels[e];
  if (n?.pick) {
    t.model.send({ pick: n.pick });
  }
}
function xe(t, e) {
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
    panel: F(c.spec, t.model.get("defaults") || {}),
    theme: Mt(t),
    scene: Y(t),
    name: e
  };
  c.save = St(c, l, Tt);
  r.onclick = () => {
    i.hidden = !i.hidden;
    r.setAttribute("aria-expanded", String(!i.hidden));
    L(t);
  };
  s.onclick = () => Ot(t, e);
  s.onkeydown = (f) => {
    if (f.key === "Enter" || f.key === " ") {
      f.preventDefault();
      Ot(t, e);
    }
  };
  s.onmousemove = (f) => we(t, c, f);
  s.onmouseleave = () => {
    t.tip.hidden = true;
  };
  t.boxes.set(e, c);
  return c;
}
function Se(t, e) {
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
    for (const f of s.panels) {
      c.appendChild(xe(t, f).figure);
    }
    const l = h("div", "attnviz-legend", r);
    t.sections.push({ title: i, legend: l });
    return r;
  });
  t.el.replaceChildren(...o, t.tip);
  return true;
}
function Oe(t) {
  const e = h("span", "attnviz-chip");
  const n = h("i", `attnviz-swatch attnviz-${t.kind}`, e);
  if (t.colour) {
    n.style.background = t.colour;
  }
  e.append(t.text);
  return e;
}
function Te(t, e) {
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
      o.legend.replaceChildren(...(r.legend || []).map(Oe));
      n = true;
    }
  });
  return n;
}
function Me(t, e) {
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
function ve(t, e, n) {
  if (t.title.textContent !== (e.title || "")) {
    t.title.textContent = e.title || "";
  }
  t.canvas.setAttribute("role", e.pick ? "button" : "img");
  t.canvas.setAttribute("aria-label", e.description || e.title || e.kind);
  t.canvas.tabIndex = e.pick ? 0 : -1;
  t.button.hidden = Boolean(e.small);
  t.save.hidden = t.button.hidden;
  const o = I(t.canvas.getContext("2d"), n, e);
  const { ctx: s, width: r } = Me(t.canvas, o);
  Object.assign(t.canvas.dataset, { x0: o.left, y0: o.top, cell: e.cell || "" });
  try {
    t.hover = Tt[e.kind](s, n, o, e);
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
    _t(t.numbers, e);
  }
}
function Pe(t, e, n, o, s) {
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
  ve(e, F(r, t.model.get("defaults") || {}), s);
  return true;
}
function Mt(t) {
  const e = t.theme || it(t.el);
  if (t.el.isConnected && e.themed) {
    t.theme = e;
  }
  return e;
}
function Le(t) {
  t.frame = 0;
  const e = Mt(t);
  const n = Y(t);
  const o = n.sections || [];
  let s = Se(t, o);
  s = Te(t, o) || s;
  for (const [r, i] of t.boxes) {
    if (n.panels[r]) {
      s = Pe(t, i, r, n, e) || s;
    }
  }
  t.el.dataset.attnvizExplorer = n.explorer || "";
  t.keys.connect();
  if (s) {
    t.paints += 1;
    t.el.dataset.attnvizPaint = String(t.paints);
  }
}
function Ne({ model: t, el: e }) {
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
  o.keys = mt(e);
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
    o.keys.dispose();
    n.remove();
    s.dispose();
    t.off("change:fixed", r);
  };
}
var wn = { render: Ne };
export {
  wn as default
};
