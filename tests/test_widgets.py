"""attnviz.widgets: the explorers driven through their controls (no kernel); figures: test_figures.py."""

# ---------------------------------------------------------------------------------------------
# The explorers, driven through .controls, read back through .panels (the arrays the canvas
# paints) and .metrics.
import ast
import asyncio
import gzip
import hashlib
import math
import pathlib
import re

import numpy as np
import pytest
import torch

from attnviz.widgets import (
    head_explorer,
    kv_cache_explorer,
    lookup_explorer,
    mask_explorer,
    saturation_explorer,
)
from attnviz.widgets.canvas import KEY_TITLE as CANVAS_KEY_TITLE
from attnviz.widgets.canvas import LEGEND, Canvas, heatmap_panel
from attnviz.widgets.canvas import QUERY_TITLE as CANVAS_QUERY_TITLE
from attnviz.widgets.kv_cache import SIZES as KV_SIZES
from attnviz.widgets.kv_cache import sharing_sentence
from attnviz.widgets.lookup import lookup_verdict
from attnviz.widgets.saturation import VERDICT_THRESHOLDS, saturation_verdict

WIDGETS = pathlib.Path(__file__).parents[1] / "attnviz" / "widgets"


def _sections(explorer):
    return explorer.canvas.scene["sections"]


def _assert_no_unlabelled_nan(explorer):
    """NaN may appear only in cells drawn grey (masked) or pink (NaN, and the legend says so)."""
    legends = {name: {item["kind"] for item in section["legend"]}
               for section in _sections(explorer) for name in section["panels"]}
    for name, panel in explorer.panels.items():
        assert panel.description, f"{name}: no text alternative"
        if panel.kind == "heatmap":
            assert panel.values.shape == panel.masked.shape == panel.nan.shape == panel.leak.shape
            assert not np.any(np.isnan(panel.values) & ~panel.masked & ~panel.nan), f"{name}: unlabelled NaN"
            assert np.array_equal(panel.nan, np.isnan(panel.values))
            for kind in ("masked", "nan", "leak"):
                if getattr(panel, kind).any():
                    assert kind in legends[name], f"{name}: {kind} cells but no legend entry"
        else:
            assert np.all(np.isfinite(panel.values)), f"{name}: NaN or inf in a {panel.kind} panel"
    for section in _sections(explorer):
        for name in section["panels"]:
            assert name in explorer.panels or name in explorer.canvas.fixed, f"{name}: laid out, never sent"


def front_end_bytes_sent() -> int:
    """What every explorer's widget sends for its front-end: the loader, canvas.js gzipped, canvas.css."""
    canvas = Canvas("probe")
    return len(canvas._esm.encode()) + len(canvas.front_end) + len(canvas._css.encode())


def _payload_at_first_display(explorer) -> int:
    """What the browser receives for the explorer's canvas: the JS and CSS once, the scene, fixed panels."""
    return (front_end_bytes_sent() + explorer.canvas.payload_bytes("scene")
            + explorer.canvas.payload_bytes("fixed"))


def test_saturation_explorer_contract_and_display():
    ex = saturation_explorer()
    assert set(ex.controls) == {"d_k", "temperature", "scaled", "mask", "seed"}
    assert set(ex.panels) == {"scaled", "unscaled", "scores", "row"}
    assert set(ex.metrics) >= {"entropy", "max_weight", "grad_norm", "score_std"}
    bundle = ex._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.widget.model_id
    assert ex.error is None
    scaled = ex.panels["scaled"]
    assert scaled.kind == "heatmap"
    assert scaled.x_title == CANVAS_KEY_TITLE and scaled.y_title == CANVAS_QUERY_TITLE
    assert scaled.options["scale"] == "weights" and (scaled.options["vmin"], scaled.options["vmax"]) == (0, 1)
    assert np.allclose(scaled.values, ex.state["scaled"]["weights"].numpy())
    # the scene carries exactly these arrays, as float32 bytes
    sent = np.frombuffer(ex.canvas.scene["panels"]["scaled"]["values"], dtype=np.float32).reshape(8, 8)
    assert np.allclose(sent, scaled.values, atol=1e-7)
    assert "◀ metrics" in scaled.title and "◀ metrics" not in ex.panels["unscaled"].title


