"""What every explorer shares: controls in, one computation, panels and metrics out.

An explorer subclasses :class:`Explorer` and fills in

* ``_compute(values) -> state``: pure numbers (from :mod:`attnviz.explore`), no drawing;
* ``_layout(state) -> (sections, panels)``: the :class:`~attnviz.widgets.canvas.Panel` objects
  this state shows and how they are grouped; the base class sends them to the
  :class:`~attnviz.widgets.canvas.Canvas` in one message;
* ``_describe(state) -> html``: the metrics in words, shown beside the panels.

Changes coalesce ("latest value wins"): inside a running kernel a control change only marks
the explorer stale and asks the event loop for one recomputation, at once if the last one was
more than a frame (1/60 s) ago, else when that frame ends; it reads the controls' *newest*
values, so twelve slider messages that arrive within a frame cost at most two computations. Reading
``.metrics``, ``.panels``, ``.state`` or ``.error`` first brings the explorer up to date, so a
cell that sets a control and then reads the metrics sees the new numbers. Outside a kernel
(tests, scripts) a change recomputes at once.

One step ahead (:mod:`._ahead`): a frame after an update inside a kernel, if no control changed
meanwhile, the explorer also prepares the pictures one step either side of the slider moved last,
so the browser can paint the next arrow-key step without waiting for the kernel. ``look_ahead()``
does it on demand (tests); it changes nothing the kernel side reports.

Bursts (a slider moving again within ``_ahead.BURST_SECONDS``: a key held down, quick presses):
each update then brings, in the same message as its picture, the next steps the slider is moving
towards that the browser does not have yet; the browser keeps them and paints each press from
them. A slider sends its value to the kernel only after the kernel has finished with the one
before (ipywidgets keeps one message in flight), so in a burst the canvas also reports each move
at once in a message of its own (only to an explorer whose pictures are small enough to prepare:
for big ones the slider's fewer messages get the last picture there sooner); the explorer computes
that value (checked against the slider's range) while the slider's own message is on its way, and
when that message comes with the same value nothing is computed again. The steps computed for a
slider are kept while the other controls stay as they are (``_compute`` depends on the controls'
values only), so a burst computes each step once.

If ``_compute`` raises, the message is shown in the explorer in plain words, the panels keep
their last good picture (and the text says so) and nothing is raised into the notebook.
"""

from __future__ import annotations

import asyncio
import html
import time

import ipywidgets as w

from .._threads import one_thread
from . import _ahead
from .canvas import Canvas

__all__ = ["Explorer", "metrics_table", "note"]

FRAME_SECONDS = 1 / 60          # at most one computation per frame while controls keep changing
AHEAD_AFTER_SECONDS = 1 / 60    # look ahead only once the controls have been still this long

# The html text (metrics, notes, problems) is styled by canvas.css, which the canvas loads once for
# the page, in the theme's colours; each update sends only the html itself.


def note(text: str) -> str:
    """Wrap already-escaped html in the explorer's text style."""
    return f"<div class='attnviz-note'>{text}</div>"


def heading(title: str, text: str) -> w.HTML:
    """The explorer's first line: its name in bold and what it shows."""
    return w.HTML("<div class='attnviz-heading'>"
                  f"<b style='font-size:15px'>{title}</b>: {text}</div>")


