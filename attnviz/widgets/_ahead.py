"""The look-ahead: the pictures a slider's next keypresses will show, computed before they come.

Between a keypress and the new picture lies a round trip (browser -> server -> kernel -> server
-> browser) that no widget can shorten; on a remote Binder or JupyterHub it is tens of
milliseconds. So each explorer has a :class:`StepAhead`, which prepares pictures ahead of the
learner and sends them to the browser before they are asked for:

* **one step either side**: a frame after an update, if no control changed meanwhile, it
  computes the settings one step either side of the slider moved last (the way it moved first),
  with the explorer's own computation, and sends them as *deltas* of the current scene (only what
  differs);
* **bursts** (a slider moving again within ``BURST_SECONDS``: a key held down, quick presses):
  each update brings, in the same message as its picture, the next ``BURST_STEPS`` steps in the
  direction the slider moves (and one back) that the browser does not have yet;
* **moves reported by the browser**: ipywidgets keeps one slider message in flight, so in a burst
  the kernel would hear of a few presses only. The canvas therefore reports each move of a linked
  slider in a message of its own; the explorer computes that value (checked against the slider)
  while the slider's own message is on its way, and when that message comes with the same value,
  nothing is computed again.

The browser keeps the newest 64 pictures by what the controls hold (``scene.at``), the kernel's
own and the prepared ones (attnviz/widgets/js/ahead.js), and paints a kept one as soon as the
controls hold its setting; the kernel's own picture for that setting follows and wins.

The steps computed for a slider are kept while the other controls stay as they are (an explorer's
computation depends on its controls' values only), so a burst computes each step once. Only small
pictures are prepared (``BYTES`` per update, ``BURST_BYTES`` in a burst, ``SECONDS`` per
computation), so a 128 x 128 explorer or a model forward pass costs nothing extra.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import ipywidgets as w

from . import _sliders
from .canvas import Canvas, map_bytes

__all__ = ["StepAhead", "scene_delta", "packed", "binary_bytes"]

BYTES = 8_000          # at most this much look-ahead data per update
SECONDS = 0.01         # and only for explorers whose one computation takes less than this
AHEAD_AFTER_SECONDS = 1 / 60    # one step either side once the controls have been still this long
# A slider moving again within BURST_SECONDS (a key held down, quick presses) is a burst: each update
# then brings, in the same message, those of the next BURST_STEPS steps in the direction it moves (and
# one back) not sent yet, nearest first, up to BURST_BYTES; the browser keeps them all, so it paints
# the presses that follow itself.
BURST_SECONDS = 0.15
BURST_STEPS = 10
BURST_BYTES = 16_000
KEPT_STEPS = 4 * BURST_STEPS   # steps the kernel keeps for the slider moving now (oldest go first)


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


def binary_bytes(value) -> int:
    """The bytes of all binary buffers inside ``value`` (dicts and lists of them)."""
    sizes = []
    map_bytes(value, lambda leaf: sizes.append(len(leaf)))
    return sum(sizes)


def _running_loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class StepAhead:
    """One explorer's look-ahead: which controls the browser may step on, what the browser reported,
    which slider moves and how, the steps prepared and those sent.

    ``scene_of(values)`` is the explorer's own picture of a setting (a scene, as
    :meth:`Canvas.compose` makes it; it may raise); ``idle()`` says that no newer update is waiting.
    The explorer tells it of every change (:meth:`control_changed`, :meth:`browser_moved`), asks it
    what to compute (:meth:`values`) and tells it how that went (:meth:`computing`, :meth:`shown`,
    :meth:`failed`). ``enabled = False`` prepares nothing (every step then waits for the kernel).
    """

    def __init__(self, canvas: Canvas, scene_of: Callable[[dict], dict], idle: Callable[[], bool],
                 report_moves: bool = True):
        self.canvas = canvas
        self.scene_of = scene_of
        self.idle = idle
        self.report_moves = report_moves
        self.enabled = True
        self.controls: dict[str, w.Widget] = {}
        self.browser: dict = {}         # slider name -> (browser value, value) the browser reported
        self.computed: dict | None = None   # the values the last update computed
        self.seconds = 0.0              # how long the last good update's computation took
        self.ok = True                  # whether it worked
        self.updates = 0                # updates so far (a step-ahead a frame later is for the newest)
        self.moved: str | None = None   # the control changed last (the one to step on)
        self.moved_at = -1.0            # when it moved, which way (+1 / -1) and whether in a burst
        self.direction = 1
        self.burst = False
        self.burst_update = -1          # the update whose picture brought a burst's steps
        self.prepared: dict = {}        # repr(slider value) -> scene, for the slider moving now ...
        self.prepared_for = None        # ... (its name and the other controls' values then)
        self.sent: set = set()          # ... and those a burst has sent (the browser keeps them)

    # -- the controls ---------------------------------------------------------------------------
    def link(self, controls: dict[str, w.Widget]) -> None:
        """Tell the canvas which controls to follow: all of them (any change means other pictures),
        sliders with ``step`` (and ``move``: report a burst's moves). Nothing when there is no slider."""
        self.controls = controls
        links = {}
        for name, control in controls.items():
            slider = _sliders.neighbours(control) is not None
            attr = _sliders.browser_attribute(control)
            links[name] = {"id": control.model_id, "attr": attr, "step": slider,
                           "move": slider and self.report_moves and BURST_SECONDS * 1000}
            if slider:
                _sliders.without_echo(control, attr)
        self.canvas.links = links if any(link["step"] for link in links.values()) else {}

    def values(self) -> dict:
        """The controls' values, with any slider value the browser reported and the kernel's slider
        does not have yet."""
        values = {name: control.value for name, control in self.controls.items()}
        values.update({name: value for name, (_at, value) in self.browser.items()})
        return values

    def at(self) -> dict | None:
        """What the browser's models of the linked controls hold for the current values (None: no links)."""
        if not self.canvas.links:
            return None
        held = {name: getattr(self.controls[name], link["attr"]) for name, link in self.canvas.links.items()}
        held.update({name: browser_value for name, (browser_value, _value) in self.browser.items()})
        return held

    # -- changes --------------------------------------------------------------------------------
    def browser_moved(self, name, browser_value) -> bool:
        """The canvas saw slider ``name`` move to ``browser_value`` in the browser; True if that
        changes the values to compute (the explorer then recomputes)."""
        link, control = self.canvas.links.get(name), self.controls.get(name)
        if not (isinstance(link, dict) and link.get("move")) or control is None:
            return False
        value = _sliders.kernel_value(control, browser_value)
        if value is None:
            return False
        before = self.values()
        if value == control.value:
            self.browser.pop(name, None)
        else:
            self.browser[name] = (browser_value, value)
        if self.values() == before:
            return False
        self._note_move(name, before[name], value)
        return True

    def control_changed(self, change=None) -> bool:
        """A control's value changed in the kernel (``change``: traitlets' change, or None for a
        change the explorer made itself); False if nothing needs computing: it is the slider's own
        message for a move the browser reported and the explorer computed already."""
        owner = getattr(change, "owner", None) if change is not None else None
        name = next((name for name, control in self.controls.items() if control is owner), None)
        if name in self.browser:
            _at, seen = self.browser.pop(name)
            if change.new == seen and self.values() == self.computed:
                return False
        if name is not None and self.canvas.links.get(name, {}).get("step"):
            self._note_move(name, getattr(change, "old", None), getattr(change, "new", None))
        elif name is not None:
            self.moved, self.burst = name, False
        return True

    def _note_move(self, name: str, old, new) -> None:
        """Which slider moved, which way, and whether it is a burst (moving again straight away)."""
        control, now = self.controls[name], time.monotonic()
        self.burst = name == self.moved and now - self.moved_at < BURST_SECONDS
        old, new = _sliders.position(control, old), _sliders.position(control, new)
        if isinstance(old, (int, float)) and isinstance(new, (int, float)) and new != old:
            self.direction = 1 if new > old else -1
        self.moved, self.moved_at = name, now

    # -- updates --------------------------------------------------------------------------------
    def computing(self) -> dict:
        """An update starts: the values it computes."""
        self.updates += 1
        self.computed = self.values()
        return self.computed

    def failed(self) -> None:
        """That update's computation raised: prepare nothing until one works again."""
        self.ok = False

    def shown(self, seconds: float) -> None:
        """That update's picture is being sent (inside the canvas's ``hold_sync``); its computation took
        ``seconds``. In a burst, the next steps travel with it; otherwise, a frame later, one step
        either side, if nothing changed meanwhile."""
        self.ok, self.seconds = True, seconds
        loop = _running_loop()
        if loop is None or not self.canvas.links:
            return
        if self.burst and self.moved in self.canvas.links:
            d = self.direction                  # nearest first: one on, one back, then further on
            offsets = [d, -d] + [k * d for k in range(2, BURST_STEPS + 1)]
            self._send(offsets, BURST_BYTES, new_only=True)
            self.burst_update = self.updates
        if self.enabled:
            loop.call_later(AHEAD_AFTER_SECONDS, self._if_idle, self.updates)

    def _if_idle(self, update: int) -> None:
        # only for the newest update, only if nothing newer waits, and not again after a burst's steps
        if update == self.updates and self.idle() and update != self.burst_update:
            self.look_ahead()

    # -- steps ----------------------------------------------------------------------------------
    def look_ahead(self) -> int:
        """Prepare and send the pictures one step either side of the slider moved last (or the first
        slider), the one the way it moved first; returns how many were sent (0 when too slow, too big
        or failing)."""
        return self._send((self.direction, -self.direction), BYTES)

    def _send(self, offsets, budget: int, new_only: bool = False) -> int:
        sliders = [name for name, link in self.canvas.links.items() if link["step"]]
        name = self.moved if self.moved in sliders else next(iter(sliders), None)
        entries = []
        if self.enabled and name is not None and self.ok and self.seconds < SECONDS:
            base = self.canvas.scene
            if 2 * binary_bytes(base) <= budget:
                entries = self._steps(name, base, offsets, budget, new_only)
        if entries or self.canvas.ahead.get("entries"):
            self.canvas.show_ahead(entries)
        return len(entries)

    def _steps(self, name: str, base: dict, offsets, budget: int, new_only: bool) -> list[dict]:
        """The steps of slider ``name`` at ``offsets``, as packed deltas of scene ``base``, nearest
        first, within ``budget`` bytes; ``new_only``: leave out those sent already."""
        browser_value = self.browser.get(name, (None,))[0]
        _attr, steps = _sliders.neighbours(self.controls[name], at=browser_value, offsets=offsets)
        values = self.values()
        others = repr(sorted((k, v) for k, v in values.items() if k != name))
        if self.prepared_for != (name, others):     # the steps kept are for this slider's values only
            self.prepared_for, self.prepared, self.sent = (name, others), {}, set()
        entries, size = [], 0
        for browser_value, value in steps:
            if new_only and repr(value) in self.sent:
                continue
            new = self._prepared(name, value, values)
            if new is None:
                continue
            scene = packed(scene_delta(base, new, leave_out=("description",)))
            size += binary_bytes(scene)
            if size > budget:                       # nearest first: the farther steps are left out
                break
            entries.append({"control": name, "value": browser_value, "scene": scene})
            self.sent.add(repr(value))
        return entries

    def _prepared(self, name: str, value, values: dict) -> dict | None:
        """The explorer's scene with slider ``name`` at ``value``, computed once (None if it fails:
        that step shows its problem when the kernel gets there)."""
        new = self.prepared.get(repr(value))
        if new is None:
            try:
                new = self.scene_of({**values, name: value})
            except Exception:  # noqa: BLE001 - a step that fails is not prepared
                return None
            if len(self.prepared) >= KEPT_STEPS:
                self.prepared.pop(next(iter(self.prepared)))       # the oldest goes
            self.prepared[repr(value)] = new
        return new
