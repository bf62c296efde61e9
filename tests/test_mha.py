"""attnviz.MultiHeadAttention against torch.nn.MultiheadAttention.

The two differ in convention, and these tests show the bridge:
  * torch's module is sequence-first unless built with ``batch_first=True``;
  * its bool masks mean "ignore" (True = blocked), ours mean "may attend",
    so a mask crosses over as ``~mask``;
  * its ``key_padding_mask`` is ``(batch, n_k)``; ours is ``(batch, 1, n_k)``.
"""

import pytest
import torch
from torch import nn

import attnviz

D_MODEL, N_HEADS = 16, 4


def _pair(bias=False, seed=0):
    torch.manual_seed(seed)
    ours = attnviz.MultiHeadAttention(D_MODEL, N_HEADS, bias=bias)
    theirs = nn.MultiheadAttention(D_MODEL, N_HEADS, bias=bias, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        theirs.out_proj.weight.copy_(ours.W_o.weight)
        if bias:
            theirs.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
            theirs.out_proj.bias.copy_(ours.W_o.bias)
    return ours, theirs


def _x(batch=2, n=5, seed=1):
    return torch.randn(batch, n, D_MODEL, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("bias", [False, True])
def test_self_attention_matches_torch(bias):
    ours, theirs = _pair(bias)
    x = _x()
    out, weights = ours(x)
    ref, ref_weights = theirs(x, x, x, average_attn_weights=False)
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(weights, ref_weights, atol=1e-6, rtol=0)
    assert weights.shape == (2, N_HEADS, 5, 5)


def test_sequence_first_default_needs_transposes():
    ours, theirs_bf = _pair()
    theirs = nn.MultiheadAttention(D_MODEL, N_HEADS, bias=False)  # batch_first=False
    theirs.load_state_dict(theirs_bf.state_dict())
    x = _x()
    seq_first = x.transpose(0, 1)  # (n, batch, d_model)
    ref, _ = theirs(seq_first, seq_first, seq_first)
    torch.testing.assert_close(ours(x)[0], ref.transpose(0, 1), atol=1e-6, rtol=0)


def test_causal_mask_is_inverted_for_torch():
    ours, theirs = _pair()
    x = _x(n=6)
    allowed = attnviz.causal_mask(6)
    out, weights = ours(x, mask=allowed)
    ref, _ = theirs(x, x, x, attn_mask=~allowed)  # torch: True = ignore
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=0)
    assert torch.all(weights[..., ~allowed] == 0)


def test_padding_mask_bridges_to_key_padding_mask():
    ours, theirs = _pair()
    x = _x(batch=3, n=6)
    lengths = [6, 4, 2]
    mask = attnviz.padding_mask(lengths, 6)                  # (batch, 1, n_k), True = real
    out, weights = ours(x, mask=mask)
    ref, _ = theirs(x, x, x, key_padding_mask=~mask[:, 0])  # (batch, n_k), True = pad
    # compare only the real query positions; padded queries are never used
    for b, n_real in enumerate(lengths):
        torch.testing.assert_close(out[b, :n_real], ref[b, :n_real], atol=1e-6, rtol=0)
    assert torch.all(weights[1, :, :, 4:] == 0)


def test_cross_attention_matches_torch():
    ours, theirs = _pair()
    x, context = _x(n=3), _x(n=8, seed=5)
    out, weights = ours(x, context=context)
    ref, _ = theirs(x, context, context)
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=0)
    assert out.shape == (2, 3, D_MODEL) and weights.shape == (2, N_HEADS, 3, 8)


def test_per_head_mask():
    ours, _ = _pair()
    x = _x(n=4)
    mask = torch.ones(2, N_HEADS, 4, 4, dtype=torch.bool)
    mask[:, 0] = attnviz.causal_mask(4)
    _, weights = ours(x, mask=mask)
    assert torch.all(weights[:, 0][..., ~attnviz.causal_mask(4)] == 0)
    assert torch.all(weights[:, 1:] > 0)


def test_heads_use_per_head_scale():
    ours, _ = _pair()
    assert ours.d_k == D_MODEL // N_HEADS
    x = _x()
    query = ours.split_heads(ours.W_q(x))
    key = ours.split_heads(ours.W_k(x))
    expected = torch.softmax(query @ key.transpose(-2, -1) / ours.d_k**0.5, -1)
    torch.testing.assert_close(ours(x)[1], expected)


def test_split_then_merge_is_identity():
    ours, _ = _pair()
    x = _x()
    torch.testing.assert_close(ours.merge_heads(ours.split_heads(x)), x)


def test_key_masks_of_one_two_and_three_dimensions_agree_with_torch():
    ours, theirs = _pair()
    x = _x(batch=2, n=5)
    keys = torch.tensor([True, True, False, True, False])                  # (n_k,)
    ref, _ = theirs(x, x, x, key_padding_mask=~keys.expand(2, 5))          # torch: (batch, n_k), True = pad
    for mask in (keys, keys.expand(5, 5), keys.expand(2, 1, 5)):  # (n_k,), (n_q, n_k), (batch, 1, n_k)
        out, weights = ours(x, mask=mask)
        torch.testing.assert_close(out, ref, atol=1e-6, rtol=0)
        assert torch.all(weights[..., ~keys] == 0)
