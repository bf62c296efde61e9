"""The length-generalisation toy and the cost-measuring helpers used by notebook 06."""

import math

import pytest
import torch

from attnviz.toys import length as L
from attnviz.toys import timing as T

# ---------------------------------------------------------------- length toy


def test_batch_targets_are_the_previous_token():
    tokens, targets = L.make_batch(4, 10, 16, torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (4, 10)
    assert (targets[:, 0] == L.IGNORE).all()
    assert torch.equal(targets[:, 1:], tokens[:, :-1])
    assert tokens.min() >= 0 and tokens.max() < 16


def test_model_shapes_and_causal_weights():
    torch.manual_seed(0)
    model = L.PreviousTokenModel(vocab=16, d_model=8, max_len=20)
    logits, weights = model(torch.randint(16, (3, 12)))
    assert logits.shape == (3, 12, 16)
    assert weights.shape == (3, 12, 12)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 12))
    assert (weights.triu(1) == 0).all()  # nothing attends to the future


def test_model_refuses_sequences_longer_than_its_position_table():
    model = L.PreviousTokenModel(vocab=4, d_model=8, max_len=10)
    with pytest.raises(ValueError, match="max_len=10"):
        model(torch.zeros(1, 11, dtype=torch.long))


def test_config_errors_name_the_argument():
    with pytest.raises(ValueError, match="max_len"):
        L.LengthConfig(train_len=32, max_len=16)
    with pytest.raises(ValueError, match="score_gain"):
        L.LengthConfig(score_gain=0)
    with pytest.raises(TypeError, match="LengthConfig"):
        L.train({"steps": 3})


def test_uniform_entropy():
    assert L.uniform_entropy(2) == pytest.approx(math.log(2))
    assert L.uniform_entropy(4) == pytest.approx((math.log(2) + math.log(3) + math.log(4)) / 3)


def test_training_is_deterministic_and_records_every_step():
    config = L.LengthConfig(steps=6, seed=3)
    first, second = L.train(config), L.train(config)
    assert first.losses == second.losses
    assert first.entropies == second.entropies
    assert len(first.losses) == len(first.entropies) == 6
    assert L.train(L.LengthConfig(steps=6, seed=4)).losses != first.losses


def test_initial_model_is_where_training_starts_and_keeps_global_rng():
    config = L.LengthConfig(steps=3, seed=5)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    start = L.initial_model(config)
    assert torch.equal(torch.get_rng_state(), before)  # global random state untouched
    assert torch.equal(start.position_embedding.weight, L.initial_model(config).position_embedding.weight)
    trained = L.train(config).model
    # rows past train_len get no gradient: still exactly the initial ones; trained rows moved
    assert torch.equal(trained.position_embedding.weight[16:], start.position_embedding.weight[16:])
    assert not torch.equal(trained.position_embedding.weight[:16], start.position_embedding.weight[:16])
    with pytest.raises(TypeError, match="LengthConfig"):
        L.initial_model({"seed": 0})


def test_progress_is_reported():
    seen = []
    L.train(L.LengthConfig(steps=30), progress=lambda step, loss: seen.append(step))
    assert seen == [25, 30]


def test_learns_at_train_length_and_fails_past_it():
    config = L.LengthConfig(seed=0)
    torch.manual_seed(config.seed)  # train() builds its model right after this seed
    initial = L.PreviousTokenModel(config.vocab, config.d_model, config.max_len)
    result = L.train(config)
    table = result.model.position_embedding.weight.detach()
    start = initial.position_embedding.weight.detach()
    # rows past the training length never got a gradient: still exactly their initial values
    assert torch.equal(table[config.train_len:], start[config.train_len:])
    assert not torch.equal(table[: config.train_len], start[: config.train_len])

    accuracy = L.accuracy_by_length(result.model, [config.train_len, 4 * config.train_len])
    assert accuracy[config.train_len] > 0.95
    assert accuracy[4 * config.train_len] < 0.5
    by_position = L.accuracy_by_position(result.model, 4 * config.train_len)
    assert by_position.shape == (4 * config.train_len - 1,)
    assert by_position[: config.train_len - 1].min() > 0.9       # positions 1..15 were trained
    assert by_position[config.train_len :].mean() < 0.2          # later ones are near chance (1/16)
    # the attention sharpened from near uniform to near one-hot
    assert result.entropies[0] > 0.8 * L.uniform_entropy(config.train_len)
    assert result.entropies[-1] < 0.1


