"""One step ahead: the pictures a slider's next keypress will show, computed before it comes.

Between a keypress and the new picture lies a round trip (browser -> server -> kernel -> server
-> browser) that no widget can shorten; on a remote Binder or JupyterHub it is tens of
milliseconds. So after each update the kernel also computes the two settings one step either
side of the slider the learner moved last, with the same ``_compute`` and ``_layout`` as any
update, and sends them as *deltas* of the current scene (only what differs). When the browser
sees that slider move to one of those values, it paints the prepared picture in the next frame;
the kernel's own update for that value follows (the browser does not paint the same picture
twice). Anything else (another control, a value typed in) waits for the kernel as before.

In a burst (``BURST_SECONDS``) the steps come with each update instead, several in the direction
the slider moves (``BURST_STEPS``, only those not sent yet), and the browser keeps the newest 64
pictures by what the controls hold, so a held key or quick presses paint from them.

Only small pictures are prepared (``BYTES`` per update, ``BURST_BYTES`` in a burst, ``SECONDS`` per
computation), so a 128 x 128 explorer or a model forward pass costs nothing extra.

This module knows the ipywidgets sliders by their public traits: which attribute the browser
changes (``index`` for a selection slider, ``value`` otherwise) and what one step is.
"""

from __future__ import annotations

import copy
import math

import ipywidgets as w

from .canvas import map_bytes

BYTES = 8_000          # at most this much look-ahead data per update
SECONDS = 0.01         # and only for explorers whose one computation takes less than this
# A slider moving again within BURST_SECONDS (a key held down, quick presses) is a burst: each update
# then brings, in the same message, those of the next BURST_STEPS steps in the direction it moves (and
# one back) not sent yet, nearest first, up to BURST_BYTES; the browser keeps them all, so it paints
# the presses that follow itself.
BURST_SECONDS = 0.15
BURST_STEPS = 10
BURST_BYTES = 16_000


def _option_value(option):
    return option[1] if isinstance(option, tuple) and len(option) == 2 else option


def neighbours(control: w.Widget, at=None, offsets=(-1, 1)) -> tuple[str, list[tuple[object, object]]] | None:
    """``(attribute, [(browser value, kernel value), ...])`` one step either side of ``control``'s
    value (or of browser value ``at``; other ``offsets`` in steps, in that order, those past the
    slider's ends left out), or None when it is not a slider. The browser value is what the
    front-end's model holds after that many arrow keys; the kernel value is what ``control.value``
    will then be."""
    if isinstance(control, w.SelectionSlider):
        options, index = list(control.options), control.index if at is None else at
        if index is None:
            return None
        return "index", [(index + k, _option_value(options[index + k])) for k in offsets
                         if 0 <= index + k < len(options)]
    value = control.value if at is None else at
    if isinstance(control, w.FloatLogSlider):
        base, step, low, high = control.base, control.step, control.min, control.max
        if not (value > 0 and step > 0 and base > 1):
            return None
        exponent = math.log(value, base)
        grid = low + round((exponent - low) / step) * step            # the slider snaps to this grid
        exponents = [grid + k * step for k in offsets]
        values = [base ** e for e in exponents if low - 1e-9 <= e <= high + 1e-9]
        return "value", [(v, v) for v in values]
    if isinstance(control, (w.IntSlider, w.FloatSlider)):
        step = control.step
        if not step or step <= 0:
            return None
        values = [value + k * step for k in offsets]
        return "value", [(v, v) for v in values if control.min <= v <= control.max]
    return None


def position(control: w.Widget, value):
    """The browser's value (of the attribute :func:`neighbours` names) for kernel value ``value``."""
    if isinstance(control, w.SelectionSlider):
        values = [_option_value(option) for option in control.options]
        return values.index(value) if value in values else None
    return value