@pytest.mark.parametrize("control, value, changes", [
    ("d_k", 1024, {"scaled", "unscaled", "scores"}),
    ("temperature", 0.2, {"scaled", "unscaled", "scores", "row"}),
    ("scaled", False, {"scores"}),
    ("mask", "causal+padding", {"scaled", "unscaled", "row"}),
    ("seed", 3, {"scaled", "unscaled", "scores", "row"}),
])
def test_each_saturation_control_changes_its_panels_and_the_metrics(control, value, changes):
    ex = saturation_explorer()
    before = {name: panel.values.copy() for name, panel in ex.panels.items()}
    metrics_before, paints_before = dict(ex.metrics), ex.canvas.scene
    ex.controls[control].value = value
    for name in changes:
        after = ex.panels[name].values
        assert before[name].shape != after.shape or not np.array_equal(before[name], after, equal_nan=True), \
            f"{control} did not change panel {name}"
    assert ex.metrics != metrics_before and ex.canvas.scene is not paints_before
    if control == "mask":
        assert ex.panels["scaled"].masked.any()
        assert "masked" in {i["kind"] for i in _sections(ex)[0]["legend"]}


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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_saturation_verdict_follows_the_numbers(seed):
    ex = saturation_explorer(d_k=4096, temperature=0.05, scaled=True, seed=seed)
    m = ex.metrics
    # issue 11: at d_k 4096, scaled, temperature 0.05 the largest weight passes 0.6: not "Soft"
    assert m["max_weight"] >= VERDICT_THRESHOLDS["saturating"]
    assert "Saturat" in ex._text.value and "Soft" not in ex._text.value
    assert f"{m['max_weight']:.2f}" in ex._text.value                  # the verdict quotes its number
    ex.controls["temperature"].value = 1.0
    assert "Soft" in ex._text.value
    ex.controls["temperature"].value = 20.0
    assert "Nearly flat" in ex._text.value


@pytest.mark.parametrize("top, entropy, word", [
    (0.95, 0.1, "Saturated"), (0.9, 0.3, "Saturated"), (0.89, 0.5, "Saturating"), (0.6, 0.9, "Saturating"),
    (0.59, 1.0, "Soft"), (0.2, 1.99, "Nearly flat"),
])
def test_saturation_verdict_thresholds(top, entropy, word):
    text = saturation_verdict({"max_weight": top, "entropy": entropy, "grad_norm": 0.1,
                               "uniform_entropy": 2.0})
    assert text.startswith(word)


def test_saturation_causal_weights_above_the_diagonal_are_masked_not_zero_coloured():
    ex = saturation_explorer(n=8, mask="causal")
    above = np.triu(np.ones((8, 8), dtype=bool), 1)
    for side in ("scaled", "unscaled"):
        panel = ex.panels[side]
        assert np.all(panel.masked[above]) and not np.any(panel.masked[~above])   # grey, not a colour
        assert not panel.leak.any() and not panel.nan.any()
        assert torch.all(ex.state[side]["weights"].triu(1) == 0)
        flags = np.frombuffer(ex.canvas.scene["panels"][side]["flags"], dtype=np.uint8).reshape(8, 8)
        assert np.array_equal(flags == 1, above)                                   # what the canvas gets
    assert {"kind": "masked", "text": LEGEND["masked"]} in _sections(ex)[0]["legend"]


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
                        assert ex.canvas.payload_bytes() < 10_000


def test_saturation_at_128_positions():
    ex = saturation_explorer(n=128, d_k=4096, scaled=False)
    assert ex.panels["scaled"].values.shape == (128, 128)
    assert not ex.panels["scaled"].options["text"]               # no numbers written in 16384 cells
    ex.controls["temperature"].value = 0.05
    _assert_no_unlabelled_nan(ex)


def test_saturation_bad_start_is_named():
    with pytest.raises(ValueError, match="power of two"):
        saturation_explorer(d_k=100)
    with pytest.raises(ValueError, match="mask"):
        saturation_explorer(mask="future")


def test_lookup_bad_start_is_named_not_clamped():
    """The sliders stop at 0..360 degrees and 0.01..100: a start past them is refused in words (a
    temperature of 1000 was drawn at 100 without a word; a fresh reader's finding)."""
    with pytest.raises(ValueError, match="temperature must be between 0.01 and 100 here, got 1000"):
        lookup_explorer(temperature=1000)
    with pytest.raises(ValueError, match="query_angle must be between 0 and 360 degrees here, got -30"):
        lookup_explorer(query_angle=-30)


