"""What every explorer shares: controls in, one computation, figures and metrics out.

An explorer subclasses :class:`Explorer` and fills in

* ``_compute(values) -> state``: pure numbers (from :mod:`attnviz.explore`), no drawing;
* ``_draw(state)``: write the state into the FigureWidgets with
  :func:`attnviz.widgets.figures.send_update`: one plotly update (one message) per figure
  per change, like ``FigureWidget.batch_update()`` but without its per-property validation;
* ``_describe(state) -> html``: the metrics in words, shown beside the figures.

A control change runs exactly that, once. If ``_compute`` raises, the message is shown in
the explorer in plain words (the figures keep their last good picture) and nothing is
raised into the notebook.
"""

from __future__ import annotations

import html
from copy import deepcopy

import ipywidgets as w

from .._threads import one_thread

__all__ = ["Explorer", "metrics_table", "note"]

PANEL_CSS = (
    "<style>.attnviz-metrics table{border-collapse:collapse;font-size:13px}"
    ".attnviz-metrics td,.attnviz-metrics th{padding:2px 8px;text-align:right;white-space:nowrap}"
    ".attnviz-metrics th{border-bottom:1px solid #888}"
    ".attnviz-metrics td:first-child,.attnviz-metrics th:first-child{text-align:left}"
    ".attnviz-metrics .selected{font-weight:bold;background:#eef3ff}"
    ".attnviz-problem{border-left:4px solid #d9480f;background:#fff4e6;padding:6px 10px;"
    "font-size:13px;color:#222}"
    ".attnviz-note{font-size:13px;line-height:1.45;color:#222}</style>"
)


def note(text: str) -> str:
    """Wrap already-escaped html in the explorer's text style."""
    return f"<div class='attnviz-note'>{text}</div>"


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


class Explorer:
    """Base class: ``.controls``, ``.figures``, ``.metrics``, ``.widget``; displays itself."""

    title = ""

    def __init__(self):
        self.controls: dict[str, w.Widget] = {}
        self.figures: dict = {}
        self.metrics: dict = {}
        self.error: str | None = None
        self.state = None
        self._problem = w.HTML(layout=w.Layout(display="none"))
        self._text = w.HTML(layout=w.Layout(width="300px", min_width="260px", margin="30px 0 0 8px"))

    # -- wiring -------------------------------------------------------------------------------
    def _watch(self):
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

    def _values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, _change=None):
        self.update()

    def update(self) -> bool:
        """Recompute from the controls and redraw; return False (and show why) if the settings fail."""
        try:
            with one_thread():
                state = self._compute(self._values())
        except (ValueError, TypeError) as err:
            self._show_problem(str(err))
            return False
        except Exception as err:  # noqa: BLE001 - a widget must never show a traceback
            self._show_problem(f"Something went wrong with these settings: {type(err).__name__}: {err}")
            return False
        self.state = state
        self.error = None
        self._draw(state)
        self.metrics = self._metrics(state)
        self._text.value = PANEL_CSS + self._describe(state)
        problem = self._state_problem(state)
        if problem:
            self._show_problem(problem, keep_state=True)
        else:
            self._problem.layout.display = "none"
            self._problem.value = ""
        return True

    def _show_problem(self, message: str, keep_state: bool = False):
        if not keep_state:
            self.error = message
        self._problem.value = PANEL_CSS + f"<div class='attnviz-problem'>{html.escape(message)}</div>"
        self._problem.layout.display = ""

    # -- to override -----------------------------------------------------------------------------
    def _compute(self, values):  # pragma: no cover - abstract
        raise NotImplementedError

    def _draw(self, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _metrics(self, state) -> dict:
        return dict(state["metrics"])

    def _describe(self, state) -> str:
        return ""

    def _state_problem(self, state) -> str | None:
        """A plain-words problem that the state itself reports (shown, not raised)."""
        return None

    # -- display ---------------------------------------------------------------------------------
    @property
    def widget(self) -> w.Widget:
        return self._widget

    def _sync_figures(self):
        # plotly refreshes a FigureWidget's initial state only when the figure itself is displayed;
        # ours are displayed inside a box, so do the same here.
        for fig in self.figures.values():
            if hasattr(fig, "_widget_data"):
                fig._widget_layout = deepcopy(fig._layout_obj._props)
                fig._widget_data = deepcopy(fig._data)

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        self._sync_figures()
        return self._widget._repr_mimebundle_(include=include, exclude=exclude, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: controls {sorted(self.controls)}, figures {sorted(self.figures)}>"
