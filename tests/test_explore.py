"""attnviz.explore: the numbers behind the explorers, and the physics they must show."""

import math

import pytest
import torch
from _fresh import modules_after, top_level

from attnviz.explore import (
    DTYPES,
    FILLS,
    KEY_ANGLES_DEG,
    LOOKUP_WORDS,
    MASKS,
    binary_unit,
    format_bytes,
    heads_state,
    kv_cache_state,
    lookup_state,
    mask_state,
    saturation_state,
)

SEEDS = range(5)


def test_saturation_state_shapes_and_rows_sum_to_one():
    state = saturation_state(16, n=6)
    assert state["raw_scores"].shape == state["scores"].shape == state["weights"].shape == (6, 6)
    assert state["mask"] is None
    assert torch.allclose(state["weights"].sum(-1), torch.ones(6, dtype=torch.float64))
    assert set(state["metrics"]) >= {"entropy", "max_weight", "grad_norm", "score_std"}


def test_saturation_scaled_and_unscaled_use_the_same_queries_and_keys():
    scaled, unscaled = saturation_state(64, scaled=True), saturation_state(64, scaled=False)
    assert torch.equal(scaled["raw_scores"], unscaled["raw_scores"])
    # the softmax input differs exactly by the factor sqrt(d_k)
    assert torch.allclose(unscaled["scores"], scaled["scores"] * 8)


@pytest.mark.parametrize("seed", SEEDS)
def test_unscaled_softmax_saturates_as_d_k_grows(seed):
    small = saturation_state(4, scaled=False, seed=seed, n=16)["metrics"]
    large = saturation_state(4096, scaled=False, seed=seed, n=16)["metrics"]
    # unscaled: max_weight heads to 1, the softmax gradient and the entropy head to 0
    assert large["max_weight"] > 0.85 and large["max_weight"] > small["max_weight"] + 0.2
    assert large["grad_norm"] < 0.15 and large["grad_norm"] < small["grad_norm"] / 2
    assert large["entropy"] < 0.4
    # the scores' spread grows like sqrt(d_k)
    assert 40 < large["score_std"] < 90


@pytest.mark.parametrize("seed", SEEDS)
def test_scaled_softmax_stays_soft_for_every_d_k(seed):
    metrics = [saturation_state(2**p, scaled=True, seed=seed, n=16)["metrics"] for p in range(0, 13, 2)]
    for m in metrics:
        # dividing by sqrt(d_k) keeps the softmax input near unit spread and the rows soft
        assert 0.5 < m["score_std"] < 1.6
        assert m["max_weight"] < 0.6
        assert m["grad_norm"] > 0.2
    spread = [m["max_weight"] for m in metrics]
    assert max(spread) - min(spread) < 0.25


@pytest.mark.parametrize("seed", SEEDS)
def test_temperature_flattens_rows(seed):
    by_t = [saturation_state(64, temperature=t, seed=seed)["metrics"] for t in (0.05, 1.0, 20.0)]
    assert by_t[0]["entropy"] < by_t[1]["entropy"] < by_t[2]["entropy"]
    assert by_t[0]["max_weight"] > by_t[1]["max_weight"] > by_t[2]["max_weight"]
    # at temperature 20 the rows are nearly uniform: entropy within 1% of log(n)
    assert by_t[2]["entropy"] > 0.99 * by_t[2]["uniform_entropy"]


def test_causal_weights_above_the_diagonal_are_exactly_zero():
    for mask in ("causal", "causal+padding"):
        weights = saturation_state(32, mask=mask, n=10)["weights"]
        assert torch.all(weights.triu(diagonal=1) == 0)
        assert torch.allclose(weights.sum(-1), torch.ones(10, dtype=torch.float64))


def test_padding_hides_the_padded_key_columns():
    state = saturation_state(32, mask="padding", n=8)
    n_real = state["n_real"]
    assert 0 < n_real < 8
    assert torch.all(state["weights"][:, n_real:] == 0)
    assert torch.all(state["weights"][:, :n_real] > 0)


@pytest.mark.parametrize("bad, message", [
    (dict(d_k=0), "d_k"), (dict(d_k=8, temperature=0), "temperature"),
    (dict(d_k=8, mask="future"), "mask"), (dict(d_k=8, scaled="yes"), "scaled"),
    (dict(d_k=8, seed=-1), "seed"), (dict(d_k=8, n=0), "n"),
])
def test_saturation_state_bad_settings_are_named(bad, message):
    with pytest.raises((ValueError, TypeError), match=message):
        saturation_state(**bad)


