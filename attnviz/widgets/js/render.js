// The one front-end of every attnviz explorer: panels painted on <canvas> from the `scene` trait.
//
// Python (attnviz/widgets/canvas.py) computes everything: the arrays, labels, titles, the text
// alternative and the legend. This file lays the panels out and paints them. Repaints coalesce: a
// change only asks for a frame (requestAnimationFrame); the frame paints the newest scene, so ten
// changes within one frame cost one paint and nothing queues.
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
//                          Colours: weights = VIRIDIS (colour.js), linear between its 11 stops over
//                          0..1; scores = RDBU over vmin..vmax; masked #c8c8c8; NaN #ff66cc.
//   numbers toggle         button.attnviz-numbers beside each panel shows its values as an html <table>.
//   save (save.js)         .attnviz-save > button (aria-expanded) beside it opens .attnviz-save-as, whose
//                          buttons "PNG", "PNG 2×", "CSV" download the panel (file name: scene.file).
//   explorer's box         .attnviz-explorer (set by Python) holds the controls; keys.js keeps their keys.
//   picked panel           the panel box of scene.selected has the class "attnviz-selected".
//   kernel gone            div.attnviz-lost[role=status] first in the root says so (connection.js).

import { createLookAhead } from "./ahead.js";
import { frameFor } from "./axes.js";
import { paintBars, paintHistogram } from "./bars.js";
import { themeOf } from "./colour.js";
import { createConnection } from "./connection.js";
import { make } from "./dom.js";
import { paintHeatmap } from "./heatmap.js";
import { createKeys } from "./keys.js";
import { paintPoints } from "./points.js";
import { addSave } from "./save.js";
import { samePicture, withDefaults } from "./scene.js";
import { showTable } from "./table.js";

/** Each panel kind's painter: paints the panel in its frame and returns its hover(x, y). */
const PAINTERS = { heatmap: paintHeatmap, bars: paintBars, histogram: paintHistogram, points: paintPoints };

/**
 * One panel on the page: its box (a <figure>), title, canvas, numbers toggle and table, and `save`
 * (save.js); `spec` is the panel last painted, `key` what else its picture depends on, `hover` its hover.
 * @typedef {Object} PanelBox
 */

/**
 * Everything one rendered explorer keeps between frames.
 * @typedef {Object} View
 * @property {Object} model the anywidget model
 * @property {HTMLElement} el the root element
 * @property {HTMLElement} tip the hover text
 * @property {Map<string, PanelBox>} boxes
 * @property {{title: HTMLElement | null, legend: HTMLElement}[]} sections
 * @property {string} layout which sections and panels are on the page
 * @property {import("./colour.js").Theme | null} theme read once per theme
 * @property {number} frame the animation frame asked for (0: none)
 * @property {number} paints
 * @property {() => import("./scene.js").Scene} scene what to paint (the look-ahead may run ahead)
 * @property {{connect: () => void, dispose: () => void}} keys the controls' keys and names (keys.js)
 * @property {{bind: () => void, dispose: () => void}} connection the note on a lost kernel (connection.js)
 */

/** The scene to paint, with the panels that never change (`fixed`) under this update's. */
function sceneOf(view) {
  const scene = view.scene();
  const fixed = view.model.get("fixed") || {};
  return { ...scene, panels: { ...fixed, ...(scene.panels || {}) } };
}

function schedule(view) {
  if (!view.frame) {
    view.frame = requestAnimationFrame(() => paint(view));
  }
}

function showHover(view, box, event) {
  const bounds = box.canvas.getBoundingClientRect();
  const text = box.hover?.(event.clientX - bounds.left, event.clientY - bounds.top);
  view.tip.hidden = !text;
  if (text) {
    view.tip.textContent = text;
    view.tip.style.left = `${event.clientX + 14}px`;
    view.tip.style.top = `${event.clientY + 12}px`;
  }
}

function pick(view, name) {
  const panel = sceneOf(view).panels[name];
  if (panel?.pick) {
    view.model.send({ pick: panel.pick });
  }
}

