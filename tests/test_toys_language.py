"""The pairs language and the causal-mask leak experiment (attnviz.toys.language)."""

import math

import pytest
import torch

from attnviz.toys.language import (
    PairsLanguage,
    TinyNextTokenModel,
    accuracy_future_hidden,
    accuracy_future_visible,
    best_possible_accuracy,
    loss_floor,
    one_thread,
    train_next_token,
)


def test_sentences_are_word_partner_pairs():
    language = PairsLanguage(vocab=6, n_pairs=4, seed=3)
    tokens = language.sample(50, torch.Generator().manual_seed(0))
    assert tokens.shape == (50, 8)
    assert tokens.min() >= 0 and tokens.max() < 6
    partner = language.partner
    assert sorted(partner.tolist()) == list(range(6))          # a permutation
    assert torch.equal(tokens[:, 1::2], partner[tokens[:, 0::2]])


def test_sampling_is_seeded():
    language = PairsLanguage()
    a = language.sample(4, torch.Generator().manual_seed(7))
    b = language.sample(4, torch.Generator().manual_seed(7))
    assert torch.equal(a, b)


def test_best_accuracy_and_loss_floor_formulas():
    language = PairsLanguage(vocab=4, n_pairs=3)
    # 5 predictions: 3 partners (certain), 2 fresh words (1/4 each)
    assert best_possible_accuracy(language) == pytest.approx((3 + 2 / 4) / 5)
    assert loss_floor(language) == pytest.approx(2 * math.log(4) / 5)


def test_bad_language_is_refused():
    with pytest.raises(ValueError, match="vocab"):
        PairsLanguage(vocab=1)
    with pytest.raises(TypeError, match="n_pairs"):
        PairsLanguage(n_pairs=2.5)


def test_causal_model_does_not_see_the_future():
    torch.manual_seed(0)
    model = TinyNextTokenModel(vocab=8, max_len=12, causal=True)
    tokens = torch.randint(8, (3, 12))
    changed = tokens.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % 8
    with torch.no_grad():
        torch.testing.assert_close(model(tokens)[:, :7], model(changed)[:, :7])
        # so running on prefixes gives exactly the full-sentence accuracy
    assert accuracy_future_hidden(model, tokens) == pytest.approx(accuracy_future_visible(model, tokens))


def test_model_without_mask_does_see_the_future():
    torch.manual_seed(0)
    model = TinyNextTokenModel(vocab=8, max_len=12, causal=False)
    tokens = torch.randint(8, (3, 12))
    changed = tokens.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % 8
    with torch.no_grad():
        assert not torch.allclose(model(tokens)[:, :7], model(changed)[:, :7])


def test_too_long_input_is_refused():
    model = TinyNextTokenModel(vocab=8, max_len=4)
    with pytest.raises(ValueError, match="max_len=4"):
        model(torch.zeros(1, 5, dtype=torch.long))


def test_one_thread_restores_the_setting():
    before = torch.get_num_threads()
    for threads in (2, 1):                         # (the tests run on one thread: try two as well)
        torch.set_num_threads(threads)
        with one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == threads
    torch.set_num_threads(before)


def test_training_is_deterministic():
    a = train_next_token(causal=True, seed=1, steps=20)
    b = train_next_token(causal=True, seed=1, steps=20)
    assert a.losses == b.losses
    assert a.accuracy_future_hidden == b.accuracy_future_hidden


@pytest.mark.parametrize("seed", [0, 1])
def test_the_leak(seed):
    language = PairsLanguage()
    masked = train_next_token(language, causal=True, seed=seed)
    leaky = train_next_token(language, causal=False, seed=seed)
    best = best_possible_accuracy(language)
    # with the mask: near the language's floor and ceiling
    assert masked.final_loss < loss_floor(language) + 0.1
    assert masked.accuracy_future_hidden > best - 0.03
    # without: training loss far lower, accuracy with the future hidden far below what is possible
    assert leaky.final_loss < 0.25 * masked.final_loss
    assert leaky.accuracy_future_visible > 0.95
    assert leaky.accuracy_future_hidden < best - 0.15


def test_progress_is_reported():
    seen = []
    train_next_token(steps=5, progress=lambda step, total: seen.append((step, total)))
    assert seen == [(i, 5) for i in range(1, 6)]

