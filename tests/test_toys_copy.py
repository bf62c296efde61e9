"""attnviz.toys.copy: the repeat task's data, its two losses, and a short training run."""

import math

import pytest
import torch

from attnviz.toys import copy as copy_toy


def test_sequences_repeat_their_first_half_unless_corrupted():
    g = torch.Generator().manual_seed(0)
    tokens = copy_toy.sample_repeats(64, 5, 7, g)
    assert tokens.shape == (64, 10) and int(tokens.max()) < 7
    assert torch.equal(tokens[:, :5], tokens[:, 5:])
    noisy = copy_toy.sample_repeats(400, 5, 7, g, corrupt=0.5)
    changed = (noisy[:, :5] != noisy[:, 5:]).float().mean().item()
    assert 0.35 < changed < 0.5      # half replaced; a replacement hits the same token 1/7 of the time


def test_an_untrained_model_scores_about_chance_on_both_halves():
    run = copy_toy.train_copy(seed=0, steps=1, lr=1e-9)
    assert abs(run.first_half_loss - math.log(16)) < 0.5 and abs(run.repeat_loss - math.log(16)) < 0.5
    assert len(run.losses) == 1 and run.eval_tokens.shape == (128, 16)


def test_copy_accuracy_counts_the_repeated_tokens():
    run = copy_toy.train_copy(seed=0, steps=1)
    tokens = run.eval_tokens[:4]
    assert copy_toy.copy_accuracy(run.model, tokens, continued=tokens) == 1.0
    wrong = tokens.clone()
    wrong[:, 8:] = (wrong[:, 8:] + 1) % 16
    assert copy_toy.copy_accuracy(run.model, tokens, continued=wrong) == 0.0


def test_the_loss_is_the_mean_over_all_fifteen_targets():
    run = copy_toy.train_copy(seed=0, steps=1)
    # 16 tokens give 15 targets: 7 in the first half, 8 in the copy
    assert run.loss == pytest.approx((7 * run.first_half_loss + 8 * run.repeat_loss) / 15, rel=1e-5)
    with torch.no_grad():
        assert copy_toy.next_token_losses(run.model, run.eval_tokens).shape == (128, 15)


def test_loss_floor_counts_the_random_targets():
    assert copy_toy.loss_floor(16, 8) == pytest.approx(7 / 15 * math.log(16))
    with pytest.raises(ValueError, match="half"):
        copy_toy.loss_floor(16, 0)
