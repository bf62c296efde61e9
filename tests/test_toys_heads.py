"""The two-relation task and head specialisation (attnviz.toys.heads)."""

import pytest
import torch

from attnviz.toys.heads import RELATIONS, TinyHeadsModel, relation_shares, sample_sentences, train_heads


def test_relation_shares_reads_the_right_cells():
    n = 5
    weights = torch.zeros(1, 2, n, n)
    for t in range(n):
        weights[0, 0, t, max(t - 1, 0)] = 1.0   # head 0: previous token
        weights[0, 1, t, 0] = 1.0               # head 1: first token
    shares = relation_shares(weights)
    assert set(shares) == set(RELATIONS)
    torch.testing.assert_close(shares["previous"], torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(shares["first"], torch.tensor([0.0, 1.0]))


def test_relation_shares_of_uniform_causal_weights():
    n = 6
    weights = torch.ones(n, n).tril()
    weights = (weights / weights.sum(-1, keepdim=True))[None, None]
    shares = relation_shares(weights)
    expected = torch.tensor([1 / (t + 1) for t in range(2, n)]).mean()
    torch.testing.assert_close(shares["previous"], expected[None])
    torch.testing.assert_close(shares["first"], expected[None])


def test_relation_shares_needs_three_positions():
    with pytest.raises(ValueError, match="at least 3"):
        relation_shares(torch.ones(1, 1, 2, 2))


def test_model_shapes_and_causality():
    torch.manual_seed(0)
    model = TinyHeadsModel(vocab=8, max_len=10, d_model=32, n_heads=4)
    tokens = sample_sentences(3, 10, 8, torch.Generator().manual_seed(0))
    previous_logits, first_logits, weights = model(tokens)
    assert previous_logits.shape == first_logits.shape == (3, 10, 8)
    assert weights.shape == (3, 4, 10, 10)
    assert torch.all(weights.triu(1) == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4, 10))


def test_width_must_split_into_heads():
    with pytest.raises(ValueError, match="not divisible"):
        TinyHeadsModel(vocab=8, max_len=10, d_model=30, n_heads=4)


def test_training_is_deterministic():
    a = train_heads(2, seed=3, steps=15)
    b = train_heads(2, seed=3, steps=15)
    assert a.losses == b.losses and a.shares == b.shares


@pytest.mark.parametrize("seed", [0, 1])
def test_two_heads_specialise_and_beat_one_head_of_the_same_width(seed):
    two = train_heads(2, seed=seed)
    one = train_heads(1, seed=seed)
    # each relation is owned by one head, a different head for each
    owners = [max(range(2), key=lambda h: two.shares[r][h]) for r in RELATIONS]
    assert owners[0] != owners[1]
    for relation, owner in zip(RELATIONS, owners, strict=True):
        assert two.shares[relation][owner] > 0.95
    assert min(two.accuracy_previous, two.accuracy_first) > 0.99
    # one head: its weights sum to 1, so at most one relation can hold the majority
    assert min(one.shares["previous"][0], one.shares["first"][0]) < 0.5
    assert one.held_out_loss > 0.1 > 10 * two.held_out_loss
    assert one.example_weights.shape == (1, 10, 10)
