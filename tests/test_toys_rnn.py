"""The RNN toy matches torch.nn.RNN, and its measurements behave as documented."""

import pytest
import torch

from attnviz.toys.rnn import (
    SelfAttentionLayer,
    SimpleRNN,
    first_input_gradient,
    sequential_depth,
    time_rnn_vs_attention,
    time_rnn_widths,
)


def test_simple_rnn_matches_torch_rnn():
    torch.manual_seed(0)
    ours = SimpleRNN(5, 7)
    theirs = ours.load_into(torch.nn.RNN(5, 7, batch_first=True))
    x = torch.randn(2, 9, 5)
    expected, _ = theirs(x)
    torch.testing.assert_close(ours(x), expected)


def test_gradient_vanishes_through_the_rnn_but_not_through_attention():
    for seed in range(3):
        rnn = [first_input_gradient(n, "rnn", seed=seed) for n in (1, 16)]
        attention = [first_input_gradient(n, "attention", seed=seed) for n in (1, 16)]
        assert rnn[1] < 1e-3 * rnn[0]
        assert attention[1] > 1e-2 * attention[0]


def test_gradient_is_deterministic():
    assert first_input_gradient(8, "rnn", seed=2) == first_input_gradient(8, "rnn", seed=2)


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be 'rnn' or 'attention'"):
        first_input_gradient(4, "lstm")


def test_depth_grows_with_length_for_the_rnn_only():
    torch.manual_seed(0)
    rnn, attention = SimpleRNN(4, 4), SelfAttentionLayer(4)
    depths = {}
    for n in (2, 10):
        x = torch.randn(1, n, 4, requires_grad=True)
        depths[n] = (sequential_depth(rnn(x)), sequential_depth(attention(x)))
    assert depths[10][0] - depths[2][0] == 3 * 8      # three operations per recurrent step
    assert depths[10][1] == depths[2][1]              # attention: the same depth at any length


def test_depth_needs_a_graph():
    with pytest.raises(ValueError, match="no autograd graph"):
        sequential_depth(torch.ones(3))


def test_timing_returns_consistent_numbers():
    result = time_rnn_vs_attention(n=8, d=4, repeats=2)
    assert result["rnn_seconds"] > 0 and result["attention_seconds"] > 0
    assert result["ratio"] == pytest.approx(result["rnn_seconds"] / result["attention_seconds"])


def test_width_timing_gives_each_width_a_time_and_names_bad_widths():
    result = time_rnn_widths(n=8, widths=(6, 2), repeats=2)
    assert list(result) == [6, 2] and all(seconds > 0 for seconds in result.values())
    with pytest.raises(ValueError, match="widths"):
        time_rnn_widths(n=8, widths=(4, 0))
    with pytest.raises(ValueError, match="widths"):
        time_rnn_widths(n=8, widths=())
