"""The mask explorer: which fill value, in which dtype, keeps masked keys at exactly zero weight."""

from __future__ import annotations

import html

import ipywidgets as w
import numpy as np

from ..explore import DTYPES, FILLS, MASK_LENGTHS, MASKS, mask_state
from ._base import Explorer, heading, metrics_table, note
from .canvas import heatmap_panel

__all__ = ["mask_explorer", "MaskExplorer"]


def _sequence_title(index: int, n_real: int, n: int) -> str:
    if n_real == 0:
        return f"seq {index}: empty, {n} pad"
    if n_real == n:
        return f"seq {index}: {n} real"
    return f"seq {index}: {n_real} real, {n - n_real} pad"


class MaskExplorer(Explorer):
    """Controls ``mask``, ``fill``, ``dtype``; panels ``weights/i``, ``scores/i`` (after filling)
    and ``mask/i``, one of each per sequence ``i`` of a small padded batch (the last sequence is
    empty, so its rows are fully masked). ``metrics``: ``nan_rows``, ``dead_rows``,
    ``leaked_weight``, ``error`` (see :func:`attnviz.explore.mask_state`). A fill PyTorch
    refuses is shown in words in the explorer, never raised.
    """

    title = "Masking: the fill value and the dtype"
    kind = "mask"

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
        self.titles = [_sequence_title(i, n_real, self.n) for i, n_real in enumerate(MASK_LENGTHS)]
        c = self.controls
        self._widget = self._box(
            w.HBox([c["mask"], c["fill"], c["dtype"]], layout=w.Layout(flex_flow="row wrap")),
            heading(self.title, "scores.masked_fill(~mask, fill) in the chosen dtype, then torch.softmax"))
        self._watch()
        self.update()

    # -- one change ------------------------------------------------------------------------------
    def _compute(self, values):
        state = mask_state(values["mask"], values["fill"], values["dtype"])
        state["settings"] = dict(values)
        return state

    def _layout(self, state):
        allowed = state["mask"].numpy()
        mask, fill, dtype = (state["settings"][k] for k in ("mask", "fill", "dtype"))
        m = state["metrics"]
        raw = state["scores"].numpy()
        filled = state["filled_scores"]
        label = None if filled is None else ("no fill" if mask == "none" else fill)
        cell_text = "min" if label == "finfo.min" else label      # "finfo.min" is wider than a cell
        shown_scores = raw if filled is None else filled.numpy().astype(np.float64)
        bound = float(np.abs(raw).max()) or 1.0
        panels = {}
        for i, title in enumerate(self.titles):
            if state["weights"] is not None:           # PyTorch refused: no weight panels, the title says why
                panels[f"weights/{i}"] = heatmap_panel(
                    f"weights/{i}", state["weights"][i].numpy().astype(np.float64), allowed[i], title=title,
                    room=150, what=f"attention weights of sequence {i}", colour_bar=i == self.batch - 1)
            panels[f"scores/{i}"] = heatmap_panel(
                f"scores/{i}", shown_scores[i], allowed[i], title=title, scale="scores", room=150,
                colour_bar=i == self.batch - 1,
                value_name="score", vmin=-bound, vmax=bound, masked_text=cell_text or "",
                masked_hover=("masked: holds the fill " + label) if label else "masked (not filled: "
                "masked_fill failed)", what=f"scores of sequence {i} after the fill")
            panels[f"mask/{i}"] = heatmap_panel(
                f"mask/{i}", allowed[i].astype(np.float64), None, title=title, scale="mask", room=120,
                value_name="may attend (1) or blocked (0)", what=f"the mask of sequence {i}")
        if state["weights"] is None:
            weights_title = ("No weights: PyTorch raised an error for this fill and dtype "
                             "(see the message above)")
        else:
            weights_title = f"Weights = torch.softmax(filled scores) in {dtype}"
            if m["nan_rows"]:
                weights_title += f": {m['nan_rows']} rows are NaN (pink)"
        scores_title = (f"Scores after masked_fill(~mask, {fill}) in {dtype}" if filled is not None
                        else f"Scores before filling: masked_fill(~mask, {fill}) failed in {dtype}")
        names = range(self.batch)
        sections = [
            {"title": weights_title, "panels": [f"weights/{i}" for i in names if f"weights/{i}" in panels]},
            {"title": scores_title, "panels": [f"scores/{i}" for i in names]},
            {"title": f"The mask '{mask}'", "panels": [f"mask/{i}" for i in names],
             "legend": [{"kind": "allowed", "text": "blue: may attend"},
                        {"kind": "masked", "text": "grey: blocked"}]},
        ]
        return sections, panels

    def _state_problem(self, state):
        return state["metrics"]["error"]

    def _describe(self, state):
        m = state["metrics"]
        mask, fill, dtype = (state["settings"][k] for k in ("mask", "fill", "dtype"))
        if m["error"]:
            return note(f"<b>{html.escape(fill)} in {dtype}</b>: PyTorch raised, so there are no weights. "
                        "The message above says why.")
        lines = []
        if mask == "none":
            lines.append("No mask: every query attends to every key, padding included.")
        elif "padding" not in mask:    # 'seq 2: empty, 5 pad' with ordinary weights, read as a bug
            lines.append(f"The {mask} mask leaves the padding unmasked: seq 2, all padding, attends like the "
                         "others.")
        if m["nan_rows"]:
            lines.append(f"<b>{m['nan_rows']} rows came out NaN</b>: they have no allowed key, and "
                         "the softmax of a row of -inf is 0/0. NaN then spreads through everything after.")
        elif m["dead_rows"] and mask != "none":
            lines.append(f"{m['dead_rows']} rows have no allowed key; with this fill they come out finite "
                         "(spread over the blocked keys), which is harmless only if those rows are ignored.")
        if m["leaked_weight"] and m["leaked_weight"] > 1e-6:
            lines.append(f"<b>Leak</b>: a query with an allowed key still puts {m['leaked_weight']:.4g} of "
                         "its weight on blocked keys (red ×). A fill of 0 is an ordinary score, not a block.")
        elif mask != "none":
            lines.append("Rows with an allowed key put exactly 0 weight on blocked keys.")
        rows = [["nan_rows", str(m["nan_rows"])], ["dead_rows (no allowed key)", str(m["dead_rows"])],
                ["leaked_weight", m["leaked_weight"]]]
        return (note(f"<b>mask {mask}, fill {html.escape(fill)}, {dtype}</b>")
                + metrics_table(["", "at this setting"], rows) + note("<br>".join(lines)))


def mask_explorer(mask="padding", fill="-inf", dtype="float32") -> MaskExplorer:
    """A padded batch (lengths 5, 3 and 0) masked with a chosen fill value and dtype.

    Try ``fill='-inf'`` (NaN rows where a query has no allowed key), ``'finfo.min'`` (finite),
    ``'0'`` (weight leaks onto blocked keys) and ``'-1e9'`` in float16 (PyTorch refuses; the
    explorer shows the error in words).
    """
    return MaskExplorer(mask=mask, fill=fill, dtype=dtype)
