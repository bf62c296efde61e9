"""attnviz.figures: the static charts, their look, and their fast display path."""

import base64
import json

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from _fresh import modules_after

from attnviz.explore import mask_state
from attnviz.figures import (
    KEY_TITLE,
    PLOTLY_MIME,
    QUERY_TITLE,
    Figure,
    attention_heatmap,
    bar_chart,
    line_chart,
    scores_heatmap,
    style,
)


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_importing_the_figures_loads_neither_ipywidgets_nor_the_validators():
    """A static chart needs plotly only; displaying one must not import nbformat/jsonschema (1-3 s)."""
    code = (
        "from attnviz.figures import line_chart\n"
        "fig = line_chart([1, 2], {'a': [3, 4]}, x_title='x', y_title='y')\n"
        "bundle = fig._repr_mimebundle_()\n"
    )
    bad = modules_after(code) & {"ipywidgets", "anywidget", "nbformat", "jsonschema", "plotly.io._renderers"}
    assert not bad, bad


def test_the_display_bundle_is_plotlys_mime_type_without_a_bundle_of_plotly_js():
    fig = line_chart([1, 2, 4], {"a": [1.0, float("nan"), 3.0]}, x_title="x", y_title="y", title="t")
    bundle = fig._repr_mimebundle_()
    assert set(bundle) == {PLOTLY_MIME, "text/plain"}
    payload = bundle[PLOTLY_MIME]
    json.dumps(payload, allow_nan=False)                        # strict JSON: NaN became null
    y = payload["data"][0]["y"]                                 # plotly.js's typed-array spec
    decoded = np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"])
    assert np.array_equal(decoded, [1.0, np.nan, 3.0], equal_nan=True)
    assert payload["layout"]["title"]["text"] == "t"
    assert "plotly.js" not in json.dumps(payload) and len(json.dumps(payload)) < 50_000
    # the same figure as plotly's own serialisation
    assert payload == json.loads(go.Figure(fig).to_json())


def test_style_turns_a_plain_figure_into_a_fast_one():
    plain = go.Figure(go.Bar(x=["a"], y=[1]))
    fig = style(plain, "title")
    assert isinstance(fig, Figure) and fig.layout.title.text == "title"
    assert style(fig) is fig


def test_attention_heatmap_follows_the_house_style():
    weights = torch.softmax(torch.randn(4, 5, generator=torch.Generator().manual_seed(0)), -1)
    fig = attention_heatmap(weights, query_labels=["the", "cat", "sat", "the"],
                            key_labels=list("abcde"), title="d_k = 8, scaled")
    assert isinstance(fig, go.Figure)
    heat = _trace(fig, "weight")
    assert (heat.zmin, heat.zmax) == (0, 1)                     # fixed 0-1 scale
    assert np.allclose(np.asarray(heat.z), weights.numpy())    # row 0 of z is query 0 ...
    assert list(fig.layout.yaxis.range) == [3.5, -0.5]          # ... drawn at the top
    assert fig.layout.xaxis.title.text == KEY_TITLE and fig.layout.yaxis.title.text == QUERY_TITLE
    assert list(fig.layout.yaxis.ticktext) == ["the", "cat", "sat", "the"]   # duplicates kept apart
    assert "weight %{z" in heat.hovertemplate
    assert fig.layout.title.text == "d_k = 8, scaled"


def test_a_wide_matrix_gets_a_short_figure_not_empty_bands():
    """3 queries x 6 keys: the figure is about half as tall as a 6 x 6 one (square cells, no bands)."""
    wide = attention_heatmap(torch.full((3, 6), 1 / 6))
    square = attention_heatmap(torch.full((6, 6), 1 / 6))
    assert wide.layout.width == square.layout.width
    margins = wide.layout.margin.t + wide.layout.margin.b
    assert wide.layout.height - margins == pytest.approx((square.layout.height - margins) / 2, abs=2)


def test_masked_cells_are_grey_not_zero_and_the_legend_says_so():
    state = mask_state("causal", "-inf")
    fig = attention_heatmap(state["weights"][0], mask=state["mask"][0])
    shown = np.asarray(_trace(fig, "weight").z, dtype=float)
    masked = np.asarray(_trace(fig, "masked").z, dtype=float)
    above = np.triu(np.ones((5, 5), dtype=bool), 1)
    assert np.all(np.isnan(shown[above])) and np.all(masked[above] == 1)
    assert np.all(np.isnan(masked[~above])) and not np.any(np.isnan(shown[~above]))
    legend = [t.name for t in fig.data if t.showlegend]
    assert legend == ["grey: masked (may not attend)"]