def test_saturation_scores_histogram_counts_every_pair():
    ex = saturation_explorer(n=8, d_k=16)
    scores = ex.panels["scores"]
    assert scores.kind == "histogram" and scores.values.shape == (2, 60)
    assert np.all(scores.values.sum(axis=1) == 64)                # every (query, key) pair counted once
    assert [m["x"] for m in scores.options["marks"]] == [-4.0, 4.0]    # ±√d_k
    row = ex.panels["row"]
    assert np.allclose(row.values, [ex.state[s]["weights"][7].numpy() for s in ("scaled", "unscaled")])


def test_lookup_explorer_controls():
    ex = lookup_explorer()
    assert set(ex.controls) == {"query_angle", "word", "temperature"}
    assert set(ex.panels) == {"keys", "values", "weights"}

    def query_tip(explorer):
        line = [s for s in explorer.panels["keys"].options["shapes"] if s.get("arrow")][0]
        return line["x"][1], line["y"][1]
    tip_before, bars_before = query_tip(ex), ex.panels["weights"].values.copy()
    ex.controls["query_angle"].value = 180
    assert query_tip(ex) != tip_before and np.allclose(query_tip(ex), (-1, 0), atol=1e-12)
    assert not np.array_equal(bars_before, ex.panels["weights"].values)
    assert np.allclose(ex.panels["weights"].values[0], ex.state["weights"].numpy())
    ex.controls["word"].value = "tree"
    assert ex.metrics["best_word"] == "tree" and ex.controls["query_angle"].value == 290
    ex.controls["query_angle"].value = 20          # moving the slider lets go of the word
    assert ex.controls["word"].value != "tree"
    ex.controls["temperature"].value = 0.01
    # near temperature 0 it is the exact lookup: the answer sits on the best key's value
    assert ex.metrics["max_weight"] > 0.99 and ex.metrics["distance_to_best"] < 0.01
    star = [s for s in ex.panels["values"].options["shapes"] if s.get("shape") == "star"][0]
    assert np.allclose((star["x"], star["y"]), ex.state["output"].numpy(), atol=1e-4)
    ex.controls["temperature"].value = 100
    # at a high temperature it is the plain average
    assert ex.metrics["distance_to_average"] < 0.05
    _assert_no_unlabelled_nan(ex)


def test_lookup_tie_is_called_a_tie_and_both_labels_are_drawn():
    ex = lookup_explorer(query_angle=40.0, temperature=0.3)          # halfway between cat (20) and dog (60)
    text = ex._text.value
    assert "tie" in text and "'cat'" in text and "'dog'" in text and "leaning" not in text
    labels = [s.get("label") for s in ex.panels["values"].options["shapes"]]
    assert "cat" in labels and "dog" in labels                        # the canvas draws labels above markers
    assert lookup_verdict({"max_weight": 0.5, "distance_to_average": 1.0},
                          [0.5, 0.3, 0.1, 0.05, 0.05]).startswith("A blend, leaning towards 'cat'")


def test_mask_explorer_metrics_show_the_traps():
    ex = mask_explorer(mask="padding", fill="-inf")
    assert set(ex.controls) == {"mask", "fill", "dtype"}
    assert set(ex.panels) == {f"{kind}/{i}" for kind in ("weights", "scores", "mask") for i in range(3)}
    assert ex.metrics["nan_rows"] > 0                      # a fully masked row, -inf fill: NaN
    assert "NaN" in _sections(ex)[0]["title"]
    assert ex.panels["weights/2"].nan.all()                # the empty sequence: every cell pink
    assert "nan" in {item["kind"] for item in _sections(ex)[0]["legend"]}
    assert ex.panels["scores/1"].options["masked_text"] == "-inf"
    ex.controls["fill"].value = "finfo.min"
    assert ex.metrics["nan_rows"] == 0 and not any(ex.panels[f"weights/{i}"].nan.any() for i in range(3))
    ex.controls["fill"].value = "0"
    assert ex.metrics["leaked_weight"] > 0
    assert ex.panels["weights/1"].leak.any()              # the leaked cells carry a red x
    assert "leak" in {item["kind"] for item in _sections(ex)[0]["legend"]}


