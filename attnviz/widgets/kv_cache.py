"""The KV-cache calculator: how much memory the cached keys and values take, MHA vs GQA vs MQA."""

from __future__ import annotations

import ipywidgets as w

from .._validate import typed_whole_number
from ..explore import KV_DTYPES, binary_unit, format_bytes, kv_cache_state
from ._base import Explorer, heading, metrics_table, note
from .canvas import bars_panel

__all__ = ["kv_cache_explorer", "KVCacheExplorer", "sharing_sentence"]

KINDS = ("MHA", "GQA", "MQA")
# the typed sizes: (label, lowest, highest). Typed into a FloatText, so that 64.9 or 1e3 reach the
# kernel as typed and are answered in words (an IntText's box turns 64.9 into 649 without a word)
SIZES = {"n_layers": ("layers", 1, 1000), "n_heads": ("query heads", 1, 1024),
         "n_kv_heads": ("KV heads", 1, 1024), "d_head": ("d_head", 1, 4096),
         "seq_len": ("seq_len", 0, 10_000_000), "batch": ("batch", 1, 4096)}
COLOURS = ("#3b75af", "#21918c", "#5ec962")


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def sharing_sentence(n_heads: int, n_kv_heads: int, bytes_mha: int, bytes_gqa: int) -> str:
    """How the query heads share the KV heads, and what that saves, in words."""
    per = n_heads // n_kv_heads
    verb = "shares" if n_heads == 1 else "share"
    share = (f"{_plural(n_heads, 'query head')} {verb} {_plural(n_kv_heads, 'KV head')} "
             f"({per} query head{'' if per == 1 else 's'} per KV head)")
    if bytes_gqa == 0:
        return f"{share}: with no position cached, every cache is empty."
    if bytes_mha == bytes_gqa:
        return f"{share}: the cache is the same size as full multi-head attention's."
    return f"{share}: the cache is {bytes_mha / bytes_gqa:g}x smaller than full multi-head attention's."


def whole_sizes(values: dict) -> dict:
    """The typed sizes as whole numbers within their ranges; ValueError, in words with the box's own
    label, for a fraction (64.9), a value out of range or one that is not a number."""
    return {name: typed_whole_number(values[name], box if box == name else f"{box} ({name})", low, high)
            for name, (box, low, high) in SIZES.items()}


class KVCacheExplorer(Explorer):
    """Controls ``n_layers``, ``n_heads``, ``n_kv_heads``, ``d_head``, ``seq_len``, ``dtype``,
    ``batch``; panel ``bytes`` (MHA, GQA with ``n_kv_heads``, MQA). ``metrics``: ``bytes``,
    ``bytes_mha``, ``bytes_gqa``, ``bytes_mqa``, ``per_token_bytes``, ``text``.
    """

    title = "KV-cache calculator"
    kind = "kv_cache"

    def __init__(self, n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, seq_len=4096, dtype="float16",
                 batch=1):
        super().__init__()
        given = {"n_layers": n_layers, "n_heads": n_heads, "n_kv_heads": n_kv_heads, "d_head": d_head,
                 "seq_len": seq_len, "batch": batch}
        kv_cache_state(**whole_sizes(given), dtype=dtype)
        wide = {"description_width": "95px"}
        self.controls = {
            name: w.FloatText(value=given[name], description=SIZES[name][0], style=wide,
                              layout=w.Layout(width="215px"))
            for name in SIZES
        }
        self.controls |= {
            "dtype": w.Dropdown(options=list(KV_DTYPES), value=dtype, description="dtype", style=wide,
                                layout=w.Layout(width="235px")),
        }
        c = self.controls
        grid = w.Box([c[k] for k in ("n_layers", "n_heads", "n_kv_heads", "d_head", "seq_len", "batch",
                                     "dtype")],
                     layout=w.Layout(flex_flow="row wrap", max_width="700px", grid_gap="4px 8px"))
        self._widget = self._box(grid, heading(
            self.title,
            "bytes = 2 (K and V) x layers x KV heads x d_head x seq_len x bytes per number x batch"))
        self._watch()
        self.update()

    def _compute(self, values):
        values = {**values, **whole_sizes(values)}
        try:
            state = kv_cache_state(values["n_layers"], values["n_heads"], values["n_kv_heads"],
                                   values["d_head"], values["seq_len"], values["dtype"], values["batch"])
        except ValueError as err:      # said with the controls' own labels beside the argument names
            words = str(err).replace("n_kv_heads=", "KV heads (n_kv_heads) = ")
            raise ValueError(words.replace("n_heads=", "query heads (n_heads) = ")) from None
        state["settings"] = dict(values)
        return state

    def _layout(self, state):
        sizes = [state["bytes"][kind] for kind in KINDS]
        unit, scale = binary_unit(max(sizes))
        v = state["settings"]
        kv = (v["n_heads"], v["n_kv_heads"], 1)
        labels = [f"{kind} ({_plural(n, 'KV head')})" for kind, n in zip(KINDS, kv, strict=True)]
        bars = bars_panel(
            "bytes", labels, {f"KV cache ({unit})": ([size / scale for size in sizes], COLOURS[1])},
            title=(f"{_plural(v['n_layers'], 'layer')}, d_head {v['d_head']}, "
                   f"{_plural(v['seq_len'], 'position')}, "
                   f"{v['dtype']}, batch {v['batch']}"),
            x_title="attention variant (KV heads)", y_title=f"KV cache ({unit})",
            ymax=max(sizes) / scale * 1.15 if max(sizes) else 1.0,
            text=[[format_bytes(size) for size in sizes]],
            hover=[[f"{label}: {format_bytes(size)} ({size:,} bytes)" for label, size in
                    zip(labels, sizes, strict=True)]], width=380, height=220,
            description="KV cache size: " + "; ".join(
                f"{label} {format_bytes(size)}" for label, size in zip(labels, sizes, strict=True)))
        bars.options["colours"] = list(COLOURS)
        return [{"title": "", "panels": ["bytes"]}], {"bytes": bars}

    def _metrics(self, state):
        m = dict(state["metrics"])
        m.update({f"bytes_{kind.lower()}": state["bytes"][kind] for kind in KINDS})
        return m

    def _describe(self, state):
        m = self._metrics(state)
        v = state["settings"]
        rows = [[f"{kind}", format_bytes(state["bytes"][kind])] for kind in KINDS]
        rows.append(["per position (GQA, one sequence)", format_bytes(m["per_token_bytes"])])
        sentence = sharing_sentence(v["n_heads"], v["n_kv_heads"], state["bytes"]["MHA"],
                                    state["bytes"]["GQA"])
        return (metrics_table(["", "KV cache"], rows)
                + note(f"{sentence} <small>Units are binary: 1 KiB = 1024 bytes.</small>"))


def kv_cache_explorer(n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, seq_len=4096, dtype="float16",
                      batch=1) -> KVCacheExplorer:
    """Type a model's shape and see its KV cache in KiB/MiB/GiB, for MHA, GQA and MQA.

    Bytes come from :func:`attnviz.kv_cache_bytes`. A grouping that does not work (KV heads that
    do not divide the query heads) is explained in the explorer, not raised.
    """
    return KVCacheExplorer(n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads, d_head=d_head,
                           seq_len=seq_len, dtype=dtype, batch=batch)
