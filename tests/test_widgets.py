"""attnviz.widgets: the static figures, and the explorers driven through their controls."""

import math

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
    labels = _trace(fig, "cell labels")
    assert list(labels.text) == ["NaN"] * 25                    # every cell says NaN in words
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


# ---------------------------------------------------------------------------------------------
# The explorers, driven through .controls, read back through .figures and .metrics.

from attnviz.widgets import (  # noqa: E402
    head_explorer,
    kv_cache_explorer,
    lookup_explorer,
    mask_explorer,
    saturation_explorer,
)
from attnviz.widgets.figures import HEATMAP_TRACES, unpacked  # noqa: E402


def _data(fig, index, prop):
    return unpacked(getattr(fig.data[index], prop))


def _heatmap_panels(fig):
    """First trace index of every attention panel (weights, masked, NaN, leak) in a figure."""
    return [i for i, t in enumerate(fig.data)
            if t.type == "heatmap" and i + HEATMAP_TRACES <= len(fig.data)
            and fig.data[i + 1].name == "masked" and fig.data[i + 2].name == "NaN"]


def _assert_no_unlabelled_nan(explorer):
    """NaN may appear only as gaps covered by the grey 'masked' or the pink, labelled 'NaN' layer."""
    for name, fig in explorer.figures.items():
        panels = _heatmap_panels(fig)
        if "raised" in (fig.layout.title.text or ""):
            panels_checked = []                        # deliberately empty, and the title says why
        else:
            panels_checked = panels
        for first in panels_checked:
            shown = _data(fig, first, "z")
            masked = _data(fig, first + 1, "z") == 1
            nan_layer = _data(fig, first + 2, "z") == 1
            assert not np.any(np.isnan(shown) & ~masked & ~nan_layer), f"{name}: unlabelled NaN gap"
            if nan_layer.any():
                assert any(t.showlegend and "NaN" in (t.name or "") for t in fig.data), \
                    f"{name}: NaN cells without a NaN legend entry"
        covered = {i for first in panels for i in range(first, first + HEATMAP_TRACES)}
        for index, trace in enumerate(fig.data):
            if index in covered:
                continue
            for prop in ("x", "y", "z"):
                value = getattr(trace, prop, None)
                if value is None or (isinstance(value, (tuple, list)) and value and value[0] is None):
                    continue
                try:
                    array = unpacked(value)
                except (TypeError, ValueError):
                    continue                                   # category labels
                assert not np.any(np.isnan(array)), f"{name}: trace {index} {prop} has NaN"


def test_saturation_explorer_contract_and_display():
    ex = saturation_explorer()
    assert set(ex.controls) == {"d_k", "temperature", "scaled", "mask", "seed"}
    assert set(ex.figures) == {"weights", "scores", "row"}
    assert set(ex.metrics) >= {"entropy", "max_weight", "grad_norm", "score_std"}
    bundle = ex._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.widget.model_id
    assert ex.error is None


@pytest.mark.parametrize("control, value, changes", [
    ("d_k", 1024, {"weights", "scores"}),
    ("temperature", 0.2, {"weights", "scores", "row"}),
    ("scaled", False, {"scores"}),
    ("mask", "causal+padding", {"weights", "row"}),
    ("seed", 3, {"weights", "scores", "row"}),
])
def test_each_saturation_control_changes_its_figures_and_the_metrics(control, value, changes):
    ex = saturation_explorer()
    probes = {"weights": (0, "z"), "scores": (1, "x"), "row": (1, "y")}
    before = {name: _data(ex.figures[name], *probes[name]).copy() for name in probes}
    metrics_before = dict(ex.metrics)
    ex.controls[control].value = value
    for name in probes:
        after = _data(ex.figures[name], *probes[name])
        changed = before[name].shape != after.shape or not np.array_equal(before[name], after, equal_nan=True)
        if name in changes:
            assert changed, f"{control} did not change figure {name}"
    assert ex.metrics != metrics_before


