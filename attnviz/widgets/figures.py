"""Static plotly figures in the course's one look (see STYLE.md).

Every builder returns a ``plotly.graph_objects.Figure``; leave it as a cell's last
expression to display it. The explorers build on the same pieces and update the
traces in place with :func:`set_heatmap`.

Attention matrices: query rows top to bottom (row 0 at the top), key columns left to
right, axis titles "key (attended to)" and "query (asking)", weights on a fixed 0-1
viridis scale (colour-blind safe). Masked cells are grey, not a colour of the scale;
weights that came out NaN are pink and marked "NaN"; a masked cell that still got
weight (a leak) keeps its colour and carries a red ×.
"""

from __future__ import annotations

import base64

import numpy as np
import plotly.graph_objects as go

__all__ = [
    "attention_heatmap",
    "scores_heatmap",
    "line_chart",
    "bar_chart",
    "add_heatmap",
    "set_heatmap",
    "heatmap_changes",
    "send_update",
    "add_heatmap_legend",
    "style",
    "to_numpy",
    "plain",
    "packed",
    "unpacked",
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
HEATMAP_TRACES = 5                # traces per heatmap panel: weights, masked, NaN, leak, labels


def to_numpy(values, name: str = "weights", dims: int | None = None) -> np.ndarray:
    """A torch tensor, numpy array or nested list as a float64 numpy array (with a named error)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency of attnviz
        torch = None
    if torch is not None and isinstance(values, torch.Tensor):
        array = values.detach().to("cpu").double().numpy()
    else:
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{name} must be a torch tensor, a numpy array or a list of numbers, "
                f"got {type(values).__name__}."
            ) from None
    if dims is not None and array.ndim != dims:
        raise ValueError(
            f"{name} has shape {tuple(array.shape)} ({array.ndim} dimensions) but must have {dims}"
            + (": (queries, keys)." if dims == 2 else ".")
        )
    return array


def style(fig: go.Figure, title: str = "", height: int = 420) -> go.Figure:
    """The course's layout: white template, readable font, the title saying what changed."""
    fig.update_layout(
        template="plotly_white",
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        font={"size": 13},
        height=height,
        margin={"l": 70, "r": 30, "t": 70, "b": 95},
        legend={"orientation": "h", "yanchor": "top", "y": -0.24, "x": 0},
        hoverlabel={"font": {"size": 13}},
    )
    return fig


def _labels(labels, n: int, name: str):
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels but the matrix has {n} along that side.")
    return labels


def _hover_text(n_q: int, n_k: int, query_labels, key_labels) -> np.ndarray:
    rows = [f"query {i}" + (f" '{query_labels[i]}'" if query_labels else "") for i in range(n_q)]
    cols = [f"key {j}" + (f" '{key_labels[j]}'" if key_labels else "") for j in range(n_k)]
    return np.array([[f"{r} → {c}" for c in cols] for r in rows], dtype=object)


def plain(array) -> list:
    """A numpy array as nested lists with None for NaN (JSON has no NaN; None is a gap in plotly)."""
    array = np.asarray(array, dtype=np.float64)
    nan = np.isnan(array)
    if not nan.any():
        return array.tolist()
    out = array.astype(object)
    out[nan] = None
    return out.tolist()


def packed(array: np.ndarray):
    """A numpy array ready to send to a FigureWidget, NaN kept as a gap.

    1-D: a float64 array (plotly sends it as a binary buffer). 2-D: plotly.js's typed-array
    spec ``{"dtype": "f8", "bdata": <base64>, "shape": "rows, cols"}``, one string instead of a
    nested list (plotly's nested-list path costs ~1 ms per 1000 cells). :func:`unpacked`
    reads either back.
    """
    array = np.ascontiguousarray(array, dtype=np.float64)
    if array.ndim == 1:
        return array
    return {"dtype": "f8", "bdata": base64.b64encode(array.tobytes()).decode("ascii"),
            "shape": ", ".join(str(size) for size in array.shape)}


def unpacked(value) -> np.ndarray:
    """A trace property as a float numpy array, whether it holds a list, an array or a packed spec."""
    if isinstance(value, dict) and "bdata" in value:
        shape = tuple(int(size) for size in str(value["shape"]).split(","))
        dtype = {"f8": np.float64, "f4": np.float32}[value["dtype"]]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=dtype).reshape(shape).astype(np.float64)
    return np.array(value, dtype=np.float64)


