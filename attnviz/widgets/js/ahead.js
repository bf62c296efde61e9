// The browser's half of the look-ahead (the kernel's half: attnviz/widgets/_ahead.py).
//
// Every scene says what the linked controls held for it (`scene.at`). The browser keeps the newest
// `KEPT_SCENES` scenes, the kernel's own and the steps it prepared (`ahead`), by what the controls
// hold. When the controls come to hold one of them, that one is painted in the next frame, without
// waiting for the kernel. When the kernel's own scene for what the controls hold now arrives, it
// wins: a wrong kept picture cannot stay on screen.

import { followControls } from "./controls.js";
import { merge } from "./scene.js";

export const KEPT_SCENES = 64;

/** The newest scenes, by what the linked controls `names` hold for them. */
export class KeptScenes {
  constructor(names, limit = KEPT_SCENES) {
    this.names = names;
    this.limit = limit;
    this.scenes = new Map();
    this.hasSteps = false;
  }

  /** One key per setting of the controls (numbers to 12 digits: 0.1 + 0.2 finds 0.3). */
  keyOf(values) {
    const held = this.names.map((name) => {
      const value = values[name];
      return typeof value === "number" ? Number(value.toPrecision(12)) : value;
    });
    return JSON.stringify(held);
  }

  keep(values, scene) {
    const key = this.keyOf(values);
    this.scenes.delete(key);
    this.scenes.set(key, scene);
    if (this.scenes.size > this.limit) {
      this.scenes.delete(this.scenes.keys().next().value);
    }
  }

  find(values) {
    return this.scenes.get(this.keyOf(values));
  }

  /** Keep the steps of `ahead` that extend `scene` (each: the scene with its control at one value). */
  keepSteps(scene, ahead) {
    if (ahead.seq !== scene.seq || !scene.at) {
      return 0;
    }
    const entries = ahead.entries || [];
    this.hasSteps = this.hasSteps || entries.length > 0;
    for (const entry of entries) {
      this.keep({ ...scene.at, [entry.control]: entry.value }, merge(scene, entry.scene));
    }
    return entries.length;
  }
}

/**
 * The look-ahead of one canvas: follows the linked controls, keeps scenes, reports a burst's moves
 * to the kernel (`{move, value}`, once the kernel has prepared steps: with big pictures the slider's
 * fewer messages are quicker) and calls `repaint()` whenever the scene to paint may have changed.
 * `scene()` is the scene to paint: a kept one ahead of the kernel, or the kernel's own.
 */
export function createLookAhead(model, repaint) {
  const links = model.get("links") || {};
  const kept = new KeptScenes(Object.keys(links));
  let ahead = null;
  const keptForNow = () => {
    const values = controls.values();
    return values === undefined ? undefined : kept.find(values);
  };
  const showKept = () => {
    const scene = keptForNow();
    if (scene) {
      ahead = scene;
      repaint();
    }
  };
  const controls = followControls(model, links, (name, value, burst) => {
    if (burst && kept.hasSteps) {
      model.send({ move: name, value });
    }
    showKept();
  });
  const onScene = () => {
    const scene = model.get("scene") || {};
    if (scene.at) {
      kept.keep(scene.at, scene);
    }
    const now = scene.at && keptForNow();
    ahead = now && now !== scene ? now : null;
    repaint();
  };
  const onAhead = () => {
    kept.keepSteps(model.get("scene") || {}, model.get("ahead") || {});
    showKept();
  };
  model.on("change:scene", onScene);
  model.on("change:ahead", onAhead);
  return {
    scene: () => ahead || model.get("scene") || {},
    dispose: () => {
      controls.dispose();
      model.off("change:scene", onScene);
      model.off("change:ahead", onAhead);
    },
  };
}
