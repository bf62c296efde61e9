"""attnviz.toys.induction: the repeated-segment data, the two head scores, and the circuit grown on
the seeds notebook 07 uses, held to what the notebook asserts."""

import pytest
import torch

from attnviz import gpt
from attnviz.toys import copy as copy_toy
from attnviz.toys import induction

SEEDS = (0, 1, 2)               # notebook 07's seeds
UNSEEN = (2, 3, *range(13, 21))  # periods never seen in training (it sees 4 .. 12)


@pytest.fixture(scope="module")
def runs():
    return {seed: induction.train_induction(seed) for seed in SEEDS}


# ---- the data and the measures, on hand-made inputs --------------------------------------------

def test_segments_are_distinct_tokens_repeated_with_their_period():
    tokens, period = induction.sample_segments(200, 24, 24, range(4, 13), torch.Generator().manual_seed(0))
    assert tokens.shape == (200, 24) and period.shape == (200,)
    assert set(period.tolist()) == set(range(4, 13))
    for row, p in zip(tokens, period.tolist(), strict=True):
        assert len(set(row[:p].tolist())) == p                       # one segment of distinct tokens
        assert torch.equal(row[p:], row[:-p])                        # then the same again, and again


def test_periods_must_allow_distinct_tokens():
    with pytest.raises(ValueError, match="periods"):
        induction.sample_segments(4, 24, 10, [12], torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="periods"):
        induction.sample_segments(4, 24, 10, [1], torch.Generator().manual_seed(0))


def test_repeat_queries_start_at_the_period():
    queries = induction.repeat_queries(torch.tensor([3, 5]), 8)
    assert queries.tolist() == [[False] * 3 + [True] * 4, [False] * 5 + [True] * 2]


def test_scores_of_a_previous_token_head_and_an_ideal_induction_head():
    tokens = torch.tensor([[5, 1, 7, 5, 1, 7, 5, 1]])                 # period 3, n = 8
    n = tokens.shape[1]
    previous = torch.zeros(n, n)
    previous[0, 0] = 1
    previous[torch.arange(1, n), torch.arange(n - 1)] = 1            # every query on t - 1
    ideal = torch.eye(n)
    for t in range(3, n):
        ideal[t] = 0
        ideal[t, t - 2] = 1                                         # the key after the earlier copy
    weights = torch.stack([previous, ideal])[:, None, None]          # (n_layers 2, batch 1, heads 1, n, n)
    prev_score, induction_score = induction.head_scores(weights, tokens)
    assert prev_score[0, 0] == 1 and induction_score[1, 0] == 1
    assert prev_score[1, 0] < 0.2 and induction_score[0, 0] < 0.2


def test_the_induction_score_counts_every_earlier_occurrence():
    tokens = torch.tensor([[4, 9, 4, 9, 4, 9]])                       # period 2: query 4 has two earlier 4s
    n = tokens.shape[1]
    weights = torch.zeros(n, n)
    weights[:, 0] = 1
    weights[4, 0], weights[4, 1], weights[4, 3] = 0, 0.5, 0.5        # both keys after an earlier 4
    _, score = induction.head_scores(weights[None, None, None], tokens)
    # queries 2, 3, 4 ask (their token occurred before); 5 is the last and left out; only query 4 is right
    assert score[0, 0].item() == pytest.approx(1 / 3)


def test_head_scores_names_a_shape_mismatch():
    with pytest.raises(ValueError, match="n_layers, batch, n_heads"):
        induction.head_scores(torch.ones(2, 3, 4, 4), torch.zeros(1, 4, dtype=torch.long))


def test_offset_habit_finds_a_fixed_offset():
    n = 10
    weights = torch.zeros(n, n)
    for t in range(n):
        weights[t, t - 3 if t >= 3 else t] = 1                     # 3 back, or itself near the start
    habit = induction.offset_habit(weights[None, None, None])        # (1, 1, n // 2)
    assert habit.shape == (1, 1, 5) and habit[0, 0, 2] == 1 and habit[0, 0, [0, 1, 3, 4]].max() == 0


def test_knock_out_zeroes_one_heads_columns_on_a_copy():
    torch.manual_seed(0)
    model = gpt.TinyGPT(8, 16, 2, 2, 6, mlp=False)
    ablated = induction.knock_out(model, [(1, 0)])
    assert torch.all(ablated.blocks[1].attention.W_o.weight[:, :8] == 0)
    kept, original = ablated.blocks[1].attention.W_o.weight, model.blocks[1].attention.W_o.weight
    assert torch.equal(kept[:, 8:], original[:, 8:])
    assert original[:, :8].abs().sum() > 0                                    # the original is untouched