def test_saturated_start_shows_as_low_entropy_at_step_0():
    result = L.train(L.LengthConfig(steps=2, score_gain=8.0))
    assert result.entropies[0] < 0.2


def test_accuracy_arguments_are_checked():
    model = L.PreviousTokenModel(vocab=4, d_model=8, max_len=10)
    with pytest.raises(TypeError, match="PreviousTokenModel"):
        L.accuracy_by_length(torch.nn.Linear(2, 2), [4])
    with pytest.raises(ValueError, match="at least 2"):
        L.accuracy_by_position(model, 1)


# ---------------------------------------------------------------- measuring helpers


def test_loglog_slope_recovers_the_exponent():
    xs = [1, 2, 4, 8, 16]
    assert T.loglog_slope(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    assert T.loglog_slope(xs, [5 * x**0.5 for x in xs]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="positive"):
        T.loglog_slope([1, 2], [0, 1])
    with pytest.raises(ValueError, match="pair up"):
        T.loglog_slope([1, 2], [1])


def test_peak_allocation_sees_torch_tensors():
    n_bytes = T.peak_allocated_bytes(lambda: torch.empty(1000, 1000).fill_(1.0).sum())
    assert n_bytes >= 4 * 1000 * 1000          # the float32 matrix was allocated
    assert n_bytes < 4 * 1000 * 1000 + 65536   # and nothing much else


def test_peak_allocation_counts_the_high_water_mark_not_the_total():
    def two_in_turn():
        for _ in range(2):
            torch.empty(1000, 1000).fill_(1.0)  # freed before the next one is made

    assert T.peak_allocated_bytes(two_in_turn) < 2 * 4 * 1000 * 1000


def test_aten_ops_called_names_the_attention_kernel():
    q = torch.randn(1, 1, 8, 4)
    ops = T.aten_ops_called(torch.nn.functional.scaled_dot_product_attention, q, q, q)
    assert "aten::scaled_dot_product_attention" in ops
    assert any(name.startswith("aten::_scaled_dot_product") for name in ops)


def test_single_thread_restores_the_thread_count():
    before = torch.get_num_threads()
    for threads in (2, 1):                         # (the tests run on one thread: try two as well)
        torch.set_num_threads(threads)
        with T.single_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == threads
    torch.set_num_threads(before)


def test_median_seconds():
    calls = []
    assert T.median_seconds(lambda: calls.append(1), repeats=3, warmup=2) >= 0
    assert len(calls) == 5
    with pytest.raises(ValueError, match="repeats"):
        T.median_seconds(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="clock"):
        T.median_seconds(lambda: None, clock="sundial")


def test_thread_clock_counts_cpu_work_not_sleep():
    import time

    with T.single_thread():
        assert T.median_seconds(time.sleep, 0.05, repeats=1, warmup=0, clock="thread") < 0.02
        assert T.median_seconds(time.sleep, 0.05, repeats=1, warmup=0, clock="wall") >= 0.05
        busy = T.median_seconds(lambda: torch.randn(300, 300) @ torch.randn(300, 300), repeats=3,
                                clock="thread")
    assert busy > 0
    before = torch.get_num_threads()
    torch.set_num_threads(2)                       # more than one thread: the thread clock refuses
    try:
        with pytest.raises(ValueError, match="single_thread"):
            T.median_seconds(lambda: None, clock="thread")
    finally:
        torch.set_num_threads(before)
    with pytest.raises(TypeError, match="callable"):
        T.peak_allocated_bytes(3)