def test_lookup_temperature_goes_from_exact_lookup_to_plain_average():
    cold = lookup_state(30.0, temperature=0.01)
    hot = lookup_state(30.0, temperature=1000.0)
    assert cold["metrics"]["max_weight"] > 0.999
    assert torch.allclose(cold["output"], cold["values"][cold["best"]], atol=1e-3)
    assert torch.allclose(hot["output"], hot["values"].mean(0), atol=1e-2)
    assert torch.allclose(hot["weights"].sum(), torch.tensor(1.0, dtype=torch.float64))


@pytest.mark.parametrize("word", LOOKUP_WORDS)
def test_lookup_by_word_finds_that_word(word):
    state = lookup_state(query_word=word, temperature=0.05)
    assert state["metrics"]["best_word"] == word


def test_mask_state_inf_fill_gives_nan_on_the_fully_masked_rows():
    state = mask_state("padding", "-inf", "float32")
    m = state["metrics"]
    assert m["dead_rows"] > 0
    assert m["nan_rows"] == m["dead_rows"]          # exactly the rows with no allowed key
    assert m["error"] is None
    assert m["leaked_weight"] == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_mask_state_finfo_min_never_gives_nan(dtype):
    for mask in MASKS:
        m = mask_state(mask, "finfo.min", dtype)["metrics"]
        assert m["nan_rows"] == 0 and m["leaked_weight"] == 0


@pytest.mark.parametrize("mask", ["causal", "padding", "causal+padding"])
def test_mask_state_zero_fill_leaks_weight(mask):
    m = mask_state(mask, "0", "float32")["metrics"]
    assert m["leaked_weight"] > 0.1 and m["nan_rows"] == 0


def test_mask_state_float16_minus_1e9_is_reported_not_raised():
    # measured on torch 2.13: masked_fill of -1e9 into float16 raises a RuntimeError
    state = mask_state("padding", "-1e9", "float16")
    assert state["weights"] is None
    assert "float16" in state["metrics"]["error"] and "65504" in state["metrics"]["error"]
    # bfloat16 has float32's exponent range, so -1e9 fits there
    assert mask_state("padding", "-1e9", "bfloat16")["metrics"]["error"] is None


def test_mask_state_every_combination_runs():
    for mask in MASKS:
        for fill in FILLS:
            for dtype in DTYPES:
                m = mask_state(mask, fill, dtype)["metrics"]
                assert (m["error"] is None) == (m["nan_rows"] is not None)


def test_kv_cache_state_matches_the_formula():
    state = kv_cache_state(n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, seq_len=4096,
                           dtype="float16", batch=1)
    assert state["bytes"]["MHA"] == 2 * 32 * 32 * 128 * 4096 * 2
    assert state["bytes"]["GQA"] * 4 == state["bytes"]["MHA"]
    assert state["bytes"]["MQA"] * 32 == state["bytes"]["MHA"]
    assert state["per_token"] == 2 * 32 * 8 * 128 * 2
    assert format_bytes(state["bytes"]["MHA"]) == "2.00 GiB"


def test_kv_cache_state_bad_grouping_is_explained():
    with pytest.raises(ValueError, match="not divisible by n_kv_heads=5"):
        kv_cache_state(n_heads=32, n_kv_heads=5)


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1,023 B"), (1024, "1.00 KiB"),
                                     (3 * 1024**2, "3.00 MiB"), (int(1.5 * 1024**3), "1.50 GiB")])
def test_format_bytes_uses_binary_units(n, text):
    assert format_bytes(n) == text


def test_binary_unit_is_the_largest_the_size_fills():
    assert binary_unit(1023) == ("B", 1) and binary_unit(1024) == ("KiB", 1024)
    assert binary_unit(2 * 1024**3 - 1) == ("GiB", 1024**3) and binary_unit(5 * 1024**2) == ("MiB", 1024**2)
    # a 70B-like model's cache at 131072 positions, batch 8 (80 layers, 8 KV heads, d_head 128,
    # float16) is 320 GiB; with 64 KV heads (MHA) 2.5 TiB, not "2,560.00 GiB"
    assert format_bytes(2 * 80 * 64 * 128 * 131072 * 2 * 8) == "2.50 TiB"
    # the explorer's largest settings stay under 1024 of the largest unit
    largest = 2 * 1000 * 1024 * 4096 * 10_000_000 * 8 * 4096
    unit, size = binary_unit(largest)
    assert unit == "ZiB" and largest / size < 1024


def test_each_word_is_aimed_at_by_its_key_angle():
    for word, angle in zip(LOOKUP_WORDS, KEY_ANGLES_DEG, strict=True):
        by_word, by_angle = lookup_state(query_word=word), lookup_state(query_angle=angle)
        assert by_word["query_angle"] == angle
        assert torch.allclose(by_word["weights"], by_angle["weights"])