/** The box of panel `name`, made on first use and kept (a panel keeps its place and its table). */
function panelBox(view, name) {
  if (view.boxes.has(name)) {
    return view.boxes.get(name);
  }
  const figure = make("figure", "attnviz-panel");
  const title = make("figcaption", "attnviz-title", figure);
  const canvas = make("canvas", "", figure);
  const button = make("button", "attnviz-numbers", figure, "numbers");
  const numbers = make("div", "attnviz-table-box", figure);
  canvas.dataset.attnvizPanel = name;
  button.type = "button";
  button.setAttribute("aria-expanded", "false");
  numbers.hidden = true;
  const box = { figure, title, canvas, button, numbers, spec: null, key: "", hover: null };
  // hook (save.js): the save button and its formats, beside "numbers", for what is on screen now
  const shown = () =>
    box.spec && {
      panel: withDefaults(box.spec, view.model.get("defaults") || {}),
      theme: themeFor(view),
      scene: sceneOf(view),
      name,
    };
  box.save = addSave(box, shown, PAINTERS);
  button.onclick = () => {
    numbers.hidden = !numbers.hidden;
    button.setAttribute("aria-expanded", String(!numbers.hidden));
    schedule(view);
  };
  canvas.onclick = () => pick(view, name);
  canvas.onkeydown = (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      pick(view, name);
    }
  };
  canvas.onmousemove = (event) => showHover(view, box, event);
  canvas.onmouseleave = () => {
    view.tip.hidden = true;
  };
  view.boxes.set(name, box);
  return box;
}

/** Build the sections (title, a row or grid of panel boxes, legend) when their structure changes. */
function layOut(view, sections) {
  const signature = JSON.stringify(
    sections.map((section) => [Boolean(section.title), section.panels, section.grid]),
  );
  if (signature === view.layout) {
    return false;
  }
  view.layout = signature;
  view.sections = [];
  const nodes = sections.map((section) => {
    const node = make("section", "attnviz-section");
    const title = section.title ? make("div", "attnviz-section-title", node) : null;
    const row = make("div", section.grid ? "attnviz-grid" : "attnviz-row", node);
    if (section.grid) {
      row.style.gridTemplateColumns = `repeat(${section.grid}, max-content)`;
    }
    for (const name of section.panels) {
      row.appendChild(panelBox(view, name).figure);
    }
    const legend = make("div", "attnviz-legend", node);
    view.sections.push({ title, legend });
    return node;
  });
  view.el.replaceChildren(...nodes, view.tip);
  return true;
}

function legendChip(item) {
  const chip = make("span", "attnviz-chip");
  const swatch = make("i", `attnviz-swatch attnviz-${item.kind}`, chip);
  if (item.colour) {
    swatch.style.background = item.colour;
  }
  chip.append(item.text);
  return chip;
}

/** Section titles and legends, written only where they changed; true if any did. */
function writeSections(view, sections) {
  let changed = false;
  view.sections.forEach((nodes, k) => {
    const section = sections[k];
    if (nodes.title && nodes.title.textContent !== section.title) {
      nodes.title.textContent = section.title;
      changed = true;
    }
    const words = JSON.stringify(section.legend || []);
    if (nodes.legend.dataset.legend !== words) {
      nodes.legend.dataset.legend = words;
      nodes.legend.replaceChildren(...(section.legend || []).map(legendChip));
      changed = true;
    }
  });
  return changed;
}

/** Size the canvas for the panel's frame (reallocating only when the size changes). */
function sizeCanvas(canvas, frame) {
  const ratio = window.devicePixelRatio || 1;
  const width = Math.ceil(frame.left + frame.w + frame.right);
  const height = Math.ceil(frame.top + frame.h + frame.bottom);
  if (canvas.width !== width * ratio || canvas.height !== height * ratio) {
    canvas.width = width * ratio;
    canvas.height = height * ratio;
  }
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  return { ctx, width };
}