def kernel_value(control: w.Widget, browser_value):
    """What ``control.value`` becomes once the browser's ``browser_value`` (of the attribute
    :func:`neighbours` names) reaches the kernel; None if it is not a value this slider can take
    (a message from the browser is checked, never trusted)."""
    if isinstance(browser_value, bool) or not isinstance(browser_value, (int, float)):
        return None
    if isinstance(control, w.SelectionSlider):
        options = list(control.options)
        ok = isinstance(browser_value, int) and 0 <= browser_value < len(options)
        return _option_value(options[browser_value]) if ok else None
    if isinstance(control, w.IntSlider) and not isinstance(browser_value, int):
        return None
    if isinstance(control, (w.IntSlider, w.FloatSlider, w.FloatLogSlider)):
        if not math.isfinite(browser_value):
            return None
        low, high = ((control.base ** control.min, control.base ** control.max)
                     if isinstance(control, w.FloatLogSlider) else (control.min, control.max))
        return browser_value if low - 1e-9 * abs(low) <= browser_value <= high + 1e-9 * abs(high) else None
    return None


def delta(base: dict, new: dict) -> dict:
    """What ``new`` (one panel's scene) changes in ``base``: changed keys, and None for removed ones."""
    changed = {key: value for key, value in new.items() if key not in base or base[key] != value}
    changed.update({key: None for key in base if key not in new})
    return changed


def scene_delta(base: dict, new: dict, leave_out=()) -> dict:
    """The parts of scene ``new`` that differ from scene ``base``, panel by panel; keys in
    ``leave_out`` keep their ``base`` value (the text alternative: the kernel's own update brings
    the new one a round trip later, and nobody reads a frame's aria-label)."""
    panels = {name: {k: v for k, v in delta(base["panels"].get(name, {}), spec).items() if k not in leave_out}
              for name, spec in new["panels"].items()}
    out = {"panels": {name: spec for name, spec in panels.items() if spec}}
    if new.get("selected") != base.get("selected"):
        out["selected"] = new.get("selected")
    old_sections, sections = base.get("sections") or [], new.get("sections") or []
    if sections != old_sections:                  # None for a section that stays as it is
        out["sections"] = (sections if len(sections) != len(old_sections)
                           else [s if s != o else None for s, o in zip(sections, old_sections, strict=True)])
    return out


def packed(scene: dict) -> dict:
    """``scene`` with its binary buffers moved into one ``blob``: each becomes ``{"at", "len"}``
    (offsets kept to multiples of 4, so float32 views need no copy). One buffer, one path, per step."""
    parts, size = [], 0

    def move(leaf: bytes) -> dict:
        nonlocal size
        pad = (-len(leaf)) % 4
        at, size = size, size + len(leaf) + pad
        parts.append(leaf + b"\0" * pad)
        return {"at": at, "len": len(leaf)}
    out = map_bytes(scene, move)
    out["blob"] = b"".join(parts)
    return out


def unpacked(scene: dict) -> dict:
    """The inverse of :func:`packed` (what canvas.js does with a step)."""
    blob = scene["blob"]

    def back(value):
        if isinstance(value, dict) and set(value) == {"at", "len"}:
            return blob[value["at"]:value["at"] + value["len"]]
        if isinstance(value, dict):
            return {key: back(v) for key, v in value.items()}
        if isinstance(value, list):
            return [back(v) for v in value]
        return value
    return back({key: value for key, value in scene.items() if key != "blob"})


def binary_bytes(value) -> int:
    """The bytes of all binary buffers inside ``value`` (dicts and lists of them)."""
    sizes = []
    map_bytes(value, lambda leaf: sizes.append(len(leaf)))
    return sum(sizes)


def without_echo(control: w.Widget, attr: str) -> None:
    """Stop the kernel echoing ``attr`` back to the browser each time the browser changes it.

    ipywidgets echoes every value a browser sends, for other browsers showing the same widget;
    the one that sent it already shows it. One slider step then costs one message less. (A second
    browser window on the same kernel would no longer see this slider move; its pictures still
    do.) ``echo_update`` is the trait metadata ipywidgets reads for this (``FileUpload`` uses it);
    the trait is copied, so other widgets of the class keep their echo.
    """
    trait = copy.copy(control.traits()[attr])
    trait.metadata = {**trait.metadata, "echo_update": False}
    control.add_traits(**{attr: trait})