def test_saturation_explorer_shows_the_physics():
    ex = saturation_explorer(n=16)
    ex.controls["scaled"].value = False
    unscaled = {}
    for d_k in (4, 64, 4096):
        ex.controls["d_k"].value = d_k
        unscaled[d_k] = dict(ex.metrics)
    # unscaled: raising d_k drives max_weight towards 1 and grad_norm towards 0
    assert unscaled[4]["max_weight"] < unscaled[64]["max_weight"] < unscaled[4096]["max_weight"]
    assert unscaled[4096]["max_weight"] > 0.85 and unscaled[4096]["grad_norm"] < 0.15
    assert unscaled[4096]["grad_norm"] < unscaled[4]["grad_norm"] / 2
    ex.controls["scaled"].value = True
    scaled = []
    for d_k in (4, 64, 4096):
        ex.controls["d_k"].value = d_k
        scaled.append(dict(ex.metrics))
    # scaled: the same vectors stay soft at every d_k
    assert max(m["max_weight"] for m in scaled) - min(m["max_weight"] for m in scaled) < 0.2
    assert min(m["grad_norm"] for m in scaled) > 0.2
    assert ex.metrics_by_setting["unscaled"]["max_weight"] > 0.85      # the other side, same vectors
    # temperature flattens the rows
    entropies = []
    for t in (0.05, 1.0, 20.0):
        ex.controls["temperature"].value = t
        entropies.append(ex.metrics["entropy"])
    assert entropies[0] < entropies[1] < entropies[2]
    assert entropies[2] > 0.99 * ex.metrics["uniform_entropy"]


def test_saturation_causal_weights_above_the_diagonal_are_exactly_zero_in_the_figure():
    ex = saturation_explorer(n=8, mask="causal")
    for first in _heatmap_panels(ex.figures["weights"]):
        shown = _data(ex.figures["weights"], first, "z")
        masked = _data(ex.figures["weights"], first + 1, "z")
        above = np.triu(np.ones((8, 8), dtype=bool), 1)
        assert np.all(masked[above] == 1) and np.all(np.isnan(shown[above]))   # grey, not a colour
    for side in ("scaled", "unscaled"):
        assert torch.all(ex.state[side]["weights"].triu(1) == 0)


def test_saturation_extremes_run_and_show_no_nan():
    ex = saturation_explorer(n=8)
    c = ex.controls
    for d_k in (1, 4096):
        for t in (0.05, 20.0):
            for scaled in (True, False):
                for mask in ("none", "causal", "padding", "causal+padding"):
                    for seed in (0, 10**6):
                        c["d_k"].value, c["temperature"].value = d_k, t
                        c["scaled"].value, c["mask"].value, c["seed"].value = scaled, mask, seed
                        assert ex.error is None
                        assert all(math.isfinite(v) for v in ex.metrics.values())
                        _assert_no_unlabelled_nan(ex)


def test_saturation_at_128_positions():
    ex = saturation_explorer(n=128, d_k=4096, scaled=False)
    assert _data(ex.figures["weights"], 0, "z").shape == (128, 128)
    ex.controls["temperature"].value = 0.05
    _assert_no_unlabelled_nan(ex)


def test_saturation_bad_start_is_named():
    with pytest.raises(ValueError, match="power of two"):
        saturation_explorer(d_k=100)
    with pytest.raises(ValueError, match="mask"):
        saturation_explorer(mask="future")


def test_lookup_explorer_controls():
    ex = lookup_explorer()
    assert set(ex.controls) == {"query_angle", "word", "temperature"}
    query_before = _data(ex.figures["space"], ex._query_trace, "x").copy()
    bars_before = _data(ex.figures["weights"], 0, "y").copy()
    ex.controls["query_angle"].value = 180
    assert not np.array_equal(query_before, _data(ex.figures["space"], ex._query_trace, "x"))
    assert not np.array_equal(bars_before, _data(ex.figures["weights"], 0, "y"))
    ex.controls["word"].value = "tree"
    assert ex.metrics["best_word"] == "tree" and ex.controls["query_angle"].value == 290
    ex.controls["query_angle"].value = 20          # moving the slider lets go of the word
    assert ex.controls["word"].value != "tree"
    ex.controls["temperature"].value = 0.01
    # near temperature 0 it is the exact lookup: the answer sits on the best key's value
    assert ex.metrics["max_weight"] > 0.99 and ex.metrics["distance_to_best"] < 0.01
    ex.controls["temperature"].value = 100
    # at a high temperature it is the plain average
    assert ex.metrics["distance_to_average"] < 0.05
    _assert_no_unlabelled_nan(ex)


