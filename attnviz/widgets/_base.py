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
meanwhile (a slider being dragged or a key held down), the explorer also prepares the pictures one
step either side of the slider moved last, so the browser can paint the next arrow-key step
without waiting for the kernel. ``look_ahead()`` does it
on demand (tests); it changes nothing the kernel side reports.

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

    def __init__(self):
        self.controls: dict[str, w.Widget] = {}
        # may shrink below its pictures' width (then it scrolls sideways) instead of being cut off
        self.canvas = Canvas(self.kind, on_pick=self._on_pick,
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
            links[name] = {"id": control.model_id, "attr": attr, "step": step is not None}
            if step is not None:
                _ahead.without_echo(control, attr)
        self.canvas.links = links if any(link["step"] for link in links.values()) else {}

    def _values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, change=None):
        self._stale = True
        owner = getattr(change, "owner", None) if change is not None else None
        self._moved = next((name for name, c in self.controls.items() if c is owner), self._moved)
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
        try:
            with one_thread():
                state = self._compute(self._values())
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
        self.canvas.show(sections, panels, selected=self._selected(state))
        self._metrics_now = self._metrics(state)
        text = self._describe(state)
        self._text.value, self._footnote.value = text if isinstance(text, tuple) else (text, "")
        loop = _running_loop()
        if loop is not None and self.canvas.links and self.step_ahead:   # a frame later, if still
            loop.call_later(AHEAD_AFTER_SECONDS, self._ahead_if_idle, self.computations)
        return True

    # -- one step ahead ---------------------------------------------------------------------------
    def _ahead_if_idle(self, computation: int):
        # only for the newest update, and only if nothing newer is waiting: the controls are still
        if computation == self.computations and not (self._stale or self._scheduled):
            self.look_ahead()

    def look_ahead(self) -> int:
        """Prepare and send the pictures one step either side of the slider moved last (or the
        first slider); returns how many were sent (0 when too slow, too big or failing)."""
        self._flush()
        links = [name for name, link in self.canvas.links.items() if link["step"]]
        name = self._moved if self._moved in links else next(iter(links), None)
        entries = []
        fast = self._last_seconds < _ahead.SECONDS
        if self.step_ahead and name is not None and self._error is None and fast:
            base = self.canvas.scene
            if 2 * _ahead.binary_bytes(base) <= _ahead.BYTES:
                entries = self._steps(name, base)
        if entries or self.canvas.ahead.get("entries"):
            self.canvas.show_ahead(entries)
        return len(entries)

    def _steps(self, name: str, base: dict) -> list[dict]:
        _attr, steps = _ahead.neighbours(self.controls[name])
        entries, size = [], 0
        for browser_value, value in steps:
            try:
                with one_thread():
                    state = self._compute({**self._values(), name: value})
                    sections, panels = self._layout(state)
            except Exception:  # noqa: BLE001 - that step shows its problem when the kernel gets there
                continue
            new = self.canvas.compose(sections, panels, self._selected(state))
            scene = _ahead.packed(_ahead.scene_delta(base, new, leave_out=("description",)))
            size += _ahead.binary_bytes(scene)
            entries.append({"control": name, "value": browser_value, "scene": scene})
        return entries if size <= _ahead.BYTES else []

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