def _layers(weights: np.ndarray, mask, masked_label=None) -> dict:
    """Split a weights matrix into what each trace of a heatmap panel shows."""
    nan = np.isnan(weights)
    if mask is None:
        blocked = np.zeros(weights.shape, dtype=bool)
    else:
        blocked = ~np.broadcast_to(np.asarray(mask, dtype=bool), weights.shape)
    leak = blocked & ~nan & (weights != 0)
    shown = np.where(nan | (blocked & ~leak), np.nan, weights)
    masked = np.where(blocked & ~nan & ~leak, 1.0, np.nan)
    nan_layer = np.where(nan, 1.0, np.nan)
    leak_rows, leak_cols = np.nonzero(leak)
    # words written in small matrices' cells: "NaN" on NaN cells, and optionally the fill on masked ones
    label_rows, label_cols, label_text = [], [], []
    if max(weights.shape) <= TEXT_UP_TO:
        for rows_cols, text in ((np.nonzero(nan), "NaN"),
                                (np.nonzero(blocked & ~nan & ~leak), masked_label)):
            if text:
                label_rows += rows_cols[0].tolist()
                label_cols += rows_cols[1].tolist()
                label_text += [text] * len(rows_cols[0])
    return {"weights": shown, "masked": masked, "nan": nan_layer,
            "leak_x": leak_cols.astype(np.float64), "leak_y": leak_rows.astype(np.float64),
            "label_x": np.array(label_cols, dtype=np.float64),
            "label_y": np.array(label_rows, dtype=np.float64),
            "label_text": label_text, "any_nan": bool(nan.any()),
            "any_masked": bool((blocked & ~nan & ~leak).any()), "any_leak": bool(leak.any())}


def add_heatmap(fig: go.Figure, weights, *, mask=None, query_labels=None, key_labels=None,
                row=None, col=None, showscale=True, value_name="weight",
                colorscale=WEIGHT_SCALE, zmin=0.0, zmax=1.0, zmid=None, masked_label=None) -> int:
    """Add one attention-matrix panel (four traces) to ``fig``; return its first trace index.

    ``weights`` is ``(n_q, n_k)``; ``mask`` broadcasts to it (bool, True = may attend).
    Pass ``row``/``col`` for a subplot made with ``plotly.subplots.make_subplots``.
    """
    weights = to_numpy(weights, "weights", dims=2)
    n_q, n_k = weights.shape
    query_labels = _labels(query_labels, n_q, "query_labels")
    key_labels = _labels(key_labels, n_k, "key_labels")
    if query_labels or key_labels:
        text, where_hover = _hover_text(n_q, n_k, query_labels, key_labels).tolist(), "%{text}"
    else:   # numbers only: no per-cell strings to ship (128 x 128 cells would be megabytes)
        text, where_hover = None, "query %{y} → key %{x}"
    layers = _layers(weights, mask, masked_label)
    where = {} if row is None else {"row": row, "col": col}
    first = len(fig.data)
    gap = 1 if max(n_q, n_k) <= 32 else 0
    colorbar = {"title": {"text": value_name}, "thickness": 14, "len": 0.8}
    fig.add_trace(go.Heatmap(
        z=plain(layers["weights"]), text=text, colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid,
        showscale=showscale, colorbar=colorbar, name=value_name, xgap=gap, ygap=gap, hoverongaps=False,
        hovertemplate=where_hover + "<br>" + value_name + " %{z:.6g}<extra></extra>"), **where)
    fig.add_trace(go.Heatmap(
        z=plain(layers["masked"]), text=text, colorscale=[[0, MASKED_GREY], [1, MASKED_GREY]], zmin=0, zmax=1,
        showscale=False, name="masked", xgap=gap, ygap=gap, hoverongaps=False,
        hovertemplate=where_hover + "<br>masked: may not attend<extra></extra>"), **where)
    fig.add_trace(go.Heatmap(
        z=plain(layers["nan"]), text=text, colorscale=[[0, NAN_PINK], [1, NAN_PINK]], zmin=0, zmax=1,
        showscale=False, name="NaN", xgap=gap, ygap=gap, hoverongaps=False,
        hovertemplate=where_hover + "<br>NaN: the softmax of a row of -inf is 0/0<extra></extra>"), **where)
    fig.add_trace(go.Scatter(
        x=layers["leak_x"].tolist(), y=layers["leak_y"].tolist(), mode="markers",
        name="masked, yet weight > 0 (leak)",
        marker={"symbol": "x-thin", "size": 12 if max(n_q, n_k) <= TEXT_UP_TO else 5,
                "line": {"width": 2, "color": LEAK_RED}},
        showlegend=False, hoverinfo="skip"), **where)
    fig.add_trace(go.Scatter(
        x=layers["label_x"].tolist(), y=layers["label_y"].tolist(), text=layers["label_text"], mode="text",
        name="cell labels", textfont={"size": 11, "color": "#222222"}, showlegend=False, hoverinfo="skip"),
        **where)
    axis = {} if row is None else {"row": row, "col": col}
    x_ticks = {"tickmode": "array", "tickvals": list(range(n_k)), "ticktext": key_labels} \
        if key_labels and n_k <= LABELS_UP_TO else {}
    y_ticks = {"tickmode": "array", "tickvals": list(range(n_q)), "ticktext": query_labels} \
        if query_labels and n_q <= LABELS_UP_TO else {}
    fig.update_xaxes(title_text=KEY_TITLE, range=[-0.5, n_k - 0.5], showgrid=False, zeroline=False,
                     constrain="domain", **x_ticks, **axis)
    fig.update_yaxes(title_text=QUERY_TITLE, range=[n_q - 0.5, -0.5], showgrid=False, zeroline=False,
                     constrain="domain", **y_ticks, **axis)
    return first