def test_mask_explorer_says_when_padding_is_not_masked():
    """Under a causal mask the empty sequence's rows hold ordinary weights: the text beside the picture
    says the padding is unmasked (a fresh reader read 'seq 2: empty, 5 pad' with ordinary weights as
    a bug); with no mask it says so too."""
    ex = mask_explorer(mask="padding", fill="finfo.min")
    assert "padding unmasked" not in ex._text.value
    ex.controls["mask"].value = "causal"
    assert "The causal mask leaves the padding unmasked" in ex._text.value
    ex.controls["mask"].value = "none"
    assert "padding included" in ex._text.value
    ex.controls["mask"].value = "causal+padding"
    assert "padding unmasked" not in ex._text.value


def test_mask_explorer_shows_the_float16_error_in_words():
    ex = mask_explorer(mask="padding", fill="-1e9", dtype="float16")
    assert ex.metrics["error"] and "float16" in ex.metrics["error"]
    assert ex._problem.layout.display != "none" and "65504" in ex._problem.value
    assert "raised" in _sections(ex)[0]["title"] and _sections(ex)[0]["panels"] == []
    assert not any(name.startswith("weights") for name in ex.panels)      # no made-up weights
    ex.controls["dtype"].value = "bfloat16"                # bfloat16 holds -1e9: the error goes away
    assert ex.metrics["error"] is None and ex._problem.layout.display == "none"
    assert len(_sections(ex)[0]["panels"]) == 3


@pytest.mark.parametrize("control", ["mask", "fill", "dtype"])
def test_each_mask_control_changes_the_panels(control):
    ex = mask_explorer(mask="causal", fill="0", dtype="float32")
    new = {"mask": "padding", "fill": "-inf", "dtype": "bfloat16"}[control]
    weights_before = ex.panels["weights/0"].values.copy()
    ex.controls[control].value = new
    assert not np.array_equal(weights_before, ex.panels["weights/0"].values, equal_nan=True)
    if control == "mask":
        assert "padding" in _sections(ex)[2]["title"]
        assert np.array_equal(ex.panels["mask/1"].values, ex.state["mask"][1].numpy())


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
                assert ex.canvas.payload_bytes() < 10_000
                if ex.metrics["nan_rows"]:
                    assert fill == "-inf"


def test_head_explorer_picks_and_enlarges():
    weights = torch.softmax(torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(0)), -1)
    ex = head_explorer(weights, tokens=["the", "cat", "sat", "the"])
    assert ex.panels["selected"].y_labels == ["the", "cat", "sat", "the"]      # duplicates kept
    assert set(ex.canvas.fixed) == {f"L{layer} H{head}" for layer in range(2) for head in range(3)}
    ex.controls["head"].value = 2
    assert np.allclose(ex.panels["selected"].values, weights[0, 2].numpy())
    assert ex.canvas.scene["selected"] == "L0 H2"                            # the red frame
    ex._on_pick([1, 1])                                    # what a click on the grid sends
    assert (ex.metrics["layer"], ex.metrics["head"]) == (1, 1)
    assert (ex.controls["layer"].value, ex.controls["head"].value) == (1, 1)
    assert np.allclose(ex.panels["selected"].values, weights[1, 1].numpy())
    assert ex.canvas.scene["selected"] == "L1 H1"
    assert math.isclose(ex.metrics["max_weight"], float(weights[1, 1].amax(-1).mean()), rel_tol=1e-6)
    assert "the" in ex._text.value
    grid = ex.grid["L1 H1"]
    assert grid.options["pick"] == [1, 1] and grid.options["small"]
    assert np.allclose(grid.values, weights[1, 1])
    ex._on_pick("nonsense")                                # a malformed message changes nothing
    assert ex.canvas.scene["selected"] == "L1 H1"


def test_head_explorer_lists_every_query_of_a_short_sequence():
    """07's sequences have 24 positions, and the induction stripe is in the last 12: every query's
    most-attended key is listed up to 32 queries (two columns past 12); longer ones say how many more."""
    weights = torch.eye(24).roll(-1, dims=1).tril().expand(1, 2, 24, 24) + 1e-3
    ex = head_explorer(weights / weights.sum(-1, keepdim=True), tokens=[f"{i}:t{i}" for i in range(24)])
    assert "23:t23 → 22:t22" in ex._text.value and "more queries" not in ex._text.value
    assert "attnviz-columns" in ex._text.value
    long = head_explorer(torch.full((1, 40, 40), 1 / 40))
    assert "… 8 more queries" in long._text.value and "31 → 0 (0.03)" in long._text.value


