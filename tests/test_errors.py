"""Every bad input gets an error a learner can act on: argument, shapes, dimension."""

import re

import pytest
import torch

import attnviz


def _qkv(n_q=3, n_k=6, d_k=4, d_v=2):
    return torch.randn(2, n_q, d_k), torch.randn(2, n_k, d_k), torch.randn(2, n_k, d_v)


def test_mask_key_length_mismatch_names_both_shapes_and_dimension():
    q, k, v = _qkv()
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    with pytest.raises(ValueError) as info:
        attnviz.scaled_dot_product_attention(q, k, v, mask)
    message = str(info.value)
    assert "(2, 3, 5)" in message and "(2, 3, 6)" in message
    assert "key length n_k" in message and "has 5" in message and "have 6" in message


def test_mask_query_length_mismatch():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"query length n_q .*has 4 while the scores have 3"):
        attnviz.scaled_dot_product_attention(q, k, v, torch.ones(4, 6, dtype=torch.bool))


def test_mask_batch_mismatch():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"batch/head dimension 0 .*has 3 while the scores have 2"):
        attnviz.scaled_dot_product_attention(q, k, v, torch.ones(3, 3, 6, dtype=torch.bool))


def test_mask_with_too_many_dimensions():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"may not have more dimensions than the scores"):
        attnviz.scaled_dot_product_attention(q, k, v, torch.ones(1, 2, 3, 6, dtype=torch.bool))


def test_mask_of_integers_is_rejected_with_hint():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match=r"mask has dtype torch.int64; it must be bool .* or floating point"):
        attnviz.scaled_dot_product_attention(q, k, v, torch.ones(3, 6, dtype=torch.long))


def test_query_key_feature_size_mismatch():
    q, k, v = torch.randn(3, 4), torch.randn(6, 5), torch.randn(6, 2)
    with pytest.raises(ValueError, match=r"feature size d_k \(last dimension\) differs, 4 against 5"):
        attnviz.scaled_dot_product_attention(q, k, v)


def test_key_value_length_mismatch():
    q, k, v = torch.randn(3, 4), torch.randn(6, 4), torch.randn(5, 2)
    with pytest.raises(ValueError, match=r"n_k \(dimension -2\) differs, 6 keys against 5 values"):
        attnviz.scaled_dot_product_attention(q, k, v)


def test_leading_dimensions_that_do_not_broadcast():
    q, k, v = torch.randn(2, 3, 4), torch.randn(3, 6, 4), torch.randn(3, 6, 2)
    with pytest.raises(ValueError, match=r"leading \(batch/head\) dimensions .* do not broadcast"):
        attnviz.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("temperature", [0, -1.0, float("nan"), float("inf")])
def test_temperature_must_be_positive(temperature):
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"temperature must be a finite number greater than 0"):
        attnviz.scaled_dot_product_attention(q, k, v, temperature=temperature)


def test_temperature_of_wrong_type():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match=r"temperature must be a number"):
        attnviz.scaled_dot_product_attention(q, k, v, temperature="hot")


def test_non_tensor_input_is_named():
    _, k, v = _qkv()
    with pytest.raises(TypeError, match=r"q must be a torch.Tensor, got list"):
        attnviz.scaled_dot_product_attention([[1.0]], k, v)


def test_one_dimensional_input_is_named():
    _, k, v = _qkv()
    with pytest.raises(ValueError, match=r"q has shape \(4\) \(1 dimensions\) but needs at least 2"):
        attnviz.scaled_dot_product_attention(torch.randn(4), k, v)


def test_d_model_not_divisible_by_n_heads():
    with pytest.raises(ValueError, match=r"d_model=10 is not divisible by n_heads=3.*\[1, 2, 5, 10\]"):
        attnviz.MultiHeadAttention(10, 3)


def test_mha_input_with_wrong_width():
    mha = attnviz.MultiHeadAttention(8, 2)
    expected = re.escape("x has shape (2, 5, 6)") + r".*d_model=8.*last dimension is 6"
    with pytest.raises(ValueError, match=expected):
        mha(torch.randn(2, 5, 6))


def test_mha_mask_mismatch_names_key_length():
    mha = attnviz.MultiHeadAttention(8, 2)
    x = torch.randn(2, 6, 8)
    with pytest.raises(ValueError, match=r"key length n_k .*has 5 while the scores have 6"):
        mha(x, mask=attnviz.padding_mask([5, 3], 5))


def test_mha_context_batch_mismatch():
    mha = attnviz.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"x has batch size 2 .* context has 3"):
        mha(torch.randn(2, 4, 8), context=torch.randn(3, 4, 8))


def test_padding_mask_length_too_long():
    with pytest.raises(ValueError, match=r"lengths\[1\] is 7 but sequences are padded to n=5"):
        attnviz.padding_mask([3, 7], 5)


def test_padding_mask_negative_length():
    with pytest.raises(ValueError, match=r"lengths\[0\] must be 0 or more, got -1"):
        attnviz.padding_mask([-1], 5)


def test_padding_mask_float_lengths():
    with pytest.raises(TypeError, match=r"lengths\[0\] must be a whole number"):
        attnviz.padding_mask([2.5], 5)


def test_causal_mask_bad_size():
    with pytest.raises(ValueError, match=r"n_q must be at least 1, got 0"):
        attnviz.causal_mask(0)


def test_kv_cache_bad_argument_is_named():
    with pytest.raises(ValueError, match=r"n_kv_heads must be at least 1"):
        attnviz.kv_cache_bytes(32, 0, 128, 4096)
