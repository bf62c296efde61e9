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


# --- the core's edges found by a fuzz (issue 12) ---------------------------------------------


def test_float32_scores_that_overflow_say_by_how_much():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"scores overflowed: the largest \|q @ kᵀ\| is about [\d.]+e\+40, "
                                         r"[\d.]+ times the largest torch.float32"):
        attnviz.scaled_dot_product_attention(q * 1e20, k * 1e20, v)


@pytest.mark.parametrize("kw, names", [({"temperature": 1e-40}, "1e-40"), ({"scale": 1e39}, "1e\\+39")])
def test_factor_beyond_float32_is_rejected(kw, names):
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=rf"scale / temperature = .*{names}.*more than torch.float32 can"):
        attnviz.scaled_dot_product_attention(q, k, v, **kw)


@pytest.mark.parametrize("scale", [float("inf"), float("nan"), 10**400])
def test_attention_scores_validates_scale(scale):
    q, k, _ = _qkv()
    with pytest.raises(ValueError, match=r"scale must be a finite number"):
        attnviz.attention_scores(q, k, scale=scale)


def _attention_of_q_k(q, k, **kw):
    return attnviz.scaled_dot_product_attention(q, k, k, **kw)


@pytest.mark.parametrize("fn", [attnviz.attention_scores, _attention_of_q_k])
def test_scale_of_wrong_type(fn):
    q, k, _ = _qkv()
    with pytest.raises(TypeError, match=r"scale must be a number, got 'a' \(str\)"):
        fn(q, k, scale="a")
    with pytest.raises(TypeError, match=r"scale must be a number or a one-element floating-point tensor"):
        fn(q, k, scale=torch.ones(3))


def test_huge_integer_temperature_is_named_not_overflow_error():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"temperature must be a finite number greater than 0, got a 401-"):
        attnviz.scaled_dot_product_attention(q, k, v, temperature=10**400)


def test_mixed_dtypes_are_named():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match=r"q is torch.float32 on cpu but k is torch.float64"):
        attnviz.scaled_dot_product_attention(q, k.double(), v)
    with pytest.raises(TypeError, match=r"q is torch.float32 on cpu but v is torch.float16"):
        attnviz.scaled_dot_product_attention(q, k, v.half())


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64])
def test_non_float_inputs_are_named(dtype):
    q, k, v = _qkv()
    with pytest.raises(TypeError, match=rf"q has dtype {dtype}, but attention needs real floating-point"):
        attnviz.scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype))


def test_zero_d_k_is_named():
    with pytest.raises(ValueError, match=r"feature size d_k \(last dimension\) is 0"):
        attnviz.scaled_dot_product_attention(torch.randn(3, 0), torch.randn(5, 0), torch.randn(5, 2))


def test_empty_key_dimension_is_named():
    with pytest.raises(ValueError, match=r"k has shape \(0, 4\): the number of keys n_k \(dimension -2\) is"):
        attnviz.scaled_dot_product_attention(torch.randn(3, 4), torch.randn(0, 4), torch.randn(0, 2))


@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_nan_in_an_input_is_named_with_its_index(name):
    inputs = dict(zip("qkv", _qkv(), strict=True))
    inputs[name][1, 2, 0] = float("nan")
    with pytest.raises(ValueError, match=rf"{name} contains 1 value\(s\) that are NaN or infinite, "
                                         r"the first at index \(1, 2, 0\)"):
        attnviz.scaled_dot_product_attention(inputs["q"], inputs["k"], inputs["v"])


def test_float_mask_with_nan_or_positive_inf():
    q, k, v = _qkv()
    for bad in (float("nan"), float("inf")):
        mask = torch.zeros(3, 6)
        mask[0, 0] = bad
        with pytest.raises(ValueError, match=r"mask contains NaN or \+inf"):
            attnviz.scaled_dot_product_attention(q, k, v, mask)


def test_mha_one_dimensional_key_mask_blocks_key_columns():
    mha = attnviz.MultiHeadAttention(8, 2)
    keys = torch.tensor([True, True, False, True, False])
    _, weights = mha(torch.randn(2, 5, 8), mask=keys)
    assert torch.all(weights[..., ~keys] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 5))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_mha_input_dtype_differs_from_weights(dtype):
    mha = attnviz.MultiHeadAttention(8, 2)
    with pytest.raises(TypeError, match=rf"x is {dtype} on cpu but this MultiHeadAttention's weights are "
                                        r"torch.float32"):
        mha(torch.randn(2, 5, 8, dtype=dtype))
    assert mha.double()(torch.randn(2, 5, 8, dtype=torch.float64))[0].dtype == torch.float64


def test_mha_integer_input():
    with pytest.raises(TypeError, match=r"x has dtype torch.int64"):
        attnviz.MultiHeadAttention(8, 2)(torch.ones(2, 5, 8, dtype=torch.long))


def test_mha_failure_inside_the_heads_names_x():
    mha = attnviz.MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    x[0, 1, 2] = float("inf")
    with pytest.raises(ValueError, match=r"x contains 1 value\(s\) that are NaN or infinite"):
        mha(x)
    with pytest.raises(ValueError, match=r"inside MultiHeadAttention .*scores overflowed"):
        mha(torch.randn(2, 5, 8) * 1e20)


def test_mha_with_no_positions():
    with pytest.raises(ValueError, match=r"context has shape \(2, 0, 8\): 0 positions"):
        attnviz.MultiHeadAttention(8, 2)(torch.randn(2, 3, 8), context=torch.randn(2, 0, 8))


@pytest.mark.parametrize("call, message", [
    (lambda: attnviz.MultiHeadAttention(10**400, 2), r"d_model must be at most 8,192, got a 401-digit"),
    (lambda: attnviz.causal_mask(10**400), r"n_q must be at most"),
    (lambda: attnviz.causal_mask(100_000), r"would hold 10,000,000,000 entries"),
    (lambda: attnviz.padding_mask([3], 10**400), r"n must be at most"),
    (lambda: attnviz.padding_mask([10**400], 5), r"lengths\[0\] is a 401-digit number"),
])
def test_sizes_too_large_to_build(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_meta_and_sparse_inputs():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"q is on the meta device"):
        attnviz.scaled_dot_product_attention(q.to("meta"), k.to("meta"), v.to("meta"))
    with pytest.raises(TypeError, match=r"q is a torch.sparse_coo tensor"):
        attnviz.scaled_dot_product_attention(q[0].to_sparse(), k[0], v[0])
