"""The associative-recall toy does what its docstrings say, and the ablation is reproducible."""

import math

import pytest
import torch

from attnviz.toys.recall import RecallAttention, compare_scaling, make_batch, train_recall


def test_batch_shapes_and_answers():
    gen = torch.Generator().manual_seed(0)
    pair_keys, pair_values, query_key, answer = make_batch(50, n_pairs=6, n_keys=10, n_values=7,
                                                           generator=gen)
    assert pair_keys.shape == pair_values.shape == (50, 6)
    assert query_key.shape == answer.shape == (50,)
    assert int(pair_keys.max()) < 10 and int(pair_values.max()) < 7
    for row in range(50):
        keys = pair_keys[row].tolist()
        assert len(set(keys)) == len(keys), "keys must be distinct within a sequence"
        position = keys.index(int(query_key[row]))   # the query key is one of the row's keys
        assert int(answer[row]) == int(pair_values[row, position])


def test_batch_refuses_more_pairs_than_keys():
    with pytest.raises(ValueError, match="n_pairs=9 is larger than n_keys=8"):
        make_batch(4, n_pairs=9, n_keys=8)


def test_model_shapes_and_weights_sum_to_one():
    torch.manual_seed(0)
    model = RecallAttention(n_keys=12, n_values=5, d_model=16, d_k=8)
    pair_keys, pair_values, query_key, _ = make_batch(3, 4, 12, 5, torch.Generator().manual_seed(1))
    logits, weights = model(pair_keys, pair_values, query_key)
    assert logits.shape == (3, 5) and weights.shape == (3, 4)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))


def test_scaled_flag_only_divides_scores_by_sqrt_dk():
    d_k = 32
    torch.manual_seed(3)
    scaled = RecallAttention(d_k=d_k, scaled=True)
    torch.manual_seed(3)
    unscaled = RecallAttention(d_k=d_k, scaled=False)
    for a, b in zip(scaled.parameters(), unscaled.parameters(), strict=True):
        assert torch.equal(a, b), "the two models must start from the same weights"
    batch = make_batch(8, generator=torch.Generator().manual_seed(0))
    _, w_scaled = scaled(*batch[:3])
    _, w_unscaled = unscaled(*batch[:3])
    # softmax(c · s) = softmax(c · log softmax(s)): rebuild the unscaled weights from the scaled ones
    rebuilt = torch.softmax(math.sqrt(d_k) * w_scaled.log(), dim=-1)
    torch.testing.assert_close(rebuilt, w_unscaled, atol=1e-5, rtol=1e-4)


def test_training_is_deterministic():
    first = train_recall(True, seed=5, steps=15)
    second = train_recall(True, seed=5, steps=15)
    assert first.loss == second.loss and first.entropy == second.entropy


def test_scaled_model_learns_the_task():
    result = train_recall(True, seed=0, steps=80)
    assert len(result.loss) == len(result.entropy) == len(result.accuracy) == 80
    assert result.loss[0] > math.log(32) - 0.5          # starts near chance over 32 values
    assert result.final("loss") < 1.0                   # and learns
    assert result.final("accuracy") > 0.8


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unscaled_model_starts_saturated(seed):
    scaled = train_recall(True, seed=seed, steps=1)
    unscaled = train_recall(False, seed=seed, steps=1)
    # same start, but without 1/√d_k the first attention rows are far sharper
    assert unscaled.entropy[0] < 0.5 * scaled.entropy[0]


def test_compare_scaling_runs_both_arms_and_reports_progress():
    calls = []
    results = compare_scaling(seeds=[0, 1], progress=lambda done, total: calls.append((done, total)),
                              steps=3)
    assert [r.seed for r in results[True]] == [0, 1] and [r.seed for r in results[False]] == [0, 1]
    assert all(r.scaled for r in results[True]) and not any(r.scaled for r in results[False])
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_extra_curves_are_logged_and_consistent():
    result = train_recall(False, seed=0, steps=3)
    assert len(result.max_weight) == len(result.on_target) == len(result.softmax_grad) == 3
    assert all(1 / 16 <= w <= 1 for w in result.max_weight)     # a row's largest of 16 weights
    assert all(0 <= f <= 1 for f in result.on_target)
    assert all(0 <= g <= 1 for g in result.softmax_grad)        # ‖diag(p) - ppᵀ‖ ≤ 1


def test_on_target_is_one_when_the_model_attends_to_the_asked_for_pair():
    # a model that has learned the lookup puts its largest weight on the asked-for pair
    result = train_recall(True, seed=0, steps=80)
    assert result.on_target[-1] > 0.8 and result.on_target[0] < 0.5
