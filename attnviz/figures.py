"""Static plotly figures in the course's one look (see STYLE.md). Imports plotly only, no ipywidgets.

Every builder returns a :class:`Figure`, a ``plotly.graph_objects.Figure`` that displays itself
quickly: leave it as a cell's last expression. The live explorers live in ``attnviz.widgets``.

Attention matrices: query rows top to bottom (row 0 at the top), key columns left to right, axis
titles "key (attended to)" and "query (asking)", weights on a fixed 0-1 viridis scale (colour-blind
safe). Masked cells are grey, not a colour of the scale; weights that came out NaN are pink and
marked "NaN"; a masked cell that still got weight (a leak) keeps its colour and carries a red ×.
A heatmap figure's traces are named: "weight" (or the value's name), "masked", "NaN", "leak",
"cell labels", then the three legend entries.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

__all__ = [
    "Figure",
    "attention_heatmap",
    "scores_heatmap",
    "line_chart",
    "bar_chart",
    "style",
    "to_numpy",
    "WEIGHT_SCALE",
    "SCORE_SCALE",
    "KEY_TITLE",
    "QUERY_TITLE",
]

WEIGHT_SCALE = "Viridis"          # sequential, colour-blind safe, 0 = dark purple, 1 = yellow
SCORE_SCALE = "RdBu_r"            # diverging, centred at 0 (blue negative, red positive)
MASKED_GREY = "#c8c8c8"
NAN_PINK = "#ff66cc"
LEAK_RED = "#e4002b"
KEY_TITLE = "key (attended to)"
QUERY_TITLE = "query (asking)"
LABELS_UP_TO = 40                 # print token labels on the axes up to this many positions
TEXT_UP_TO = 12                   # write values/markers inside cells up to this many positions
AXIS_TITLE_CHARS = 30             # a longer axis title is broken onto two lines
PLOTLY_MIME = "application/vnd.plotly.v1+json"


class Figure(go.Figure):
    """A ``go.Figure`` that displays through JupyterLab's plotly renderer without plotly.io.

    plotly's own display path (``plotly.io.show``) imports ``plotly.io._renderers``, which imports
    nbformat and jsonschema (1-3 s the first time in a kernel, for a check our figures do not need:
    the builders set only valid properties, and plotly validated each one on assignment). This
    emits the same ``application/vnd.plotly.v1+json`` bundle from ``to_json(validate=False)``, plus
    a one-line text alternative. Everything else is plain ``go.Figure``.
    """

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        import json

        title = self.layout.title.text or "untitled"
        return {PLOTLY_MIME: json.loads(self.to_json(validate=False)),
                "text/plain": f"<plotly figure: {title}>"}

    def _ipython_display_(self):
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)


def to_numpy(values, name: str = "weights", dims: int | None = None) -> np.ndarray:
    """A torch tensor, numpy array or nested list as a float64 numpy array (with a named error)."""
    if type(values).__module__.startswith("torch"):
        values = values.detach().to("cpu").double().numpy()
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a torch tensor, a numpy array or a list of numbers, "
                        f"got {type(values).__name__}.") from None
    if dims is not None and array.ndim != dims:
        raise ValueError(
            f"{name} has shape {tuple(array.shape)} ({array.ndim} dimensions) but must have {dims}"
            + (": (queries, keys)." if dims == 2 else ".")
        )
    return array


def style(fig: go.Figure, title: str = "", height: int = 420) -> Figure:
    """The course's layout: white template, readable font, the title saying what changed.

    Returns a :class:`Figure` (``fig`` itself if it is one, otherwise a copy of it).
    """
    if not isinstance(fig, Figure):
        fig = Figure(fig)
    fig.update_layout(
        template="plotly_white",
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        font={"size": 13},
        height=height,
        margin={"l": 80, "r": 30, "t": 70, "b": 115},
        # the legend at the figure's bottom edge, below the x-axis title however it wraps
        legend={"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0.01, "x": 0},
        hoverlabel={"font": {"size": 13}},
    )
    return fig


def _two_lines(text: str) -> str:
    """An axis title longer than AXIS_TITLE_CHARS broken at the space nearest its middle."""
    if len(text) <= AXIS_TITLE_CHARS or " " not in text:
        return text
    spaces = [i for i, char in enumerate(text) if char == " "]
    cut = min(spaces, key=lambda i: abs(i - len(text) / 2))
    return text[:cut] + "<br>" + text[cut + 1:]


def _say_log(title: str, log: bool) -> str:
    """An axis title that says so when its axis is on a log scale."""
    return f"{title} (log scale)" if log and "log scale" not in title else title


def _log_ticks(values: np.ndarray, each: bool = False) -> dict:
    """Tick settings for a log axis showing ``values``: labelled ticks a reader can use.

    ``each`` (the x of a short sweep, e.g. n = 256 ... 2048): a tick at each of up to 12 distinct
    values. Otherwise 1-2-5 ticks when the data spans at most 3 decades, about six powers of ten
    beyond that (the axis reaching the next power where the data runs well past its last one);
    never plotly's bare minor labels ("2", "5") between them.
    """
    values = np.unique(values[np.isfinite(values) & (values > 0)])
    if values.size == 0:
        return {}
    if each and values.size <= 12:
        return {"tickmode": "array", "tickvals": values.tolist(), "ticktext": [f"{v:g}" for v in values]}
    low, high = math.floor(math.log10(values[0])), math.ceil(math.log10(values[-1]))
    if high - low > 3:          # powers of ten, at most about six of them
        step = max(1, math.ceil((high - low) / 6))
        top = 10.0 ** math.floor(math.log10(values[-1]))
        if values[-1] < 1.5 * top:
            return {"dtick": step}
        # the data runs well past its last power of ten (a loss of 2 to 3 over 1e-3 ... 1): the axis
        # goes up to the next one, or the top of the chart has no number
        margin = 0.05 * (math.log10(values[-1]) - math.log10(values[0]))
        return {"dtick": step, "range": [math.log10(values[0]) - margin, high]}
    ticks = [m * 10.0**e for e in range(low, high + 1) for m in (1, 2, 5)]
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [f"{t:g}" for t in ticks]}


def _labels(labels, n: int, name: str):
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels but the matrix has {n} along that side.")
    return labels


def _plain(array) -> list:
    """Nested lists with None for NaN (JSON has no NaN; None is a gap in plotly)."""
    array = np.asarray(array, dtype=np.float64)
    out = array.astype(object)
    out[np.isnan(array)] = None
    return out.tolist()


def _layers(weights: np.ndarray, mask) -> dict:
    """Split a weights matrix into what each trace of a heatmap shows."""
    nan = np.isnan(weights)
    blocked = np.zeros(weights.shape, dtype=bool) if mask is None else \
        ~np.broadcast_to(np.asarray(mask, dtype=bool), weights.shape)
    leak = blocked & ~nan & (weights != 0)
    masked = blocked & ~nan & ~leak
    return {"weights": np.where(nan | masked, np.nan, weights),
            "masked": np.where(masked, 1.0, np.nan), "nan": np.where(nan, 1.0, np.nan),
            "leak": np.nonzero(leak), "nan_cells": np.nonzero(nan),
            "any_nan": bool(nan.any()), "any_masked": bool(masked.any()), "any_leak": bool(leak.any())}


def _heatmap(weights, *, mask=None, query_labels=None, key_labels=None, value_name="weight",
             colorscale=WEIGHT_SCALE, zmin=0.0, zmax=1.0) -> Figure:
    """One attention-matrix figure: values, masked, NaN, leak and label traces, and the legend."""
    n_q, n_k = weights.shape
    query_labels = _labels(query_labels, n_q, "query_labels")
    key_labels = _labels(key_labels, n_k, "key_labels")
    if query_labels or key_labels:
        rows = [f"query {i}" + (f" '{query_labels[i]}'" if query_labels else "") for i in range(n_q)]
        cols = [f"key {j}" + (f" '{key_labels[j]}'" if key_labels else "") for j in range(n_k)]
        text, where = [[f"{r} → {c}" for c in cols] for r in rows], "%{text}"
    else:   # numbers only: no per-cell strings to ship
        text, where = None, "query %{y} → key %{x}"
    layers = _layers(weights, mask)
    gap = 1 if max(n_q, n_k) <= 32 else 0
    common = {"text": text, "xgap": gap, "ygap": gap, "hoverongaps": False}
    fig = Figure()
    fig.add_trace(go.Heatmap(
        z=_plain(layers["weights"]), colorscale=colorscale, zmin=zmin, zmax=zmax, name=value_name,
        colorbar={"title": {"text": value_name, "side": "right"}, "thickness": 14, "len": 0.8},
        hovertemplate=where + "<br>" + value_name + " %{z:.6g}<extra></extra>", **common))
    for name, layer, colour, hover in (
        ("masked", "masked", MASKED_GREY, "masked: may not attend"),
        ("NaN", "nan", NAN_PINK, "NaN: the softmax of a row of -inf is 0/0"),
    ):
        fig.add_trace(go.Heatmap(
            z=_plain(layers[layer]), colorscale=[[0, colour], [1, colour]], zmin=0, zmax=1,
            showscale=False, name=name, hovertemplate=where + f"<br>{hover}<extra></extra>", **common))
    leak_rows, leak_cols = layers["leak"]
    fig.add_trace(go.Scatter(
        x=leak_cols.tolist(), y=leak_rows.tolist(), mode="markers", name="leak", showlegend=False,
        marker={"symbol": "x-thin", "size": 12 if max(n_q, n_k) <= TEXT_UP_TO else 5,
                "line": {"width": 2, "color": LEAK_RED}}, hoverinfo="skip"))
    nan_rows, nan_cols = layers["nan_cells"] if max(n_q, n_k) <= TEXT_UP_TO else ([], [])
    fig.add_trace(go.Scatter(
        x=list(map(int, nan_cols)), y=list(map(int, nan_rows)), text=["NaN"] * len(nan_rows),
        mode="text", name="cell labels", textfont={"size": 11, "color": "#222222"},
        showlegend=False, hoverinfo="skip"))
    for name, symbol, colour, shown in (
        ("grey: masked (may not attend)", "square", MASKED_GREY, layers["any_masked"]),
        ("pink: NaN weight", "square", NAN_PINK, layers["any_nan"]),
        ("red ×: masked, yet weight > 0 (leak)", "x-thin", LEAK_RED, layers["any_leak"]),
    ):
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name=name, showlegend=shown, hoverinfo="skip",
            marker={"symbol": symbol, "size": 12, "color": colour, "line": {"width": 2, "color": colour}}))
    def ticks(labels, n):
        if not labels or n > LABELS_UP_TO:
            return {}
        return {"tickmode": "array", "tickvals": list(range(n)), "ticktext": labels}

    fig.update_xaxes(title_text=KEY_TITLE, range=[-0.5, n_k - 0.5], showgrid=False, zeroline=False,
                     constrain="domain", **ticks(key_labels, n_k))
    fig.update_yaxes(title_text=QUERY_TITLE, range=[n_q - 0.5, -0.5], showgrid=False, zeroline=False,
                     constrain="domain", scaleanchor="x", scaleratio=1, **ticks(query_labels, n_q))
    return fig


def _square_cells(fig: Figure, n_q: int, n_k: int, title: str) -> Figure:
    """Size a one-matrix figure to its rows and columns (square cells, no empty bands), titled."""
    cell = min(48.0, max(4.0, 480 / max(n_q, n_k)))
    top, bottom, legend = 70, 75, 30 if any(t.showlegend for t in fig.data) else 0
    style(fig, title, height=round(cell * n_q) + top + bottom + legend)
    fig.update_layout(width=max(460, round(cell * n_k) + 200), margin={"t": top, "b": bottom + legend})
    return fig


def attention_heatmap(weights, *, query_labels=None, key_labels=None, mask=None, title="") -> Figure:
    """Attention weights as a heatmap: one row per query (row 0 at the top), one column per key.

    ``weights``: 2-D ``(n_q, n_k)``, a torch tensor, numpy array or nested list.
    ``query_labels`` / ``key_labels``: one token label per row / column (duplicates are fine).
    ``mask``: bool, broadcasting to ``(n_q, n_k)``, True = may attend; blocked cells are drawn
    grey (a weight of exactly 0 is dark purple), and the legend says so.
    Weights use a fixed 0-1 colour scale, so two figures can be compared by eye; hovering a
    cell shows its query, key and exact weight.
    """
    weights = to_numpy(weights, "weights", dims=2)
    fig = _heatmap(weights, mask=mask, query_labels=query_labels, key_labels=key_labels)
    return _square_cells(fig, *weights.shape, title)


def scores_heatmap(scores, *, mask=None, query_labels=None, key_labels=None, title="",
                   value_name="score") -> Figure:
    """Scores (before the softmax) on a diverging scale centred at 0; masked cells grey.

    ``scores`` is ``(n_q, n_k)``; the colour range is symmetric around 0 and set by the
    largest finite allowed score.
    """
    scores = to_numpy(scores, "scores", dims=2)
    allowed = np.ones(scores.shape, dtype=bool) if mask is None else \
        np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    finite = scores[np.isfinite(scores) & allowed]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    fig = _heatmap(np.where(allowed, scores, 0.0), mask=mask, query_labels=query_labels,
                   key_labels=key_labels, value_name=value_name, colorscale=SCORE_SCALE,
                   zmin=-bound or -1.0, zmax=bound or 1.0)
    fig.update_traces(zmid=0, selector={"name": value_name})
    return _square_cells(fig, *scores.shape, title)


def line_chart(x, series: dict, *, x_title, y_title, title="", log_x=False, log_y=False) -> Figure:
    """One line per entry of ``series`` (name -> y values, same length as ``x``), markers on points.

    Hover shows the exact x and y. ``log_x`` / ``log_y`` switch that axis to a log scale, with
    labelled ticks (each x of a short sweep, 1-2-5 or powers of ten), never bare minor ticks, and
    its title says "(log scale)" (added where the title does not say it), so that a straight line
    reads as a power law.
    """
    x = to_numpy(x, "x", dims=1)
    if not isinstance(series, dict) or not series:
        raise TypeError("series must be a non-empty dict: name -> list of y values.")
    fig = Figure()
    all_y = []
    for name, ys in series.items():
        ys = to_numpy(ys, f"series[{name!r}]", dims=1)
        if len(ys) != len(x):
            raise ValueError(f"series[{name!r}] has {len(ys)} values but x has {len(x)}.")
        all_y.append(ys)
        fig.add_trace(go.Scatter(
            x=x.tolist(), y=ys, mode="lines+markers", name=str(name),
            hovertemplate=f"{name}<br>{x_title} %{{x:.6g}}<br>{y_title} %{{y:.6g}}<extra></extra>"))
    fig.update_xaxes(title_text=_say_log(x_title, log_x), type="log" if log_x else "linear",
                     **(_log_ticks(x, each=True) if log_x else {}))
    y_ticks = _log_ticks(np.concatenate(all_y)) if log_y else {}
    fig.update_yaxes(title_text=_two_lines(_say_log(y_title, log_y)), type="log" if log_y else "linear",
                     **y_ticks)
    fig = style(fig, title)
    fig.update_layout(showlegend=len(series) > 1)
    return fig


def bar_chart(labels, values, *, x_title, y_title, title="") -> Figure:
    """One bar per label; hover shows the exact value. Labels may repeat (positions keep them apart)."""
    labels = [str(label) for label in labels]
    values = to_numpy(values, "values", dims=1)
    if len(values) != len(labels):
        raise ValueError(f"labels has {len(labels)} entries but values has {len(values)}.")
    positions = list(range(len(labels)))
    fig = Figure(go.Bar(
        x=positions, y=values, customdata=labels, marker_color="#3b528b",
        hovertemplate="%{customdata}<br>" + y_title + " %{y:.6g}<extra></extra>"))
    fig.update_xaxes(title_text=x_title, tickmode="array", tickvals=positions, ticktext=labels)
    fig.update_yaxes(title_text=_two_lines(y_title))
    return style(fig, title)