def heatmap_changes(first: int, weights, mask=None, masked_label=None) -> tuple[dict, dict]:
    """The trace changes that make the panel starting at trace ``first`` show ``weights``.

    Returns ``(changes, layers)``: ``changes`` maps trace index -> {property: value}, ready for
    :func:`send_update`; ``layers`` says whether anything is masked, NaN or leaked.
    ``masked_label`` (e.g. the fill value) is written into masked cells of small matrices.
    """
    layers = _layers(to_numpy(weights, "weights", dims=2), mask, masked_label)
    changes = {
        first: {"z": layers["weights"]},
        first + 1: {"z": layers["masked"]},
        first + 2: {"z": layers["nan"]},
        first + 3: {"x": layers["leak_x"], "y": layers["leak_y"]},
        first + 4: {"x": layers["label_x"], "y": layers["label_y"], "text": layers["label_text"]},
    }
    return changes, layers


def set_heatmap(fig, first: int, weights, mask=None) -> dict:
    """Make the panel whose traces start at ``first`` show ``weights``; return the layer summary."""
    changes, layers = heatmap_changes(first, weights, mask)
    send_update(fig, changes)
    return layers


def send_update(fig, traces: dict | None = None, layout: dict | None = None,
                cache: dict | None = None) -> None:
    """Apply trace and layout changes to ``fig`` as ONE plotly update (one message to the browser).

    ``traces`` maps trace index -> {property path: new value}; ``layout`` maps layout paths
    (``"title.text"``, ``"annotations[0].text"``, ``"xaxis.range"``) to new values. This is the
    message ``FigureWidget.batch_update()`` sends when it closes, built directly: the values
    come from our own code, so plotly's per-property validation (most of the time of a
    change) is skipped.

    Numpy arrays travel packed (see :func:`packed`), so NaN gaps need no JSON NaN and big
    matrices cost little.
    With a ``cache`` dict, arrays and layout values equal to the ones last sent through it (NaN
    equal to NaN) are not sent again.
    """
    from plotly.basedatatypes import Undefined

    traces = traces or {}
    restyle, indexes = {}, []
    for index in sorted(traces):
        props = {}
        for prop, value in traces[index].items():
            if isinstance(value, np.ndarray):
                if cache is not None:
                    key = (index, prop)
                    last = cache.get(key)
                    if last is not None and last.shape == value.shape and np.array_equal(
                            last, value, equal_nan=True):
                        continue
                    cache[key] = value.copy()
                value = packed(value)
            props[prop] = value
        if props:
            indexes.append(index)
            for prop, value in props.items():
                restyle.setdefault(prop, {})[index] = value
    restyle = {prop: [by_index.get(i, Undefined) for i in indexes] for prop, by_index in restyle.items()}
    if layout and cache is not None:
        changed = {}
        for path, value in layout.items():
            key = ("layout", path)
            if key not in cache or cache[key] != value:
                changed[path] = value
                cache[key] = value
        layout = changed
    if not restyle and not layout:
        return
    if hasattr(fig, "_py2js_update") and hasattr(fig, "hold_sync"):
        _send_widget_update(fig, restyle, dict(layout or {}), indexes)
    else:
        fig.plotly_update(restyle_data=restyle or None, relayout_data=dict(layout) if layout else None,
                          trace_indexes=indexes or None)


