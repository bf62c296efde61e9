"""attnviz.gpt: the cache gives the same logits and tokens as recomputation, its size is the formula,
gradients reach every parameter, and bad arguments are named."""

import pytest
import torch

import attnviz
from attnviz.gpt import GroupedQueryAttention, KVCache, TinyGPT, decoding_mask, generate

SHAPES = [  # vocab, d_model, n_heads, n_layers, max_len, n_kv_heads
    (11, 16, 2, 1, 20, None),
    (7, 24, 4, 2, 24, None),
    (13, 32, 4, 3, 30, 2),       # grouped-query attention
    (9, 16, 4, 2, 20, 1),        # multi-query attention
]


def _model(shape, seed=0):
    torch.manual_seed(seed)
    return TinyGPT(*shape[:5], n_kv_heads=shape[5]).eval()


@pytest.mark.parametrize("shape", SHAPES)
def test_cached_logits_equal_recomputed_ones(shape):
    model = _model(shape)
    tokens = torch.randint(shape[0], (3, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full, none = model(tokens)
        cache = KVCache()
        pieces = []
        for start, stop in ((0, 5), (5, 6), (6, 9), (9, 10), (10, 12)):   # a prefill, single tokens, chunks
            logits, returned = model(tokens[:, start:stop], cache)
            assert returned is cache and cache.length == stop
            pieces.append(logits)
    assert none is None
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("temperature, seed", [(0.0, None), (1.0, 3)])
def test_generate_gives_the_same_tokens_with_and_without_the_cache(shape, temperature, seed):
    model = _model(shape, seed=2)
    prompt = torch.randint(shape[0], (2, 4), generator=torch.Generator().manual_seed(5))
    steps = shape[4] - 4
    cached = generate(model, prompt, steps, temperature=temperature, seed=seed if seed is not None else None)
    if seed is None:
        recomputed = generate(model, prompt, steps, use_cache=False)
    else:
        recomputed = generate(model, prompt, steps, use_cache=False, temperature=temperature, seed=seed)
    assert cached.shape == (2, 4 + steps)
    assert torch.equal(cached[:, :4], prompt)
    assert torch.equal(cached, recomputed)


def test_sampling_is_reproducible_and_depends_on_the_seed():
    model = _model(SHAPES[1])
    prompt = torch.tensor([1, 2, 3])
    runs = [generate(model, prompt, 15, temperature=2.0, seed=s) for s in (0, 0, 1)]
    assert runs[0].shape == (18,)                         # a 1-D prompt gives a 1-D result
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


@pytest.mark.parametrize("shape", SHAPES)
def test_cache_bytes_equal_the_formula(shape):
    model = _model(shape)
    cache = KVCache()
    with torch.no_grad():
        model(torch.zeros(3, 7, dtype=torch.long), cache)
    expected = attnviz.kv_cache_bytes(model.n_layers, model.n_kv_heads, model.d_head, 7,
                                      bytes_per_element=4, batch=3)
    assert cache.nbytes == expected
    assert len(cache.keys) == model.n_layers
    assert cache.keys[0].shape == (3, model.n_kv_heads, 7, model.d_head)


def test_gradients_reach_every_parameter():
    for shape in SHAPES:
        model = _model(shape).train()
        tokens = torch.randint(shape[0], (2, 6))
        logits, _ = model(tokens)
        torch.nn.functional.cross_entropy(logits.reshape(-1, shape[0]), tokens.reshape(-1)).backward()
        for name, parameter in model.named_parameters():
            assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_causal_model_ignores_the_future_and_the_leaky_one_does_not():
    model = _model(SHAPES[1])
    tokens = torch.randint(7, (1, 8))
    changed = tokens.clone()
    changed[0, 5:] = (changed[0, 5:] + 1) % 7
    with torch.no_grad():
        causal = [model(t)[0][:, :5] for t in (tokens, changed)]
        leaky = [model(t, causal=False)[0][:, :5] for t in (tokens, changed)]
    torch.testing.assert_close(causal[0], causal[1])
    assert (leaky[0] - leaky[1]).abs().max() > 1e-4


def test_decoding_mask_is_bottom_right():
    mask = decoding_mask(2, 5)
    assert mask.tolist() == [[True, True, True, True, False], [True] * 5]
    assert torch.equal(decoding_mask(4, 4), attnviz.causal_mask(4))


def test_attention_weights_have_every_layer_and_head():
    model = _model(SHAPES[2])
    with torch.no_grad():
        weights = model.attention_weights(torch.zeros(2, 6, dtype=torch.long))
    assert weights.shape == (3, 2, 4, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 4, 6))
    assert weights.triu(1).abs().max() == 0                # causal


@pytest.mark.parametrize("kwargs, error, words", [
    ({"d_model": 30, "n_heads": 4}, ValueError, "d_model=30 is not divisible by n_heads=4"),
    ({"n_kv_heads": 3}, ValueError, "n_heads=4 is not divisible by n_kv_heads=3"),
    ({"n_layers": 0}, ValueError, "n_layers must be at least 1"),
    ({"vocab_size": 2.5}, TypeError, "vocab_size must be a whole number"),
    ({"max_len": -1}, ValueError, "max_len must be at least 1"),
])
def test_bad_constructor_arguments_are_named(kwargs, error, words):
    arguments = {"vocab_size": 8, "d_model": 16, "n_heads": 4, "n_layers": 1, "max_len": 10} | kwargs
    with pytest.raises(error, match=words):
        TinyGPT(**arguments)


def test_bad_forward_and_generate_arguments_are_named():
    model = _model(SHAPES[0])                 # vocab 11, max_len 20
    z3 = torch.zeros(1, 3, dtype=torch.long)
    cases = [
        (lambda: model(torch.zeros(5, dtype=torch.long)), TypeError, "tokens must be a \\(batch, n\\)"),
        (lambda: model(torch.zeros(1, 3)), TypeError, "integer token ids"),
        (lambda: model(torch.full((1, 3), 11)), ValueError, "vocab_size=11"),
        (lambda: model(torch.zeros(1, 21, dtype=torch.long)), ValueError, "max_len=20"),
        (lambda: model(z3, cache=[]), TypeError, "cache must be None or a KVCache"),
        (lambda: model(z3, KVCache(), causal=False), ValueError, "causal=False"),
        (lambda: generate(model, torch.zeros(1, 15, dtype=torch.long), 6), ValueError, "max_len=20"),
        (lambda: generate(model, z3, -1), ValueError, "steps must be 0 or more"),
        (lambda: generate(model, z3, 2, temperature=-1), ValueError, "temperature"),
        (lambda: generate(model, [1, 2], 2), TypeError, "prompt must be"),
        (lambda: generate("model", z3, 2), TypeError, "model must be a TinyGPT"),
    ]
    for call, error, words in cases:
        with pytest.raises(error, match=words):
            call()
    cache = KVCache()
    with torch.no_grad():
        model(torch.zeros(2, 3, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="batch size 1 .* cache holds 2"):
        model(torch.zeros(1, 1, dtype=torch.long), cache)


def test_a_learners_module_plugs_in():
    """Any module with W_q..W_o and forward(x, mask=...) returning the output alone works without a cache."""

    class Plain(torch.nn.Module):
        def __init__(self, reference):
            super().__init__()
            self.reference = reference
            for name in ("W_q", "W_k", "W_v", "W_o"):
                setattr(self, name, getattr(reference, name))

        def forward(self, x, mask=None):
            return self.reference(x, mask=mask)[0]

    model = _model(SHAPES[1])
    tokens = torch.randint(7, (2, 9))
    with torch.no_grad():
        before = model(tokens)[0]
        for block in model.blocks:
            block.attention = Plain(block.attention)
        after = model(tokens)[0]
        cached, _ = model(tokens, KVCache())
    torch.testing.assert_close(after, before)
    torch.testing.assert_close(cached, before, atol=1e-5, rtol=1e-5)
    with pytest.raises(TypeError, match="returned no weights"):
        model.attention_weights(tokens)


def test_grouped_query_module_with_as_many_kv_heads_equals_multi_head_attention():
    torch.manual_seed(3)
    reference = attnviz.MultiHeadAttention(16, 4)
    grouped = GroupedQueryAttention(16, 4, 4)
    grouped.load_state_dict(reference.state_dict())
    x = torch.randn(2, 5, 16)
    for mask in (None, attnviz.causal_mask(5), attnviz.padding_mask([3, 5], 5)):
        with torch.no_grad():
            torch.testing.assert_close(grouped(x, mask=mask)[0], reference(x, mask=mask)[0])
            torch.testing.assert_close(grouped(x, mask=mask)[1], reference(x, mask=mask)[1])


@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[-1]])
def test_a_cached_step_built_from_the_public_pieces_equals_the_model(shape):
    """embed, the blocks' parts, split/merge_heads and unembed are enough to write a cached step."""
    from attnviz.mha import merge_heads, split_heads

    model = _model(shape)
    tokens = torch.randint(model.vocab_size, (2, 7))
    with torch.no_grad():
        full, _ = model(tokens)
        cache = KVCache()
        model(tokens[:, :4], cache)
        x = model.embed(tokens[:, 4:], start=4)                              # (2, 3, d_model)
        for layer, block in enumerate(model.blocks):
            normed = block.norm_attention(x)
            query = split_heads(block.attention.W_q(normed), model.n_heads)
            key = split_heads(block.attention.W_k(normed), model.n_kv_heads)
            value = split_heads(block.attention.W_v(normed), model.n_kv_heads)
            key, value = cache.append(layer, key, value)
            group = model.n_heads // model.n_kv_heads
            key, value = key.repeat_interleave(group, 1), value.repeat_interleave(group, 1)
            heads, _ = attnviz.scaled_dot_product_attention(query, key, value, decoding_mask(3, 7))
            x = x + block.attention.W_o(merge_heads(heads))
            x = x + block.mlp(block.norm_mlp(x))
        torch.testing.assert_close(model.unembed(x), full[:, 4:], atol=1e-5, rtol=1e-5)


def test_a_copied_cache_is_independent():
    model = _model(SHAPES[0])
    tokens = torch.randint(model.vocab_size, (1, 5))
    cache = KVCache()
    with torch.no_grad():
        model(tokens[:, :3], cache)
        twin = cache.copy()
        model(tokens[:, 3:], cache)
    # appending to the original leaves the copy at the length it had
    assert cache.length == 5 and twin.length == 3
    assert torch.equal(twin.keys[0], cache.keys[0][..., :3, :])