def test_nan_rows_are_drawn_and_labelled_as_nan():
    state = mask_state("padding", "-inf")
    fig = attention_heatmap(state["weights"][2], mask=state["mask"][2])
    assert np.all(np.asarray(_trace(fig, "NaN").z, dtype=float) == 1)
    assert list(_trace(fig, "cell labels").text) == ["NaN"] * 25      # every cell says NaN in words
    assert any("NaN" in t.name for t in fig.data if t.showlegend)


def test_leaked_weight_keeps_its_colour_and_gets_a_cross():
    state = mask_state("causal", "0")
    fig = attention_heatmap(state["weights"][0], mask=state["mask"][0])
    assert len(_trace(fig, "leak").x) == 10                          # the 10 cells above the diagonal
    assert not np.any(np.isnan(np.asarray(_trace(fig, "weight").z, dtype=float)))


def test_attention_heatmap_rejects_wrong_shapes_in_words():
    with pytest.raises(ValueError, match="3 dimensions"):
        attention_heatmap(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="query_labels has 2 labels"):
        attention_heatmap(torch.zeros(3, 3), query_labels=["a", "b"])
    with pytest.raises(TypeError, match="weights must be"):
        attention_heatmap(object())


def test_scores_heatmap_is_diverging_and_centred():
    fig = scores_heatmap(torch.tensor([[1.0, -3.0], [2.0, 0.5]]))
    assert _trace(fig, "score").zmin == -3 and _trace(fig, "score").zmax == 3


def test_line_and_bar_charts():
    fig = line_chart([1, 2, 4], {"scaled": [0.3, 0.3, 0.3], "unscaled": [0.3, 0.6, 0.9]},
                     x_title="d_k", y_title="max weight", log_x=True)
    assert [t.name for t in fig.data] == ["scaled", "unscaled"]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "linear"
    assert fig.layout.xaxis.title.text == "d_k (log scale)"
    assert fig.layout.yaxis.title.text == "max weight"
    said = line_chart([1, 2], {"a": [1, 2]}, x_title="d_k (log scale)", y_title="g", log_x=True)
    assert said.layout.xaxis.title.text == "d_k (log scale)"      # said once, not twice
    bars = bar_chart(["cat", "dog", "cat"], [0.2, 0.5, 0.3], x_title="key", y_title="weight")
    assert list(bars.data[0].y) == [0.2, 0.5, 0.3]
    assert list(bars.layout.xaxis.ticktext) == ["cat", "dog", "cat"]
    with pytest.raises(ValueError, match="values has 1"):
        bar_chart(["a", "b"], [1.0], x_title="k", y_title="w")
    with pytest.raises(ValueError, match="x has 3"):
        line_chart([1, 2, 3], {"a": [1, 2]}, x_title="x", y_title="y")


def test_log_axes_label_the_ticks_that_matter():
    """A short sweep on a log x axis is labelled at each x; a log y axis gets 1-2-5 or powers of 10."""
    lengths = [256, 512, 1024, 2048]
    fig = line_chart(lengths, {"MiB": [0.25, 1.0, 4.0, 16.0]}, x_title="n", y_title="MiB",
                     log_x=True, log_y=True)
    assert list(fig.layout.xaxis.tickvals) == lengths
    assert list(fig.layout.xaxis.ticktext) == ["256", "512", "1024", "2048"]
    assert {0.5, 1, 2, 5, 10}.issubset(fig.layout.yaxis.tickvals)
    assert "0.5" in fig.layout.yaxis.ticktext
    wide = line_chart([1, 2], {"g": [1e-12, 1.0]}, x_title="n", y_title="g", log_y=True)
    assert wide.layout.yaxis.dtick == 2 and wide.layout.yaxis.tickvals is None   # 10⁻¹², 10⁻¹⁰, ... 1
    # a loss from 3 nats down to 1e-3: the axis reaches 10, or the top of the chart has no number (06 §6)
    loss = line_chart([1, 2, 3], {"loss": [3.0, 0.1, 1e-3]}, x_title="step", y_title="loss", log_y=True)
    assert loss.layout.yaxis.dtick == 1 and loss.layout.yaxis.range[1] == 1     # 10 ** 1


def test_long_axis_titles_break_onto_two_lines():
    fig = line_chart([1, 2], {"a": [1, 2]}, x_title="x",
                     y_title="gradient reaching the first input (log scale)")
    assert fig.layout.yaxis.title.text == "gradient reaching the<br>first input (log scale)"
    assert line_chart([1, 2], {"a": [1, 2]}, x_title="x", y_title="short").layout.yaxis.title.text == "short"
