// The browser's half of the look-ahead (attnviz/widgets/js/ahead.js, controls.js), with a fake
// anywidget model and widget manager: no browser, no kernel.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createLookAhead, KeptScenes } from "../../attnviz/widgets/js/ahead.js";
import { inBurst } from "../../attnviz/widgets/js/controls.js";

test("kept scenes are found by what the controls hold, numbers to 12 digits", () => {
  const kept = new KeptScenes(["d_k", "temperature"]);
  const scene = { panels: {} };
  kept.keep({ d_k: 6, temperature: 0.1 + 0.2 }, scene);
  assert.equal(kept.find({ temperature: 0.3, d_k: 6 }), scene);
  assert.equal(kept.find({ temperature: 0.3, d_k: 7 }), undefined);
});

test("only the newest scenes are kept; keeping one again makes it new", () => {
  const kept = new KeptScenes(["x"], 3);
  for (const x of [1, 2, 3]) {
    kept.keep({ x }, { x });
  }
  kept.keep({ x: 1 }, { x: 1 });
  kept.keep({ x: 4 }, { x: 4 });
  assert.equal(kept.find({ x: 2 }), undefined);
  assert.deepEqual(
    [1, 3, 4].map((x) => kept.find({ x }).x),
    [1, 3, 4],
  );
});

test("the steps of a look-ahead are kept only for the scene they extend", () => {
  const kept = new KeptScenes(["t", "mask"]);
  const scene = { seq: 5, at: { t: 1, mask: 0 }, panels: { a: { title: "t = 1" } }, sections: [] };
  const ahead = {
    seq: 5,
    entries: [{ control: "t", value: 2, scene: { panels: { a: { title: "t = 2" } } } }],
  };
  assert.equal(kept.keepSteps({ ...scene, seq: 4 }, ahead), 0);
  assert.equal(kept.hasSteps, false);
  assert.equal(kept.keepSteps(scene, ahead), 1);
  assert.equal(kept.hasSteps, true);
  assert.equal(kept.find({ t: 2, mask: 0 }).panels.a.title, "t = 2");
  assert.equal(kept.find({ t: 2, mask: 1 }), undefined);
});

test("a move is part of a burst when it comes within the link's window", () => {
  assert.equal(inBurst({ move: 150 }, 40), true);
  assert.equal(inBurst({ move: 150 }, 400), false);
  assert.equal(inBurst({ move: false }, 1), false);
});

/** An anywidget model (and the models of its controls) as far as the look-ahead uses them. */
class FakeModel {
  constructor(state, manager) {
    this.state = state;
    this.handlers = {};
    this.sent = [];
    this.widget_manager = manager;
  }

  get(name) {
    return this.state[name];
  }

  set(name, value) {
    this.state[name] = value;
    for (const handler of this.handlers[`change:${name}`] || []) {
      handler();
    }
  }

  on(event, handler) {
    this.handlers[event] = [...(this.handlers[event] || []), handler];
  }

  off(event, handler) {
    this.handlers[event] = (this.handlers[event] || []).filter((h) => h !== handler);
  }

  send(content) {
    this.sent.push(content);
  }
}

async function setUp() {
  const slider = new FakeModel({ value: 1 });
  const manager = { get_model: async (id) => (id === "slider" ? slider : undefined) };
  const links = { t: { id: "slider", attr: "value", step: true, move: 150 } };
  const canvas = new FakeModel({ links }, manager);
  let repaints = 0;
  const lookAhead = createLookAhead(canvas, () => {
    repaints += 1;
  });
  await new Promise((resolve) => setTimeout(resolve, 0)); // models found
  return { slider, canvas, lookAhead, repaints: () => repaints };
}

function sceneAt(t, seq) {
  return { seq, at: { t }, panels: { a: { title: `t = ${t}` } }, sections: [] };
}

test("a kept step is painted as soon as the control holds its value; the kernel's own scene wins", async () => {
  const { slider, canvas, lookAhead, repaints } = await setUp();
  canvas.set("scene", sceneAt(1, 1));
  assert.equal(lookAhead.scene().panels.a.title, "t = 1");
  canvas.set("ahead", {
    seq: 1,
    entries: [{ control: "t", value: 2, scene: { panels: { a: { title: "t = 2 (step)" } } } }],
  });
  const before = repaints();
  slider.set("value", 2); // the key press
  assert.equal(lookAhead.scene().panels.a.title, "t = 2 (step)");
  assert.equal(repaints(), before + 1);
  canvas.set("scene", sceneAt(2, 2)); // the kernel catches up
  assert.equal(lookAhead.scene().panels.a.title, "t = 2");
  slider.set("value", 3); // nothing kept for 3
  assert.equal(lookAhead.scene().panels.a.title, "t = 2");
  slider.set("value", 1); // shown before: kept
  assert.equal(lookAhead.scene().panels.a.title, "t = 1");
  canvas.set("scene", sceneAt(3, 3)); // late: the controls
  assert.equal(lookAhead.scene().panels.a.title, "t = 1"); // moved on to 1
  lookAhead.dispose();
  slider.set("value", 2);
  assert.equal(lookAhead.scene().panels.a.title, "t = 1"); // no longer followed
});

test("in a burst, moves are reported to the kernel once it has prepared steps", async () => {
  const { slider, canvas } = await setUp();
  canvas.set("scene", sceneAt(1, 1));
  slider.set("value", 2);
  slider.set("value", 3);
  assert.deepEqual(canvas.sent, []); // no steps yet
  canvas.set("ahead", { seq: 1, entries: [{ control: "t", value: 4, scene: { panels: {} } }] });
  slider.set("value", 4);
  assert.deepEqual(canvas.sent, [{ move: "t", value: 4 }]);
});

test("without a widget manager nothing is followed: the kernel's scene is painted", () => {
  const canvas = new FakeModel({ links: { t: { id: "x", attr: "value", step: true, move: 150 } } });
  const lookAhead = createLookAhead(canvas, () => {});
  canvas.set("scene", sceneAt(1, 1));
  assert.equal(lookAhead.scene().panels.a.title, "t = 1");
});
