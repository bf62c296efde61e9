"""attnviz.widgets: the static figures, and the explorers driven through their controls."""

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from attnviz.explore import mask_state
from attnviz.widgets.figures import (
    KEY_TITLE,
    QUERY_TITLE,
    attention_heatmap,
    bar_chart,
    line_chart,
    scores_heatmap,
)


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_attention_heatmap_follows_the_house_style():
    weights = torch.softmax(torch.randn(4, 5, generator=torch.Generator().manual_seed(0)), -1)
    fig = attention_heatmap(weights, query_labels=["the", "cat", "sat", "the"],
                            key_labels=list("abcde"), title="d_k = 8, scaled")
    assert isinstance(fig, go.Figure)
    heat = fig.data[0]
    assert (heat.zmin, heat.zmax) == (0, 1)                     # fixed 0-1 scale
    assert np.allclose(np.asarray(heat.z), weights.numpy())    # row 0 of z is query 0 ...
    assert list(fig.layout.yaxis.range) == [3.5, -0.5]          # ... drawn at the top
    assert fig.layout.xaxis.title.text == KEY_TITLE and fig.layout.yaxis.title.text == QUERY_TITLE
    assert list(fig.layout.yaxis.ticktext) == ["the", "cat", "sat", "the"]   # duplicates kept apart
    assert "weight %{z" in heat.hovertemplate
    assert fig.layout.title.text == "d_k = 8, scaled"


def test_masked_cells_are_grey_not_zero_and_the_legend_says_so():
    state = mask_state("causal", "-inf")
    fig = attention_heatmap(state["weights"][0], mask=state["mask"][0])
    shown = np.asarray(fig.data[0].z, dtype=float)
    masked = np.asarray(fig.data[1].z, dtype=float)
    above = np.triu(np.ones((5, 5), dtype=bool), 1)
    assert np.all(np.isnan(shown[above])) and np.all(masked[above] == 1)
    assert np.all(np.isnan(masked[~above])) and not np.any(np.isnan(shown[~above]))
    legend = [t.name for t in fig.data if t.showlegend]
    assert any("masked" in name for name in legend)


def test_nan_rows_are_drawn_and_labelled_as_nan():
    state = mask_state("padding", "-inf")
    fig = attention_heatmap(state["weights"][2], mask=state["mask"][2])
    assert np.all(np.asarray(_trace(fig, "NaN").z, dtype=float) == 1)
    assert _trace(fig, "NaN").texttemplate == "NaN"
    assert any("NaN" in t.name for t in fig.data if t.showlegend)


def test_leaked_weight_keeps_its_colour_and_gets_a_cross():
    state = mask_state("causal", "0")
    fig = attention_heatmap(state["weights"][0], mask=state["mask"][0])
    leak = fig.data[3]
    assert len(leak.x) == 10                                    # the 10 cells above the diagonal
    assert not np.any(np.isnan(np.asarray(fig.data[0].z, dtype=float)))


def test_attention_heatmap_rejects_wrong_shapes_in_words():
    with pytest.raises(ValueError, match="3 dimensions"):
        attention_heatmap(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="query_labels has 2 labels"):
        attention_heatmap(torch.zeros(3, 3), query_labels=["a", "b"])


def test_scores_heatmap_is_diverging_and_centred():
    scores = torch.tensor([[1.0, -3.0], [2.0, 0.5]])
    fig = scores_heatmap(scores)
    assert fig.data[0].zmin == -3 and fig.data[0].zmax == 3


def test_line_and_bar_charts():
    fig = line_chart([1, 2, 4], {"scaled": [0.3, 0.3, 0.3], "unscaled": [0.3, 0.6, 0.9]},
                     x_title="d_k", y_title="max weight", log_x=True)
    assert [t.name for t in fig.data] == ["scaled", "unscaled"]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "linear"
    assert fig.layout.xaxis.title.text == "d_k"
    bars = bar_chart(["cat", "dog", "cat"], [0.2, 0.5, 0.3], x_title="key", y_title="weight")
    assert list(bars.data[0].y) == [0.2, 0.5, 0.3]
    assert list(bars.layout.xaxis.ticktext) == ["cat", "dog", "cat"]
    with pytest.raises(ValueError, match="values has 1"):
        bar_chart(["a", "b"], [1.0], x_title="k", y_title="w")
    with pytest.raises(ValueError, match="x has 3"):
        line_chart([1, 2, 3], {"a": [1, 2]}, x_title="x", y_title="y")