/** Paint one panel's box (`panel`: as sent, with its defaults filled in). */
function paintBox(box, panel, theme) {
  if (box.title.textContent !== (panel.title || "")) {
    box.title.textContent = panel.title || "";
  }
  box.canvas.setAttribute("role", panel.pick ? "button" : "img");
  box.canvas.setAttribute("aria-label", panel.description || panel.title || panel.kind);
  box.canvas.tabIndex = panel.pick ? 0 : -1;
  box.button.hidden = Boolean(panel.small);
  box.save.hidden = box.button.hidden;
  const frame = frameFor(box.canvas.getContext("2d"), theme, panel);
  const { ctx, width } = sizeCanvas(box.canvas, frame);
  Object.assign(box.canvas.dataset, { x0: frame.left, y0: frame.top, cell: panel.cell || "" });
  try {
    box.hover = PAINTERS[panel.kind](ctx, theme, frame, panel);
  } catch (error) {
    box.title.textContent = `${panel.title} (could not be drawn: ${error.message})`;
    box.hover = null;
  }
  // the title and the numbers table no wider than the picture: opening a table scrolls it, and
  // leaves the panels beside it where they were
  const widest = `${Math.max(width, 120)}px`;
  if (box.title.style.maxWidth !== widest) {
    box.title.style.maxWidth = widest;
    box.numbers.style.maxWidth = widest;
  }
  if (!box.numbers.hidden) {
    showTable(box.numbers, panel);
  }
}

/**
 * Bring one panel box up to date; true if anything on screen changed. An unchanged picture (the
 * head grid, or the kernel's copy of a step already painted) is not painted again; only its text
 * alternative follows.
 */
function updateBox(view, box, name, scene, theme) {
  const spec = scene.panels[name];
  let changed = false;
  if (box.figure.classList.contains("attnviz-selected") !== (scene.selected === name)) {
    box.figure.classList.toggle("attnviz-selected");
    changed = true;
  }
  const key = JSON.stringify([theme, !box.numbers.hidden]);
  const unchanged = box.key === key && (box.spec === spec || samePicture(box.spec, spec));
  if (box.spec !== spec && spec.description) {
    box.canvas.setAttribute("aria-label", spec.description);
  }
  box.spec = spec;
  if (unchanged) {
    return changed;
  }
  box.key = key;
  paintBox(box, withDefaults(spec, view.model.get("defaults") || {}), theme);
  return true;
}

/** The theme, read once per theme (getComputedStyle is slow), not before the page shows its theme. */
function themeFor(view) {
  const theme = view.theme || themeOf(view.el);
  if (view.el.isConnected && theme.themed) {
    view.theme = theme;
  }
  return theme;
}

/** One animation frame: lay out, write, paint what changed, and count the repaint. */
function paint(view) {
  view.frame = 0;
  const theme = themeFor(view);
  const scene = sceneOf(view);
  const sections = scene.sections || [];
  let changed = layOut(view, sections);
  changed = writeSections(view, sections) || changed;
  for (const [name, box] of view.boxes) {
    if (scene.panels[name]) {
      changed = updateBox(view, box, name, scene, theme) || changed;
    }
  }
  view.el.dataset.attnvizExplorer = scene.explorer || "";
  view.keys.connect(); // hook (keys.js): the explorer's controls keep their keys and get names
  view.connection.bind(); // hook (connection.js): watch the explorer's box for a lost kernel
  if (changed) {
    view.paints += 1;
    view.el.dataset.attnvizPaint = String(view.paints);
  }
}

function render({ model, el }) {
  el.classList.add("attnviz-canvas");
  el.dataset.attnvizPaint = "0";
  const tip = make("div", "attnviz-tip");
  tip.hidden = true;
  /** @type {View} */
  const view = {
    model,
    el,
    tip,
    boxes: new Map(),
    sections: [],
    layout: "",
    theme: null,
    frame: 0,
    paints: 0,
  };
  view.keys = createKeys(el); // hook (keys.js)
  view.connection = createConnection(el, make); // a note when the kernel is gone (connection.js)
  const lookAhead = createLookAhead(model, () => schedule(view));
  view.scene = lookAhead.scene;
  const repaint = () => schedule(view);
  model.on("change:fixed", repaint);
  const themeWatcher = new MutationObserver(() => {
    view.theme = null;
    schedule(view);
  });
  themeWatcher.observe(document.body, {
    attributes: true,
    attributeFilter: ["data-jp-theme-name", "data-jp-theme-light"],
  });
  schedule(view);
  return () => {
    cancelAnimationFrame(view.frame);
    themeWatcher.disconnect();
    view.connection.dispose();
    view.keys.dispose();
    tip.remove();
    lookAhead.dispose();
    model.off("change:fixed", repaint);
  };
}

export default { render };
