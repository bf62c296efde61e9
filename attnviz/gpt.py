"""A tiny GPT: pre-norm blocks of causal attention and an MLP, with a KV cache for generation.

Torch only. Short enough to read in one sitting:

* :class:`TinyGPT` ``(vocab_size, d_model, n_heads, n_layers, max_len, n_kv_heads=None, mlp=True)``:
  token and learned position embeddings, ``n_layers`` blocks (LayerNorm → causal attention →
  residual; LayerNorm → MLP → residual), a final LayerNorm and an output projection to the
  vocabulary. ``n_kv_heads < n_heads`` is grouped-query attention: groups of query heads share one
  key/value head, and only the key/value heads are cached. ``mlp=False`` builds attention-only
  blocks (``norm_mlp`` and ``mlp`` are None), the kind of model induction heads were first studied in.
* ``model(tokens, cache=None)`` returns ``(logits, cache)``. Without a cache it runs every block's
  attention module on the whole sequence (any module with ``forward(x, mask=...)`` and ``W_q``,
  ``W_k``, ``W_v``, ``W_o`` plugs in) and returns ``(logits, None)``. With a :class:`KVCache` the
  tokens are the *new* positions only: their keys and values are appended to the cache, their
  queries attend to every cached key, and the same (now longer) cache is returned.
* The pieces a cached step is made of, public so a learner (and the checker) can build one from
  them: ``model.embed(tokens, start)`` (token plus position embeddings from position ``start``),
  ``model.blocks[i]`` (``norm_attention``, ``attention`` with its ``W_q``, ``W_k``, ``W_v``, ``W_o``,
  ``norm_mlp``, ``mlp``), ``model.unembed(x)`` (final LayerNorm and unembedding, to logits), the sizes
  ``n_heads``, ``n_kv_heads``, ``d_head``; :func:`attnviz.mha.split_heads` and
  :func:`attnviz.mha.merge_heads`; :meth:`KVCache.copy`.
* :func:`generate` ``(model, prompt, steps, *, use_cache=True, temperature=0.0, seed=None)``.
* ``model.pieces()`` returns a :class:`StepModel`: the model as the ``decode_step`` exercise (and
  its checker, :func:`attnviz.check.check_decoding_step`) sees it. It shares the model's layers
  and exposes exactly the pieces above: ``embed``, ``unembed``, ``blocks[i]`` (``norm_attention``,
  ``attention`` with ``W_q``, ``W_k``, ``W_v``, ``W_o``, ``norm_mlp``, ``mlp``), the layers
  ``token_embedding``, ``position_embedding``, ``norm_final``, ``unembedding``, and the sizes
  ``n_heads``, ``n_kv_heads``, ``d_head``, ``d_model``, ``n_layers``, ``vocab_size``, ``max_len``.
  What would do the exercise's work refuses, with a :class:`PiecesOnlyError` that says so in plain
  words: calling the view (``model(tokens, cache)``), a block's ``attention(...)``, :func:`generate`
  and :func:`cached_attention` on it.
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from ._validate import require_positive_int
from .core import scaled_dot_product_attention
from .mha import MultiHeadAttention, merge_heads, split_heads

__all__ = ["TinyGPT", "KVCache", "GroupedQueryAttention", "generate", "decoding_mask", "cached_attention",
           "StepModel", "PiecesOnlyError"]

_BUILD = ("build the step from model.embed(tokens, past), each block's norm_attention, attention.W_q, "
          "W_k, W_v and W_o, norm_mlp and mlp, then model.unembed(x)")


class PiecesOnlyError(TypeError):
    """Code handed a :class:`StepModel` asked the library to do the cached step it should write."""


def decoding_mask(n_new: int, n_total: int) -> torch.Tensor:
    """Bool ``(n_new, n_total)``, True = may attend, aligned to the *bottom right*.

    The ``n_new`` queries are the last ``n_new`` positions of ``n_total``: new query ``i`` sits at
    position ``n_total - n_new + i`` and may see keys ``0 .. n_total - n_new + i``. (PyTorch's
    ``is_causal=True`` aligns the triangle to the top left instead, which is only right when
    ``n_new == n_total``.)
    """
    return torch.ones(n_new, n_total, dtype=torch.bool).tril(diagonal=n_total - n_new)


class KVCache:
    """Each layer's keys and values for the positions seen so far.

    ``keys[layer]`` and ``values[layer]``: ``(batch, n_kv_heads, length, d_head)``. Starts empty;
    :meth:`append` adds the new positions of one layer and returns that layer's full keys and values.
    """

    def __init__(self):
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []

    @property
    def length(self) -> int:
        """Positions held (0 when empty)."""
        return self.keys[0].shape[-2] if self.keys else 0

    @property
    def nbytes(self) -> int:
        """Bytes held by every cached key and value."""
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)

    def append(self, layer: int, key: torch.Tensor, value: torch.Tensor):
        """Append ``key``, ``value`` ``(batch, n_kv_heads, n_new, d_head)`` to ``layer``'s
        entries; returns the layer's keys and values, cached and new."""
        if layer == len(self.keys):                      # first call for this layer
            self.keys.append(key)
            self.values.append(value)
        else:
            # along the positions: (batch, h_kv, past + n_new, d)
            self.keys[layer] = torch.cat([self.keys[layer], key], dim=-2)
            self.values[layer] = torch.cat([self.values[layer], value], dim=-2)
        return self.keys[layer], self.values[layer]

    def copy(self) -> KVCache:
        """A new cache holding the same tensors (appending to one leaves the other as it was)."""
        other = KVCache()
        other.keys, other.values = list(self.keys), list(self.values)
        return other

    def __repr__(self) -> str:
        return f"KVCache(layers={len(self.keys)}, length={self.length}, nbytes={self.nbytes})"