def test_an_attention_only_tiny_gpt_has_no_mlp_and_generates_the_same_with_a_cache():
    torch.manual_seed(0)
    model = gpt.TinyGPT(8, 16, 2, 2, 12, mlp=False).eval()
    with_mlp = gpt.TinyGPT(8, 16, 2, 2, 12)
    assert not model.has_mlp and all(b.mlp is None and b.norm_mlp is None for b in model.blocks)
    assert sum(p.numel() for p in with_mlp.parameters()) - sum(p.numel() for p in model.parameters()) == \
        2 * (2 * 16 + 16 * 64 + 64 + 64 * 16 + 16)            # per block: norm_mlp and the two MLP layers
    prompt = torch.tensor([[1, 2, 3, 4]])
    assert torch.equal(gpt.generate(model, prompt, 6), gpt.generate(model, prompt, 6, use_cache=False))
    with pytest.raises(TypeError, match="mlp must be True or False"):
        gpt.TinyGPT(8, 16, 2, 2, 12, mlp="no")


# ---- what notebook 07 asserts, on its seeds ----------------------------------------------------

def test_every_seed_grows_a_previous_token_head_and_an_induction_head(runs):
    for run in runs.values():
        assert run.previous[0].max() >= 0.4                  # Olsson et al.'s threshold, held-out
        assert run.induction[1].max() >= 0.4
        assert run.repeat_accuracy > 0.95 and len(run.losses) == 250


def test_knocking_out_the_previous_token_head_loses_the_repeat(runs):
    for run in runs.values():
        head = int(run.previous[0].argmax())
        knocked = induction.knock_out(run.model, [(0, head)])
        assert induction.repeat_accuracy(knocked, run.eval_tokens, run.eval_period) < run.repeat_accuracy / 2
        with torch.no_grad():
            _, after = induction.head_scores(knocked.attention_weights(run.eval_tokens), run.eval_tokens)
        assert after[1].max() < 0.4                           # the induction heads' pattern collapses
        other = induction.knock_out(run.model, [(0, 1 - head)])
        assert induction.repeat_accuracy(other, run.eval_tokens, run.eval_period) > 0.9


def test_knocking_out_both_layer_1_heads_loses_the_repeat(runs):
    for run in runs.values():
        knocked = induction.knock_out(run.model, [(1, 0), (1, 1)])
        assert induction.repeat_accuracy(knocked, run.eval_tokens, run.eval_period) < 0.2


def test_the_induction_model_predicts_repeats_at_periods_it_never_saw(runs):
    for seed, run in runs.items():
        tokens, period = induction.sample_segments(256, 24, 24, UNSEEN, torch.Generator().manual_seed(seed))
        assert induction.repeat_accuracy(run.model, tokens, period) >= 0.9


def test_the_fixed_offset_model_fails_at_other_periods():
    run = copy_toy.train_copy(seed=0)
    tokens, period = induction.sample_segments(256, 16, 16, (3, 5, 6, 7, 9, 10, 11, 12),
                                               torch.Generator().manual_seed(0))
    assert induction.repeat_accuracy(run.model, tokens, period) < 0.1
    tokens, period = induction.sample_segments(256, 16, 16, (8,), torch.Generator().manual_seed(0))
    assert induction.repeat_accuracy(run.model, tokens, period) > 0.95


def test_the_loss_falls_while_both_scores_rise(runs):
    for run in runs.values():
        falls = run.halfway_step("repeat_loss")
        assert abs(run.halfway_step("previous") - falls) <= 25
        assert abs(run.halfway_step("induction") - falls) <= 25
        assert run.score_steps[0] == 0 and run.score_steps[-1] == 250 and len(run.repeat_losses) == 250


def test_one_layer_does_not_learn_the_repeat():
    run = induction.train_induction(0, n_layers=1)
    assert run.repeat_accuracy < 0.5


def test_halfway_step_reads_a_rise_and_a_fall():
    run = induction.InductionResult(seed=0, n_layers=1, periods=(4,), score_steps=[0, 10, 20, 30],
                                    previous_history=[torch.tensor([[v]]) for v in (0.1, 0.2, 0.5, 0.6)],
                                    repeat_losses=[3.0] * 20 + [0.0] * 20)
    assert run.halfway_step("previous") == 20                  # halfway from 0.1 to 0.6 is 0.35
    steps, smoothed = run.curve("repeat_loss")                 # the mean of the last 10 steps
    assert steps[0] == 1 and smoothed[24] == 1.5 and run.halfway_step("repeat_loss") == 25
    with pytest.raises(ValueError, match="repeat_loss"):
        run.curve("loss")
