"""attnviz.rotary: rotary position embeddings (the reference math of notebook 06, section 7)."""

import math

import pytest
import torch

import attnviz
from attnviz.toys import length as L


def turned_by_hand(x, base=10000.0):
    """Each pair (2i, 2i + 1) of row m times the 2 x 2 rotation matrix of angle m * base ** (-2i / d)."""
    n, d = x.shape
    out = torch.empty_like(x, dtype=torch.float64)
    for m in range(n):
        for i in range(d // 2):
            angle = m * base ** (-2 * i / d)
            c, s = math.cos(angle), math.sin(angle)
            a, b = float(x[m, 2 * i]), float(x[m, 2 * i + 1])
            out[m, 2 * i], out[m, 2 * i + 1] = c * a - s * b, s * a + c * b
    return out


def test_rotary_turns_each_pair_by_its_angle():
    x = torch.randn(9, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.allclose(attnviz.rotary(x), turned_by_hand(x), atol=1e-12)
    assert torch.allclose(attnviz.rotary(x, base=100.0), turned_by_hand(x, base=100.0), atol=1e-12)


def test_position_zero_is_not_turned_and_lengths_are_kept():
    x = torch.randn(2, 3, 40, 8, generator=torch.Generator().manual_seed(1))   # (batch, heads, n, d)
    turned = attnviz.rotary(x)
    assert turned.shape == x.shape and turned.dtype == x.dtype
    assert torch.equal(turned[..., 0, :], x[..., 0, :])
    assert torch.allclose(turned.norm(dim=-1), x.norm(dim=-1), atol=1e-5)


@pytest.mark.parametrize("shift", [1, 17, 250])
def test_scores_depend_only_on_the_offset(shift):
    g = torch.Generator().manual_seed(2)
    q = torch.randn(12, 16, generator=g, dtype=torch.float64)
    k = torch.randn(12, 16, generator=g, dtype=torch.float64)
    positions = torch.arange(12)
    scores = attnviz.rotary(q, positions) @ attnviz.rotary(k, positions).T
    moved = attnviz.rotary(q, positions + shift) @ attnviz.rotary(k, positions + shift).T
    assert torch.allclose(scores, moved, atol=1e-9)
    # and they do depend on it: the same vectors one position apart score differently
    one_apart = attnviz.rotary(q, positions + 1) @ attnviz.rotary(k, positions).T
    assert not torch.allclose(scores.diagonal(), one_apart.diagonal())


def test_half_precision_is_turned_in_float32_and_given_back():
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(3))
    turned = attnviz.rotary(x.to(torch.bfloat16))
    assert turned.dtype == torch.bfloat16
    assert torch.allclose(turned.float(), attnviz.rotary(x), atol=0.05)


@pytest.mark.parametrize("call, match", [
    (lambda: attnviz.rotary(torch.zeros(4, 5)), r"last dimension \(features, d = 5\) must be even"),
    (lambda: attnviz.rotary(torch.zeros(5)), "at least 2"),
    (lambda: attnviz.rotary([[1.0, 2.0]]), "must be a torch.Tensor"),
    (lambda: attnviz.rotary(torch.zeros(4, 6, dtype=torch.long)), "floating-point"),
    (lambda: attnviz.rotary(torch.zeros(4, 6), positions=torch.arange(3)), r"expected shape \(4,\)"),
    (lambda: attnviz.rotary(torch.zeros(4, 6), base=1), "base must be a number greater than 1"),
    (lambda: attnviz.rotary(torch.zeros(4, 6), base=float("nan")), "base must be a finite number"),
    (lambda: attnviz.rotary(torch.zeros(2, 6), positions=torch.tensor([0.0, math.nan])), "NaN or infinite"),
    (lambda: attnviz.rotary(torch.zeros(2, 6), positions=torch.tensor([True, False])), "dtype torch.bool"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


def test_the_rotary_toy_has_no_table_and_runs_any_length():
    config = L.LengthConfig(positions="rotary", d_model=8, max_len=16, steps=2)
    model = L.initial_model(config)
    assert model.position_embedding is None
    logits, weights = model(torch.zeros(2, 40, dtype=torch.long))           # longer than max_len
    assert logits.shape == (2, 40, config.vocab) and (weights.triu(1) == 0).all()
    # the learned model of the same seed starts exactly as before the option existed: a table first
    learned = L.initial_model(L.LengthConfig(d_model=8, max_len=16))
    assert learned.position_embedding.weight.shape == (16, 8)


def test_the_rotary_toy_learns_the_task_and_beats_the_table_past_the_training_length():
    rotary = L.train(L.LengthConfig(positions="rotary", steps=100))
    table = L.train(L.LengthConfig())
    acc_rotary = L.accuracy_by_length(rotary.model, [16, 32], n_sequences=64)
    acc_table = L.accuracy_by_length(table.model, [16, 32], n_sequences=64)
    assert acc_rotary[16] > 0.95 and acc_table[16] > 0.95
    assert acc_rotary[32] > acc_table[32] + 0.2


def test_rotary_config_errors_name_the_argument():
    with pytest.raises(ValueError, match="positions must be one of"):
        L.LengthConfig(positions="sinusoid")
    with pytest.raises(ValueError, match="d_model must be even"):
        L.LengthConfig(positions="rotary", d_model=7)
    with pytest.raises(ValueError, match="positions must be one of"):
        L.PreviousTokenModel(4, 8, 10, positions="alibi")
    with pytest.raises(ValueError, match="rope_base must be greater than 1"):
        L.LengthConfig(positions="rotary", rope_base=0.5)


def test_the_rotary_toy_turns_by_its_base():
    x = torch.randn(1, 6, 8, generator=torch.Generator().manual_seed(5))
    model = L.initial_model(L.LengthConfig(positions="rotary", d_model=8, rope_base=100.0))
    assert torch.allclose(attnviz.rotary(model.W_q(x), base=100.0),
                          attnviz.rotary(model.W_q(x), base=model.rope_base))
    other = L.initial_model(L.LengthConfig(positions="rotary", d_model=8))
    tokens = torch.arange(6)[None] % 4
    assert not torch.allclose(model(tokens)[1], other(tokens)[1])


def test_far_positions_keep_the_offset_in_float32():
    """Positions past 2**24 are whole numbers float32 cannot tell apart; the angles are float64."""
    g = torch.Generator().manual_seed(4)
    q, k = torch.randn(1, 8, generator=g), torch.randn(1, 8, generator=g)
    far = 2**24 + 5
    near_score = attnviz.rotary(q, torch.tensor([6])) @ attnviz.rotary(k, torch.tensor([5])).T
    far_score = attnviz.rotary(q, torch.tensor([far + 1])) @ attnviz.rotary(k, torch.tensor([far])).T
    assert torch.allclose(near_score, far_score, atol=1e-4)