def cached_attention(attention, x, n_heads, n_kv_heads, cache=None, layer=0, causal=True,
                     mask=None):
    """Attention of ``x`` ``(batch, n_new, d_model)`` through ``attention``'s W_q, W_k, W_v and
    W_o.

    With ``cache`` (a :class:`KVCache`) the new keys and values are appended to ``layer``'s
    entries first and the new queries attend to all of them (bottom-right causal mask;
    ``causal=False``: no mask). A ``mask`` given (bool, True = may attend, broadcasting to
    ``(batch, n_new, n_keys)``, the same for every head) replaces the causal one. Returns
    ``(output (batch, n_new, d_model), weights (batch, n_heads, n_new, n_keys))``.
    """
    _refuse_exercise_pieces(attention)               # decode_step writes this step itself
    n_new = x.shape[1]
    query = split_heads(attention.W_q(x), n_heads)        # (batch, h, n_new, d)
    key = split_heads(attention.W_k(x), n_kv_heads)       # (batch, h_kv, n_new, d)
    value = split_heads(attention.W_v(x), n_kv_heads)     # (batch, h_kv, n_new, d)
    if cache is not None:
        key, value = cache.append(layer, key, value)      # (batch, h_kv, n_keys, d)
    group = n_heads // n_kv_heads                         # query heads per key/value head
    key = key.repeat_interleave(group, dim=1)             # (batch, h, n_keys, d): head i reads
    value = value.repeat_interleave(group, dim=1)         # key/value head i // group
    if mask is not None:
        mask = mask.unsqueeze(-3) if mask.dim() == 3 else mask    # one mask for every head
    elif causal:
        mask = decoding_mask(n_new, key.shape[-2])        # (n_new, n_keys), bottom right
    heads, weights = scaled_dot_product_attention(query, key, value, mask)  # (batch, h, n_new, d)
    return attention.W_o(merge_heads(heads)), weights     # (batch, n_new, d_model)


def _refuse_exercise_pieces(attention) -> None:
    """The decode_step exercise's guard, not part of attention: the pieces a step is given
    (:class:`StepModel`'s) may not hand their work to :func:`cached_attention`."""
    if isinstance(attention, AttentionPieces):
        raise PiecesOnlyError(f"gpt.cached_attention(...) is the library's own cached attention step; in "
                              f"the decode_step exercise you write it: {_BUILD}.")