def _send_widget_update(fig, restyle: dict, layout: dict, indexes: list[int]) -> None:
    """What ``FigureWidget.plotly_update`` does, in one comm message instead of four.

    plotly's own path checks every property path against the figure's schema and syncs the
    two edit counters and the message (then a reset to None) as four separate comm messages,
    about 0.3 ms each. Our paths are fixed in code (and the tests drive every one of them),
    so we write the values into the figure's state directly and send the counters and the
    update together, as the same ``_py2js_update`` message plotly's frontend already handles.
    """
    from plotly.basedatatypes import Undefined

    style_data = {}
    for prop, values in restyle.items():
        changed = False
        for index, value in zip(indexes, values, strict=True):
            if value is not Undefined:
                changed |= _set_path(fig._data[index], prop, value)
        if changed:
            style_data[prop] = values
    layout_data = {path: value for path, value in layout.items() if _set_path(fig._layout, path, value)}
    if not style_data and not layout_data:
        return
    set_attr = object.__setattr__          # straight to the traitlets, past plotly's attribute checks
    with fig.hold_sync():                  # one comm message for all three traits
        set_attr(fig, "_last_trace_edit_id", fig._last_trace_edit_id + 1)
        set_attr(fig, "_last_layout_edit_id", fig._last_layout_edit_id + 1)
        set_attr(fig, "_trace_edit_in_process", True)
        set_attr(fig, "_layout_edit_in_process", True)
        set_attr(fig, "_py2js_update", {
            "style_data": style_data, "layout_data": layout_data, "style_traces": list(indexes),
            "trace_edit_id": fig._last_trace_edit_id, "layout_edit_id": fig._last_layout_edit_id,
            "source_view_id": None,
        })


_PATHS: dict[str, tuple] = {}


def _set_path(target: dict, path: str, value) -> bool:
    """Set ``target["a"]["b"][0]["c"] = value`` for ``path = "a.b[0].c"``; True if it changed."""
    keys = _PATHS.get(path)
    if keys is None:
        keys = []
        for part in path.split("."):
            name, _, index = part.partition("[")
            keys.append(name)
            if index:
                keys.append(int(index.rstrip("]")))
        keys = _PATHS[path] = tuple(keys)
    for key in keys[:-1]:
        if isinstance(key, int):
            target = target[key]
        else:
            target = target.setdefault(key, {})
    last = keys[-1]
    old = target.get(last, None)
    if old is not None and type(old) is type(value):
        if isinstance(value, np.ndarray):
            if old.shape == value.shape and np.array_equal(old, value, equal_nan=True):
                return False
        elif old == value:
            return False
    target[last] = value
    return True


def add_heatmap_legend(fig: go.Figure, masked=True, nan=False, leak=False) -> list[int]:
    """Legend entries for the grey, pink and × cells (heatmaps have no legend of their own).

    Returns the indices of the three legend traces; toggle their ``showlegend`` to match.
    """
    first = len(fig.data)
    for name, symbol, color, shown in (
        ("grey: masked (may not attend)", "square", MASKED_GREY, masked),
        ("pink: NaN weight", "square", NAN_PINK, nan),
        ("red ×: masked, yet weight > 0 (leak)", "x-thin", LEAK_RED, leak),
    ):
        marker = {"symbol": symbol, "size": 12, "color": color,
                  "line": {"width": 2, "color": color}}
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, marker=marker,
                                 showlegend=bool(shown), hoverinfo="skip"))
    return [first, first + 1, first + 2]


def _legend_visibility(fig, legend: list[int], layers: dict) -> None:
    flags = (layers["any_masked"], layers["any_nan"], layers["any_leak"])
    for index, shown in zip(legend, flags, strict=True):
        fig.data[index].showlegend = bool(shown)