def test_mask_explorer_metrics_show_the_traps():
    ex = mask_explorer(mask="padding", fill="-inf")
    assert set(ex.controls) == {"mask", "fill", "dtype"}
    assert set(ex.figures) == {"mask", "scores", "weights"}
    assert ex.metrics["nan_rows"] > 0                      # a fully masked row, -inf fill: NaN
    assert "NaN" in ex.figures["weights"].layout.title.text
    ex.controls["fill"].value = "finfo.min"
    assert ex.metrics["nan_rows"] == 0
    ex.controls["fill"].value = "0"
    assert ex.metrics["leaked_weight"] > 0
    leak = ex.figures["weights"].data[_heatmap_panels(ex.figures["weights"])[1] + 3]
    assert len(leak.x) > 0                                 # the leaked cells carry a red x


def test_mask_explorer_shows_the_float16_error_in_words():
    ex = mask_explorer(mask="padding", fill="-1e9", dtype="float16")
    assert ex.metrics["error"] and "float16" in ex.metrics["error"]
    assert ex._problem.layout.display != "none" and "65504" in ex._problem.value
    assert "raised" in ex.figures["weights"].layout.title.text
    ex.controls["dtype"].value = "bfloat16"                # bfloat16 holds -1e9: the error goes away
    assert ex.metrics["error"] is None and ex._problem.layout.display == "none"


@pytest.mark.parametrize("control", ["mask", "fill", "dtype"])
def test_each_mask_control_changes_the_figures(control):
    ex = mask_explorer(mask="causal", fill="0", dtype="float32")
    new = {"mask": "padding", "fill": "-inf", "dtype": "bfloat16"}[control]
    weights_before = _data(ex.figures["weights"], 0, "z").copy()
    ex.controls[control].value = new
    assert not np.array_equal(weights_before, _data(ex.figures["weights"], 0, "z"), equal_nan=True)
    if control == "mask":
        assert "padding" in ex.figures["mask"].layout.title.text


def test_mask_explorer_every_combination_runs():
    from attnviz.explore import DTYPES, FILLS, MASKS
    ex = mask_explorer()
    for mask in MASKS:
        for fill in FILLS:
            for dtype in DTYPES:
                ex.controls["mask"].value, ex.controls["fill"].value = mask, fill
                ex.controls["dtype"].value = dtype
                assert ex.error is None                    # failures are states, not exceptions
                _assert_no_unlabelled_nan(ex)
                if ex.metrics["nan_rows"]:
                    assert fill == "-inf"


def test_head_explorer_picks_and_enlarges():
    weights = torch.softmax(torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(0)), -1)
    ex = head_explorer(weights, tokens=["the", "cat", "sat", "the"])
    assert list(ex.figures["selected"].layout.yaxis.ticktext) == ["the", "cat", "sat", "the"]
    ex.controls["head"].value = 2
    assert np.allclose(_data(ex.figures["selected"], 0, "z"), weights[0, 2].numpy())
    assert ex.figures["grid"].layout.shapes[0].xref == "x3 domain"
    grid = ex.figures["grid"]
    from plotly.callbacks import Points
    def points(index, clicked):
        return Points(point_inds=[3] if clicked else [], xs=[1] if clicked else [],
                      ys=[2] if clicked else [], trace_name="", trace_index=index)
    # plotly calls every trace's handler for one click; only the clicked trace has points
    ex._on_click(grid.data[4], points(4, True), None)     # layer 1, head 1 (row-major)
    ex._on_click(grid.data[5], points(5, False), None)
    assert (ex.metrics["layer"], ex.metrics["head"]) == (1, 1)
    assert np.allclose(_data(ex.figures["selected"], 0, "z"), weights[1, 1].numpy())
    assert math.isclose(ex.metrics["max_weight"], float(weights[1, 1].amax(-1).mean()), rel_tol=1e-6)
    assert "the" in ex._text.value