def test_head_explorer_accepts_numpy_and_three_dimensions():
    ex = head_explorer(np.full((2, 3, 5), 0.2))
    assert ex.controls["layer"].disabled and ex.weights.shape == (1, 2, 3, 5)
    assert ex.controls["layer"].layout.display == "none" and ex.controls["head"].layout.display is None


@pytest.mark.parametrize("weights, tokens, message", [
    (torch.zeros(4, 4), None, "2 dimensions"),
    (torch.zeros(1, 2, 2, 4, 4), None, "5 dimensions"),
    (torch.zeros(2, 4, 4), ["a", "b"], "tokens has 2 entries"),
    (torch.zeros(10, 10, 2, 2), None, "at most 96"),
    (torch.tensor([[[0.5, float("inf")], [1.0, 0.0]]]), None, "1 infinite entries"),
    (torch.tensor([[[1.5, -0.5], [1.0, 0.0]]]), None, "negative entries"),
    (torch.tensor([[[3.0, 0.5], [1.0, 0.0]]]), None, "above 1.*pass the weights, not the scores"),
])
def test_head_explorer_bad_input_is_named(weights, tokens, message):
    with pytest.raises(ValueError, match=message):
        head_explorer(weights, tokens=tokens)


def test_a_row_with_no_allowed_key_shows_the_weights_it_got():
    """With the fill finfo.min, 04's all-padding sequence's rows are a uniform blend over the blocked
    keys, as its text says: drawn as weights (0.20), not grey cells a reader could not read."""
    ex = mask_explorer(mask="padding", fill="finfo.min")
    empty = ex.panels["weights/2"]                          # lengths 5, 3, 0: the third is all padding
    assert not empty.masked.any() and np.allclose(empty.values, 0.2)
    assert ex.panels["weights/1"].masked[:, 3:].all()       # a row with allowed keys: its pads stay grey
    ex.controls["fill"].value = "-inf"
    assert ex.panels["weights/2"].nan.all()                 # -inf: the same rows are NaN (pink)


def test_head_explorer_draws_the_cells_a_mask_blocks_grey():
    """05's and 07's causal heads: the future's cells are blocked, not weights learned to be 0 (a
    reader of 05 took the dark 0.00 cells for the latter)."""
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    weights = torch.randn(2, 3, 4, 4).masked_fill(~causal, float("-inf")).softmax(-1)
    ex = head_explorer(weights, mask=causal)
    assert np.array_equal(ex.panels["selected"].masked, ~causal.numpy())
    assert np.array_equal(ex.grid["L1 H2"].masked, ~causal.numpy())
    ex.controls["head"].value = 2
    assert np.array_equal(ex.panels["selected"].masked, ~causal.numpy())
    assert not head_explorer(weights).panels["selected"].masked.any()
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        head_explorer(weights, mask=causal.float())


def test_head_explorer_shows_nan_weights_as_pink_cells():
    weights = torch.full((1, 2, 3, 3), 1 / 3)
    weights[0, 1, 2] = float("nan")                        # e.g. a fully masked row filled with -inf
    ex = head_explorer(weights)
    ex.controls["head"].value = 1
    assert ex.panels["selected"].nan[2].all() and not ex.panels["selected"].nan[:2].any()
    assert ex.grid["L0 H1"].nan[2].all()
    assert ex.metrics["nan_rows"] == 1 and math.isfinite(ex.metrics["entropy"])
    _assert_no_unlabelled_nan(ex)