class GroupedQueryAttention(nn.Module):
    """Attention with ``n_kv_heads`` key/value heads shared by ``n_heads`` query heads.

    ``W_q`` and ``W_o`` are ``d_model × d_model``; ``W_k`` and ``W_v`` map ``d_model`` to
    ``n_kv_heads · d_head`` (``d_head = d_model // n_heads``). ``forward(x, mask=None)`` returns
    ``(output (batch, n, d_model), weights (batch, n_heads, n, n))``; ``mask``: None or bool (True =
    may attend) broadcasting to ``(batch, n, n)``, the same for every head, as in
    :class:`attnviz.MultiHeadAttention`.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d_k = n_heads, n_kv_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=False)
        self.W_v = nn.Linear(d_model, n_kv_heads * self.d_k, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        return cached_attention(self, x, self.n_heads, self.n_kv_heads, causal=False, mask=mask)


class Block(nn.Module):
    """LayerNorm → attention → residual; LayerNorm → MLP (4·d_model, GELU) → residual.

    ``mlp=False``: attention only; ``norm_mlp`` and ``mlp`` are None and the block skips them.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, mlp: bool = True):
        super().__init__()
        self.norm_attention = nn.LayerNorm(d_model)
        if n_kv_heads == n_heads:
            self.attention = MultiHeadAttention(d_model, n_heads)
        else:
            self.attention = GroupedQueryAttention(d_model, n_heads, n_kv_heads)
        self.norm_mlp = nn.LayerNorm(d_model) if mlp else None
        self.mlp = (nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
                    if mlp else None)


def _whole(value, name: str) -> int:
    return require_positive_int(value, name)


class TinyGPT(nn.Module):
    """A decoder-only transformer, small enough to train on a CPU in a second.

    ``forward(tokens, cache=None, *, causal=True)``: ``tokens`` ``(batch, n)`` long, values in
    ``0 .. vocab_size - 1``. Returns ``(logits (batch, n, vocab_size), cache)``: ``cache`` is None
    when none was given; given a :class:`KVCache`, ``tokens`` are the positions after the cached
    ones and the cache comes back holding them too. ``causal=False`` drops the causal mask (the
    leak; not allowed with a cache). ``attention_weights(tokens)`` returns every layer's weights
    ``(n_layers, batch, n_heads, n, n)``.
    """

    def __init__(self, vocab_size, d_model, n_heads, n_layers, max_len, n_kv_heads=None, mlp=True):
        super().__init__()
        if not isinstance(mlp, bool):
            raise TypeError(f"mlp must be True or False, got {mlp!r} ({type(mlp).__name__}).")
        self.has_mlp = mlp
        self.vocab_size = _whole(vocab_size, "vocab_size")
        self.d_model = _whole(d_model, "d_model")
        self.n_heads = _whole(n_heads, "n_heads")
        self.n_layers = _whole(n_layers, "n_layers")
        self.max_len = _whole(max_len, "max_len")
        self.n_kv_heads = self.n_heads if n_kv_heads is None else _whole(n_kv_heads, "n_kv_heads")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}: each "
                             f"head gets d_model / n_heads features, which must be a whole number.")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads={self.n_heads} is not divisible by n_kv_heads={self.n_kv_heads}: "
                             f"each key/value head serves a whole group of query heads.")
        self.d_head = self.d_model // self.n_heads
        self.token_embedding = nn.Embedding(self.vocab_size, self.d_model)
        self.position_embedding = nn.Embedding(self.max_len, self.d_model)
        self.blocks = nn.ModuleList(Block(self.d_model, self.n_heads, self.n_kv_heads, mlp)
                                    for _ in range(self.n_layers))
        self.norm_final = nn.LayerNorm(self.d_model)
        self.unembedding = nn.Linear(self.d_model, self.vocab_size, bias=False)

    def _check(self, tokens, cache, causal):
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point() \
                or tokens.dtype == torch.bool:
            got = (f"a {tokens.dtype} tensor of shape {tuple(tokens.shape)}"
                   if isinstance(tokens, torch.Tensor) else f"a {type(tokens).__name__}")
            raise TypeError(f"tokens must be a (batch, n) tensor of integer token ids, got {got}.")
        if tokens.shape[1] == 0:
            raise ValueError("tokens has 0 positions (dimension 1); give at least one token.")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise ValueError(f"tokens holds ids from {int(tokens.min())} to {int(tokens.max())}, but the "
                             f"vocabulary has ids 0 .. {self.vocab_size - 1} (vocab_size={self.vocab_size}).")
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be None or a KVCache, got a {type(cache).__name__}.")
        past = 0 if cache is None else cache.length
        if past + tokens.shape[1] > self.max_len:
            raise ValueError(f"tokens has {tokens.shape[1]} positions after {past} cached ones, "
                             f"{past + tokens.shape[1]} in all, but the model knows only "
                             f"max_len={self.max_len}.")
        if cache is not None and cache.length and cache.keys[0].shape[0] != tokens.shape[0]:
            raise ValueError(f"tokens has batch size {tokens.shape[0]} (dimension 0) but the cache holds "
                             f"{cache.keys[0].shape[0]} sequences.")
        if cache is not None and not causal:
            raise ValueError("causal=False cannot be used with a cache: cached keys are final only "
                             "because no position ever sees a later one.")

    def embed(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        """``(batch, n, d_model)``: token embeddings plus the position embeddings of positions
        ``start .. start + n - 1`` (a cached step starts after the cached positions)."""
        positions = torch.arange(start, start + tokens.shape[1])                 # (n,)
        return self.token_embedding(tokens) + self.position_embedding(positions)

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, n, d_model)`` → logits ``(batch, n, vocab_size)``: the final LayerNorm, then the
        unembedding (one score per vocabulary entry)."""
        return self.unembedding(self.norm_final(x))

    def pieces(self) -> StepModel:
        """This model as the ``decode_step`` exercise sees it: a :class:`StepModel` sharing its layers."""
        return StepModel(self)

    def _run(self, tokens, cache=None, causal=True):
        self._check(tokens, cache, causal)
        past = 0 if cache is None else cache.length
        x = self.embed(tokens, past)                                             # (batch, n_new, d_model)
        n_new = tokens.shape[1]
        all_weights = []
        for layer, block in enumerate(self.blocks):
            normed = block.norm_attention(x)
            if cache is None:        # the block's own module, on the whole sequence
                mask = torch.ones(n_new, n_new, dtype=torch.bool).tril() if causal else None
                result = block.attention(normed, mask=mask)
                mixed, weights = result if isinstance(result, tuple) else (result, None)
            else:                    # new queries against every cached key
                mixed, weights = cached_attention(block.attention, normed, self.n_heads, self.n_kv_heads,
                                                  cache, layer)
            x = x + mixed                                                        # (batch, n_new, d_model)
            if block.mlp is not None:
                x = x + block.mlp(block.norm_mlp(x))
            all_weights.append(weights)
        return self.unembed(x), all_weights                                     # (batch, n_new, vocab)

    def forward(self, tokens, cache=None, *, causal=True):
        logits, _ = self._run(tokens, cache, causal)
        return logits, cache

    def attention_weights(self, tokens, *, causal=True) -> torch.Tensor:
        """``(n_layers, batch, n_heads, n, n)``: every head's weights on the whole of ``tokens``."""
        _, weights = self._run(tokens, None, causal)
        if any(w is None for w in weights):
            raise TypeError("an attention module returned no weights; return (output, weights) to see them.")
        return torch.stack(weights)


