"""The head explorer: every head's attention at a glance, one enlarged with token labels."""

from __future__ import annotations

import html

import ipywidgets as w
import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..diagnostics import attention_entropy
from ._base import Explorer, metrics_table, note
from .figures import WEIGHT_SCALE, add_heatmap, heatmap_changes, plain, send_update, style, to_numpy

__all__ = ["head_explorer", "HeadExplorer"]

MAX_PANELS = 96


def _as_layers_heads(weights) -> np.ndarray:
    array = to_numpy(weights, "weights")
    if array.ndim == 3:
        array = array[None]
    if array.ndim != 4:
        raise ValueError(
            f"weights has shape {tuple(array.shape)} ({array.ndim} dimensions); head_explorer needs "
            f"(n_heads, n_q, n_k) or (n_layers, n_heads, n_q, n_k). For a batch, pick one sequence "
            f"first, e.g. weights[0]."
        )
    n_layers, n_heads, n_q, n_k = array.shape
    if min(array.shape) == 0:
        raise ValueError(f"weights has shape {tuple(array.shape)}: every dimension must be at least 1.")
    if n_layers * n_heads > MAX_PANELS:
        raise ValueError(
            f"weights holds {n_layers} layers x {n_heads} heads = {n_layers * n_heads} heads; the grid "
            f"shows at most {MAX_PANELS}. Pass a few layers, e.g. weights[:4]."
        )
    return array