def test_kv_cache_explorer():
    ex = kv_cache_explorer(n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, seq_len=4096, dtype="float16")
    assert ex.metrics["bytes_mha"] == 2 * 32 * 32 * 128 * 4096 * 2
    assert "2.00 GiB" in ex._text.value
    bars = ex.panels["bytes"]
    assert bars.x_labels == ["MHA (32 KV heads)", "GQA (8 KV heads)", "MQA (1 KV head)"]
    assert bars.y_title == "KV cache (GiB)" and np.allclose(bars.values, [[2.0, 0.5, 0.0625]])
    ex.controls["seq_len"].value = 8192
    assert ex.metrics["bytes_gqa"] == ex.metrics["per_token_bytes"] * 8192
    assert np.allclose(ex.panels["bytes"].values, 2 * bars.values)
    ex.controls["dtype"].value = "float32"
    assert ex.metrics["bytes_mha"] == 2 * 32 * 32 * 128 * 8192 * 4
    ex.controls["n_kv_heads"].value = 5                    # does not divide 32: said, not raised
    assert "not divisible" in ex.error and ex._problem.layout.display != "none"
    # issue 11: no stale description of the last valid setting
    assert "share" not in ex._text.value and "do not work" in ex._text.value
    ex.controls["n_kv_heads"].value = 1
    assert ex.error is None and ex.metrics["bytes_gqa"] == ex.metrics["bytes_mqa"]
    assert "share 1 KV head " in ex._text.value


def test_kv_cache_typed_values_are_taken_as_typed_and_answered_in_words():
    """The boxes take what is typed: 64.9 was 649 in an IntText, 2000 layers silently 1000 (a fresh
    reader's finding); now each is refused in words naming the box, and the last good picture stays."""
    kv = kv_cache_explorer()
    before = kv.metrics["bytes"]
    for name, typed, words in [("d_head", 64.9, "d_head must be a whole number, got 64.9"),
                               ("n_layers", 2000, "layers (n_layers) must be from 1 to 1,000, got 2,000"),
                               ("seq_len", -5, "seq_len must be from 0 to 10,000,000, got -5"),
                               ("n_kv_heads", 0, "KV heads (n_kv_heads) must be from 1 to 1,024, got 0")]:
        start = kv.controls[name].value
        kv.controls[name].value = typed
        assert kv.error is not None and words in kv.error, (name, kv.error)
        assert kv.metrics["bytes"] == before and "do not work" in kv._text.value
        kv.controls[name].value = start
        assert kv.error is None
    kv.controls["d_head"].value = 1e3                       # 1e3 typed is 1000 (an IntText made it 13)
    assert kv.error is None and "d_head 1000," in kv.panels["bytes"].title
    with pytest.raises(ValueError, match="seq_len must be from 0 to 10,000,000"):
        kv_cache_explorer(seq_len=2 * 10**7)


def test_the_seed_box_takes_what_is_typed_and_answers_in_words():
    """An IntText read 2.5 as 25 without a word (a fresh reader's finding); the box now says so."""
    ex = saturation_explorer()
    ex.controls["seed"].value = 2.5
    assert ex.error == "seed must be a whole number, got 2.5.", ex.error
    ex.controls["seed"].value = 2.0
    assert ex.error is None and ex.state["seed"] == 2 and type(ex.state["seed"]) is int
    with pytest.raises(ValueError, match="seed must be from 0 to 1,000,000"):
        saturation_explorer(seed=2 * 10**6)


def test_kv_cache_sentences_are_grammatical():
    assert sharing_sentence(32, 1, 64, 2) == ("32 query heads share 1 KV head (32 query heads per KV "
                                              "head): the cache is 32x smaller than full multi-head "
                                              "attention's.")
    same = sharing_sentence(8, 8, 100, 100)
    assert "same size as full multi-head" in same and "1x" not in same and "1 query head per" in same
    # seq_len 0: nothing is cached, so nothing is "the same size" or "smaller"
    assert sharing_sentence(8, 2, 0, 0).endswith("with no position cached, every cache is empty.")


def test_lookup_and_kv_cache_extremes_run_without_nan():
    ex = lookup_explorer()
    for angle in (0, 359, 360):
        for t in (0.01, 100):
            ex.controls["query_angle"].value, ex.controls["temperature"].value = angle, t
            assert ex.error is None
            _assert_no_unlabelled_nan(ex)
    kv = kv_cache_explorer()
    for name in ("n_layers", "n_heads", "d_head", "seq_len", "batch"):
        control, (_label, low, high) = kv.controls[name], KV_SIZES[name]
        for value in (low, high):
            control.value = value
            assert kv.error is None or "n_kv_heads" in kv.error, (name, value, kv.error)   # a range end
            _assert_no_unlabelled_nan(kv)
        control.value = {"n_layers": 32, "n_heads": 32, "d_head": 128, "seq_len": 4096, "batch": 1}[name]
    kv.controls["n_kv_heads"].value = 1024                 # more KV heads than query heads: said in words
    assert "more than query heads (n_heads) = 32" in kv.error and "KV heads (n_kv_heads) = 1024" in kv.error
    kv.controls["seq_len"].value = 0
    kv.controls["n_kv_heads"].value = 8
    assert kv.error is None and kv.metrics["bytes"] == 0
    _assert_no_unlabelled_nan(kv)