def attention_heatmap(weights, *, query_labels=None, key_labels=None, mask=None, title="") -> go.Figure:
    """Attention weights as a heatmap: one row per query (row 0 at the top), one column per key.

    ``weights``: 2-D ``(n_q, n_k)``, a torch tensor, numpy array or nested list.
    ``query_labels`` / ``key_labels``: one token label per row / column (duplicates are fine).
    ``mask``: bool, broadcasting to ``(n_q, n_k)``, True = may attend; blocked cells are drawn
    grey (a weight of exactly 0 is dark purple), and the legend says so.
    Weights use a fixed 0-1 colour scale, so two figures can be compared by eye; hovering a
    cell shows its query, key and exact weight.
    """
    weights = to_numpy(weights, "weights", dims=2)
    fig = go.Figure()
    add_heatmap(fig, weights, mask=mask, query_labels=query_labels, key_labels=key_labels)
    layers = _layers(weights, mask)
    legend = add_heatmap_legend(fig)
    _legend_visibility(fig, legend, layers)
    return _square_cells(fig, *weights.shape, title)


def _square_cells(fig, n_q: int, n_k: int, title: str) -> go.Figure:
    """Size a one-matrix figure to its cell count, with square cells, and give it its title."""
    size = min(620, max(340, 28 * max(n_q, n_k) + 160))
    style(fig, title, height=size + 60)
    fig.update_layout(width=size + 120)
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig


def scores_heatmap(scores, *, mask=None, query_labels=None, key_labels=None, title="",
                   value_name="score") -> go.Figure:
    """Scores (before the softmax) on a diverging scale centred at 0; masked cells grey.

    ``scores`` is ``(n_q, n_k)``; the colour range is symmetric around 0 and set by the
    largest finite allowed score.
    """
    scores = to_numpy(scores, "scores", dims=2)
    fig = go.Figure()
    allowed = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    finite = scores[np.isfinite(scores) & (True if allowed is None else allowed)]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    add_heatmap(fig, np.where(allowed if allowed is not None else True, scores, 0.0), mask=mask,
                query_labels=query_labels, key_labels=key_labels, value_name=value_name,
                colorscale=SCORE_SCALE, zmin=-bound or -1.0, zmax=bound or 1.0)
    legend = add_heatmap_legend(fig)
    _legend_visibility(fig, legend, {"any_masked": allowed is not None and not allowed.all(),
                                     "any_nan": False, "any_leak": False})
    return _square_cells(fig, *scores.shape, title)


def line_chart(x, series: dict, *, x_title, y_title, title="", log_x=False, log_y=False) -> go.Figure:
    """One line per entry of ``series`` (name -> y values, same length as ``x``), markers on points.

    Hover shows the exact x and y. ``log_x`` / ``log_y`` switch that axis to a log scale.
    """
    x = list(to_numpy(x, "x", dims=1))
    if not isinstance(series, dict) or not series:
        raise TypeError("series must be a non-empty dict: name -> list of y values.")
    fig = go.Figure()
    for name, ys in series.items():
        ys = to_numpy(ys, f"series[{name!r}]", dims=1)
        if len(ys) != len(x):
            raise ValueError(f"series[{name!r}] has {len(ys)} values but x has {len(x)}.")
        fig.add_trace(go.Scatter(
            x=x, y=ys, mode="lines+markers", name=str(name),
            hovertemplate=f"{name}<br>{x_title} %{{x:.6g}}<br>{y_title} %{{y:.6g}}<extra></extra>"))
    fig.update_xaxes(title_text=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear")
    style(fig, title)
    fig.update_layout(showlegend=len(series) > 1)
    return fig


def bar_chart(labels, values, *, x_title, y_title, title="") -> go.Figure:
    """One bar per label; hover shows the exact value. Labels may repeat (positions keep them apart)."""
    labels = [str(label) for label in labels]
    values = to_numpy(values, "values", dims=1)
    if len(values) != len(labels):
        raise ValueError(f"labels has {len(labels)} entries but values has {len(values)}.")
    positions = list(range(len(labels)))
    fig = go.Figure(go.Bar(
        x=positions, y=values, customdata=labels, marker_color="#3b528b",
        hovertemplate="%{customdata}<br>" + y_title + " %{y:.6g}<extra></extra>"))
    fig.update_xaxes(title_text=x_title, tickmode="array", tickvals=positions, ticktext=labels)
    fig.update_yaxes(title_text=y_title)
    style(fig, title)
    return fig
