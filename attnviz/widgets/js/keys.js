// The keyboard and screen readers on the explorer's own controls (the ipywidgets sliders, dropdowns
// and buttons beside the canvas), in JupyterLab and Notebook 7.
//
// Both apps run the notebook's shortcuts (arrows move between cells, "d d" deletes one) from a
// keydown listener on the document. A shortcut is skipped for an element that carries
// `data-lm-suppress-shortcuts` (Lumino's public attribute for this). So a listener on the window,
// which runs before the document's, puts that attribute on the focused control of this explorer,
// for the keys the control's role promises and only those: Shift+Enter, Escape or Ctrl+S still
// reach the notebook.
//
// Sliders are named for screen readers: ipywidgets' handle has no name, and its aria-valuetext is
// the slider's position (6 for d_k = 64, 0.010000000000000009 for a temperature of 1.02). The handle
// gets its label's words as aria-label and the readout's text as aria-valuetext, kept in step with
// the readout by a MutationObserver.

export const SUPPRESS = "data-lm-suppress-shortcuts";

/** The class Python puts on the explorer's outermost box (`Explorer._box`). */
export const ROOT = "attnviz-explorer";

const MOVES = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"];

/** What the keyboard does to `element`: "slider", "select" (a dropdown), "button", or "" (nothing of ours). */
export function roleOf(element) {
  const role = element.getAttribute("role");
  if (role === "slider" || role === "button") {
    return role;
  }
  const tag = element.tagName.toLowerCase();
  return tag === "select" || tag === "button" ? tag : "";
}

/**
 * Is `key` (a KeyboardEvent's `key`) one the control promises? Sliders: arrows, Home, End, Page
 * Up/Down. Dropdowns: those, and typing a letter (to jump to an option). Buttons and pickable
 * panels: Enter and Space. Never a key held with Ctrl, Alt or Meta (those are the app's).
 */
export function ownsKey(role, key, modified) {
  if (modified || !role) {
    return false;
  }
  if (role === "button") {
    return key === "Enter" || key === " ";
  }
  return MOVES.includes(key) || (role === "select" && key.length === 1);
}

/** The keydown listener (capture phase, on the window) for the explorer inside `root()`. */
export function claimKeys(root) {
  const onKey = (event) => {
    const target = event.target;
    const box = root();
    if (!(target instanceof Element) || !box?.contains(target)) {
      return;
    }
    const modified = event.ctrlKey || event.altKey || event.metaKey;
    if (ownsKey(roleOf(target), event.key, modified)) {
      target.setAttribute(SUPPRESS, "");
    } else {
      target.removeAttribute(SUPPRESS);
    }
  };
  window.addEventListener("keydown", onKey, true);
  return () => window.removeEventListener("keydown", onKey, true);
}

/** Give one ipywidgets slider's handle its label's words and its readout's text. */
export function nameSlider(slider) {
  const handle = slider.querySelector('[role="slider"]');
  const label = slider.querySelector(".widget-label")?.textContent.trim();
  const readout = slider.querySelector(".widget-readout")?.textContent.trim();
  if (!handle) {
    return;
  }
  if (label && handle.getAttribute("aria-label") !== label) {
    handle.setAttribute("aria-label", label);
  }
  if (readout && handle.getAttribute("aria-valuetext") !== readout) {
    handle.setAttribute("aria-valuetext", readout);
  }
}

/**
 * The explorer's controls made usable from the keyboard and named. `connect()` is called each
 * frame: it names and watches any slider of the explorer it has not seen yet (ipywidgets draws the
 * controls on its own schedule, before or after the canvas), and, once the explorer's box is there,
 * watches it for sliders drawn after the last frame (on a busy machine they came after it, unnamed).
 */
export function createKeys(el) {
  const root = () => el.closest(`.${ROOT}`);
  const release = claimKeys(root);
  const watched = new Map();
  let added = null;
  const connect = () => {
    const box = root();
    if (box && !added) {
      added = new MutationObserver(() => connect());
      added.observe(box, { childList: true, subtree: true });
    }
    for (const slider of box?.querySelectorAll(".widget-slider") || []) {
      if (watched.has(slider)) {
        continue;
      }
      nameSlider(slider);
      const observer = new MutationObserver(() => nameSlider(slider));
      observer.observe(slider, {
        subtree: true,
        childList: true,
        characterData: true,
        attributeFilter: ["aria-valuetext", "aria-label"],
      });
      watched.set(slider, observer);
    }
  };
  const dispose = () => {
    release();
    added?.disconnect();
    for (const observer of watched.values()) {
      observer.disconnect();
    }
  };
  return { connect, dispose };
}
