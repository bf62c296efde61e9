// Which keys an explorer's control keeps from the notebook's shortcuts, and how a slider is named
// (attnviz/widgets/js/keys.js). The listener itself is driven by the browser test.

import assert from "node:assert/strict";
import { test } from "node:test";

import { nameSlider, ownsKey, roleOf } from "../../attnviz/widgets/js/keys.js";

/** Just enough of an element: a tag, attributes, text, and children found by selector. */
function element(tag, attributes = {}, text = "", children = {}) {
  const attrs = { ...attributes };
  return {
    tagName: tag.toUpperCase(),
    textContent: text,
    getAttribute: (name) => (name in attrs ? attrs[name] : null),
    setAttribute: (name, value) => {
      attrs[name] = String(value);
    },
    querySelector: (selector) => children[selector] || null,
    attrs,
  };
}

test("a control's role: slider handles, dropdowns, buttons and pickable panels; nothing else", () => {
  assert.equal(roleOf(element("div", { role: "slider" })), "slider");
  assert.equal(roleOf(element("select")), "select");
  assert.equal(roleOf(element("button")), "button");
  assert.equal(roleOf(element("canvas", { role: "button" })), "button");
  assert.equal(roleOf(element("canvas", { role: "img" })), "");
  assert.equal(roleOf(element("input")), ""); // a text box already keeps its keys in both apps
});

test("the keys each role promises, and only those", () => {
  for (const key of [
    "ArrowLeft",
    "ArrowRight",
    "ArrowUp",
    "ArrowDown",
    "Home",
    "End",
    "PageUp",
    "PageDown",
  ]) {
    assert.ok(ownsKey("slider", key, false), key);
    assert.ok(ownsKey("select", key, false), key);
    assert.ok(!ownsKey("button", key, false), key);
  }
  assert.ok(ownsKey("select", "d", false), "typing a letter picks an option (and does not delete the cell)");
  assert.ok(!ownsKey("slider", "d", false));
  assert.ok(ownsKey("button", "Enter", false) && ownsKey("button", " ", false));
  for (const key of ["Enter", "Escape", "Tab"]) {
    assert.ok(!ownsKey("slider", key, false), `${key} stays the notebook's`);
  }
  assert.ok(!ownsKey("slider", "ArrowRight", true), "Ctrl/Alt/Meta + a key stays the notebook's");
  assert.ok(!ownsKey("", "ArrowRight", false));
});

test("a slider's handle is named by its label and valued by its readout", () => {
  const handle = element("div", { role: "slider", "aria-valuetext": "6" });
  const slider = element("div", {}, "", {
    '[role="slider"]': handle,
    ".widget-label": element("label", {}, " d_k "),
    ".widget-readout": element("div", {}, "64"),
  });
  nameSlider(slider);
  assert.equal(handle.attrs["aria-label"], "d_k");
  assert.equal(handle.attrs["aria-valuetext"], "64");
  const bare = element("div", { role: "slider", "aria-valuetext": "3" });
  nameSlider(element("div", {}, "", { '[role="slider"]': bare }));
  assert.deepEqual(bare.attrs, { role: "slider", "aria-valuetext": "3" }); // no label, no readout: as it was
});
