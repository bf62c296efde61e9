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

Everything about running ahead of the learner (the pictures of the next slider steps, bursts of
presses, slider moves the browser reports before the slider's own message) belongs to the
explorer's :class:`~._ahead.StepAhead` (``.ahead``); the explorer only tells it of each change
and of each update, and asks it which values to compute.

If ``_compute`` raises, the message is shown in the explorer in plain words, the panels keep
their last good picture (and the text says so) and nothing is raised into the notebook.
"""

from __future__ import annotations

import asyncio
import html
import time

import ipywidgets as w

from .._threads import one_thread
from ._ahead import StepAhead
from ._save import named_settings
from .canvas import Canvas

__all__ = ["Explorer", "metrics_table", "note"]

FRAME_SECONDS = 1 / 60          # at most one computation per frame while controls keep changing

# The html text (metrics, notes, problems) is styled by canvas.css, which the canvas loads once for
# the page, in the theme's colours; each update sends only the html itself.


def note(text: str) -> str:
    """Wrap already-escaped html in the explorer's text style."""
    return f"<div class='attnviz-note'>{text}</div>"


def heading(title: str, text: str) -> w.HTML:
    """The explorer's first line: its name in bold and what it shows."""
    return w.HTML("<div class='attnviz-heading'>"
                  f"<b style='font-size:15px'>{title}</b>: {text}</div>")


def table_number(value) -> str:
    """Four significant digits; below 0.001 always as a power of ten (1.179e-04 beside 1.941e-06, not
    0.0001179 beside 1.941e-06, which .4g alone writes)."""
    return f"{value:.3e}" if value and abs(value) < 1e-3 else f"{value:.4g}"


def metrics_table(header, rows, selected_column=None) -> str:
    """A small html table: ``header`` is a list of column titles, ``rows`` lists of cells."""
    def cell(tag, text, column):
        cls = " class='selected'" if column == selected_column else ""
        return f"<{tag}{cls}>{text}</{tag}>"
    head = "".join(cell("th", html.escape(str(h)), i) for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(cell("td", c if isinstance(c, str) else table_number(c), i)
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
    report_moves = True      # the canvas reports a burst's slider moves at once (False: the sliders' own)
    named_by: tuple | None = None   # the settings a saved picture's file name lists (None: every control)

    def __init__(self):
        self.controls: dict[str, w.Widget] = {}
        # may shrink below its pictures' width (then it scrolls sideways) instead of being cut off
        self.canvas = Canvas(self.kind, on_pick=self._on_pick, on_move=self._on_move,
                             layout=w.Layout(max_width="100%", min_width="0", overflow="auto"))
        self.ahead = StepAhead(self.canvas, scene_of=self._scene_of, idle=self._idle,
                               report_moves=self.report_moves)
        self._panels: dict = {}
        self._metrics_now: dict = {}
        self._error: str | None = None
        self._state = None
        self._stale = False             # a change came that no computation has read yet
        self._scheduled = False         # ... and the event loop will run one
        self._last_update = 0.0
        self.computations = 0           # how many times _compute ran (coalescing is visible)
        self._problem = w.HTML(layout=w.Layout(display="none"))
        # the text beside the canvas, and the part of it that rarely changes (sent only then); _box
        # lays them side by side when there is room
        self._text, self._footnote = (
            w.HTML(layout=w.Layout(flex="0 1 300px", min_width="240px", margin="0 24px 4px 0"))
            for _ in range(2))

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

    @property
    def step_ahead(self) -> bool:
        """Whether the explorer prepares the next slider steps (False: every step waits for the kernel)."""
        return self.ahead.enabled

    @step_ahead.setter
    def step_ahead(self, on: bool) -> None:
        self.ahead.enabled = bool(on)

    # -- wiring -------------------------------------------------------------------------------
    def _watch(self):
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self._link()

    def _link(self):
        """Tell the canvas which controls it follows (see :meth:`StepAhead.link`)."""
        self.ahead.link(self.controls)

    def _on_move(self, name, browser_value):
        """The canvas saw slider ``name`` move to ``browser_value`` in the browser."""
        if self.ahead.browser_moved(name, browser_value):
            self._mark_stale()

    def _on_change(self, change=None):
        if self.ahead.control_changed(change):
            self._mark_stale()

    def _mark_stale(self):
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

    def _idle(self) -> bool:
        return not (self._stale or self._scheduled)

    def _on_pick(self, _pick):             # a click on a pickable panel (the head grid)
        pass

    def _flush(self):
        self._scheduled = False
        if self._stale:
            self._stale = False
            self.update()

    # -- one computation ---------------------------------------------------------------------------
    def _scene_of(self, values: dict) -> dict:
        """The scene this explorer shows for ``values`` (computed, laid out, not sent)."""
        with one_thread():
            state = self._compute(values)
            sections, panels = self._layout(state)
        return self.canvas.compose(sections, panels, self._selected(state),
                                   settings=named_settings(self, values))

    def update(self) -> bool:
        """Recompute from the controls' newest values and repaint; False (and why, shown) if they fail."""
        self._stale = False
        self.computations += 1
        self._last_update = time.monotonic()
        values = self.ahead.computing()
        try:
            with one_thread():
                state = self._compute(values)
                sections, panels = self._layout(state)
        except (ValueError, TypeError) as err:
            self.ahead.failed()
            self._show_problem(str(err))
            return False
        except Exception as err:  # noqa: BLE001 - a widget must never show a traceback
            self.ahead.failed()
            self._show_problem(f"Something went wrong with these settings: {type(err).__name__}: {err}")
            return False
        seconds = time.monotonic() - self._last_update
        self._state, self._error, self._panels = state, None, panels
        problem = self._state_problem(state)    # the problem line first: the browser, too, clears it
        if problem:                             # before it repaints
            self._show_problem(problem, keep_state=True)
        else:
            self._problem.layout.display = "none"
            self._problem.value = ""
        with self.canvas.hold_sync():           # a burst's next steps travel with the picture
            self.canvas.show(sections, panels, selected=self._selected(state), at=self.ahead.at(),
                             settings=named_settings(self, values))
            self.ahead.shown(seconds)
        self._metrics_now = self._metrics(state)
        text = self._describe(state)
        self._text.value, self._footnote.value = text if isinstance(text, tuple) else (text, "")
        return True

    def look_ahead(self) -> int:
        """Prepare and send the pictures one step either side of the slider moved last (or the
        first slider); returns how many were sent (0 when too slow, too big or failing)."""
        self._flush()
        return self.ahead.look_ahead()

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
        """Heading, controls, the problem line, then the canvas with the text beside it.

        Where the row is too narrow for both (a projector at 150%, the file browser open), the text
        goes above the canvas, right under the controls, its footnote beside it: the verdict and the
        numbers stay in sight while a control moves ("wrap-reverse" puts the line that wraps on top;
        "flex-end" then aligns to the top)."""
        side = w.Box([self._text, self._footnote],
                     layout=w.Layout(flex="1 1 300px", flex_flow="row wrap", align_items="flex-start",
                                     margin="4px 0 0 8px"))
        body = w.HBox([self.canvas, side],
                      layout=w.Layout(flex_flow="row wrap-reverse", align_items="flex-end",
                                      max_width="100%"))
        box = w.VBox([head, controls, self._problem, body], layout=w.Layout(max_width="100%"))
        return box.add_class("attnviz-explorer")   # the canvas finds its controls by it (js/keys.js)

    @property
    def widget(self) -> w.Widget:
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        self._flush()
        return self._widget._repr_mimebundle_(include=include, exclude=exclude, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: controls {sorted(self.controls)}, panels {sorted(self._panels)}>"