@pytest.mark.parametrize("angle, error", [("30", TypeError), (True, TypeError), (float("nan"), ValueError),
                                          (float("inf"), ValueError)])
def test_lookup_angle_must_be_a_finite_number(angle, error):
    with pytest.raises(error, match="query_angle"):
        lookup_state(query_angle=angle)


def _heads():
    return torch.softmax(torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(0)), dim=-1)


def test_heads_state_picks_one_head_and_measures_it():
    weights = _heads()
    state = heads_state(weights, layer=1, head=2, tokens=list("abcde"))
    one = weights[1, 2].double()
    assert torch.equal(state["weights"], one) and state["weights"].dtype == torch.float64
    assert torch.equal(state["top"], one.argmax(dim=-1))
    assert state["key_labels"] == list("abcde") and state["query_labels"] is None      # n_q != n_k
    m = state["metrics"]
    assert (m["layer"], m["head"], m["nan_rows"]) == (1, 2, 0)
    assert math.isclose(m["max_weight"], float(one.amax(-1).mean()))
    assert math.isclose(m["entropy"], float(-(one * one.log()).sum(-1).mean()))
    square = heads_state(torch.full((2, 3, 3), 1 / 3, dtype=torch.float64), head=1, tokens=[1, 2, 3])
    assert square["query_labels"] == ["1", "2", "3"] and square["layer"] == 0          # one layer
    assert math.isclose(square["metrics"]["entropy"], math.log(3))


def test_heads_state_leaves_rows_of_nan_out_of_its_means():
    weights = torch.full((1, 1, 3, 3), 1 / 3, dtype=torch.float64)
    weights[0, 0, 2] = float("nan")                             # a fully masked row filled with -inf
    state = heads_state(weights)
    assert state["nan_rows"].tolist() == [False, False, True] and state["metrics"]["nan_rows"] == 1
    assert math.isclose(state["metrics"]["max_weight"], 1 / 3)
    all_nan = heads_state(torch.full((1, 2, 2), float("nan")))
    assert math.isnan(all_nan["metrics"]["entropy"]) and math.isnan(all_nan["metrics"]["max_weight"])


@pytest.mark.parametrize("kwargs, error, message", [
    ({"layer": 2}, ValueError, "layer must be at most 1"),
    ({"head": -1}, ValueError, "head must be 0 or more"),
    ({"head": 1.5}, TypeError, "head must be a whole number"),
    ({"tokens": ["a"]}, ValueError, "tokens has 1 entries but weights has n_k=5"),
    ({"mask": torch.ones(5, 5)}, TypeError, "mask must be a bool tensor.*float32"),
    ({"mask": torch.ones(5, 5, dtype=torch.bool)}, ValueError, r"mask has shape \(5, 5\).*\(4, 5\)"),
])
def test_heads_state_bad_settings_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        heads_state(_heads(), **kwargs)


def test_heads_state_returns_the_mask_it_was_given_at_one_heads_shape():
    assert heads_state(_heads())["mask"] is None
    causal = torch.ones(4, 5, dtype=torch.bool).tril(diagonal=1)          # 4 queries, 5 keys
    assert torch.equal(heads_state(_heads(), mask=causal)["mask"], causal)
    row = heads_state(_heads(), mask=torch.tensor([True, True, False, True, True]))["mask"]   # keys only
    assert row.shape == (4, 5) and not row[:, 2].any() and row[:, [0, 1, 3, 4]].all()


def test_heads_state_takes_numpy_and_lists_and_names_what_it_cannot_take():
    import numpy as np
    assert heads_state(np.full((1, 2, 2), 0.5))["metrics"]["max_weight"] == 0.5
    assert heads_state([[[0.25, 0.75]]])["weights"].tolist() == [[0.25, 0.75]]
    with pytest.raises(TypeError, match="weights must be a torch tensor"):
        heads_state("weights")


def test_explore_stays_torch_only():
    loaded = top_level(modules_after("import attnviz.explore"))
    assert not loaded & {"plotly", "ipywidgets"}, loaded & {"plotly", "ipywidgets"}


def test_uniform_entropy_is_log_n():
    assert math.isclose(saturation_state(8, n=8)["metrics"]["uniform_entropy"], math.log(8))



def test_saturation_states_match_one_at_a_time():
    from attnviz.explore import saturation_states
    pair = saturation_states(256, temperature=0.7, mask="causal+padding", seed=3, n=9)
    for scaled in (True, False):
        one = saturation_state(256, temperature=0.7, scaled=scaled, mask="causal+padding", seed=3, n=9)
        assert torch.equal(pair[scaled]["weights"], one["weights"])
        assert pair[scaled]["metrics"] == one["metrics"]
