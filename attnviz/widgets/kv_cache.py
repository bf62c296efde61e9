"""The KV-cache calculator: how much memory the cached keys and values take, MHA vs GQA vs MQA."""

from __future__ import annotations

import ipywidgets as w
import plotly.graph_objects as go

from ..explore import KV_DTYPES, format_bytes, kv_cache_state
from ._base import Explorer, metrics_table, note
from .figures import send_update, style

__all__ = ["kv_cache_explorer", "KVCacheExplorer"]

KINDS = ("MHA", "GQA", "MQA")
COLOURS = ("#3b528b", "#21918c", "#5ec962")


def _unit(n_bytes: int) -> tuple[str, int]:
    for unit, power in (("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if n_bytes >= 1024**power:
            return unit, 1024**power
    return "B", 1


class KVCacheExplorer(Explorer):
    """Controls ``n_layers``, ``n_heads``, ``n_kv_heads``, ``d_head``, ``seq_len``, ``dtype``,
    ``batch``; figure ``bytes`` (MHA, GQA with ``n_kv_heads``, MQA). ``metrics``: ``bytes``,
    ``bytes_mha``, ``bytes_gqa``, ``bytes_mqa``, ``per_token_bytes``, ``text``.
    """

    title = "KV-cache calculator"

    def __init__(self, n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, seq_len=4096, dtype="float16",
                 batch=1):
        super().__init__()
        kv_cache_state(n_layers, n_heads, n_kv_heads, d_head, seq_len, dtype, batch)
        wide = {"description_width": "95px"}

        def number(value, low, high, label):
            return w.BoundedIntText(value=value, min=low, max=high, description=label, style=wide,
                                    layout=w.Layout(width="215px"))

        self.controls = {
            "n_layers": number(n_layers, 1, 1000, "layers"),
            "n_heads": number(n_heads, 1, 1024, "query heads"),
            "n_kv_heads": number(n_kv_heads, 1, 1024, "KV heads"),
            "d_head": number(d_head, 1, 4096, "d_head"),
            "seq_len": number(seq_len, 0, 10_000_000, "seq_len"),
            "batch": number(batch, 1, 4096, "batch"),
            "dtype": w.Dropdown(options=list(KV_DTYPES), value=dtype, description="dtype", style=wide,
                                layout=w.Layout(width="235px")),
        }
        fig = go.Figure(go.Bar(x=list(KINDS), y=[0, 0, 0], marker_color=list(COLOURS), text=["", "", ""],
                               textposition="outside", customdata=["", "", ""],
                               hovertemplate="%{x}: %{customdata}<extra></extra>"))
        fig.update_xaxes(title_text="attention variant (KV heads)")
        fig.update_yaxes(title_text="KV cache")
        style(fig, "", height=380)
        fig.update_layout(width=600)
        self.figures = {"bytes": go.FigureWidget(fig)}
        self._sent = {"bytes": {}}
        c = self.controls
        grid = w.GridBox([c[k] for k in ("n_layers", "n_heads", "n_kv_heads", "d_head", "seq_len", "batch",
                                          "dtype")],
                         layout=w.Layout(grid_template_columns="repeat(3, 220px)", grid_gap="4px 8px"))
        heading = w.HTML(f"<b style='font-size:15px'>{self.title}</b>: bytes = 2 (K and V) x layers x "
                         "KV heads x d_head x seq_len x bytes per number x batch")
        self._widget = w.VBox([heading, grid, self._problem,
                               w.HBox([self.figures["bytes"], self._text],
                                      layout=w.Layout(flex_flow="row wrap", align_items="flex-start"))])
        self._watch()
        self.update()

    def _compute(self, values):
        state = kv_cache_state(values["n_layers"], values["n_heads"], values["n_kv_heads"], values["d_head"],
                               values["seq_len"], values["dtype"], values["batch"])
        state["settings"] = dict(values)
        return state

    def _draw(self, state):
        sizes = [state["bytes"][kind] for kind in KINDS]
        unit, scale = _unit(max(sizes))
        v = state["settings"]
        kv = (v["n_heads"], v["n_kv_heads"], 1)
        send_update(self.figures["bytes"], cache=self._sent["bytes"], traces={0: {
            "y": [size / scale for size in sizes],
            "text": [format_bytes(size) for size in sizes],
            "customdata": [f"{format_bytes(size)} ({size:,} bytes)" for size in sizes],
            "x": [f"{kind} ({n} KV heads)" for kind, n in zip(KINDS, kv, strict=True)],
        }}, layout={
            "yaxis.title.text": f"KV cache ({unit})",
            "title.text": (f"{v['n_layers']} layers, d_head {v['d_head']}, {v['seq_len']:,} positions, "
                           f"{v['dtype']}, batch {v['batch']}"),
        })

    def _metrics(self, state):
        m = dict(state["metrics"])
        m.update({f"bytes_{kind.lower()}": state["bytes"][kind] for kind in KINDS})
        return m

    def _describe(self, state):
        m = self._metrics(state)
        v = state["settings"]
        rows = [[f"{kind}", format_bytes(state["bytes"][kind])] for kind in KINDS]
        rows.append(["per position (GQA, one sequence)", format_bytes(m["per_token_bytes"])])
        saving = state["bytes"]["MHA"] / state["bytes"]["GQA"] if state["bytes"]["GQA"] else 1
        return (metrics_table(["", "KV cache"], rows)
                + note(f"{v['n_heads']} query heads share {v['n_kv_heads']} KV heads "
                       f"({m['heads_per_kv_head']} each): the cache is {saving:g}x smaller than "
                       "multi-head attention's. <small>Units are binary: 1 KiB = 1024 bytes.</small>"))


def kv_cache_explorer(n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, seq_len=4096, dtype="float16",
                      batch=1) -> KVCacheExplorer:
    """Type a model's shape and see its KV cache in KiB/MiB/GiB, for MHA, GQA and MQA.

    Bytes come from :func:`attnviz.kv_cache_bytes`. A grouping that does not work (KV heads that
    do not divide the query heads) is explained in the explorer, not raised.
    """
    return KVCacheExplorer(n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads, d_head=d_head,
                           seq_len=seq_len, dtype=dtype, batch=batch)