def _every_explorer():
    weights = torch.softmax(torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(1)), -1)
    return [saturation_explorer(), lookup_explorer(), mask_explorer(),
            head_explorer(weights, tokens=[f"t{i}" for i in range(8)]), kv_cache_explorer()]


def test_payloads_are_kilobytes():
    for ex in _every_explorer():
        # issue 13 targets: under 10 kB per update at n = 8, under 200 kB at first display
        assert ex.canvas.payload_bytes() < 10_000, type(ex).__name__
        assert _payload_at_first_display(ex) < 200_000, type(ex).__name__
        assert ex.canvas.explorer and ex.canvas.scene["explorer"] == ex.kind
        for name, panel in ex.panels.items():
            assert panel.description.strip() and panel.name == name


def test_heatmap_panel_describes_itself():
    panel = heatmap_panel("p", [[0.25, 0.75], [np.nan, np.nan]], [[True, True], [True, False]],
                          query_labels=["a", "b"], key_labels=["x", "y"], title="demo")
    assert "2 queries (rows) by 2 keys" in panel.description
    assert "Largest weight 0.75, from query 0 'a' to key 1 'y'" in panel.description
    assert "2 cells NaN" in panel.description
    assert panel.legend() == ["nan"]                        # the NaN cell is pink, not grey
    with pytest.raises(ValueError, match="key_labels has 1 labels"):
        heatmap_panel("p", np.zeros((2, 2)), key_labels=["x"])


def test_changes_coalesce_inside_a_running_loop():
    ex = saturation_explorer()
    first = ex.computations

    async def drag():
        for t in (0.1, 0.2, 0.5, 1.5, 3.0, 7.0):          # six slider messages before the loop runs again
            ex.controls["temperature"].value = t
        assert ex.computations == first                   # nothing computed yet: the loop has not run
        await asyncio.sleep(0.05)                         # a few frames later
    asyncio.run(drag())
    assert ex.computations == first + 1                   # one computation, for the newest value
    assert "temperature = 7" in _sections(ex)[0]["title"]

    async def set_and_read():                             # a cell that sets a control and reads at once
        ex.controls["d_k"].value = 4096
        return dict(ex.metrics)
    metrics = asyncio.run(set_and_read())
    assert metrics["score_std"] == ex.metrics["score_std"] and ex.computations == first + 2


def test_explorer_modules_never_touch_plotly():
    for name in ("_base", "canvas", "saturation", "lookup", "masks", "heads", "kv_cache"):
        tree = ast.parse((WIDGETS / f"{name}.py").read_text())
        imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                     for alias in node.names}
        assert not any("plotly" in m or m.endswith("figures") for m in imported), name


# What each explorer's widget brings to the browser for its front-end: the loader (loader.js), the
# bundle (canvas.js, built from js/) gzipped, and canvas.css. Before the front-end was built from
# modules, canvas.js travelled as text: 31.8 kB (12.2 kB gzipped). The bundle now keeps one statement
# per line (tools/build_canvas.js) and gained the keys, the save buttons and the focus rings (35.8 kB
# of text, 13.0 kB with canvas.css gzipped); since it travels gzipped, 17.9 kB are sent in all. The
# budgets were set half a kilobyte above that; on 2026-12-05 (after the hover and table changes) the
# front-end was 13,178 bytes gzipped and 18,308 sent: 322 and 92 bytes of room. On 2026-12-06 the
# note an explorer shows when its kernel is gone (js/connection.js) took it to 13,507 and 18,818,
# and the budgets to 13,900 and 19,000; the course's byte targets are measured by
# benchmarks/browser_bytes.py. (Over the kernel websocket the front-end travels once per explorer
# on the page: that benchmark counts those.)
FRONT_END_GZIPPED_BUDGET = 13_900
FRONT_END_SENT_BUDGET = 19_000


