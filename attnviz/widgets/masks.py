"""The mask explorer: which fill value, in which dtype, keeps masked keys at exactly zero weight."""

from __future__ import annotations

import html

import ipywidgets as w
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..explore import DTYPES, FILLS, MASK_LENGTHS, MASKS, mask_state
from ._base import Explorer, metrics_table, note
from .figures import (
    MASKED_GREY,
    SCORE_SCALE,
    add_heatmap,
    add_heatmap_legend,
    heatmap_changes,
    send_update,
    style,
)

__all__ = ["mask_explorer", "MaskExplorer"]

ALLOWED_COLOUR = "#3b528b"


def _sequence_title(index: int, n_real: int, n: int) -> str:
    if n_real == 0:
        return f"seq {index}: empty, {n} pad"
    if n_real == n:
        return f"seq {index}: {n} real"
    return f"seq {index}: {n_real} real, {n - n_real} pad"


class MaskExplorer(Explorer):
    """Controls ``mask``, ``fill``, ``dtype``; figures ``mask``, ``scores`` (after filling) and
    ``weights``, one panel per sequence of a small padded batch (the last sequence is empty, so
    its rows are fully masked). ``metrics``: ``nan_rows``, ``dead_rows``, ``leaked_weight``,
    ``error`` (see :func:`attnviz.explore.mask_state`). A fill PyTorch refuses is shown in
    words in the explorer, never raised.
    """

    title = "Masking: the fill value and the dtype"

    def __init__(self, mask="padding", fill="-inf", dtype="float32"):
        super().__init__()
        first = mask_state(mask, fill, dtype)
        self.n = first["scores"].shape[-1]
        self.batch = first["scores"].shape[0]
        wide = {"description_width": "50px"}
        self.controls = {
            "mask": w.Dropdown(options=list(MASKS), value=mask, description="mask", style=wide,
                               layout=w.Layout(width="230px")),
            "fill": w.Dropdown(options=list(FILLS), value=fill, description="fill", style=wide,
                               layout=w.Layout(width="200px")),
            "dtype": w.Dropdown(options=list(DTYPES), value=dtype, description="dtype", style=wide,
                                layout=w.Layout(width="200px")),
        }
        titles = [_sequence_title(i, n_real, self.n) for i, n_real in enumerate(MASK_LENGTHS)]
        self.figures = {
            "mask": self._mask_figure(first, titles),
            "scores": self._panels_figure(first["scores"], first["mask"], titles, scores=True),
            "weights": self._panels_figure(first["scores"] * 0, first["mask"], titles, scores=False),
        }
        self._sent = {name: {} for name in self.figures}
        c = self.controls
        heading = w.HTML(
            f"<b style='font-size:15px'>{self.title}</b>: scores.masked_fill(~mask, fill) in the chosen "
            "dtype, then torch.softmax")
        self._widget = w.VBox([
            heading, w.HBox([c["mask"], c["fill"], c["dtype"]], layout=w.Layout(flex_flow="row wrap")),
            self._problem,
            w.HBox([self.figures["weights"], self._text],
                   layout=w.Layout(flex_flow="row wrap", align_items="flex-start")),
            self.figures["scores"], self.figures["mask"]])
        self._watch()
        self.update()

    # -- figures ---------------------------------------------------------------------------------
    def _mask_figure(self, state, titles):
        fig = make_subplots(rows=1, cols=self.batch, subplot_titles=titles, horizontal_spacing=0.06)
        for index in range(self.batch):
            fig.add_trace(go.Heatmap(
                z=np.zeros((self.n, self.n)).tolist(), zmin=0, zmax=1, showscale=False, xgap=2, ygap=2,
                colorscale=[[0, MASKED_GREY], [0.5, MASKED_GREY], [0.5, ALLOWED_COLOUR], [1, ALLOWED_COLOUR]],
                hovertemplate="query %{y} → key %{x}<br>%{z} (1 = may attend, 0 = blocked)<extra></extra>"),
                row=1, col=index + 1)
        self._tidy_axes(fig)
        style(fig, "The mask (blue: may attend; grey: blocked)", height=330)
        fig.update_layout(width=900)
        return go.FigureWidget(fig)

    def _panels_figure(self, values, allowed, titles, scores: bool):
        fig = make_subplots(rows=1, cols=self.batch, subplot_titles=titles, horizontal_spacing=0.06)
        first = []
        for index in range(self.batch):
            if scores:
                first.append(add_heatmap(fig, values[index], mask=allowed[index], row=1, col=index + 1,
                                         showscale=(index == 0), value_name="score",
                                         colorscale=SCORE_SCALE, zmin=-3, zmax=3))
            else:
                first.append(add_heatmap(fig, values[index], mask=allowed[index], row=1, col=index + 1,
                                         showscale=(index == 0)))
        legend = add_heatmap_legend(fig)
        if scores:
            self._score_panels, self._score_legend = first, legend
        else:
            self._weight_panels, self._weight_legend = first, legend
        self._tidy_axes(fig)
        style(fig, "", height=360)
        fig.update_layout(width=900 if scores else 640, legend={"y": -0.2})
        return go.FigureWidget(fig)

    def _tidy_axes(self, fig):
        ticks = list(range(self.n))
        fig.update_xaxes(tickmode="array", tickvals=ticks, range=[-0.5, self.n - 0.5], title_text="key")
        fig.update_yaxes(tickmode="array", tickvals=ticks, range=[self.n - 0.5, -0.5], title_text="")
        fig.update_yaxes(title_text="query (asking)", row=1, col=1)
        fig.update_xaxes(title_text="key (attended to)", row=1, col=2)

    # -- one change ------------------------------------------------------------------------------
    def _compute(self, values):
        return mask_state(values["mask"], values["fill"], values["dtype"])

    def _draw(self, state):
        allowed = state["mask"].numpy()
        fill, dtype = self.controls["fill"].value, state["dtype"]
        m = state["metrics"]
        send_update(self.figures["mask"], cache=self._sent["mask"],
                    traces={i: {"z": allowed[i].astype(np.float64)} for i in range(self.batch)},
                    layout={"title.text": f"The mask '{self.controls['mask'].value}' "
                                          "(blue: may attend; grey: blocked)"})

        # scores after masked_fill: real scores on the diverging scale, filled cells grey and labelled
        raw = state["scores"].numpy()
        filled = state["filled_scores"]
        shown = np.where(allowed, raw if filled is None else filled.numpy(), 0)   # masked cells: grey
        bound = float(np.abs(raw).max())
        traces = {}
        label = "no fill" if self.controls["mask"].value == "none" else fill
        if filled is None:
            label = None                                   # the fill never happened
        for i, first in enumerate(self._score_panels):
            changes, _ = heatmap_changes(first, shown[i], allowed[i], masked_label=label)
            traces.update(changes)
            traces[first]["zmin"], traces[first]["zmax"] = -bound, bound
            traces[first + 1]["hovertemplate"] = (
                "query %{y} → key %{x}<br>masked: holds the fill " + html.escape(label or "(none)")
                + "<extra></extra>")
        traces[self._score_legend[0]] = {"showlegend": bool((~allowed).any()),
                                         "name": f"grey: masked, score set to the fill {label}" if label
                                         else "grey: masked (not filled: masked_fill failed)"}
        traces[self._score_legend[1]] = {"showlegend": False}
        traces[self._score_legend[2]] = {"showlegend": False}
        title = (f"Scores after masked_fill(~mask, {fill}) in {dtype}" if filled is not None
                 else f"Scores before filling: masked_fill(~mask, {fill}) failed in {dtype}")
        send_update(self.figures["scores"], traces, cache=self._sent["scores"], layout={"title.text": title})

        # weights: torch.softmax of the filled scores; NaN rows pink and labelled, leaks marked
        if state["weights"] is None:
            weights = np.full((self.batch, self.n, self.n), np.nan)
            any_flags = {"any_masked": False, "any_nan": False, "any_leak": False}
            traces = {}
            for first in self._weight_panels:
                traces.update({first: {"z": weights[0]}, first + 1: {"z": weights[0]},
                               first + 2: {"z": weights[0]},
                               first + 3: {"x": np.zeros(0), "y": np.zeros(0)},
                               first + 4: {"x": np.zeros(0), "y": np.zeros(0), "text": []}})
            title = "No weights: PyTorch raised an error for this fill and dtype (see the message above)"
        else:
            weights = state["weights"].numpy()
            traces, any_flags = {}, {"any_masked": False, "any_nan": False, "any_leak": False}
            for i, first in enumerate(self._weight_panels):
                changes, layers = heatmap_changes(first, weights[i], allowed[i])
                traces.update(changes)
                for key in any_flags:
                    any_flags[key] |= layers[key]
            title = f"Weights = torch.softmax(filled scores) in {dtype}"
            if m["nan_rows"]:
                title += f": {m['nan_rows']} rows are NaN (pink)"
        for index, key in zip(self._weight_legend, ("any_masked", "any_nan", "any_leak"), strict=True):
            traces[index] = {"showlegend": bool(any_flags[key])}
        send_update(self.figures["weights"], traces, cache=self._sent["weights"],
                    layout={"title.text": title})

    def _state_problem(self, state):
        return state["metrics"]["error"]

    def _describe(self, state):
        m = state["metrics"]
        mask, fill, dtype = (self.controls[k].value for k in ("mask", "fill", "dtype"))
        if m["error"]:
            return note(f"<b>{html.escape(fill)} in {dtype}</b>: PyTorch raised, so there are no weights. "
                        "The message above says why.")
        lines = []
        if mask == "none":
            lines.append("No mask: every query attends to every key, padding included.")
        if m["nan_rows"]:
            lines.append(f"<b>{m['nan_rows']} rows came out NaN</b>: they have no allowed key, and "
                         "the softmax of a row of -inf is 0/0. NaN then spreads through everything after.")
        elif m["dead_rows"] and mask != "none":
            lines.append(f"{m['dead_rows']} rows have no allowed key; with this fill they come out finite "
                         "(spread over the blocked keys), which is harmless only if those rows are ignored.")
        if m["leaked_weight"] and m["leaked_weight"] > 1e-6:
            lines.append(f"<b>Leak</b>: a query with real keys still puts {m['leaked_weight']:.3f} of its "
                         "weight on blocked keys (red ×). A fill of 0 is an ordinary score, not a block.")
        elif mask != "none":
            lines.append("Rows with an allowed key put exactly 0 weight on blocked keys.")
        rows = [["nan_rows", str(m["nan_rows"])], ["dead_rows (no allowed key)", str(m["dead_rows"])],
                ["leaked_weight", m["leaked_weight"]]]
        return (note(f"<b>mask {mask}, fill {html.escape(fill)}, {dtype}</b>")
                + metrics_table(["", "now"], rows) + note("<br>".join(lines)))


def mask_explorer(mask="padding", fill="-inf", dtype="float32") -> MaskExplorer:
    """A padded batch (lengths 5, 3 and 0) masked with a chosen fill value and dtype.

    Try ``fill='-inf'`` (NaN rows where a query has no allowed key), ``'finfo.min'`` (finite),
    ``'0'`` (weight leaks onto blocked keys) and ``'-1e9'`` in float16 (PyTorch refuses; the
    explorer shows the error in words).
    """
    return MaskExplorer(mask=mask, fill=fill, dtype=dtype)