class HeadExplorer(Explorer):
    """Controls ``layer`` and ``head``; figures ``grid`` (every head, small; click one to pick it)
    and ``selected`` (the picked head, enlarged with token labels). ``metrics``: ``entropy`` and
    ``max_weight`` of the picked head (means over its queries), ``layer``, ``head``.
    """

    title = "Attention heads"

    def __init__(self, weights, tokens=None):
        super().__init__()
        self.weights = _as_layers_heads(weights)
        n_layers, n_heads, n_q, n_k = self.weights.shape
        if tokens is not None:
            tokens = [str(token) for token in tokens]
            if len(tokens) != n_k:
                raise ValueError(
                    f"tokens has {len(tokens)} entries but weights has n_k={n_k} keys (its last "
                    f"dimension); give one token per position."
                )
        self.tokens = tokens
        self.key_labels = tokens
        self.query_labels = tokens if tokens is not None and n_q == n_k else None
        wide = {"description_width": "50px"}
        self.controls = {
            "layer": w.IntSlider(value=0, min=0, max=n_layers - 1, description="layer", style=wide,
                                 disabled=n_layers == 1, layout=w.Layout(width="280px")),
            "head": w.IntSlider(value=0, min=0, max=n_heads - 1, description="head", style=wide,
                                disabled=n_heads == 1, layout=w.Layout(width="280px")),
        }
        self.figures = {"grid": self._grid_figure(), "selected": self._selected_figure()}
        self._sent = {name: {} for name in self.figures}
        heading = w.HTML(f"<b style='font-size:15px'>{self.title}</b>: {n_layers} layer(s) x {n_heads} "
                         "head(s); click a small map or use the sliders to enlarge it")
        self._widget = w.VBox([
            heading, w.HBox([self.controls["layer"], self.controls["head"]]), self._problem,
            self.figures["grid"],
            w.HBox([self.figures["selected"], self._text],
                   layout=w.Layout(flex_flow="row wrap", align_items="flex-start"))])
        self._watch()
        for trace in self.figures["grid"].data:
            if isinstance(trace, go.Heatmap):
                trace.on_click(self._on_click)
        self.update()

    def _on_click(self, trace, points, _state):
        # plotly calls every trace's click handler for one click; only the clicked trace has points
        if points is not None and not points.point_inds:
            return
        layer, head = trace.meta
        if (self.controls["layer"].value, self.controls["head"].value) == (layer, head):
            return
        # Two controls, one update: set the layer silently, then the head (which triggers the update).
        self.controls["layer"].unobserve(self._on_change, names="value")
        try:
            self.controls["layer"].value = layer
        finally:
            self.controls["layer"].observe(self._on_change, names="value")
        if self.controls["head"].value == head:
            self.update()
        else:
            self.controls["head"].value = head

    # -- figures ---------------------------------------------------------------------------------
    def _grid_figure(self):
        n_layers, n_heads, n_q, n_k = self.weights.shape
        titles = [f"L{layer} H{head}" if n_layers > 1 else f"head {head}"
                  for layer in range(n_layers) for head in range(n_heads)]
        fig = make_subplots(rows=n_layers, cols=n_heads, subplot_titles=titles,
                            horizontal_spacing=min(0.04, 0.4 / n_heads),
                            vertical_spacing=min(0.08, 0.5 / n_layers))
        for layer in range(n_layers):
            for head in range(n_heads):
                fig.add_trace(go.Heatmap(
                    z=plain(self.weights[layer, head]), zmin=0, zmax=1,          # NaN: a blank gap
                    colorscale=WEIGHT_SCALE, showscale=(layer == 0 and head == n_heads - 1),
                    colorbar={"title": {"text": "weight"}, "thickness": 12}, meta=[layer, head],
                    hovertemplate=f"layer {layer}, head {head}<br>query %{{y}} → key %{{x}}"
                                  "<br>weight %{z:.6g}<extra></extra>"),
                    row=layer + 1, col=head + 1)
        fig.update_xaxes(showticklabels=False, range=[-0.5, n_k - 0.5], showgrid=False, zeroline=False)
        fig.update_yaxes(showticklabels=False, range=[n_q - 0.5, -0.5], showgrid=False, zeroline=False)
        fig.add_shape(type="rect", xref="x domain", yref="y domain", x0=-0.04, x1=1.04, y0=-0.04, y1=1.04,
                      line={"color": "#e4002b", "width": 3})
        panel = max(60, min(140, 900 // n_heads))
        style(fig, "Every head (rows: layers, columns: heads)<br>red frame = enlarged below",
              height=n_layers * (panel + 30) + 130)
        fig.update_layout(width=max(380, min(1000, n_heads * panel + 140)),
                          margin={"l": 20, "r": 20, "t": 100, "b": 20})
        return go.FigureWidget(fig)

    def _selected_figure(self):
        n_q, n_k = self.weights.shape[-2:]
        fig = go.Figure()
        add_heatmap(fig, self.weights[0, 0], query_labels=self.query_labels, key_labels=self.key_labels)
        size = min(540, max(360, 26 * max(n_q, n_k) + 170))
        style(fig, "", height=size)
        fig.update_layout(width=size + 100)
        return go.FigureWidget(fig)

    # -- one change ------------------------------------------------------------------------------
    def _compute(self, values):
        layer, head = int(values["layer"]), int(values["head"])
        weights = self.weights[layer, head]                                   # (n_q, n_k)
        tensor = torch.from_numpy(np.nan_to_num(weights, nan=0.0))
        nan_rows = np.isnan(weights).any(axis=-1)
        row_max = np.where(np.isnan(weights), -np.inf, weights).max(axis=-1)
        top = np.where(np.isnan(weights), -np.inf, weights).argmax(axis=-1)
        live = ~nan_rows
        return {
            "layer": layer, "head": head, "weights": weights, "top": top, "nan_rows": nan_rows,
            "metrics": {
                "layer": layer, "head": head,
                "entropy": float(attention_entropy(tensor)[torch.from_numpy(live)].mean()) if live.any()
                else float("nan"),
                "max_weight": float(row_max[live].mean()) if live.any() else float("nan"),
                "nan_rows": int(nan_rows.sum()),
            },
        }

    def _draw(self, state):
        layer, head = state["layer"], state["head"]
        n_heads = self.weights.shape[1]
        axis = layer * n_heads + head + 1
        suffix = "" if axis == 1 else str(axis)
        send_update(self.figures["grid"], cache=self._sent["grid"], layout={
            "shapes[0].xref": f"x{suffix} domain", "shapes[0].yref": f"y{suffix} domain"})
        changes, _ = heatmap_changes(0, state["weights"])
        send_update(self.figures["selected"], changes, cache=self._sent["selected"],
                    layout={"title.text": f"Layer {layer}, head {head}"})

    def _describe(self, state):
        m = state["metrics"]
        weights, top = state["weights"], state["top"]
        keys = self.key_labels or [str(j) for j in range(weights.shape[-1])]
        queries = self.query_labels or [str(i) for i in range(weights.shape[0])]
        lines = []
        for i in range(min(len(queries), 12)):
            j = int(top[i])
            if state["nan_rows"][i]:
                lines.append(f"{html.escape(queries[i])} → NaN (this row's weights are NaN)")
            else:
                lines.append(f"{html.escape(queries[i])} → {html.escape(keys[j])} ({weights[i, j]:.2f})")
        more = "" if len(queries) <= 12 else f"<br>… {len(queries) - 12} more queries"
        table = metrics_table(["", "this head"], [["entropy (nats)", m["entropy"]],
                                                  ["max_weight", m["max_weight"]]])
        return (note(f"<b>layer {state['layer']}, head {state['head']}</b>") + table
                + note("Where each query looks most:<br>" + "<br>".join(lines) + more))


def head_explorer(weights, tokens=None) -> HeadExplorer:
    """A grid of attention heads, one picked (by slider or click) and enlarged with token labels.

    ``weights``: ``(n_heads, n_q, n_k)`` or ``(n_layers, n_heads, n_q, n_k)``, torch or numpy,
    e.g. the weights :class:`attnviz.MultiHeadAttention` returns for one sequence
    (``weights[0]``). ``tokens``: one label per key position (also used for the queries when
    ``n_q == n_k``).
    """
    return HeadExplorer(weights, tokens=tokens)