def test_the_front_end_fits_its_byte_budget():
    code = [(WIDGETS / name).read_bytes() for name in ("canvas.js", "canvas.css")]
    gzipped = sum(len(gzip.compress(part, compresslevel=9)) for part in code)
    assert gzipped <= FRONT_END_GZIPPED_BUDGET, (
        f"the front-end is {gzipped:,} bytes gzipped, over its budget of {FRONT_END_GZIPPED_BUDGET:,}")
    sent = front_end_bytes_sent()
    assert sent <= FRONT_END_SENT_BUDGET, (
        f"each explorer sends {sent:,} bytes of front-end, over the budget of {FRONT_END_SENT_BUDGET:,}")


def test_the_widget_sends_the_committed_bundle_gzipped():
    """What the loader unpacks is canvas.js byte for byte, and its id changes with it."""
    canvas = Canvas("probe")
    text = (WIDGETS / "canvas.js").read_bytes()
    assert gzip.decompress(canvas.front_end) == text
    assert canvas.front_end_id == hashlib.sha256(text).hexdigest()[:16]
    assert canvas._esm == (WIDGETS / "loader.js").read_text()
    assert len(canvas.front_end) < len(text) / 2


def test_the_front_end_marks_each_paint_and_reads_the_theme():
    sources = "".join(path.read_text() for path in sorted((WIDGETS / "js").glob("*.js")))
    for needed in ("requestAnimationFrame", "attnvizPaint", "data-attnviz-panel", "--jp-ui-font-color1",
                   "aria-label"):
        assert needed in sources, needed
    assert "masked: may not attend" not in sources and "key (attended to)" not in sources   # from Python


def test_big_heatmaps_travel_as_bfloat16_and_small_ones_as_float32():
    small, big = saturation_explorer(n=8, d_k=64), saturation_explorer(n=64, d_k=64, mask="causal")
    assert "dtype" not in small.canvas.scene["panels"]["scaled"]             # float32: exact to 6 digits
    sent = big.canvas.scene["panels"]["unscaled"]
    assert sent["dtype"] == "bfloat16" and len(sent["values"]) == 64 * 64 * 2
    decoded = (np.frombuffer(sent["values"], dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    exact = big.panels["unscaled"].values.ravel()
    allowed = np.isfinite(exact)
    assert np.allclose(decoded[allowed], exact[allowed], rtol=2 ** -8, atol=0)   # 3 significant digits
    assert sent["flags"] and np.frombuffer(sent["flags"], dtype=np.uint8).reshape(64, 64)[0, 1] == 1
    assert big.canvas.payload_bytes() < 40_000                                # two 64 x 64 maps, halved


def test_lookup_tie_verdict_does_not_put_the_answer_between_the_two_values():
    # two words tie, the others keep a share: the answer is pulled towards both, not onto their segment
    from attnviz.widgets.lookup import lookup_verdict

    said = lookup_verdict({"max_weight": 0.375, "distance_to_average": 0.5}, [0.375, 0.375, 0.125, 0.125])
    assert said.startswith("A tie:") and "pulled equally towards their two values" in said
    assert "between their values" not in said


@pytest.mark.parametrize("page, text", [("rgb(255, 255, 255)", "rgba(0, 0, 0, 0.87)"),          # Light
                                        ("rgb(17, 17, 17)", "rgba(255, 255, 255, 0.87)")],     # Dark
                         ids=["light", "dark"])
def test_the_problem_line_reads_on_light_and_dark_pages(page, text):
    """An explorer's problem line (e.g. 04's float16 fill of -1e9) was near-white on JupyterLab Dark's
    light orange --jp-warn-color3, 1.3:1 (seen in a screenshot): its background must be one that
    the theme's own text colour reads on, on either page (JupyterLab's ui-font-color1 on its
    layout-color0)."""
    from _a11y import channels, contrast

    rule = re.search(r"\.attnviz-problem \{([^}]*)\}", (WIDGETS / "canvas.css").read_text()).group(1)
    background = re.search(r"background: (rgba\([^)]*\))", rule).group(1)
    assert "var(--jp-ui-font-color1" in rule
    *tint, alpha = channels(background)
    under = channels(page)[:3]
    tinted = "rgb({}, {}, {})".format(*(alpha * x + (1 - alpha) * y                  # onto the page
                                        for x, y in zip(tint, under, strict=True)))
    assert contrast(text, tinted) >= 4.5, (background, page)
