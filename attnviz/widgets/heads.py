"""The head explorer: every head's attention at a glance, one enlarged with token labels."""

from __future__ import annotations

import html

import ipywidgets as w

from ..explore import head_weights, heads_state
from ._base import Explorer, heading, metrics_table, note
from .canvas import heatmap_panel

__all__ = ["head_explorer", "HeadExplorer"]


_LISTED = 32   # the side panel lists each query's most-attended key up to this many queries


def _slider_layout(count: int) -> w.Layout:
    return w.Layout(width="280px", display="none" if count == 1 else None)


class HeadExplorer(Explorer):
    """Controls ``layer`` and ``head``; panels ``L<layer> H<head>`` (every head, small; click
    one, or focus it and press Enter, to pick it) and ``selected`` (the picked head, enlarged
    with token labels). ``metrics``: ``entropy`` and ``max_weight`` of the picked head (means
    over its queries), ``layer``, ``head``, ``nan_rows``.
    """

    title = "Attention heads"
    kind = "head"

    def __init__(self, weights, tokens=None, mask=None):
        super().__init__()
        self.weights = head_weights(weights).numpy()                 # checked once
        first = heads_state(self.weights, tokens=tokens, mask=mask)  # and the tokens and mask with it
        self.tokens = first["key_labels"]
        self.mask = None if first["mask"] is None else first["mask"].numpy()
        n_layers, n_heads, _n_q, _n_k = self.weights.shape
        wide = {"description_width": "50px"}
        self.controls = {
            # a slider with one value has nothing to choose: kept (and disabled) but not shown
            "layer": w.IntSlider(value=0, min=0, max=n_layers - 1, description="layer", style=wide,
                                 disabled=n_layers == 1, layout=_slider_layout(n_layers)),
            "head": w.IntSlider(value=0, min=0, max=n_heads - 1, description="head", style=wide,
                                disabled=n_heads == 1, layout=_slider_layout(n_heads)),
        }
        self.grid = {self._name(layer, head): self._small(layer, head)
                     for layer in range(n_layers) for head in range(n_heads)}
        self.canvas.set_fixed(self.grid)
        self._widget = self._box(
            w.HBox([self.controls["layer"], self.controls["head"]], layout=w.Layout(flex_flow="row wrap")),
            heading(self.title, f"{n_layers} layer(s) x {n_heads} head(s); click a small map (or focus "
                                "it and press Enter) or use the sliders to enlarge it"))
        self._watch()
        self.update()

    def _name(self, layer, head) -> str:
        return f"L{layer} H{head}"

    def _small(self, layer, head):
        n_layers, n_heads, _n_q, _n_k = self.weights.shape
        room = int(min(96, max(30, 440 // n_heads - 24)))      # 4 heads fit in 440 px; more scroll
        title = f"L{layer} H{head}" if n_layers > 1 else f"head {head}"
        return heatmap_panel(self._name(layer, head), self.weights[layer, head], self.mask, title=title,
                             small=True, room=room, pick=[layer, head], what=f"layer {layer}, head {head}")

    def _on_pick(self, pick):
        try:
            layer, head = (int(value) for value in pick)
        except (TypeError, ValueError):
            return
        if (self.controls["layer"].value, self.controls["head"].value) == (layer, head):
            return
        # Two controls, one update: both values are set before the recomputation reads them.
        self.controls["layer"].unobserve(self._on_change, names="value")
        try:
            self.controls["layer"].value = layer
        finally:
            self.controls["layer"].observe(self._on_change, names="value")
        if self.controls["head"].value == head:
            self._on_change()
        else:
            self.controls["head"].value = head

    # -- one change ------------------------------------------------------------------------------
    def _compute(self, values):
        return heads_state(self.weights, values["layer"], values["head"], tokens=self.tokens, mask=self.mask)

    def _layout(self, state):
        layer, head = state["layer"], state["head"]
        n_q, n_k = state["weights"].shape
        mask = None if state["mask"] is None else state["mask"].numpy()
        selected = heatmap_panel("selected", state["weights"].numpy(), mask,
                                 title=f"Layer {layer}, head {head}",
                                 query_labels=state["query_labels"], key_labels=state["key_labels"],
                                 room=min(440, max(260, 34 * max(n_q, n_k))),
                                 what=f"the attention weights of layer {layer}, head {head}")
        sections = [{"title": "Every head (rows: layers, columns: heads); red frame = enlarged below",
                     "panels": list(self.grid), "grid": self.weights.shape[1]},
                    {"title": "", "panels": ["selected"]}]
        return sections, {"selected": selected}

    def _selected(self, state):
        return self._name(state["layer"], state["head"])

    def _describe(self, state):
        m = state["metrics"]
        weights, top, nan_rows = state["weights"].numpy(), state["top"].numpy(), state["nan_rows"].numpy()
        keys = state["key_labels"] or [str(j) for j in range(weights.shape[-1])]
        queries = state["query_labels"] or [str(i) for i in range(weights.shape[0])]
        shown = len(queries) if len(queries) <= _LISTED else _LISTED     # every query of a short sequence
        lines = []
        for i in range(shown):
            j = int(top[i])
            if nan_rows[i]:
                lines.append(f"{html.escape(queries[i])} → NaN (this row's weights are NaN)")
            else:
                lines.append(f"{html.escape(queries[i])} → {html.escape(keys[j])} ({weights[i, j]:.2f})")
        more = "" if shown == len(queries) else f"<br>… {len(queries) - shown} more queries"
        listing = "<br>".join(lines)
        if shown > 12:                                  # two columns, queries running down the first
            listing = f"<div class='attnviz-columns'>{listing}</div>"
        table = metrics_table(["", "this head, mean over its rows"], [["entropy (nats)", m["entropy"]],
                                                                      ["largest weight", m["max_weight"]]])
        return (note(f"<b>layer {state['layer']}, head {state['head']}</b>") + table
                + note("Where each query looks most:<br>" + listing + more))


def head_explorer(weights, tokens=None, mask=None) -> HeadExplorer:
    """A grid of attention heads, one picked (by slider or click) and enlarged with token labels.

    ``weights``: ``(n_heads, n_q, n_k)`` or ``(n_layers, n_heads, n_q, n_k)``, torch or numpy,
    e.g. the weights :class:`attnviz.MultiHeadAttention` returns for one sequence
    (``weights[0]``). ``tokens``: one label per key position (also used for the queries when
    ``n_q == n_k``). ``mask``: the mask the heads attended under (bool, True = may attend, such as
    ``attnviz.causal_mask(n)``), whose blocked cells are drawn grey, or None.
    """
    return HeadExplorer(weights, tokens=tokens, mask=mask)