def metrics_table(header, rows, selected_column=None) -> str:
    """A small html table: ``header`` is a list of column titles, ``rows`` lists of cells."""
    def cell(tag, text, column):
        cls = " class='selected'" if column == selected_column else ""
        return f"<{tag}{cls}>{text}</{tag}>"
    head = "".join(cell("th", html.escape(str(h)), i) for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(cell("td", c if isinstance(c, str) else f"{c:.4g}", i)
                         for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<div class='attnviz-metrics'><table><tr>{head}</tr>{body}</table></div>"


def _running_loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Explorer:
    """Base class: ``.controls``, ``.panels``, ``.metrics``, ``.widget``; displays itself."""

    title = ""
    kind = ""
    step_ahead = True        # prepare the next slider steps (False: every step waits for the kernel)
    report_moves = True      # the canvas reports slider moves at once (False: the sliders' own messages)

    def __init__(self):
        self.controls: dict[str, w.Widget] = {}
        # may shrink below its pictures' width (then it scrolls sideways) instead of being cut off
        self.canvas = Canvas(self.kind, on_pick=self._on_pick, on_move=self._on_move,
                             layout=w.Layout(max_width="100%", min_width="0", overflow="auto"))
        self._panels: dict = {}
        self._metrics_now: dict = {}
        self._error: str | None = None
        self._state = None
        self._stale = False
        self._scheduled = False
        self._last_update = 0.0
        self._last_seconds = 0.0              # how long the last computation took
        self._moved: str | None = None        # the control changed last (look-ahead steps it)
        self._browser: dict = {}              # slider name -> (browser value, value) seen in the browser
        self._computed: dict | None = None    # the values the last update computed
        self._moved_at = -1.0                 # when the slider moved last, and which way (+1 / -1)
        self._direction = 1
        self._burst = False                   # it moved again within BURST_SECONDS of the move before
        self._chained = -1                    # the computation whose update brought a burst's steps
        self._prepared: dict = {}             # slider value -> scene, for the steps (a burst revisits them)
        self._prepared_for = None             # ... which slider, and the other controls' values then
        self._sent: set = set()               # ... and those a burst has sent (the browser keeps them)
        self.computations = 0                 # how many times _compute ran (coalescing is visible)
        self._problem = w.HTML(layout=w.Layout(display="none"))
        self._text = w.HTML()
        self._footnote = w.HTML()       # the part of the text that rarely changes (sent only then)

    # -- up to date on every read ------------------------------------------------------------------
    @property
    def metrics(self) -> dict:
        self._flush()
        return self._metrics_now

    @property
    def panels(self) -> dict:
        """Panel name -> :class:`~attnviz.widgets.canvas.Panel`: exactly the arrays the browser paints."""
        self._flush()
        return self._panels

    @property
    def state(self):
        self._flush()
        return self._state

    @property
    def error(self) -> str | None:
        self._flush()
        return self._error

    # -- wiring -------------------------------------------------------------------------------
    def _watch(self):
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self._link()

    def _link(self):
        """Tell the canvas which controls are sliders it may step ahead on, and which others to watch
        (any change to those means the prepared pictures no longer apply; see :mod:`._ahead`)."""
        links = {}
        for name, control in self.controls.items():
            step = _ahead.neighbours(control)
            attr = step[0] if step is not None else ("index" if control.has_trait("index") else "value")
            links[name] = {"id": control.model_id, "attr": attr, "step": step is not None,
                           "move": step is not None and self.report_moves and _ahead.BURST_SECONDS * 1000}
            if step is not None:
                _ahead.without_echo(control, attr)
        self.canvas.links = links if any(link["step"] for link in links.values()) else {}

    def _values(self) -> dict:
        """The controls' values, with any slider value the browser reported and the kernel's slider
        does not have yet."""
        values = {name: control.value for name, control in self.controls.items()}
        values.update({name: value for name, (_at, value) in self._browser.items()})
        return values

    def _on_move(self, name, browser_value):
        """The canvas saw slider ``name`` move to ``browser_value`` in the browser."""
        link, control = self.canvas.links.get(name), self.controls.get(name)
        if not (isinstance(link, dict) and link.get("move")) or control is None:
            return
        value = _ahead.kernel_value(control, browser_value)
        if value is None:
            return
        before = self._values()
        if value == control.value:
            self._browser.pop(name, None)
        else:
            self._browser[name] = (browser_value, value)
        if self._values() != before:
            self._note_move(name, before[name], value)
            self._on_change()

    def _note_move(self, name: str, old, new):
        """Which slider moved, which way, and whether it is a burst (moving again straight away)."""
        control, now = self.controls[name], time.monotonic()
        self._burst = name == self._moved and now - self._moved_at < _ahead.BURST_SECONDS
        old, new = _ahead.position(control, old), _ahead.position(control, new)
        if isinstance(old, (int, float)) and isinstance(new, (int, float)) and new != old:
            self._direction = 1 if new > old else -1
        self._moved, self._moved_at = name, now

    def _on_change(self, change=None):
        owner = getattr(change, "owner", None) if change is not None else None
        name = next((name for name, c in self.controls.items() if c is owner), None)
        if name in self._browser:
            _at, seen = self._browser.pop(name)
            if change.new == seen and self._values() == self._computed:   # the browser's move, already
                return                                                    # computed (or on its way)
        if name is not None and self.canvas.links.get(name, {}).get("step"):
            self._note_move(name, getattr(change, "old", None), getattr(change, "new", None))
        elif name is not None:
            self._moved, self._burst = name, False
        self._stale = True
        loop = _running_loop()
        if loop is None:
            self._flush()
        elif not self._scheduled:
            # at once if the last computation was over a frame ago, else at the end of that frame:
            # messages that arrive meanwhile only set values, and one computation reads the newest
            self._scheduled = True
            wait = self._last_update + FRAME_SECONDS - time.monotonic()
            if wait <= 0:
                loop.call_soon(self._flush)
            else:
                loop.call_later(wait, self._flush)

    def _on_pick(self, _pick):             # a click on a pickable panel (the head grid)
        pass

    def _flush(self):
        self._scheduled = False
        if self._stale:
            self._stale = False
            self.update()

    def update(self) -> bool:
        """Recompute from the controls' newest values and repaint; False (and why, shown) if they fail."""
        self._stale = False
        self.computations += 1
        self._last_update = time.monotonic()
        loop = _running_loop()
        try:
            self._computed = self._values()
            with one_thread():
                state = self._compute(self._computed)
                sections, panels = self._layout(state)
            self._last_seconds = time.monotonic() - self._last_update
        except (ValueError, TypeError) as err:
            self._show_problem(str(err))
            return False
        except Exception as err:  # noqa: BLE001 - a widget must never show a traceback
            self._show_problem(f"Something went wrong with these settings: {type(err).__name__}: {err}")
            return False
        self._state, self._error, self._panels = state, None, panels
        problem = self._state_problem(state)    # the problem line first: the browser, too, clears it
        if problem:                             # before it repaints
            self._show_problem(problem, keep_state=True)
        else:
            self._problem.layout.display = "none"
            self._problem.value = ""
        with self.canvas.hold_sync():             # a burst's next steps travel with the picture
            self.canvas.show(sections, panels, selected=self._selected(state),
                             at=self._at() if self.canvas.links else None)
            if loop is not None and self._burst and self._moved in self.canvas.links:
                d = self._direction                 # nearest first: one on, one back, then further on
                offsets = [d, -d] + [k * d for k in range(2, _ahead.BURST_STEPS + 1)]
                self._send_steps(offsets, _ahead.BURST_BYTES, new_only=True)
                self._chained = self.computations
        self._metrics_now = self._metrics(state)
        text = self._describe(state)
        self._text.value, self._footnote.value = text if isinstance(text, tuple) else (text, "")
        if loop is not None and self.canvas.links and self.step_ahead:   # a frame later, if still
            loop.call_later(AHEAD_AFTER_SECONDS, self._ahead_if_idle, self.computations)
        return True

    # -- one step ahead ---------------------------------------------------------------------------
    def _ahead_if_idle(self, computation: int):
        # only for the newest update, and only if nothing newer is waiting: the controls are still
        if computation == self.computations and not (self._stale or self._scheduled):
            if computation != self._chained:        # (a burst's update already brought these)
                self.look_ahead()

    def look_ahead(self) -> int:
        """Prepare and send the pictures one step either side of the slider moved last (or the
        first slider); returns how many were sent (0 when too slow, too big or failing)."""
        self._flush()
        return self._send_steps((-1, 1), _ahead.BYTES)

    def _send_steps(self, offsets, budget: int, new_only: bool = False) -> int:
        links = [name for name, link in self.canvas.links.items() if link["step"]]
        name = self._moved if self._moved in links else next(iter(links), None)
        entries = []
        fast = self._last_seconds < _ahead.SECONDS
        if self.step_ahead and name is not None and self._error is None and fast:
            base = self.canvas.scene
            if 2 * _ahead.binary_bytes(base) <= budget:
                entries = self._steps(name, base, offsets, budget, new_only)
        if entries or self.canvas.ahead.get("entries"):
            self.canvas.show_ahead(entries)
        return len(entries)

    def _at(self) -> dict:
        """What the browser's models of the linked controls hold for the current scene."""
        return {name: self._browser[name][0] if name in self._browser
                else getattr(self.controls[name], link["attr"]) for name, link in self.canvas.links.items()}

    def _steps(self, name: str, base: dict, offsets, budget: int, new_only: bool = False) -> list[dict]:
        _attr, steps = _ahead.neighbours(self.controls[name], at=self._browser.get(name, (None,))[0],
                                         offsets=offsets)
        entries, size, values = [], 0, self._values()
        others = repr(sorted((k, v) for k, v in values.items() if k != name))
        if self._prepared_for != (name, others):  # the pictures kept are for this slider's values only
            self._prepared_for, self._prepared, self._sent = (name, others), {}, set()
        for browser_value, value in steps:
            if new_only and repr(value) in self._sent:
                continue
            new = self._prepared.get(repr(value))
            if new is None:
                try:
                    with one_thread():
                        state = self._compute({**values, name: value})
                        sections, panels = self._layout(state)
                except Exception:  # noqa: BLE001 - that step shows its problem when the kernel gets there
                    continue
                new = self.canvas.compose(sections, panels, self._selected(state))
                if len(self._prepared) >= 4 * _ahead.BURST_STEPS:
                    self._prepared.pop(next(iter(self._prepared)))       # the oldest goes
                self._prepared[repr(value)] = new
            scene = _ahead.packed(_ahead.scene_delta(base, new, leave_out=("description",)))
            size += _ahead.binary_bytes(scene)
            if size > budget:                       # nearest first: the farther steps are left out
                break
            entries.append({"control": name, "value": browser_value, "scene": scene})
            self._sent.add(repr(value))
        return entries

    def _show_problem(self, message: str, keep_state: bool = False):
        if not keep_state:
            self._error = message
            if self._state is not None:                     # no stale description of the old setting
                self._text.value = note(
                    "These settings do not work (the message above says why). The pictures still "
                    "show the last settings that did.")
                self._footnote.value = ""
        self._problem.value = f"<div class='attnviz-problem'>{html.escape(message)}</div>"
        self._problem.layout.display = ""

    # -- to override -----------------------------------------------------------------------------
    def _compute(self, values):  # pragma: no cover - abstract
        raise NotImplementedError

    def _layout(self, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _selected(self, state) -> str | None:
        return None

    def _metrics(self, state) -> dict:
        return dict(state["metrics"])

    def _describe(self, state) -> str | tuple[str, str]:
        """The metrics in words (html); or ``(text, footnote)``: the footnote is sent only when it changes."""
        return ""

    def _state_problem(self, state) -> str | None:
        """A plain-words problem that the state itself reports (shown, not raised)."""
        return None

    # -- display ---------------------------------------------------------------------------------
    def _box(self, controls: w.Widget, head: w.Widget) -> w.Widget:
        """Heading, controls, the problem line, then the canvas with the text beside it (wrapping)."""
        side = w.VBox([self._text, self._footnote],
                      layout=w.Layout(width="300px", min_width="240px", margin="4px 0 0 8px"))
        body = w.HBox([self.canvas, side],
                      layout=w.Layout(flex_flow="row wrap", align_items="flex-start", max_width="100%"))
        return w.VBox([head, controls, self._problem, body], layout=w.Layout(max_width="100%"))

    @property
    def widget(self) -> w.Widget:
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        self._flush()
        return self._widget._repr_mimebundle_(include=include, exclude=exclude, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: controls {sorted(self.controls)}, panels {sorted(self._panels)}>"