def test_head_explorer_accepts_numpy_and_three_dimensions():
    ex = head_explorer(np.full((2, 3, 5), 0.2))
    assert ex.controls["layer"].disabled and ex.weights.shape == (1, 2, 3, 5)


@pytest.mark.parametrize("weights, tokens, message", [
    (torch.zeros(4, 4), None, "2 dimensions"),
    (torch.zeros(1, 2, 2, 4, 4), None, "5 dimensions"),
    (torch.zeros(2, 4, 4), ["a", "b"], "tokens has 2 entries"),
    (torch.zeros(10, 10, 2, 2), None, "at most 96"),
])
def test_head_explorer_bad_input_is_named(weights, tokens, message):
    with pytest.raises(ValueError, match=message):
        head_explorer(weights, tokens=tokens)


def test_kv_cache_explorer():
    ex = kv_cache_explorer(n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, seq_len=4096, dtype="float16")
    assert ex.metrics["bytes_mha"] == 2 * 32 * 32 * 128 * 4096 * 2
    assert "2.00 GiB" in ex._text.value
    bars = _data(ex.figures["bytes"], 0, "y").copy()
    ex.controls["seq_len"].value = 8192
    assert ex.metrics["bytes_gqa"] == ex.metrics["per_token_bytes"] * 8192
    assert np.allclose(_data(ex.figures["bytes"], 0, "y"), 2 * bars)
    ex.controls["dtype"].value = "float32"
    assert ex.metrics["bytes_mha"] == 2 * 32 * 32 * 128 * 8192 * 4
    ex.controls["n_kv_heads"].value = 5                    # does not divide 32: said, not raised
    assert "not divisible" in ex.error and ex._problem.layout.display != "none"
    ex.controls["n_kv_heads"].value = 1
    assert ex.error is None and ex.metrics["bytes_gqa"] == ex.metrics["bytes_mqa"]


def test_lookup_and_kv_cache_extremes_run_without_nan():
    ex = lookup_explorer()
    for angle in (0, 359, 360):
        for t in (0.01, 100):
            ex.controls["query_angle"].value, ex.controls["temperature"].value = angle, t
            assert ex.error is None
            _assert_no_unlabelled_nan(ex)
    kv = kv_cache_explorer()
    for name in ("n_layers", "n_heads", "d_head", "seq_len", "batch"):
        control = kv.controls[name]
        for value in (control.min, control.max):
            control.value = value
            _assert_no_unlabelled_nan(kv)
        control.value = {"n_layers": 32, "n_heads": 32, "d_head": 128, "seq_len": 4096, "batch": 1}[name]
    kv.controls["n_kv_heads"].value = 1024                 # more KV heads than query heads: said in words
    assert "more than n_heads" in kv.error
    kv.controls["seq_len"].value = 0
    kv.controls["n_kv_heads"].value = 8
    assert kv.error is None and kv.metrics["bytes"] == 0
    _assert_no_unlabelled_nan(kv)


def test_head_explorer_shows_nan_weights_as_gaps_and_pink_cells():
    weights = torch.full((1, 2, 3, 3), 1 / 3)
    weights[0, 1, 2] = float("nan")                        # e.g. a fully masked row filled with -inf
    ex = head_explorer(weights)
    ex.controls["head"].value = 1
    assert np.all(_data(ex.figures["selected"], 2, "z")[2] == 1)   # the pink NaN layer, row 2
    assert ex.figures["grid"].data[1].z[2][0] is None               # a blank gap in the grid
