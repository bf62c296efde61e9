// The note an explorer shows when its kernel is gone (attnviz/widgets/js/connection.js), with a
// fake element, box and MutationObserver: no browser. The browser test restarts a real kernel.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createConnection, DISCONNECTED, LOST, lost } from "../../attnviz/widgets/js/connection.js";

function classList(names) {
  const set = new Set(names);
  return {
    contains: (name) => set.has(name),
    add: (name) => set.add(name),
    remove: (name) => set.delete(name),
  };
}

/** An element whose explorer's box is `box` (or none), recording what is put first in it. */
function fakeEl(box) {
  const el = { first: [], closest: () => box };
  el.prepend = (node) => {
    el.first.unshift(node);
    node.parent = el;
  };
  return el;
}

function make(tag, cls, _parent, text) {
  const node = { tag, className: cls, textContent: text, attrs: {} };
  node.setAttribute = (name, value) => {
    node.attrs[name] = value;
  };
  node.remove = () => {
    node.parent.first = node.parent.first.filter((n) => n !== node);
  };
  return node;
}

test("lost reads ipywidgets' class", () => {
  assert.equal(lost(classList([DISCONNECTED, "widget-vbox"])), true);
  assert.equal(lost(classList(["widget-vbox"])), false);
});

test("a note comes while the box is disconnected and goes when it is back", () => {
  const observers = [];
  globalThis.MutationObserver = class {
    constructor(callback) {
      this.callback = callback;
      observers.push(this);
    }
    observe(target, options) {
      this.target = target;
      this.options = options;
    }
    disconnect() {
      this.disconnected = true;
    }
  };
  const box = { classList: classList(["attnviz-explorer"]) };
  const el = fakeEl(box);
  const connection = createConnection(el, make);
  connection.bind();
  connection.bind(); // each frame: one observer only
  assert.equal(observers.length, 1);
  assert.deepEqual(observers[0].options, { attributes: true, attributeFilter: ["class"] });
  assert.deepEqual(el.first, []);
  box.classList.add(DISCONNECTED);
  observers[0].callback();
  assert.equal(el.first.length, 1);
  assert.equal(el.first[0].textContent, LOST);
  assert.equal(el.first[0].attrs.role, "status");
  observers[0].callback(); // still gone: still one note
  assert.equal(el.first.length, 1);
  box.classList.remove(DISCONNECTED);
  observers[0].callback();
  assert.deepEqual(el.first, []);
  connection.dispose();
  assert.equal(observers[0].disconnected, true);
});

test("no explorer box yet: nothing is watched until there is one", () => {
  const el = fakeEl(null);
  const connection = createConnection(el, make);
  connection.bind();
  assert.deepEqual(el.first, []);
  connection.dispose();
});
