// The explorer's controls as the browser sees them: the ipywidgets models named in the `links`
// trait, followed so the canvas knows what they hold before the kernel does.

/**
 * One linked control, from `Explorer` (attnviz/widgets/_base.py via `StepAhead.links`).
 * @typedef {Object} Link
 * @property {string} id the control's model id
 * @property {string} attr the attribute the browser changes ("index" for a selection slider, else "value")
 * @property {boolean} step a slider the kernel prepares steps for
 * @property {number | false} move report this slider's moves when they come within this many ms
 */

/** Is a move that comes `since` ms after the one before part of a burst (and to be reported)? */
export function inBurst(link, since) {
  return Boolean(link.move) && since < link.move;
}

/**
 * Follow the models of the linked controls. `onChange(name, value, burst)` runs each time one
 * changes in the browser (`burst`: it moved again within `link.move` ms). Returns `values()`, what
 * they hold now (undefined until every model is found), and `dispose()`. Without a widget manager
 * (or a model it cannot find) nothing is followed: every picture then waits for the kernel.
 */
export function followControls(model, links, onChange) {
  const found = {};
  const disposers = [];
  const manager = model.widget_manager;
  for (const [name, link] of Object.entries(links)) {
    if (!manager?.get_model) {
      break;
    }
    let last = Number.NEGATIVE_INFINITY;
    const handler = () => {
      const now = performance.now();
      const burst = inBurst(link, now - last);
      last = now;
      onChange(name, found[name].get(link.attr), burst);
    };
    Promise.resolve(manager.get_model(link.id))
      .then((control) => {
        if (!control?.on) {
          return;
        }
        found[name] = control;
        control.on(`change:${link.attr}`, handler);
        disposers.push(() => control.off(`change:${link.attr}`, handler));
      })
      .catch(() => {});
  }
  const values = () => {
    const names = Object.keys(links);
    if (!names.every((name) => found[name])) {
      return undefined;
    }
    return Object.fromEntries(names.map((name) => [name, found[name].get(links[name].attr)]));
  };
  const dispose = () => {
    for (const undo of disposers) {
      undo();
    }
  };
  return { values, dispose };
}
