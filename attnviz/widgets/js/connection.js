// An explorer whose kernel was restarted or stopped: its sliders still move, but nothing answers
// them, and the picture stays as it was. ipywidgets marks each widget view whose kernel connection
// is gone with the class below (the broken-link icons in front of the controls), the explorer's box
// (class attnviz-explorer, set by Python) among them; the canvas then says in words what happened
// and what to do, above its pictures, until the connection is back.

/** The class ipywidgets gives a widget view's element while its kernel connection is gone. */
export const DISCONNECTED = "jupyter-widgets-disconnected";

export const LOST =
  "The kernel was restarted or stopped: this explorer no longer follows its controls. " +
  "Run its cell again (Shift+Enter).";

/** Whether an element with these classes (a DOMTokenList) has lost its kernel. */
export function lost(classList) {
  return classList.contains(DISCONNECTED);
}

/**
 * Watches the explorer's box around `el` and keeps a note (role "status") first in `el` while the
 * box is marked disconnected; `make` is dom.js's. `bind()` is called each frame, since ipywidgets
 * attaches the box on its own schedule; `dispose()` stops watching and removes the note.
 */
export function createConnection(el, make) {
  let note = null;
  let watcher = null;
  const update = (box) => {
    if (lost(box.classList) && !note) {
      note = make("div", "attnviz-lost", null, LOST);
      note.setAttribute("role", "status");
      el.prepend(note);
    } else if (!lost(box.classList) && note) {
      note.remove();
      note = null;
    }
  };
  const bind = () => {
    const box = el.closest(".attnviz-explorer");
    if (watcher || !box) {
      return;
    }
    watcher = new MutationObserver(() => update(box));
    watcher.observe(box, { attributes: true, attributeFilter: ["class"] });
    update(box);
  };
  const dispose = () => {
    watcher?.disconnect();
    note?.remove();
  };
  return { bind, dispose };
}