class AttentionPieces(nn.Module):
    """One block's attention as a cached step sees it: ``W_q``, ``W_k``, ``W_v``, ``W_o`` (the
    block's own layers) and the sizes ``n_heads``, ``n_kv_heads``, ``d_k``; calling it refuses."""

    def __init__(self, attention, n_heads, n_kv_heads, d_head):
        super().__init__()
        self.W_q, self.W_k, self.W_v, self.W_o = attention.W_q, attention.W_k, attention.W_v, attention.W_o
        self.n_heads, self.n_kv_heads, self.d_k = n_heads, n_kv_heads, d_head

    def forward(self, *args, **kwargs):
        raise PiecesOnlyError("block.attention(...) runs the attention module's own forward, which knows no "
                              "cache; in the decode_step exercise use its W_q, W_k, W_v and W_o and attend "
                              "over the cached keys yourself.")


class BlockPieces(nn.Module):
    """One block as a cached step sees it: ``norm_attention``, ``attention`` (:class:`AttentionPieces`),
    ``norm_mlp``, ``mlp``, the block's own layers."""

    def __init__(self, block, n_heads, n_kv_heads, d_head):
        super().__init__()
        self.norm_attention, self.norm_mlp, self.mlp = block.norm_attention, block.norm_mlp, block.mlp
        self.attention = AttentionPieces(block.attention, n_heads, n_kv_heads, d_head)

    def forward(self, *args, **kwargs):
        raise PiecesOnlyError(f"calling a block runs it whole; in the decode_step exercise {_BUILD}.")


class StepModel(nn.Module):
    """A :class:`TinyGPT` as the ``decode_step`` exercise sees it (``model.pieces()``): its layers, its
    sizes, ``embed`` and ``unembed``, and no forward of its own (see the module docstring)."""

    embed = TinyGPT.embed          # the same two methods as the model's, on the same layers
    unembed = TinyGPT.unembed

    def __init__(self, model: TinyGPT):
        super().__init__()
        for size in ("vocab_size", "d_model", "n_heads", "n_kv_heads", "d_head", "n_layers", "max_len"):
            setattr(self, size, getattr(model, size))
        self.token_embedding, self.position_embedding = model.token_embedding, model.position_embedding
        self.blocks = nn.ModuleList(BlockPieces(block, model.n_heads, model.n_kv_heads, model.d_head)
                                    for block in model.blocks)
        self.norm_final, self.unembedding = model.norm_final, model.unembedding

    def forward(self, tokens=None, cache=None, *args, **kwargs):
        call = "model(tokens, cache)" if cache is not None else "model(tokens)"
        raise PiecesOnlyError(f"{call} runs TinyGPT's own forward, which does the whole step; in the "
                              f"decode_step exercise the model has no forward: {_BUILD}.")


def _pick(logits, temperature, generator):
    """Greedy at temperature 0, else one draw from softmax(logits / temperature) per row."""
    if temperature == 0:
        return logits.argmax(dim=-1)                                             # (batch,)
    probs = torch.softmax(logits / temperature, dim=-1)                          # (batch, vocab)
    draw = torch.rand(probs.shape[0], 1, generator=generator)                    # (batch, 1)
    return (probs.cumsum(-1) < draw).sum(-1).clamp(max=probs.shape[-1] - 1)      # inverse CDF


@torch.no_grad()
def generate(model, prompt, steps, *, use_cache=True, temperature=0.0, seed=None):
    """Continue ``prompt`` by ``steps`` tokens; returns prompt and continuation, ``(batch, n + steps)``.

    ``prompt``: ``(batch, n)`` or ``(n,)`` long (a 1-D prompt gives a 1-D result). Greedy at
    ``temperature=0``; otherwise sampled, reproducibly for a given ``seed``. With ``use_cache`` each
    step feeds only the newest token and a :class:`KVCache`; without it the whole sequence is
    recomputed every step. Both give the same tokens.
    """
    if isinstance(model, StepModel):
        raise PiecesOnlyError(f"gpt.generate(...) runs TinyGPT's own cached forward; in the decode_step "
                              f"exercise you write one step of it: {_BUILD}.")
    if not isinstance(model, TinyGPT):
        raise TypeError(f"model must be a TinyGPT, got a {type(model).__name__}.")
    steps = require_positive_int(steps, "steps", allow_zero=True)
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or not temperature >= 0 \
            or temperature == float("inf"):
        raise ValueError(f"temperature must be a finite number, 0 or more (0 = greedy), got {temperature!r}.")
    if not isinstance(prompt, torch.Tensor) or prompt.dim() not in (1, 2):
        shape = f"shape {tuple(prompt.shape)}" if isinstance(prompt, torch.Tensor) else type(prompt).__name__
        raise TypeError(f"prompt must be a (batch, n) or (n,) tensor of token ids, got {shape}.")
    one_d = prompt.dim() == 1
    tokens = prompt[None] if one_d else prompt
    if tokens.shape[1] + steps > model.max_len:
        raise ValueError(f"prompt has {tokens.shape[1]} tokens and steps={steps}: {tokens.shape[1] + steps} "
                         f"positions, more than the model's max_len={model.max_len}.")
    generator = None if seed is None else torch.Generator().manual_seed(int(seed))
    was_training = model.training
    model.eval()
    try:
        cache = KVCache() if use_cache else None
        logits, cache = model(tokens, cache)
        for _ in range(steps):
            new = _pick(logits[:, -1], float(temperature), generator)[:, None]  # (batch, 1)
            tokens = torch.cat([tokens, new], dim=1)
            logits, cache = model(new, cache) if use_cache else model(tokens)
    finally:
        model.train(was_training)
    return tokens[0] if one_d else tokens
