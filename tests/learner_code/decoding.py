"""Learner versions of notebook 08's ``decode_step(model, tokens, cache) -> (logits, cache)``.

``model`` is what the exercise hands over: a tiny GPT's pieces (``model.embed(tokens, start)``,
``model.blocks[i]`` with ``norm_attention``, ``attention.W_q/W_k/W_v/W_o``, ``norm_mlp``, ``mlp``,
``model.unembed(x)``, the layers ``token_embedding``, ``position_embedding``, ``norm_final``,
``unembedding``, and the sizes ``n_heads``, ``n_kv_heads``, ``d_head``, ...). ``tokens`` ``(batch,
n_new)`` are the positions after the cached ones; ``cache`` is None at the start, then whatever this
function returned last time; its format is each learner's own. The logits of every call must equal
recomputing the whole text, and the cache a call was given must still work afterwards (a caller may
reuse it). Written independently of the checker's reference and of attnviz.zoo: each function below
is one learner's way of writing it, with at most one mistake.
"""

import math
from collections import namedtuple

import torch
import torch.nn.functional as F

from attnviz import gpt
from attnviz.mha import merge_heads, split_heads

from ._case import FAIL, PASS, Case

d_k = 8      # notebook 02 leaves a global d_k = 8 behind: code that reads it is wrong here


def _heads(t, n_heads):
    """(b, n, n_heads * d) -> (b, n_heads, n, d), the way this learner likes it."""
    b, n, _ = t.shape
    return t.reshape(b, n, n_heads, -1).permute(0, 2, 1, 3)


def _unheads(t):
    b, h, n, d = t.shape
    return t.permute(0, 2, 1, 3).reshape(b, n, h * d)


def _bottom_right(n_new, n_all):
    return torch.ones(n_new, n_all, dtype=torch.bool).tril(n_all - n_new)


# ---------------------------------------------------------------- correct -----------------------------

def solution(model, tokens, cache):
    """Notebook 08's own solution."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    batch, n_new = tokens.shape
    h, h_kv, d = model.n_heads, model.n_kv_heads, model.d_head
    x = model.token_embedding(tokens) + model.position_embedding(torch.arange(past, past + n_new))
    new_cache = []
    for layer, block in enumerate(model.blocks):
        normed, attention = block.norm_attention(x), block.attention
        query = attention.W_q(normed).view(batch, n_new, h, d).transpose(1, 2)
        key = attention.W_k(normed).view(batch, n_new, h_kv, d).transpose(1, 2)
        value = attention.W_v(normed).view(batch, n_new, h_kv, d).transpose(1, 2)
        if cache is not None:
            key = torch.cat([cache[layer][0], key], dim=-2)
            value = torch.cat([cache[layer][1], value], dim=-2)
        new_cache.append((key, value))
        n_all = key.shape[-2]
        mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(n_all - n_new)
        heads = F.scaled_dot_product_attention(query, key.repeat_interleave(h // h_kv, 1),
                                               value.repeat_interleave(h // h_kv, 1), attn_mask=mask)
        x = x + attention.W_o(heads.transpose(1, 2).contiguous().view(batch, n_new, h * d))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembedding(model.norm_final(x)), new_cache


def counter_moves_by_one(model, tokens, cache):
    """Keeps the position in the cache, thinking one token per call: a chunk after the prompt
    leaves the counter behind, and the call after it embeds its token too early."""
    if cache is None:
        position, layers = 0, [None] * len(model.blocks)
    else:
        position, layers = cache["position"], cache["layers"]
    n_new = tokens.shape[1]
    x = model.embed(tokens, position)
    group = model.n_heads // model.n_kv_heads
    kept = []
    for block, past in zip(model.blocks, layers, strict=True):
        attention, normed = block.attention, block.norm_attention(x)
        query = split_heads(attention.W_q(normed), model.n_heads)
        key = split_heads(attention.W_k(normed), model.n_kv_heads)
        value = split_heads(attention.W_v(normed), model.n_kv_heads)
        if past is not None:
            key, value = torch.cat([past[0], key], -2), torch.cat([past[1], value], -2)
        kept.append((key, value))
        heads = F.scaled_dot_product_attention(
            query, key.repeat_interleave(group, 1), value.repeat_interleave(group, 1),
            attn_mask=_bottom_right(n_new, key.shape[-2]))
        x = x + attention.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), {"position": n_new if cache is None else position + 1, "layers": kept}


def library_pieces(model, tokens, cache):
    """embed/unembed, the library's split_heads/merge_heads, decoding_mask and attention function."""
    import attnviz
    past = 0 if cache is None else cache[0][0].shape[2]
    x = model.embed(tokens, past)
    group = model.n_heads // model.n_kv_heads
    out_cache = []
    for i, block in enumerate(model.blocks):
        a, z = block.attention, block.norm_attention(x)
        q = split_heads(a.W_q(z), model.n_heads)
        k, v = split_heads(a.W_k(z), model.n_kv_heads), split_heads(a.W_v(z), model.n_kv_heads)
        if cache:
            k, v = torch.cat((cache[i][0], k), 2), torch.cat((cache[i][1], v), 2)
        out_cache.append((k, v))
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        o, _ = attnviz.scaled_dot_product_attention(q, k, v, gpt.decoding_mask(q.shape[2], k.shape[2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out_cache


def dict_cache(model, tokens, cache):
    """A dict cache with the position count kept beside the tensors; hand-written attention."""
    cache = cache or {"length": 0, "keys": [None] * model.n_layers, "values": [None] * model.n_layers}
    new = {"length": cache["length"] + tokens.shape[1], "keys": [], "values": []}
    x = model.embed(tokens, start=cache["length"])
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        att = block.attention
        q = y @ att.W_q.weight.T
        q = q.unflatten(-1, (model.n_heads, model.d_head)).transpose(1, 2)
        k = att.W_k(y).unflatten(-1, (model.n_kv_heads, model.d_head)).transpose(1, 2)
        v = att.W_v(y).unflatten(-1, (model.n_kv_heads, model.d_head)).transpose(1, 2)
        if cache["keys"][layer] is not None:
            k = torch.cat([cache["keys"][layer], k], dim=2)
            v = torch.cat([cache["values"][layer], v], dim=2)
        new["keys"].append(k)
        new["values"].append(v)
        rep = model.n_heads // model.n_kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(model.d_head)
        allowed = _bottom_right(q.shape[-2], k.shape[-2])
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        out = scores.softmax(-1) @ v
        x = x + att.W_o(out.transpose(1, 2).flatten(2))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def kv_cache_object(model, tokens, cache):
    """The library's KVCache as a container, copied so the given one stays as it was."""
    cache = gpt.KVCache() if cache is None else cache.copy()
    past = cache.length
    x = model.embed(tokens, past)
    for layer, block in enumerate(model.blocks):
        a = block.attention
        z = block.norm_attention(x)
        q = _heads(a.W_q(z), model.n_heads)
        k, v = cache.append(layer, _heads(a.W_k(z), model.n_kv_heads), _heads(a.W_v(z), model.n_kv_heads))
        g = model.n_heads // model.n_kv_heads
        mask = gpt.decoding_mask(tokens.shape[1], past + tokens.shape[1])
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1),
                                           attn_mask=mask)
        x = x + a.W_o(_unheads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), cache


def einsum_step(model, tokens, cache):
    """einsum for the scores and the blend; a tuple of (k, v) tuples as the cache."""
    n_past = 0 if cache is None else cache[0][0].size(2)
    b, t = tokens.shape
    x = model.embed(tokens, n_past)
    kept = ()
    for idx, blk in enumerate(model.blocks):
        z = blk.norm_attention(x)
        q = blk.attention.W_q(z).view(b, t, model.n_heads, model.d_head)
        k = blk.attention.W_k(z).view(b, t, model.n_kv_heads, model.d_head)
        v = blk.attention.W_v(z).view(b, t, model.n_kv_heads, model.d_head)
        q, k, v = (u.transpose(1, 2) for u in (q, k, v))
        if cache is not None:
            k = torch.cat([cache[idx][0], k], 2)
            v = torch.cat([cache[idx][1], v], 2)
        kept = kept + ((k, v),)
        group = model.n_heads // model.n_kv_heads
        kk = torch.repeat_interleave(k, group, dim=1)
        vv = torch.repeat_interleave(v, group, dim=1)
        s = torch.einsum("bhqd,bhkd->bhqk", q, kk) / model.d_head ** 0.5
        s = torch.where(_bottom_right(t, kk.shape[2]), s, torch.finfo(s.dtype).min)
        o = torch.einsum("bhqk,bhkd->bhqd", torch.softmax(s, dim=-1), vv)
        x = x + blk.attention.W_o(o.transpose(1, 2).reshape(b, t, -1))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), kept


def expanded_cache(model, tokens, cache):
    """Caches the keys and values already repeated for every query head (more memory, same logits: the
    grouped-query saving is gone)."""
    group = model.n_heads // model.n_kv_heads
    past = 0 if cache is None else cache[0]["k"].shape[-2]
    x = model.embed(tokens, past)
    new_cache = []
    for layer, block in enumerate(model.blocks):
        att, y = block.attention, block.norm_attention(x)
        q = split_heads(att.W_q(y), model.n_heads)
        k = split_heads(att.W_k(y), model.n_kv_heads).repeat_interleave(group, dim=1)
        v = split_heads(att.W_v(y), model.n_kv_heads).repeat_interleave(group, dim=1)
        if cache is not None:
            k = torch.cat([cache[layer]["k"], k], dim=-2)
            v = torch.cat([cache[layer]["v"], v], dim=-2)
        new_cache.append({"k": k, "v": v})
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[-2], k.shape[-2]))
        x = x + att.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new_cache


def merged_layout(model, tokens, cache):
    """Caches the projections un-split, (batch, positions, n_kv_heads * d_head), and splits on use."""
    past = 0 if cache is None else cache[0][0].shape[1]
    x = model.embed(tokens, past)
    new = []
    for i, block in enumerate(model.blocks):
        a, y = block.attention, block.norm_attention(x)
        k_flat, v_flat = a.W_k(y), a.W_v(y)                          # (b, n_new, h_kv * d)
        if cache is not None:
            k_flat = torch.cat([cache[i][0], k_flat], dim=1)
            v_flat = torch.cat([cache[i][1], v_flat], dim=1)
        new.append((k_flat, v_flat))
        q = split_heads(a.W_q(y), model.n_heads)
        rep = model.n_heads // model.n_kv_heads
        k = split_heads(k_flat, model.n_kv_heads).repeat_interleave(rep, 1)
        v = split_heads(v_flat, model.n_kv_heads).repeat_interleave(rep, 1)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=gpt.decoding_mask(q.shape[2], k.shape[2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def stacked_tensor(model, tokens, cache):
    """One tensor per layer: keys and values stacked, (2, batch, n_kv_heads, positions, d_head)."""
    start = 0 if cache is None else cache[0].shape[3]
    x = model.embed(tokens, start)
    layers = []
    for n, block in enumerate(model.blocks):
        at, z = block.attention, block.norm_attention(x)
        kv = torch.stack([split_heads(at.W_k(z), model.n_kv_heads), split_heads(at.W_v(z), model.n_kv_heads)])
        if cache is not None:
            kv = torch.cat([cache[n], kv], dim=3)
        layers.append(kv)
        g = model.n_heads // model.n_kv_heads
        q = split_heads(at.W_q(z), model.n_heads)
        o = F.scaled_dot_product_attention(q, kv[0].repeat_interleave(g, 1), kv[1].repeat_interleave(g, 1),
                                           attn_mask=_bottom_right(tokens.shape[1], kv.shape[3]))
        x = x + at.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), layers


def loop_over_heads(model, tokens, cache):
    """A Python loop over the query heads; each reads its key/value head h // group."""
    past = 0 if cache is None else cache[0][0].shape[2]
    batch, n_new = tokens.shape
    x = model.embed(tokens, past)
    d, group = model.d_head, model.n_heads // model.n_kv_heads
    result = []
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q_all, k_new, v_new = block.attention.W_q(y), block.attention.W_k(y), block.attention.W_v(y)
        keys = k_new.view(batch, n_new, model.n_kv_heads, d).transpose(1, 2)
        values = v_new.view(batch, n_new, model.n_kv_heads, d).transpose(1, 2)
        if cache is not None:
            keys = torch.cat([cache[layer][0], keys], 2)
            values = torch.cat([cache[layer][1], values], 2)
        result.append((keys, values))
        allowed = _bottom_right(n_new, keys.shape[2])
        outs = []
        for head in range(model.n_heads):
            q = q_all[..., head * d:(head + 1) * d]                       # (batch, n_new, d)
            k, v = keys[:, head // group], values[:, head // group]         # (batch, n_all, d)
            w = (q @ k.transpose(1, 2) / math.sqrt(d)).masked_fill(~allowed, -1e9).softmax(-1)
            outs.append(w @ v)
        x = x + block.attention.W_o(torch.cat(outs, dim=-1))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), result


def token_by_token(model, tokens, cache):
    """Feeds several new tokens one at a time through its own one-token step."""
    logits = []
    for i in range(tokens.shape[1]):
        one, cache = _one_token(model, tokens[:, i:i + 1], cache)
        logits.append(one)
    return torch.cat(logits, dim=1), cache


def _one_token(model, token, cache):
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(token, past)
    new = []
    for layer, block in enumerate(model.blocks):
        a, y = block.attention, block.norm_attention(x)
        q = split_heads(a.W_q(y), model.n_heads)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))  # 1 query
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def preallocated_copied(model, tokens, cache):
    """Buffers of max_len positions and a length; the buffers are copied before writing (safe to reuse)."""
    batch, n_new = tokens.shape
    if cache is None:
        shape = (batch, model.n_kv_heads, model.max_len, model.d_head)
        cache = {"n": 0, "buffers": [(torch.zeros(shape), torch.zeros(shape)) for _ in model.blocks]}
    n = cache["n"]
    buffers = [(k.clone(), v.clone()) for k, v in cache["buffers"]]
    x = model.embed(tokens, n)
    for layer, block in enumerate(model.blocks):
        a, y = block.attention, block.norm_attention(x)
        k_buf, v_buf = buffers[layer]
        k_buf[:, :, n:n + n_new] = split_heads(a.W_k(y), model.n_kv_heads)
        v_buf[:, :, n:n + n_new] = split_heads(a.W_v(y), model.n_kv_heads)
        g = model.n_heads // model.n_kv_heads
        k = k_buf[:, :, :n + n_new].repeat_interleave(g, 1)
        v = v_buf[:, :, :n + n_new].repeat_interleave(g, 1)
        o = F.scaled_dot_product_attention(split_heads(a.W_q(y), model.n_heads), k, v,
                                           attn_mask=_bottom_right(n_new, n + n_new))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), {"n": n + n_new, "buffers": buffers}


def preallocated_shared(model, tokens, cache):
    """The buffer learner without the copy: every cache it returns points at the same buffers."""
    batch, n_new = tokens.shape
    if cache is None:
        shape = (batch, model.n_kv_heads, model.max_len, model.d_head)
        cache = {"n": 0, "buffers": [(torch.zeros(shape), torch.zeros(shape)) for _ in model.blocks]}
    n = cache["n"]
    x = model.embed(tokens, n)
    for layer, block in enumerate(model.blocks):
        a, y = block.attention, block.norm_attention(x)
        k_buf, v_buf = cache["buffers"][layer]
        k_buf[:, :, n:n + n_new] = split_heads(a.W_k(y), model.n_kv_heads)
        v_buf[:, :, n:n + n_new] = split_heads(a.W_v(y), model.n_kv_heads)
        g = model.n_heads // model.n_kv_heads
        k = k_buf[:, :, :n + n_new].repeat_interleave(g, 1)
        v = v_buf[:, :, :n + n_new].repeat_interleave(g, 1)
        o = F.scaled_dot_product_attention(split_heads(a.W_q(y), model.n_heads), k, v,
                                           attn_mask=_bottom_right(n_new, n + n_new))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), {"n": n + n_new, "buffers": cache["buffers"]}


class StepObject:
    """A learner who likes classes: a callable object, the sizes read once."""

    def __call__(self, model, tokens, cache):
        self.h, self.hkv, self.d = model.n_heads, model.n_kv_heads, model.d_head
        offset = cache[0][0].shape[2] if cache else 0
        x = model.embed(tokens, offset)
        cache_out = []
        for i, block in enumerate(model.blocks):
            x, entry = self.layer(block, x, cache[i] if cache else None)
            cache_out.append(entry)
        return model.unembed(x), cache_out

    def layer(self, block, x, entry):
        y = block.norm_attention(x)
        q = self.split(block.attention.W_q(y), self.h)
        k, v = self.split(block.attention.W_k(y), self.hkv), self.split(block.attention.W_v(y), self.hkv)
        if entry is not None:
            k, v = torch.cat([entry[0], k], -2), torch.cat([entry[1], v], -2)
        x = x + block.attention.W_o(self.attend(q, k, v))
        return x + block.mlp(block.norm_mlp(x)), (k, v)

    def split(self, t, heads):
        b, n, _ = t.shape
        return t.view(b, n, heads, self.d).transpose(1, 2)

    def attend(self, q, k, v):
        k = k.repeat_interleave(self.h // self.hkv, dim=1)
        v = v.repeat_interleave(self.h // self.hkv, dim=1)
        n_q, n_k = q.shape[-2], k.shape[-2]
        scores = q @ k.transpose(-2, -1) * self.d ** -0.5
        scores = scores.masked_fill(~_bottom_right(n_q, n_k), float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        b, h, n, d = out.shape
        return out.transpose(1, 2).reshape(b, n, h * d)


def enable_gqa(model, tokens, cache):
    """F.scaled_dot_product_attention with enable_gqa=True: the key/value heads are never expanded."""
    p = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, p)
    out = []
    for j, block in enumerate(model.blocks):
        y, at = block.norm_attention(x), block.attention
        q, k, v = (split_heads(w(y), n) for w, n in ((at.W_q, model.n_heads), (at.W_k, model.n_kv_heads),
                                                       (at.W_v, model.n_kv_heads)))
        if cache is not None:
            k, v = torch.cat([cache[j][0], k], -2), torch.cat([cache[j][1], v], -2)
        out.append([k, v])
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[-2], k.shape[-2]),
                                           enable_gqa=True)
        x = x + at.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out


def causal_only_when_needed(model, tokens, cache):
    """is_causal=True for the prompt, no mask for one new token, a bottom-right mask for a chunk."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    n_new = tokens.shape[1]
    x = model.embed(tokens, past)
    new_cache = []
    for layer, block in enumerate(model.blocks):
        a, y = block.attention, block.norm_attention(x)
        q = split_heads(a.W_q(y), model.n_heads)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new_cache.append((k, v))
        g = model.n_heads // model.n_kv_heads
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        if cache is None:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif n_new == 1:
            o = F.scaled_dot_product_attention(q, k, v)
        else:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(n_new, k.shape[-2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new_cache


def stable_softmax_by_hand(model, tokens, cache):
    """exp(scores - max) / sum, written out; -inf fill (no causal row is ever fully masked)."""
    past = cache[0][0].shape[-2] if cache is not None else 0
    x = model.embed(tokens, past)
    kv = []
    for i, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q = _heads(block.attention.W_q(y), model.n_heads)
        k = _heads(block.attention.W_k(y), model.n_kv_heads)
        v = _heads(block.attention.W_v(y), model.n_kv_heads)
        if cache is not None:
            k = torch.cat((cache[i][0], k), dim=-2)
            v = torch.cat((cache[i][1], v), dim=-2)
        kv.append((k, v))
        r = model.n_heads // model.n_kv_heads
        s = q @ k.repeat_interleave(r, 1).transpose(-2, -1) / math.sqrt(q.shape[-1])
        s = s.masked_fill(~_bottom_right(s.shape[-2], s.shape[-1]), float("-inf"))
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        w = e / e.sum(dim=-1, keepdim=True)
        x = x + block.attention.W_o(_unheads(w @ v.repeat_interleave(r, 1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), kv


def additive_float_mask(model, tokens, cache):
    """An additive float mask (0 and the dtype's minimum), built in the scores' dtype."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    out_cache = []
    for i, block in enumerate(model.blocks):
        a, y = block.attention, block.norm_attention(x)
        q = split_heads(a.W_q(y), model.n_heads)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
        out_cache.append((k, v))
        g = model.n_heads // model.n_kv_heads
        scores = q @ k.repeat_interleave(g, 1).mT / math.sqrt(model.d_head)
        bias = torch.zeros(scores.shape[-2:], dtype=scores.dtype)
        bias = bias.masked_fill(~_bottom_right(*scores.shape[-2:]), torch.finfo(scores.dtype).min)
        x = x + a.W_o(merge_heads((scores + bias).softmax(-1) @ v.repeat_interleave(g, 1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out_cache


LayerKV = namedtuple("LayerKV", "keys values")


def namedtuple_cache(model, tokens, cache):
    """A namedtuple per layer; positions from the embeddings directly."""
    seen = 0 if cache is None else cache[0].keys.shape[-2]
    b, t = tokens.shape
    x = model.token_embedding(tokens) + model.position_embedding(torch.arange(seen, seen + t))
    updated = []
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        att = block.attention
        q = att.W_q(y).view(b, t, model.n_heads, -1).transpose(1, 2)
        k = att.W_k(y).view(b, t, model.n_kv_heads, -1).transpose(1, 2)
        v = att.W_v(y).view(b, t, model.n_kv_heads, -1).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[layer].keys, k], dim=-2)
            v = torch.cat([cache[layer].values, v], dim=-2)
        updated.append(LayerKV(k, v))
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                           attn_mask=torch.ones(t, k.shape[-2], dtype=torch.bool).tril(
                                               k.shape[-2] - t))
        x = x + att.W_o(o.transpose(1, 2).reshape(b, t, -1))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembedding(model.norm_final(x)), updated


def bmm_flatten(model, tokens, cache):
    """torch.bmm on (batch * heads) matrices."""
    past = 0 if cache is None else cache[0][0].shape[2]
    B, T = tokens.shape
    H, D = model.n_heads, model.d_head
    x = model.embed(tokens, past)
    cache_out = []
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q = split_heads(block.attention.W_q(y), H)
        k = split_heads(block.attention.W_k(y), model.n_kv_heads)
        v = split_heads(block.attention.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], 2), torch.cat([cache[layer][1], v], 2)
        cache_out.append((k, v))
        S = k.shape[2]
        kk = k.repeat_interleave(H // model.n_kv_heads, 1).reshape(B * H, S, D)
        vv = v.repeat_interleave(H // model.n_kv_heads, 1).reshape(B * H, S, D)
        scores = torch.bmm(q.reshape(B * H, T, D), kk.transpose(1, 2)) / math.sqrt(D)
        scores = scores.masked_fill(~_bottom_right(T, S), torch.finfo(scores.dtype).min)
        o = torch.bmm(scores.softmax(-1), vv).reshape(B, H, T, D)
        x = x + block.attention.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), cache_out


def tuple_of_lists(model, tokens, cache):
    """The cache is (list of keys, list of values), rebuilt each call."""
    keys_in, values_in = cache if cache is not None else (None, None)
    past = 0 if keys_in is None else keys_in[0].shape[-2]
    x = model.embed(tokens, past)
    keys_out, values_out = [], []
    for i, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q = split_heads(block.attention.W_q(y), model.n_heads)
        k = split_heads(block.attention.W_k(y), model.n_kv_heads)
        v = split_heads(block.attention.W_v(y), model.n_kv_heads)
        if keys_in is not None:
            k = torch.cat([keys_in[i], k], dim=-2)
            v = torch.cat([values_in[i], v], dim=-2)
        keys_out.append(k)
        values_out.append(v)
        group = model.n_heads // model.n_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=gpt.decoding_mask(q.shape[-2], k.shape[-2]))
        x = x + block.attention.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), (keys_out, values_out)


def expand_reshape_gqa(model, tokens, cache):
    """The shared heads expanded with expand + reshape (same order as repeat_interleave)."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    g = model.n_heads // model.n_kv_heads
    kept = []
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q = split_heads(block.attention.W_q(y), model.n_heads)
        k = split_heads(block.attention.W_k(y), model.n_kv_heads)
        v = split_heads(block.attention.W_v(y), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache[layer][0], k], dim=-2)
            v = torch.cat([cache[layer][1], v], dim=-2)
        kept.append((k, v))
        b, hk, n, d = k.shape
        k = k[:, :, None].expand(b, hk, g, n, d).reshape(b, hk * g, n, d)
        v = v[:, :, None].expand(b, hk, g, n, d).reshape(b, hk * g, n, d)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[-2], n))
        x = x + block.attention.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), kept


def kv_cache_lists_copied(model, tokens, cache):
    """A KVCache whose lists are copied by hand (as notebook 08 does before timing)."""
    fresh = gpt.KVCache()
    if cache is not None:
        fresh.keys, fresh.values = list(cache.keys), list(cache.values)
    x = model.embed(tokens, fresh.length)
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        a = block.attention
        new_k, new_v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        k, v = fresh.append(layer, new_k, new_v)
        q = split_heads(a.W_q(y), model.n_heads)
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                           attn_mask=gpt.decoding_mask(q.shape[-2], k.shape[-2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), fresh


# ---------------------------------------------------------------- attention-level bugs -----------------

def _generic(model, tokens, cache, attend, split=split_heads, merge=merge_heads, expand=None, project=True):
    """One learner's skeleton (cache: list of (keys, values)) that several buggy versions below reuse
    with their own attention: ``attend(q, k, v, n_new, n_all, model) -> (b, h, n_new, d)``."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    g = model.n_heads // model.n_kv_heads
    expand = expand or (lambda t: t.repeat_interleave(g, dim=1))
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        q = split(a.W_q(y), model.n_heads)
        k, v = split(a.W_k(y), model.n_kv_heads), split(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        o = merge(attend(q, expand(k), expand(v), tokens.shape[1], k.shape[-2], model))
        x = x + (a.W_o(o) if project else o)
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def no_scale_einsum(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = torch.einsum("bhid,bhjd->bhij", q, k)                    # never divided by sqrt(d_head)
        s = s.masked_fill(~_bottom_right(n_new, n_all), torch.finfo(s.dtype).min)
        return torch.einsum("bhij,bhjd->bhid", s.softmax(-1), v)
    return _generic(model, tokens, cache, attend)


def sdpa_scale_one(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(n_new, n_all), scale=1.0)
    return _generic(model, tokens, cache, attend)


def divided_by_d_head(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = q @ k.transpose(-2, -1) / model.d_head
        return s.masked_fill(~_bottom_right(n_new, n_all), -1e9).softmax(-1) @ v
    return _generic(model, tokens, cache, attend)


def stale_global_d_k(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = q @ k.transpose(-2, -1) / math.sqrt(d_k)                  # notebook 02's d_k = 8
        return s.masked_fill(~_bottom_right(n_new, n_all), -1e9).softmax(-1) @ v
    return _generic(model, tokens, cache, attend)


def scale_multiplied(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = q @ k.transpose(-2, -1) * math.sqrt(q.shape[-1])
        return s.masked_fill(~_bottom_right(n_new, n_all), torch.finfo(s.dtype).min).softmax(-1) @ v
    return _generic(model, tokens, cache, attend)


def scale_by_d_model(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(n_new, n_all),
                                              scale=1 / math.sqrt(model.d_model))
    return _generic(model, tokens, cache, attend)


def softmax_over_queries(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = (q @ k.mT / math.sqrt(model.d_head)).masked_fill(~_bottom_right(n_new, n_all), -1e9)
        return torch.softmax(s, dim=-2) @ v
    return _generic(model, tokens, cache, attend)


def softmax_over_heads(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = (q @ k.mT / math.sqrt(model.d_head)).masked_fill(~_bottom_right(n_new, n_all), -1e9)
        return F.softmax(s, dim=1) @ v
    return _generic(model, tokens, cache, attend)


def mask_filled_where_true(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = q @ k.transpose(-2, -1) / math.sqrt(model.d_head)
        return s.masked_fill(_bottom_right(n_new, n_all), float("-inf")).softmax(-1).nan_to_num(0.0) @ v
    return _generic(model, tokens, cache, attend)


def sdpa_mask_negated(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        blocked = ~_bottom_right(n_new, n_all)                          # "True = blocked", the other way
        return F.scaled_dot_product_attention(q, k, v, attn_mask=blocked).nan_to_num(0.0)
    return _generic(model, tokens, cache, attend)


def adds_bool_mask(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = q @ k.transpose(-2, -1) / math.sqrt(model.d_head)
        return (s + _bottom_right(n_new, n_all)).softmax(-1) @ v
    return _generic(model, tokens, cache, attend)


def one_minus_mask_times_inf(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = q @ k.transpose(-2, -1) / math.sqrt(model.d_head)
        return (s + (1 - _bottom_right(n_new, n_all).float()) * float("-inf")).softmax(-1) @ v
    return _generic(model, tokens, cache, attend)


def blocked_get_a_bonus(model, tokens, cache):
    """(1 - mask) * 1e9: meant as a penalty, it is a bonus for every blocked key."""
    def attend(q, k, v, n_new, n_all, model):
        s = q @ k.transpose(-2, -1) / math.sqrt(model.d_head)
        return (s + (1 - _bottom_right(n_new, n_all).float()) * 1e9).softmax(-1) @ v
    return _generic(model, tokens, cache, attend)


def off_by_one_offset(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=torch.ones(n_new, n_all, dtype=torch.bool).tril(n_all - n_new + 1))
    return _generic(model, tokens, cache, attend)


def sees_next_by_index(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        i = torch.arange(n_all - n_new, n_all)[:, None]                 # the new queries' positions
        j = torch.arange(n_all)[None, :]
        s = (q @ k.mT / math.sqrt(model.d_head)).masked_fill(~(j <= i + 1), -1e9)
        return s.softmax(-1) @ v
    return _generic(model, tokens, cache, attend)


def never_masks(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        return F.scaled_dot_product_attention(q, k, v)
    return _generic(model, tokens, cache, attend)


def masks_prompt_only(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        if n_new == n_all:                                               # the prompt: causal
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v)                  # "the cache is all in the past"
    return _generic(model, tokens, cache, attend)


def _sdpa(q, k, v, n_new, n_all, model):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(n_new, n_all))


def split_by_view_only(model, tokens, cache):
    def split(t, heads):
        b, n, w = t.shape
        return t.view(b, heads, n, w // heads)
    return _generic(model, tokens, cache, _sdpa, split=split)


def split_reshape_no_permute(model, tokens, cache):
    def split(t, heads):
        return t.reshape(t.shape[0], heads, t.shape[1], -1)

    def merge(o):
        return o.reshape(o.shape[0], o.shape[2], -1)
    return _generic(model, tokens, cache, _sdpa, split=split, merge=merge)


def merge_by_reshape(model, tokens, cache):
    def merge(o):
        b, h, n, d = o.shape
        return o.reshape(b, n, h * d)
    return _generic(model, tokens, cache, _sdpa, merge=merge)


def merge_by_view_flat(model, tokens, cache):
    def merge(o):
        return o.contiguous().view(o.shape[0], o.shape[2], -1)
    return _generic(model, tokens, cache, _sdpa, merge=merge)


def _matmul(q, k, v, n_new, n_all, model):
    s = (q @ k.transpose(-2, -1) / math.sqrt(model.d_head)).masked_fill(~_bottom_right(n_new, n_all), -1e9)
    return s.softmax(-1) @ v


def view_after_transpose(model, tokens, cache):
    """.view straight after .transpose (the fused function's output happens to allow it; a matmul's not)."""
    def merge(o):
        b, h, n, d = o.shape
        return o.transpose(1, 2).view(b, n, h * d)
    return _generic(model, tokens, cache, _matmul, merge=merge)


def sdpa_view_after_transpose(model, tokens, cache):
    """The same .view after .transpose on F.scaled_dot_product_attention's output: its memory is laid out
    (batch, n, heads, d), so the view works and the step is right."""
    def merge(o):
        b, h, n, d = o.shape
        return o.transpose(1, 2).view(b, n, h * d)
    return _generic(model, tokens, cache, _sdpa, merge=merge)


def logits_from_the_residual(model, tokens, cache):
    """A dict cache and einsum; the logits come straight from the unembedding layer."""
    cache = cache or {"k": [], "v": []}
    past = cache["k"][0].shape[2] if cache["k"] else 0
    b, t = tokens.shape
    x = model.token_embedding(tokens) + model.position_embedding(torch.arange(past, past + t))
    out = {"k": [], "v": []}
    for i, blk in enumerate(model.blocks):
        z = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(z), model.n_heads)
        k, v = _heads(blk.attention.W_k(z), model.n_kv_heads), _heads(blk.attention.W_v(z), model.n_kv_heads)
        if cache["k"]:
            k, v = torch.cat((cache["k"][i], k), 2), torch.cat((cache["v"][i], v), 2)
        out["k"].append(k)
        out["v"].append(v)
        g = model.n_heads // model.n_kv_heads
        kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        s = torch.einsum("bhqd,bhkd->bhqk", q, kk) / math.sqrt(q.shape[-1])
        s = s.masked_fill(~_bottom_right(t, kk.shape[2]), float("-inf"))
        x = x + blk.attention.W_o(_unheads(torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), vv)))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembedding(x), out                                 # the final LayerNorm is left out


def unembedding_layer_only(model, tokens, cache):
    """Tuples of stacked layers, SDPA with enable_gqa; reads the logits with the unembedding layer."""
    past = 0 if cache is None else cache[0].shape[3]
    n_new = tokens.shape[1]
    x = model.embed(tokens, past)
    keys, values = [], []
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q = split_heads(block.attention.W_q(y), model.n_heads)
        k = split_heads(block.attention.W_k(y), model.n_kv_heads)
        v = split_heads(block.attention.W_v(y), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache[0][layer], k], dim=2)
            v = torch.cat([cache[1][layer], v], dim=2)
        keys.append(k)
        values.append(v)
        mask = _bottom_right(n_new, k.shape[2])
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        x = x + block.attention.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembedding(x), (torch.stack(keys), torch.stack(values))


def attends_then_appends(model, tokens, cache):
    """Attends to what is cached, then appends this step's keys and values for next time."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    batch, n_new = tokens.shape
    h, h_kv, d = model.n_heads, model.n_kv_heads, model.d_head
    x = model.embed(tokens, past)
    new_cache = []
    for layer, block in enumerate(model.blocks):
        normed, a = block.norm_attention(x), block.attention
        q = a.W_q(normed).view(batch, n_new, h, d).transpose(1, 2)
        k = a.W_k(normed).view(batch, n_new, h_kv, d).transpose(1, 2)
        v = a.W_v(normed).view(batch, n_new, h_kv, d).transpose(1, 2)
        if cache is None:                                                # the prompt attends to itself
            k_seen, v_seen, mask = k, v, _bottom_right(n_new, n_new)
            new_cache.append((k, v))
        else:                                                            # the cache is all in the past
            k_seen, v_seen, mask = cache[layer][0], cache[layer][1], None
            new_cache.append((torch.cat([cache[layer][0], k], 2), torch.cat([cache[layer][1], v], 2)))
        g = h // h_kv
        heads = F.scaled_dot_product_attention(q, k_seen.repeat_interleave(g, 1),
                                               v_seen.repeat_interleave(g, 1), attn_mask=mask)
        x = x + a.W_o(heads.transpose(1, 2).reshape(batch, n_new, h * d))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new_cache


class LayerStore:
    """One layer's cached keys and values."""

    def __init__(self, keys, values):
        self.keys, self.values = keys, values


def layer_cache_before_append(model, tokens, cache):
    """A LayerStore per layer; the step reads the layer's cache before adding the new keys to it."""
    layers = cache or [None] * len(model.blocks)
    past = 0 if layers[0] is None else layers[0].keys.shape[2]
    x = model.embed(tokens, past)
    group = model.n_heads // model.n_kv_heads
    out = []
    for block, stored in zip(model.blocks, layers, strict=True):
        y = block.norm_attention(x)
        q = split_heads(block.attention.W_q(y), model.n_heads)
        k = split_heads(block.attention.W_k(y), model.n_kv_heads)
        v = split_heads(block.attention.W_v(y), model.n_kv_heads)
        keys = k if stored is None else stored.keys
        values = v if stored is None else stored.values
        scores = q @ keys.repeat_interleave(group, 1).transpose(-1, -2) / math.sqrt(model.d_head)
        n_new, n_all = q.shape[2], keys.shape[2]
        scores = scores.masked_fill(~_bottom_right(n_new, n_all), torch.finfo(scores.dtype).min)
        o = scores.softmax(-1) @ values.repeat_interleave(group, 1)
        x = x + block.attention.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
        if stored is None:
            out.append(LayerStore(k, v))
        else:
            out.append(LayerStore(torch.cat([stored.keys, k], 2), torch.cat([stored.values, v], 2)))
    return model.unembed(x), out


def offset_the_other_way_sdpa(model, tokens, cache):
    """SDPA with a bool mask whose diagonal offset is n_new - n_all (the sign flipped)."""
    def attend(q, k, v, n_new, n_all, model):
        keep = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_new - n_all)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    return _generic(model, tokens, cache, attend)


def _offset_by_hand(fill):
    def step(model, tokens, cache):
        def attend(q, k, v, n_new, n_all, model):
            past = n_all - n_new
            blocked = ~torch.tril(torch.ones(n_new, n_all, dtype=torch.bool), diagonal=-past)
            scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(blocked, fill)
            return torch.softmax(scores, dim=-1) @ v
        return _generic(model, tokens, cache, attend)
    return step


offset_the_other_way_by_hand = _offset_by_hand(-1e9)
offset_the_other_way_by_hand.__doc__ = "By hand with a -1e9 fill; the triangle's offset is -(number cached)."
offset_the_other_way_minus_inf = _offset_by_hand(float("-inf"))
offset_the_other_way_minus_inf.__doc__ = "The same with a -inf fill: every step after the prefill is NaN."


def cache_saved_values_first(model, tokens, cache):
    """Stacks each layer's (values, keys) into one tensor and unstacks it as (keys, values)."""
    past = 0 if cache is None else cache[0].shape[-2]
    x = model.embed(tokens, past)
    saved = []
    g = model.n_heads // model.n_kv_heads
    for i, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        q = split_heads(a.W_q(y), model.n_heads)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            old_k, old_v = cache[i]
            k, v = torch.cat([old_k, k], -2), torch.cat([old_v, v], -2)
        saved.append(torch.stack([v, k]))
        o = _sdpa(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1), tokens.shape[1], k.shape[-2],
                  model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), saved


def kv_dict_values_under_keys(model, tokens, cache):
    """A dict per layer, filled the wrong way round: {"k": values, "v": keys}."""
    past = 0 if not cache else cache[0]["k"].shape[2]
    batch, n_new = tokens.shape
    x = model.embed(tokens, past)
    out = []
    for i, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        q = _heads(a.W_q(y), model.n_heads)
        k, v = _heads(a.W_k(y), model.n_kv_heads), _heads(a.W_v(y), model.n_kv_heads)
        if cache:
            k, v = torch.cat([cache[i]["k"], k], 2), torch.cat([cache[i]["v"], v], 2)
        out.append({"k": v, "v": k})
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                           attn_mask=_bottom_right(n_new, k.shape[2]))
        x = x + a.W_o(_unheads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out


def squeezes_the_batch(model, tokens, cache):
    def split(t, heads):
        t = t.squeeze(0)                                                 # (n, width) "there is one sequence"
        return t.view(t.shape[0], heads, -1).transpose(0, 1).unsqueeze(0)
    return _generic(model, tokens, cache, _sdpa, split=split)


def merge_for_one_sequence(model, tokens, cache):
    def merge(o):
        return o[0].transpose(0, 1).reshape(1, o.shape[2], -1)
    return _generic(model, tokens, cache, _sdpa, merge=merge)


def dropout_on_weights(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        s = (q @ k.mT / math.sqrt(model.d_head)).masked_fill(~_bottom_right(n_new, n_all), -1e9)
        return F.dropout(s.softmax(-1), p=0.1) @ v                     # training=True by default
    return _generic(model, tokens, cache, attend)


def sdpa_dropout_p(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(n_new, n_all), dropout_p=0.2)
    return _generic(model, tokens, cache, attend)


def forgets_w_o(model, tokens, cache):
    return _generic(model, tokens, cache, _sdpa, project=False)


def gqa_by_repeat(model, tokens, cache):
    g = model.n_heads // model.n_kv_heads
    return _generic(model, tokens, cache, _sdpa, expand=lambda t: t.repeat(1, g, 1, 1))


def gqa_by_tile_cat(model, tokens, cache):
    g = model.n_heads // model.n_kv_heads
    return _generic(model, tokens, cache, _sdpa, expand=lambda t: torch.cat([t] * g, dim=1))


# ---------------------------------------------------------------- cache-level bugs ---------------------

def embeds_from_zero(model, tokens, cache):
    """Everything right except the positions: model.embed(tokens) restarts at 0."""
    x = model.embed(tokens)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        q = split_heads(a.W_q(y), model.n_heads)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1), q.shape[-2], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def positions_one_short(model, tokens, cache):
    """Counts the cached positions, then starts one short of them (the last cached position again)."""
    seen = 0 if cache is None else cache[0][0].size(2)
    x = model.embed(tokens, max(seen - 1, 0))
    fresh = []
    for block, old in zip(model.blocks, cache or [None] * len(model.blocks), strict=True):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if old is not None:
            k, v = torch.cat((old[0], k), dim=2), torch.cat((old[1], v), dim=2)
        fresh.append((k, v))
        reps = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(reps, 1),
                  v.repeat_interleave(reps, 1), tokens.size(1), k.size(2), model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), fresh


def positions_from_len_cache(model, tokens, cache):
    """Takes the number of positions so far as len(cache) (which counts the layers), einsum attention."""
    start = len(cache) if cache else 0
    x = model.embed(tokens, start)
    kept = []
    for i, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        q = _heads(a.W_q(y), model.n_heads)
        k, v = _heads(a.W_k(y), model.n_kv_heads), _heads(a.W_v(y), model.n_kv_heads)
        if cache:
            k, v = torch.cat([cache[i][0], k], dim=2), torch.cat([cache[i][1], v], dim=2)
        kept.append((k, v))
        g = model.n_heads // model.n_kv_heads
        kk, vv = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        s = torch.einsum("bhqd,bhkd->bhqk", q, kk) / math.sqrt(model.d_head)
        s = s.masked_fill(~_bottom_right(q.shape[2], kk.shape[2]), torch.finfo(s.dtype).min)
        x = x + a.W_o(_unheads(torch.einsum("bhqk,bhkd->bhqd", torch.softmax(s, -1), vv)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), kept


def positions_arange_n_new(model, tokens, cache):
    """The dict-cache learner, positions from torch.arange(n_new)."""
    length = 0 if cache is None else cache["length"]
    x = model.token_embedding(tokens) + model.position_embedding(torch.arange(tokens.shape[1]))
    out = {"length": length + tokens.shape[1]}
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        out[layer] = (k, v)
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1),
                                           v.repeat_interleave(g, 1),
                                           attn_mask=_bottom_right(tokens.shape[1], k.shape[-2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out


def is_causal_everywhere(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return _generic(model, tokens, cache, attend)


def tril_by_hand_top_left(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        allowed = torch.tril(torch.ones(n_new, n_all, dtype=torch.bool))
        s = (q @ k.transpose(-2, -1) / math.sqrt(model.d_head)).masked_fill(~allowed, float("-inf"))
        return s.softmax(dim=-1) @ v
    return _generic(model, tokens, cache, attend)


def none_for_one_causal_for_several(model, tokens, cache):
    def attend(q, k, v, n_new, n_all, model):
        if n_new == 1:
            return F.scaled_dot_product_attention(q, k, v)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return _generic(model, tokens, cache, attend)


def returns_the_given_cache(model, tokens, cache):
    """Attends over the cache and the new keys, but hands back the cache it was given."""
    logits, new = _generic(model, tokens, cache, _sdpa)
    return logits, (new if cache is None else cache)


def returns_its_argument(model, tokens, cache):
    """A KVCache copied and filled, but the function ends with the argument's name: None after the
    prefill, so every step starts over."""
    kv = gpt.KVCache() if cache is None else cache.copy()
    g = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, kv.length)
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = kv.append(layer, split_heads(a.W_k(y), model.n_kv_heads),
                         split_heads(a.W_v(y), model.n_kv_heads))
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), cache                                      # should be kv

def squeezes_the_stream(model, tokens, cache):
    """Squeezes the embedded stream "to drop the extra dimension"; split_heads then meets a 2-D x."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past).squeeze()
    g = model.n_heads // model.n_kv_heads
    out = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        out.append((k, v))
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out

def loop_heads_kv_by_n_kv(model, tokens, cache):
    """One head at a time; query head h reads key/value head h // n_kv_heads."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    n_new = tokens.shape[1]
    out = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        q = split_heads(a.W_q(y), model.n_heads)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        out.append((k, v))
        mask = _bottom_right(n_new, k.shape[-2])
        heads = []
        for h in range(model.n_heads):
            kv = h // model.n_kv_heads                                 # should be h // group
            s = q[:, h] @ k[:, kv].transpose(-2, -1) / math.sqrt(model.d_head)
            heads.append(s.masked_fill(~mask, torch.finfo(s.dtype).min).softmax(-1) @ v[:, kv])
        x = x + a.W_o(merge_heads(torch.stack(heads, dim=1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out


def gathers_kv_heads_by_n_kv(model, tokens, cache):
    """Shares the key/value heads by indexing with arange(n_heads) // n_kv_heads."""
    kv = gpt.KVCache() if cache is None else cache.copy()
    x = model.embed(tokens, kv.length)
    pick = torch.arange(model.n_heads) // model.n_kv_heads              # should be // group
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = kv.append(layer, split_heads(a.W_k(y), model.n_kv_heads),
                         split_heads(a.W_v(y), model.n_kv_heads))
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k[:, pick], v[:, pick], tokens.shape[1], k.shape[-2],
                  model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), kv

def stores_only_the_newest(model, tokens, cache):
    """The dict learner keeps only this call's keys and values."""
    past = 0 if cache is None else cache["seen"]
    x = model.embed(tokens, past)
    out = {"seen": past + tokens.shape[1], "kv": []}
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k_new, v_new = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        k, v = k_new, v_new
        if cache is not None:
            k = torch.cat([cache["kv"][layer][0], k_new], -2)
            v = torch.cat([cache["kv"][layer][1], v_new], -2)
        out["kv"].append((k_new, v_new))                                # should be (k, v)
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out


def forgot_to_cat_keys(model, tokens, cache):
    """Hand-written attention; only the values are concatenated with the cache."""
    past = 0 if cache is None else cache[0][1].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        q = split_heads(a.W_q(y), model.n_heads)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            v = torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        s = q @ k.repeat_interleave(g, 1).transpose(-2, -1) / math.sqrt(model.d_head)
        s = s.masked_fill(~_bottom_right(s.shape[-2], s.shape[-1]), -1e9)
        x = x + a.W_o(merge_heads(s.softmax(-1) @ v.repeat_interleave(g, 1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def stores_old_keys(model, tokens, cache):
    """Attends right this step, but the dict cache keeps the old keys with the new values."""
    past = 0 if cache is None else cache["values"][0].shape[-2]
    x = model.embed(tokens, past)
    out = {"keys": [], "values": []}
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k_all = torch.cat([cache["keys"][layer], k], -2)
            v_all = torch.cat([cache["values"][layer], v], -2)
            out["keys"].append(cache["keys"][layer])                     # forgot: k_all
        else:
            k_all, v_all = k, v
            out["keys"].append(k)
        out["values"].append(v_all)
        g = model.n_heads // model.n_kv_heads
        q = split_heads(a.W_q(y), model.n_heads)
        o = F.scaled_dot_product_attention(q, k_all.repeat_interleave(g, 1), v_all.repeat_interleave(g, 1),
                                           attn_mask=_bottom_right(tokens.shape[1], k_all.shape[-2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out


def forgot_to_cat_values(model, tokens, cache):
    """The keys grow, the values are this step's only (einsum attention)."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        q = split_heads(a.W_q(y), model.n_heads)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache[layer][0], k], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        s = torch.einsum("bhqd,bhkd->bhqk", q, k.repeat_interleave(g, 1)) / math.sqrt(model.d_head)
        s = s.masked_fill(~_bottom_right(s.shape[-2], s.shape[-1]), -1e9)
        o = torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), v.repeat_interleave(g, 1))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def values_left_behind_sdpa(model, tokens, cache):
    """Grows the keys, forgets to grow the values; the fused function with a bottom-right mask refuses."""
    start = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, start)
    kept = []
    for i, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache:
            k = torch.cat([cache[i][0], k], dim=-2)
        kept.append((k, v))
        n, total = tokens.shape[1], k.shape[-2]
        allowed = torch.ones(n, total, dtype=torch.bool).tril(total - n)
        r = model.n_heads // model.n_kv_heads
        q = split_heads(a.W_q(y), model.n_heads)
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(r, dim=1), v.repeat_interleave(r, dim=1),
                                           attn_mask=allowed)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), kept


def stores_old_values(model, tokens, cache):
    """Tuple-of-lists learner: attends right this step, keeps the old values in the cache."""
    keys_in, values_in = cache if cache is not None else (None, None)
    past = 0 if keys_in is None else keys_in[0].shape[-2]
    x = model.embed(tokens, past)
    keys_out, values_out = [], []
    for i, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if keys_in is not None:
            k = torch.cat([keys_in[i], k], dim=-2)
            v_all = torch.cat([values_in[i], v], dim=-2)
            values_out.append(values_in[i])                              # forgot: v_all
        else:
            v_all = v
            values_out.append(v)
        keys_out.append(k)
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1),
                                           v_all.repeat_interleave(g, 1),
                                           attn_mask=gpt.decoding_mask(tokens.shape[1], k.shape[-2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), (keys_out, values_out)


def cat_on_heads_axis(model, tokens, cache):
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], dim=1), torch.cat([cache[layer][1], v], dim=1)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def cat_on_last_axis_merged(model, tokens, cache):
    """The merged-layout learner concatenates along the features instead of the positions."""
    past = 0 if cache is None else cache[0][0].shape[1]
    x = model.embed(tokens, past)
    new = []
    for i, block in enumerate(model.blocks):
        a, y = block.attention, block.norm_attention(x)
        k_flat, v_flat = a.W_k(y), a.W_v(y)
        if cache is not None:
            k_flat = torch.cat([cache[i][0], k_flat], dim=-1)
            v_flat = torch.cat([cache[i][1], v_flat], dim=-1)
        new.append((k_flat, v_flat))
        rep = model.n_heads // model.n_kv_heads
        k = split_heads(k_flat, model.n_kv_heads).repeat_interleave(rep, 1)
        v = split_heads(v_flat, model.n_kv_heads).repeat_interleave(rep, 1)
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k, v, tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def kv_cache_without_copy(model, tokens, cache):
    """The library's KVCache, appended to in place and handed back: reusing a cache breaks."""
    cache = gpt.KVCache() if cache is None else cache
    past = cache.length
    x = model.embed(tokens, past)
    for layer, block in enumerate(model.blocks):
        a, z = block.attention, block.norm_attention(x)
        new_k, new_v = split_heads(a.W_k(z), model.n_kv_heads), split_heads(a.W_v(z), model.n_kv_heads)
        k, v = cache.append(layer, new_k, new_v)
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(z), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), cache


def preallocated_in_place(model, tokens, cache):
    """Buffers of max_len positions written in place: generating straight on works, reuse does not."""
    batch, n_new = tokens.shape
    if cache is None:
        shape = (batch, model.n_kv_heads, model.max_len, model.d_head)
        cache = {"n": 0, "buffers": [(torch.zeros(shape), torch.zeros(shape)) for _ in model.blocks]}
    n = cache["n"]
    x = model.embed(tokens, n)
    for layer, block in enumerate(model.blocks):
        a, y = block.attention, block.norm_attention(x)
        k_buf, v_buf = cache["buffers"][layer]
        k_buf[:, :, n:n + n_new] = split_heads(a.W_k(y), model.n_kv_heads)
        v_buf[:, :, n:n + n_new] = split_heads(a.W_v(y), model.n_kv_heads)
        g = model.n_heads // model.n_kv_heads
        k = k_buf[:, :, :n + n_new].repeat_interleave(g, 1)
        v = v_buf[:, :, :n + n_new].repeat_interleave(g, 1)
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k, v, n_new, n + n_new, model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    cache["n"] = n + n_new
    return model.unembed(x), cache


def list_entries_replaced(model, tokens, cache):
    """Replaces the entries of the list it was given and returns that list."""
    logits, new = _generic(model, tokens, cache, _sdpa)
    if cache is None:
        return logits, new
    for layer, entry in enumerate(new):
        cache[layer] = entry
    return logits, cache


# ---------------------------------------------------------------- the block wired wrong ----------------

def projections_from_the_stream(model, tokens, cache):
    """A dict of per-layer lists; projects queries, keys and values from x itself."""
    cache = cache or {"keys": [], "values": []}
    past = cache["keys"][0].shape[-2] if cache["keys"] else 0
    x = model.embed(tokens, past)
    out = {"keys": [], "values": []}
    for i, block in enumerate(model.blocks):
        att = block.attention
        q = split_heads(att.W_q(x), model.n_heads)                     # the norm is never applied
        k = split_heads(att.W_k(x), model.n_kv_heads)
        v = split_heads(att.W_v(x), model.n_kv_heads)
        if cache["keys"]:
            k = torch.cat([cache["keys"][i], k], dim=-2)
            v = torch.cat([cache["values"][i], v], dim=-2)
        out["keys"].append(k)
        out["values"].append(v)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(tokens.shape[1], k.shape[-2]),
                                           enable_gqa=True)
        x = x + att.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), out


def keys_values_from_raw_x(model, tokens, cache):
    """Tuples per layer, einsum; the queries are normed, the keys and values are not."""
    past = 0 if cache is None else cache[0][0].shape[2]
    b, t = tokens.shape
    x = model.embed(tokens, past)
    kept = []
    for layer, blk in enumerate(model.blocks):
        q = _heads(blk.attention.W_q(blk.norm_attention(x)), model.n_heads)
        k = _heads(blk.attention.W_k(x), model.n_kv_heads)
        v = _heads(blk.attention.W_v(x), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat((cache[layer][0], k), 2), torch.cat((cache[layer][1], v), 2)
        kept.append((k, v))
        g = model.n_heads // model.n_kv_heads
        kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        s = torch.einsum("bhqd,bhkd->bhqk", q, kk) / math.sqrt(model.d_head)
        s = s.masked_fill(~_bottom_right(t, kk.shape[2]), torch.finfo(s.dtype).min)
        x = x + blk.attention.W_o(_unheads(torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), vv)))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), kept


def attention_overwrites_stream(model, tokens, cache):
    """A cache object with a list per layer; x = W_o(...) where the residual belongs."""
    class Cache:
        def __init__(self, pairs):
            self.pairs = pairs

    pairs = [] if cache is None else cache.pairs
    past = pairs[0][0].shape[-2] if pairs else 0
    x = model.embed(tokens, past)
    fresh = []
    for n, block in enumerate(model.blocks):
        h = block.norm_attention(x)
        q = split_heads(block.attention.W_q(h), model.n_heads)
        k = split_heads(block.attention.W_k(h), model.n_kv_heads)
        v = split_heads(block.attention.W_v(h), model.n_kv_heads)
        if pairs:
            k, v = torch.cat([pairs[n][0], k], -2), torch.cat([pairs[n][1], v], -2)
        fresh.append((k, v))
        rep = model.n_heads // model.n_kv_heads
        o = _sdpa(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), tokens.shape[1], k.shape[-2],
                  model)
        x = block.attention.W_o(merge_heads(o))                          # the residual is lost here
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), Cache(fresh)


def sublayer_outputs_summed_only(model, tokens, cache):
    """Stacked (layers, ...) tensors; keeps the block's two outputs but drops the stream itself."""
    past = 0 if cache is None else cache[0].shape[-2]
    x = model.embed(tokens, past)
    ks, vs = [], []
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q = split_heads(block.attention.W_q(y), model.n_heads)
        k = split_heads(block.attention.W_k(y), model.n_kv_heads)
        v = split_heads(block.attention.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[0][layer], k], 2), torch.cat([cache[1][layer], v], 2)
        ks.append(k)
        vs.append(v)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(tokens.shape[1], k.shape[2]),
                                           enable_gqa=True)
        a = block.attention.W_o(merge_heads(o))
        x = a + block.mlp(block.norm_mlp(a))                             # x + a, then x + mlp(...)
    return model.unembed(x), (torch.stack(ks), torch.stack(vs))


def stream_normed_in_place(model, tokens, cache):
    """x = norm(x) at the top of each block, so both residuals add to the normed stream."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        x = block.norm_attention(x)
        a = block.attention
        k, v = split_heads(a.W_k(x), model.n_kv_heads), split_heads(a.W_v(x), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(x), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = block.norm_mlp(x)
        x = x + block.mlp(x)
    return model.unembed(x), new


def mlp_residual_from_normed(model, tokens, cache):
    """Named tuples per layer; the MLP's half reuses one variable for the normed stream."""
    Pair = namedtuple("Pair", "k v")
    past = 0 if cache is None else cache[0].k.size(2)
    x = model.embed(tokens, past)
    store = []
    for layer, block in enumerate(model.blocks):
        z = block.norm_attention(x)
        q = _heads(block.attention.W_q(z), model.n_heads)
        k = _heads(block.attention.W_k(z), model.n_kv_heads)
        v = _heads(block.attention.W_v(z), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer].k, k], dim=2), torch.cat([cache[layer].v, v], dim=2)
        store.append(Pair(k, v))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.size(2), k.size(2)),
                                           enable_gqa=True)
        x = x + block.attention.W_o(_unheads(o))
        x = block.norm_mlp(x)
        x = x + block.mlp(x)
    return model.unembed(x), store


def mlp_replaces_stream(model, tokens, cache):
    """A list of dicts; the MLP's output replaces x."""
    start = 0 if cache is None else cache[0]["k"].shape[-2]
    x = model.embed(tokens, start)
    layers = []
    for i, blk in enumerate(model.blocks):
        n = blk.norm_attention(x)
        q = split_heads(blk.attention.W_q(n), model.n_heads)
        k = split_heads(blk.attention.W_k(n), model.n_kv_heads)
        v = split_heads(blk.attention.W_v(n), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache[i]["k"], k], dim=-2)
            v = torch.cat([cache[i]["v"], v], dim=-2)
        layers.append({"k": k, "v": v})
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[-2], k.shape[-2]),
                                           enable_gqa=True)
        x = x + blk.attention.W_o(merge_heads(o))
        x = blk.mlp(blk.norm_mlp(x))                                     # x = x + ...
    return model.unembed(x), layers


def return_inside_loop(model, tokens, cache):
    """The return statement one indent too deep: only the first block runs."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
        return model.unembed(x), new


def first_block_sliced(model, tokens, cache):
    """A list of dicts; the loop over model.blocks[:1] ("try one layer first", never widened)."""
    start = 0 if cache is None else cache[0]["k"].shape[-2]
    x = model.embed(tokens, start)
    layers = []
    for i, blk in enumerate(model.blocks[:1]):
        n = blk.norm_attention(x)
        q = split_heads(blk.attention.W_q(n), model.n_heads)
        k = split_heads(blk.attention.W_k(n), model.n_kv_heads)
        v = split_heads(blk.attention.W_v(n), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache[i]["k"], k], dim=-2)
            v = torch.cat([cache[i]["v"], v], dim=-2)
        layers.append({"k": k, "v": v})
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[-2], k.shape[-2]),
                                           enable_gqa=True)
        x = x + blk.attention.W_o(merge_heads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), layers


def one_counter_for_all_layers(model, tokens, cache):
    """The library's KVCache, with a layer counter the learner meant to bump at the end of the loop."""
    kv = gpt.KVCache() if cache is None else cache.copy()
    x = model.embed(tokens, kv.length)
    i = 0
    for blk in model.blocks:
        h = blk.norm_attention(x)
        q = split_heads(blk.attention.W_q(h), model.n_heads)
        k, v = kv.append(i, split_heads(blk.attention.W_k(h), model.n_kv_heads),
                         split_heads(blk.attention.W_v(h), model.n_kv_heads))
        reps = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(reps, 1), v.repeat_interleave(reps, 1),
                                           attn_mask=gpt.decoding_mask(tokens.shape[1], k.shape[-2]))
        x = x + blk.attention.W_o(merge_heads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), kv


def stack_of_one_slot(model, tokens, cache):
    """A dict {"k": tensor, "v": tensor}: every block concatenates onto the same two tensors."""
    n_past = 0 if cache is None else cache["k"].shape[2]
    x = model.embed(tokens, n_past)
    store = None if cache is None else dict(cache)
    for block in model.blocks:
        att = block.attention
        z = block.norm_attention(x)
        q = _heads(att.W_q(z), model.n_heads)
        k, v = _heads(att.W_k(z), model.n_kv_heads), _heads(att.W_v(z), model.n_kv_heads)
        if store is not None:
            k, v = torch.cat((store["k"], k), 2), torch.cat((store["v"], v), 2)
        store = {"k": k, "v": v}
        group = model.n_heads // model.n_kv_heads
        w = (q @ k.repeat_interleave(group, 1).transpose(2, 3)) / math.sqrt(model.d_head)
        w = w.masked_fill(~_bottom_right(q.shape[2], k.shape[2]), float("-inf")).softmax(-1)
        x = x + att.W_o(_unheads(w @ v.repeat_interleave(group, 1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), store


def hf_style_mask_order(model, tokens, cache):
    """Tuples per layer and a Hugging Face style additive mask: the causal block, then zeros for the
    past (the order of the two pieces swapped)."""
    past = 0 if cache is None else cache[0][0].size(-2)
    t = tokens.size(1)
    causal = torch.full((t, t), float("-inf")).triu(1)
    attn_bias = torch.cat([causal, torch.zeros(t, past)], dim=-1) if past else causal
    x = model.embed(tokens, past)
    present = []
    for i, block in enumerate(model.blocks):
        hid = block.norm_attention(x)
        q = split_heads(block.attention.W_q(hid), model.n_heads)
        k = split_heads(block.attention.W_k(hid), model.n_kv_heads)
        v = split_heads(block.attention.W_v(hid), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[i][0], k], dim=-2), torch.cat([cache[i][1], v], dim=-2)
        present.append((k, v))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias, enable_gqa=True)
        x = x + block.attention.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), tuple(present)


def bool_mask_new_then_old(model, tokens, cache):
    """A dict cache; the bool mask stacks the new tokens' triangle left of the cached columns."""
    n_new = tokens.shape[1]
    old = 0 if cache is None else cache["keys"][0].shape[2]
    x = model.embed(tokens, old)
    mask = torch.hstack([torch.tril(torch.ones(n_new, n_new)).bool(), torch.ones(n_new, old).bool()])
    keys, values = [], []
    g = model.n_heads // model.n_kv_heads
    for layer, block in enumerate(model.blocks):
        a = block.norm_attention(x)
        q = _heads(block.attention.W_q(a), model.n_heads)
        k = _heads(block.attention.W_k(a), model.n_kv_heads)
        v = _heads(block.attention.W_v(a), model.n_kv_heads)
        if cache is not None:
            k = torch.cat((cache["keys"][layer], k), 2)
            v = torch.cat((cache["values"][layer], v), 2)
        keys.append(k)
        values.append(v)
        s = q @ k.repeat_interleave(g, 1).transpose(-1, -2) / math.sqrt(q.shape[-1])
        p = s.masked_fill(~mask, torch.finfo(s.dtype).min).softmax(-1)
        x = x + block.attention.W_o(_unheads(p @ v.repeat_interleave(g, 1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), {"keys": keys, "values": values}


def static_buffers_read_whole(model, tokens, cache):
    """Preallocated buffers of max_len positions (copied before writing); attends to the whole buffer."""
    b, n_new = tokens.shape
    if cache is None:
        shape = (b, model.n_kv_heads, model.max_len, model.d_head)
        bufs, used = [(torch.zeros(shape), torch.zeros(shape)) for _ in model.blocks], 0
    else:
        bufs, used = [(k.clone(), v.clone()) for k, v in cache["bufs"]], cache["used"]
    x = model.embed(tokens, used)
    rep = model.n_heads // model.n_kv_heads
    for (kb, vb), blk in zip(bufs, model.blocks, strict=True):
        z = blk.norm_attention(x)
        q = split_heads(blk.attention.W_q(z), model.n_heads)
        kb[:, :, used:used + n_new] = split_heads(blk.attention.W_k(z), model.n_kv_heads)
        vb[:, :, used:used + n_new] = split_heads(blk.attention.W_v(z), model.n_kv_heads)
        allowed = _bottom_right(n_new, kb.shape[2])
        o = F.scaled_dot_product_attention(q, kb.repeat_interleave(rep, 1), vb.repeat_interleave(rep, 1),
                                           attn_mask=allowed)
        x = x + blk.attention.W_o(merge_heads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), {"bufs": bufs, "used": used + n_new}


class _Slots:
    """A static cache: one (keys, values) buffer pair per layer and the number of positions written."""

    def __init__(self, keys, values, length):
        self.keys, self.values, self.length = keys, values, length


def static_cache_object_whole(model, tokens, cache):
    """A small static-cache class; the scores are taken against every slot of the buffer."""
    n = tokens.shape[1]
    if cache is None:
        size = (tokens.shape[0], model.n_kv_heads, model.max_len, model.d_head)
        keys = [torch.zeros(size) for _ in range(model.n_layers)]
        values = [torch.zeros(size) for _ in range(model.n_layers)]
        start = 0
    else:
        keys, values, start = list(cache.keys), list(cache.values), cache.length
    x = model.embed(tokens, start)
    group = model.n_heads // model.n_kv_heads
    for layer, block in enumerate(model.blocks):
        a = block.attention
        h = block.norm_attention(x)
        q = _heads(a.W_q(h), model.n_heads)
        keys[layer] = torch.cat([keys[layer][:, :, :start], _heads(a.W_k(h), model.n_kv_heads),
                                 keys[layer][:, :, start + n:]], dim=2)
        values[layer] = torch.cat([values[layer][:, :, :start], _heads(a.W_v(h), model.n_kv_heads),
                                   values[layer][:, :, start + n:]], dim=2)
        total = keys[layer].shape[2]
        s = q @ keys[layer].repeat_interleave(group, 1).transpose(-2, -1) / math.sqrt(model.d_head)
        s = s.masked_fill(~torch.ones(n, total, dtype=torch.bool).tril(total - n), torch.finfo(s.dtype).min)
        x = x + a.W_o(_unheads(s.softmax(-1) @ values[layer].repeat_interleave(group, 1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), _Slots(keys, values, start + n)


_POSITIONS = {"next": 0}


def positions_in_a_global(model, tokens, cache):
    """The next position kept in a module-level dict, reset on the prefill, not read from the cache."""
    if cache is None:
        _POSITIONS["next"] = 0
    start = _POSITIONS["next"]
    _POSITIONS["next"] = start + tokens.shape[1]
    x = model.embed(tokens, start)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def positions_on_the_function(model, tokens, cache):
    """The position count kept as an attribute of the function itself."""
    me = positions_on_the_function
    start = 0 if cache is None else me.count
    me.count = start + tokens.shape[1]
    x = model.embed(tokens, start)
    layers = []
    for i, blk in enumerate(model.blocks):
        n = blk.norm_attention(x)
        q = split_heads(blk.attention.W_q(n), model.n_heads)
        k = split_heads(blk.attention.W_k(n), model.n_kv_heads)
        v = split_heads(blk.attention.W_v(n), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache[i]["k"], k], dim=-2)
            v = torch.cat([cache[i]["v"], v], dim=-2)
        layers.append({"k": k, "v": v})
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[-2], k.shape[-2]),
                                           enable_gqa=True)
        x = x + blk.attention.W_o(merge_heads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), layers


positions_on_the_function.count = 0


def aliased_layer_slots(model, tokens, cache):
    """The new cache made as [[None, None]] * n_layers: one list, so every layer's slot is the last's."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = [[None, None]] * len(model.blocks)
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new[layer][0], new[layer][1] = k, v
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def attention_only_blocks(model, tokens, cache):
    """A list of dicts; each block is attention alone ("the MLP is not part of attention")."""
    start = 0 if cache is None else cache[0]["k"].shape[-2]
    x = model.embed(tokens, start)
    layers = []
    for i, blk in enumerate(model.blocks):
        n = blk.norm_attention(x)
        q = split_heads(blk.attention.W_q(n), model.n_heads)
        k = split_heads(blk.attention.W_k(n), model.n_kv_heads)
        v = split_heads(blk.attention.W_v(n), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache[i]["k"], k], dim=-2)
            v = torch.cat([cache[i]["v"], v], dim=-2)
        layers.append({"k": k, "v": v})
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[-2], k.shape[-2]),
                                           enable_gqa=True)
        x = x + blk.attention.W_o(merge_heads(o))
    return model.unembed(x), layers


def mlp_computed_not_added(model, tokens, cache):
    """The feed-forward half computed into a variable that is never added to x."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        h = block.mlp(block.norm_mlp(x))                                # noqa: F841 - h never joins x
    return model.unembed(x), new


def feed_forward_without_residual(model, tokens, cache):
    """The feed-forward half written as its own function, which returns only the MLP's output."""
    def feed_forward(block, x):
        return block.mlp(block.norm_mlp(x))

    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = feed_forward(block, x)
    return model.unembed(x), new


def mlp_on_the_raw_stream(model, tokens, cache):
    """Stacked tensors per layer, einsum attention; the MLP gets x without norm_mlp."""
    past = 0 if cache is None else cache[0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q = _heads(block.attention.W_q(y), model.n_heads)
        kv = torch.stack([_heads(block.attention.W_k(y), model.n_kv_heads),
                          _heads(block.attention.W_v(y), model.n_kv_heads)])
        if cache is not None:
            kv = torch.cat([cache[layer], kv], dim=-2)
        new.append(kv)
        g = model.n_heads // model.n_kv_heads
        k, v = kv[0].repeat_interleave(g, 1), kv[1].repeat_interleave(g, 1)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) * model.d_head ** -0.5
        s = s.masked_fill(~_bottom_right(q.shape[2], k.shape[2]), torch.finfo(s.dtype).min)
        x = x + block.attention.W_o(_unheads(s.softmax(-1) @ v))
        x = x + block.mlp(x)                                             # norm_mlp left out
    return model.unembed(x), new


def mlp_norm_forgotten(model, tokens, cache):
    """A class with a method per sublayer; the feed-forward one forgets its norm."""
    class Step:
        def attention(self, block, x, kv):
            y = block.norm_attention(x)
            q = split_heads(block.attention.W_q(y), model.n_heads)
            k = split_heads(block.attention.W_k(y), model.n_kv_heads)
            v = split_heads(block.attention.W_v(y), model.n_kv_heads)
            if kv is not None:
                k, v = torch.cat([kv[0], k], -2), torch.cat([kv[1], v], -2)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[-2], k.shape[-2]),
                                               enable_gqa=True)
            return x + block.attention.W_o(merge_heads(o)), (k, v)

        def feed_forward(self, block, x):
            return x + block.mlp(x)

    step = Step()
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        x, kv = step.attention(block, x, None if cache is None else cache[layer])
        new.append(kv)
        x = step.feed_forward(block, x)
    return model.unembed(x), new


def both_halves_from_block_input(model, tokens, cache):
    """Computes both halves from the block's input and adds them together (a parallel block)."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o)) + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def mlp_input_saved_too_early(model, tokens, cache):
    """A dict cache; saves the normed stream for the MLP before attention has added to it."""
    cache = cache or {}
    past = cache[0][0].shape[-2] if cache else 0
    x = model.embed(tokens, past)
    out = {}
    for i, blk in enumerate(model.blocks):
        for_attention, for_mlp = blk.norm_attention(x), blk.norm_mlp(x)
        q = _heads(blk.attention.W_q(for_attention), model.n_heads)
        k = _heads(blk.attention.W_k(for_attention), model.n_kv_heads)
        v = _heads(blk.attention.W_v(for_attention), model.n_kv_heads)
        if cache:
            k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
        out[i] = (k, v)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[2], k.shape[2]),
                                           enable_gqa=True)
        x = x + blk.attention.W_o(_unheads(o))
        x = x + blk.mlp(for_mlp)
    return model.unembed(x), out


def values_cat_onto_cached_keys(model, tokens, cache):
    """Tuples per layer; a copy-paste slip reads the cached keys in the values' line."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            past_k, past_v = cache[layer]
            k = torch.cat([past_k, k], dim=-2)
            v = torch.cat([past_k, v], dim=-2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def values_joined_with_new_keys(model, tokens, cache):
    """Round 26's learner: the value line joins this step's keys (k_new) to the cached values."""
    past = 0 if cache is None else cache[0][1].shape[2]
    h = model.embed(tokens, past)
    out_cache = []
    for i, blk in enumerate(model.blocks):
        a = blk.norm_attention(h)
        q = split_heads(blk.attention.W_q(a), model.n_heads)
        k_new = split_heads(blk.attention.W_k(a), model.n_kv_heads)
        v_new = split_heads(blk.attention.W_v(a), model.n_kv_heads)
        if cache is None:
            k_all, v_all = k_new, v_new
        else:
            k_all = torch.cat([cache[i][0], k_new], dim=2)
            v_all = torch.cat([cache[i][1], k_new], dim=2)
        out_cache.append((k_all, v_all))
        rep = model.n_heads // model.n_kv_heads
        o = _sdpa(q, k_all.repeat_interleave(rep, 1), v_all.repeat_interleave(rep, 1), tokens.shape[1],
                  k_all.shape[2], model)
        h = h + blk.attention.W_o(merge_heads(o))
        h = h + blk.mlp(blk.norm_mlp(h))
    return model.unembed(h), out_cache


def dict_cache_values_key_typo(model, tokens, cache):
    """A dict of stacked keys and values; the values are read back under the keys' name."""
    past = 0 if cache is None else cache["k"].shape[-2]
    x = model.embed(tokens, past)
    ks, vs = [], []
    for i, blk in enumerate(model.blocks):
        z = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(z), model.n_heads)
        k = _heads(blk.attention.W_k(z), model.n_kv_heads)
        v = _heads(blk.attention.W_v(z), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache["k"][i], k], dim=2)
            v = torch.cat([cache["k"][i], v], dim=2)                     # cache["v"]
        ks.append(k)
        vs.append(v)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[2], k.shape[2]),
                                           enable_gqa=True)
        x = x + blk.attention.W_o(_unheads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), {"k": torch.stack(ks), "v": torch.stack(vs)}


def layer_index_forgotten(model, tokens, cache):
    """A dict of lists; reads cache["k"][0] in every layer (the layer's index never enters the loop)."""
    past = 0 if cache is None else cache["k"][0].shape[-2]
    x = model.embed(tokens, past)
    out = {"k": [], "v": []}
    for blk in model.blocks:
        z = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(z), model.n_heads)
        k, v = _heads(blk.attention.W_k(z), model.n_kv_heads), _heads(blk.attention.W_v(z), model.n_kv_heads)
        if cache is not None:
            k = torch.cat([cache["k"][0], k], dim=2)
            v = torch.cat([cache["v"][0], v], dim=2)
        out["k"].append(k)
        out["v"].append(v)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[2], k.shape[2]),
                                           enable_gqa=True)
        x = x + blk.attention.W_o(_unheads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), out


def new_positions_in_front(model, tokens, cache):
    """Tuples per layer; concatenates the new keys and values before the cached ones."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([k, cache[layer][0]], -2), torch.cat([v, cache[layer][1]], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def stacked_cache_prepended(model, tokens, cache):
    """One stacked (layers, 2, ...) tensor; the new entries stacked first along the positions."""
    past = 0 if cache is None else cache.shape[-2]
    x = model.embed(tokens, past)
    kvs = []
    for layer, block in enumerate(model.blocks):
        y = block.norm_attention(x)
        q = _heads(block.attention.W_q(y), model.n_heads)
        kv = torch.stack([_heads(block.attention.W_k(y), model.n_kv_heads),
                          _heads(block.attention.W_v(y), model.n_kv_heads)])
        if cache is not None:
            kv = torch.cat([kv, cache[layer]], dim=-2)
        kvs.append(kv)
        o = F.scaled_dot_product_attention(q, kv[0], kv[1], attn_mask=_bottom_right(q.shape[2], kv.shape[-2]),
                                           enable_gqa=True)
        x = x + block.attention.W_o(_unheads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), torch.stack(kvs)


def next_token_logits_only(model, tokens, cache):
    """A generation loop's habit: keeps only the logits it would sample from."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        o = F.scaled_dot_product_attention(split_heads(a.W_q(y), model.n_heads), k, v, enable_gqa=True,
                                           attn_mask=_bottom_right(tokens.shape[1], k.shape[-2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x[:, -1:]), new


def half_size_cache(model, tokens, cache):
    """Stores keys and values in bfloat16 to halve the cache, and attends in float32."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k = split_heads(a.W_k(y), model.n_kv_heads).to(torch.bfloat16)
        v = split_heads(a.W_v(y), model.n_kv_heads).to(torch.bfloat16)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        kf, vf = k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1)
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), kf, vf, tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def bf16_dict_cache_einsum(model, tokens, cache):
    """A dict cache in bfloat16, einsum attention upcast per step."""
    cache = cache or {}
    past = cache[0]["k"].shape[2] if cache else 0
    x = model.embed(tokens, past)
    out = {}
    for i, blk in enumerate(model.blocks):
        z = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(z), model.n_heads)
        k = _heads(blk.attention.W_k(z), model.n_kv_heads).bfloat16()
        v = _heads(blk.attention.W_v(z), model.n_kv_heads).bfloat16()
        if cache:
            k, v = torch.cat([cache[i]["k"], k], 2), torch.cat([cache[i]["v"], v], 2)
        out[i] = {"k": k, "v": v}
        g = model.n_heads // model.n_kv_heads
        kk, vv = k.to(q.dtype).repeat_interleave(g, 1), v.to(q.dtype).repeat_interleave(g, 1)
        s = torch.einsum("bhqd,bhkd->bhqk", q, kk) / math.sqrt(model.d_head)
        s = s.masked_fill(~_bottom_right(q.shape[2], kk.shape[2]), torch.finfo(s.dtype).min)
        x = x + blk.attention.W_o(_unheads(torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), vv)))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), out


def one_norm_for_both(model, tokens, cache):
    """Norms once per block and reuses it: the MLP gets norm_attention, not norm_mlp."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        ln, a = block.norm_attention, block.attention
        y = ln(x)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(ln(x))
    return model.unembed(x), new


def norms_in_a_swapped_pair(model, tokens, cache):
    """Unpacks the block's two norms into a pair in the wrong order."""
    past = 0 if cache is None else cache[0].shape[-2]
    x = model.embed(tokens, past)
    ks, vs = [], []
    for layer, block in enumerate(model.blocks):
        pre_mlp, pre_attention = block.norm_attention, block.norm_mlp
        y = pre_attention(x)
        q = _heads(block.attention.W_q(y), model.n_heads)
        k = _heads(block.attention.W_k(y), model.n_kv_heads)
        v = _heads(block.attention.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[0][layer], k], 2), torch.cat([cache[1][layer], v], 2)
        ks.append(k)
        vs.append(v)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=_bottom_right(q.shape[2], k.shape[2]),
                                           enable_gqa=True)
        x = x + block.attention.W_o(_unheads(o))
        x = x + block.mlp(pre_mlp(x))
    return model.unembed(x), (torch.stack(ks), torch.stack(vs))


def token_loop_one_position(model, tokens, cache):
    """Feeds the new tokens one at a time through a one-token step, all at the first new position."""
    def one(token, cache, position):
        x = model.embed(token, position)
        new = []
        for layer, block in enumerate(model.blocks):
            y, a = block.norm_attention(x), block.attention
            k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
            if cache is not None:
                k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
            new.append((k, v))
            g = model.n_heads // model.n_kv_heads
            q = split_heads(a.W_q(y), model.n_heads)
            o = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))
            x = x + a.W_o(merge_heads(o))
            x = x + block.mlp(block.norm_mlp(x))
        return model.unembed(x), new

    start = 0 if cache is None else cache[0][0].shape[-2]
    pieces = []
    for i in range(tokens.shape[1]):
        logits, cache = one(tokens[:, i:i + 1], cache, start)           # start + i
        pieces.append(logits)
    return torch.cat(pieces, dim=1), cache


# ---------------------------------------------------------------- wrong, no single known bug ----------

def the_one_liner(model, tokens, cache):
    return model(tokens, cache if cache is not None else gpt.KVCache())


def calls_generate(model, tokens, cache):
    seen = tokens if cache is None else torch.cat([cache, tokens], dim=1)
    steps = gpt.generate(model, seen, 0)
    return torch.zeros(tokens.shape[0], tokens.shape[1], model.vocab_size), steps


def calls_cached_attention(model, tokens, cache):
    cache = gpt.KVCache() if cache is None else cache.copy()
    x = model.embed(tokens, cache.length)
    for layer, block in enumerate(model.blocks):
        mixed, _ = gpt.cached_attention(block.attention, block.norm_attention(x), model.n_heads,
                                        model.n_kv_heads, cache, layer)
        x = x + mixed
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), cache


def block_attention_for_prompt(model, tokens, cache):
    """Uses the attention module's own forward for the prompt."""
    x = model.embed(tokens, 0)
    for block in model.blocks:
        x = x + block.attention(block.norm_attention(x), mask=torch.ones(tokens.shape[1], tokens.shape[1],
                                                                       dtype=torch.bool).tril())[0]
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), None


def skips_the_mlp(model, tokens, cache):
    logits, new = _generic_no_mlp(model, tokens, cache)
    return logits, new


def _generic_no_mlp(model, tokens, cache):
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))                                    # and no MLP
    return model.unembed(x), new


def first_layers_cache_everywhere(model, tokens, cache):
    """Reads layer 0's cache in every layer."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for block in model.blocks:
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[0][0], k], -2), torch.cat([cache[0][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def flat_cache_read_at_i(model, tokens, cache):
    """The cache a flat list [k0, v0, k1, v1]; layer i reads cache[i] and cache[i + 1] (replay 11's 08P1)."""
    past = 0 if cache is None else cache[0].shape[-2]
    x = model.embed(tokens, past)
    flat = []
    for i, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[i], k], -2), torch.cat([cache[i + 1], v], -2)
        flat += [k, v]
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), flat


def stacked_cache_read_kind_first(model, tokens, cache):
    """One (layers, 2, ...) tensor, read as (2, layers, ...): cache[0, layer], cache[1, layer] (replay 12's
    08Q1)."""
    past = 0 if cache is None else cache.shape[-2]
    x = model.embed(tokens, past)
    kept = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        kept.append(torch.stack([k, v]))
        if cache is not None:
            k, v = torch.cat([cache[0, layer], k], -2), torch.cat([cache[1, layer], v], -2)
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    new = torch.stack(kept)
    return model.unembed(x), new if cache is None else torch.cat([cache, new], dim=-2)


def blocks_zipped_with_cache(model, tokens, cache):
    """for block, entry in zip(model.blocks, cache or []): with no cache no block runs (replay 13's 08R4)."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for block, entry in zip(model.blocks, cache or [], strict=False):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if entry is not None:
            k, v = torch.cat([entry[0], k], -2), torch.cat([entry[1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def blocks_from_cache_entries(model, tokens, cache):
    """Loops over the cache's entries, each with its block: with no cache yet, no block runs."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    new = []
    for i, (pk, pv) in enumerate(cache or []):
        block = model.blocks[i]
        y, a = block.norm_attention(x), block.attention
        k = torch.cat([pk, split_heads(a.W_k(y), model.n_kv_heads)], -2)
        v = torch.cat([pv, split_heads(a.W_v(y), model.n_kv_heads)], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                  tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def last_position_only(model, tokens, cache):
    """Returns the logits of the last new position only (what generation needs, not what is asked)."""
    logits, new = _generic(model, tokens, cache, _sdpa)
    return logits[:, -1:], new


def shares_heads_before_caching(model, tokens, cache):
    """Repeats the key/value heads for the query heads straight after projecting, and caches those."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    group = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k = split_heads(a.W_k(y), model.n_kv_heads).repeat_interleave(group, 1)     # (b, h, n, d) already
        v = split_heads(a.W_v(y), model.n_kv_heads).repeat_interleave(group, 1)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        o = _sdpa(split_heads(a.W_q(y), model.n_heads), k, v, tokens.shape[1], k.shape[-2], model)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def expanded_dict_cache(model, tokens, cache):
    """A dict cache of keys and values already expanded to every query head (expand + reshape)."""
    cache = dict(cache or {})
    past = cache[0]["k"].shape[2] if cache else 0
    g = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, past)
    out = {}
    for i, blk in enumerate(model.blocks):
        z = blk.norm_attention(x)
        b, n, _ = z.shape
        q = _heads(blk.attention.W_q(z), model.n_heads)
        k, v = (_heads(w(z), model.n_kv_heads)[:, :, None].expand(b, model.n_kv_heads, g, n, model.d_head)
                .reshape(b, model.n_heads, n, model.d_head) for w in (blk.attention.W_k, blk.attention.W_v))
        if cache:
            k, v = torch.cat([cache[i]["k"], k], 2), torch.cat([cache[i]["v"], v], 2)
        out[i] = {"k": k, "v": v}
        s = q @ k.transpose(-1, -2) / math.sqrt(model.d_head)
        s = s.masked_fill(~_bottom_right(n, k.shape[2]), torch.finfo(s.dtype).min)
        x = x + blk.attention.W_o(_unheads(s.softmax(-1) @ v))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), out


def shared_ptr_mask_rows(model, tokens, cache):
    """LLMs-from-scratch's ptr_current_pos, one for the whole model in a dict, advanced by every block."""
    state = {"k": [], "v": [], "pos": 0, "ptr": 0} if cache is None else dict(cache, k=[], v=[])
    b, n = tokens.shape
    x = model.embed(tokens, state["pos"])
    state["pos"] += n
    blocked = torch.triu(torch.ones(model.max_len, model.max_len, dtype=torch.bool), diagonal=1)
    rep = model.n_heads // model.n_kv_heads
    for i, blk in enumerate(model.blocks):
        a, y = blk.attention, blk.norm_attention(x)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache["k"][i], k], dim=2), torch.cat([cache["v"][i], v], dim=2)
        state["k"].append(k)
        state["v"].append(v)
        s = split_heads(a.W_q(y), model.n_heads) @ k.repeat_interleave(rep, 1).transpose(2, 3)
        s = s.masked_fill(blocked[state["ptr"]:state["ptr"] + n, :k.shape[2]], -torch.inf)
        state["ptr"] += n
        w = torch.softmax(s / math.sqrt(model.d_head), dim=-1)
        x = x + a.W_o(merge_heads(w @ v.repeat_interleave(rep, 1)))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), state


class _Static:
    def __init__(self, k, v, length):
        self.k, self.v, self.length = k, v, length


def static_length_bumped_per_block(model, tokens, cache):
    """A static cache whose length goes up after each block's write, inside the loop over the blocks."""
    b, n = tokens.shape
    if cache is None:
        shape = (b, model.n_kv_heads, model.max_len, model.d_head)
        st = _Static([torch.zeros(shape) for _ in model.blocks], [torch.zeros(shape) for _ in model.blocks],
                     0)
    else:
        st = _Static([t.clone() for t in cache.k], [t.clone() for t in cache.v], cache.length)
    x = model.embed(tokens, st.length)
    g = model.n_heads // model.n_kv_heads
    for i, blk in enumerate(model.blocks):
        y = blk.norm_attention(x)
        where = torch.arange(st.length, st.length + n)
        st.k[i].index_copy_(2, where, _heads(blk.attention.W_k(y), model.n_kv_heads))
        st.v[i].index_copy_(2, where, _heads(blk.attention.W_v(y), model.n_kv_heads))
        st.length += n
        keys, values = st.k[i][:, :, :st.length], st.v[i][:, :, :st.length]
        o = _sdpa(_heads(blk.attention.W_q(y), model.n_heads), keys.repeat_interleave(g, 1),
                  values.repeat_interleave(g, 1), n, st.length, model)
        x = x + blk.attention.W_o(_unheads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), st


def static_count_bumped_first(model, tokens, cache):
    """Preallocated buffers in a dict; the count goes up on entry, then each block writes at the count."""
    b, n = tokens.shape
    if cache is None:
        z = torch.zeros(model.n_layers, b, model.n_kv_heads, model.max_len, model.d_head)
        cache = {"K": z, "V": z.clone(), "count": 0}
    K, V, start = cache["K"].clone(), cache["V"].clone(), cache["count"]
    count = start + n
    x = model.embed(tokens, start)
    for i, blk in enumerate(model.blocks):
        y = blk.norm_attention(x)
        K[i, :, :, count:count + n] = _heads(blk.attention.W_k(y), model.n_kv_heads)
        V[i, :, :, count:count + n] = _heads(blk.attention.W_v(y), model.n_kv_heads)
        keys = K[i, :, :, :count].repeat_interleave(model.n_heads // model.n_kv_heads, dim=1)
        vals = V[i, :, :, :count].repeat_interleave(model.n_heads // model.n_kv_heads, dim=1)
        q = _heads(blk.attention.W_q(y), model.n_heads)
        s = (q @ keys.transpose(-1, -2)) / model.d_head ** 0.5
        s = s.masked_fill(~_bottom_right(n, count), float("-inf"))
        x = x + blk.attention.W_o(_unheads(s.softmax(-1) @ vals))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), {"K": K, "V": V, "count": count}


def ring_buffer_cursor_moved_early(model, tokens, cache):
    """Buffers in a tuple with a cursor; the cursor is moved past the new tokens before they are stored."""
    b, n = tokens.shape
    if cache is None:
        shape = (b, model.n_kv_heads, model.max_len, model.d_head)
        keys, values, cursor = [torch.zeros(shape) for _ in model.blocks], [torch.zeros(shape)
                                                                         for _ in model.blocks], 0
    else:
        keys, values, cursor = [k.clone() for k in cache[0]], [v.clone() for v in cache[1]], cache[2]
    x = model.embed(tokens, cursor)
    cursor += n
    for layer, block in enumerate(model.blocks):
        att, y = block.attention, block.norm_attention(x)
        keys[layer][:, :, cursor:cursor + n] = split_heads(att.W_k(y), model.n_kv_heads)
        values[layer][:, :, cursor:cursor + n] = split_heads(att.W_v(y), model.n_kv_heads)
        heads = F.scaled_dot_product_attention(
            split_heads(att.W_q(y), model.n_heads), keys[layer][:, :, :cursor], values[layer][:, :, :cursor],
            attn_mask=_bottom_right(n, cursor), enable_gqa=True)
        x = x + att.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), (keys, values, cursor)


def prefill_in_pairs(model, tokens, cache):
    """A prompt prefilled two tokens at a time with is_causal=True, appended to the cache after."""
    if cache is None and tokens.shape[1] > 2:
        outs = []
        for i in range(0, tokens.shape[1], 2):
            out, cache = prefill_in_pairs(model, tokens[:, i:i + 2], cache if i else None)
            outs.append(out)
        return torch.cat(outs, dim=1), cache
    past = 0 if cache is None else cache[0][0].shape[2]
    n = tokens.shape[1]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        att, y = block.attention, block.norm_attention(x)
        q = split_heads(att.W_q(y), model.n_heads)
        k, v = split_heads(att.W_k(y), model.n_kv_heads), split_heads(att.W_v(y), model.n_kv_heads)
        if n > 1:      # several new tokens: they only need each other
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], 2), torch.cat([cache[layer][1], v], 2)
        if n == 1:
            o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        new.append((k, v))
        x = x + att.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def prompt_in_chunks_of_three(model, tokens, cache, chunk=3):
    """Long prompts in chunks of 3; each chunk's scores are taken against the chunk's own keys."""
    b, n_total = tokens.shape
    past = 0 if cache is None else cache[0][0].shape[-2]
    layers = None if cache is None else [list(kv) for kv in cache]
    outs = []
    size = chunk if cache is None else n_total
    for lo in range(0, n_total, size):
        part = tokens[:, lo:lo + size]
        n = part.shape[1]
        x = model.embed(part, past + lo)
        for layer, block in enumerate(model.blocks):
            att, y = block.attention, block.norm_attention(x)
            q = _heads(att.W_q(y), model.n_heads)
            k, v = _heads(att.W_k(y), model.n_kv_heads), _heads(att.W_v(y), model.n_kv_heads)
            if cache is not None:          # a step after the prompt: the cached positions too
                k, v = torch.cat([layers[layer][0], k], -2), torch.cat([layers[layer][1], v], -2)
            g = model.n_heads // model.n_kv_heads
            s = q @ k.repeat_interleave(g, 1).transpose(-2, -1) / math.sqrt(model.d_head)
            s = s.masked_fill(~_bottom_right(n, k.shape[-2]), -1e9)
            x = x + att.W_o(_unheads(s.softmax(-1) @ v.repeat_interleave(g, 1)))
            x = x + block.mlp(block.norm_mlp(x))
            if cache is not None:
                layers[layer] = [k, v]
            elif layers is None or len(layers) <= layer:
                layers = (layers or []) + [[k, v]]
            else:
                layers[layer] = [torch.cat([layers[layer][0], k], -2), torch.cat([layers[layer][1], v], -2)]
        outs.append(model.unembed(x))
    return torch.cat(outs, dim=1), [tuple(kv) for kv in layers]


def prefill_in_chunks_right(model, tokens, cache, chunk=3):
    """A long prompt in chunks of 3, each chunk appended to the cache before it attends."""
    if cache is None and tokens.shape[1] > chunk:
        outs = []
        for lo in range(0, tokens.shape[1], chunk):
            out, cache = prefill_in_chunks_right(model, tokens[:, lo:lo + chunk], cache)
            outs.append(out)
        return torch.cat(outs, dim=1), cache
    past = 0 if cache is None else cache[0][0].shape[2]
    n = tokens.shape[1]
    x = model.embed(tokens, past)
    new = []
    for layer, block in enumerate(model.blocks):
        att, y = block.attention, block.norm_attention(x)
        k, v = split_heads(att.W_k(y), model.n_kv_heads), split_heads(att.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], 2), torch.cat([cache[layer][1], v], 2)
        new.append((k, v))
        o = F.scaled_dot_product_attention(split_heads(att.W_q(y), model.n_heads), k, v,
                                           attn_mask=_bottom_right(n, k.shape[2]), enable_gqa=True)
        x = x + att.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def static_buffers_count_after(model, tokens, cache):
    """Preallocated buffers (copied before writing); the count goes up once, after every block wrote."""
    b, n = tokens.shape
    if cache is None:
        z = torch.zeros(model.n_layers, b, model.n_kv_heads, model.max_len, model.d_head)
        cache = {"K": z, "V": z.clone(), "count": 0}
    K, V, start = cache["K"].clone(), cache["V"].clone(), cache["count"]
    end = start + n
    x = model.embed(tokens, start)
    g = model.n_heads // model.n_kv_heads
    for i, blk in enumerate(model.blocks):
        y = blk.norm_attention(x)
        K[i, :, :, start:end] = _heads(blk.attention.W_k(y), model.n_kv_heads)
        V[i, :, :, start:end] = _heads(blk.attention.W_v(y), model.n_kv_heads)
        s = _heads(blk.attention.W_q(y), model.n_heads) @ K[i, :, :, :end].repeat_interleave(g, 1).mT
        s = (s / model.d_head ** 0.5).masked_fill(~_bottom_right(n, end), float("-inf"))
        x = x + blk.attention.W_o(_unheads(s.softmax(-1) @ V[i, :, :, :end].repeat_interleave(g, 1)))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), {"K": K, "V": V, "count": end}


def shared_ptr_advanced_once(model, tokens, cache):
    """One ptr_current_pos for the whole model, in the state dict, advanced once after the blocks."""
    state = {"k": [], "v": [], "ptr": 0} if cache is None else dict(cache, k=[], v=[])
    b, n = tokens.shape
    ptr = state["ptr"]
    x = model.embed(tokens, ptr)
    blocked = torch.triu(torch.ones(model.max_len, model.max_len, dtype=torch.bool), diagonal=1)
    rep = model.n_heads // model.n_kv_heads
    for i, blk in enumerate(model.blocks):
        a, y = blk.attention, blk.norm_attention(x)
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache["k"][i], k], dim=2), torch.cat([cache["v"][i], v], dim=2)
        state["k"].append(k)
        state["v"].append(v)
        s = split_heads(a.W_q(y), model.n_heads) @ k.repeat_interleave(rep, 1).transpose(2, 3)
        s = s.masked_fill(blocked[ptr:ptr + n, :k.shape[2]], -torch.inf)
        w = torch.softmax(s / math.sqrt(model.d_head), dim=-1)
        x = x + a.W_o(merge_heads(w @ v.repeat_interleave(rep, 1)))
        x = x + blk.mlp(blk.norm_mlp(x))
    state["ptr"] = ptr + n
    return model.unembed(x), state


def bshd_layout_einsum(model, tokens, cache):
    """flash-attn's (batch, seq, heads, d) layout: the cache grows along dim 1; einsum throughout."""
    b, s_new = tokens.shape
    heads, kv_heads, d = model.n_heads, model.n_kv_heads, model.d_head
    past = 0 if cache is None else cache[0][0].shape[1]
    x = model.embed(tokens, past)
    new_cache = []
    for layer, block in enumerate(model.blocks):
        attn, h = block.attention, block.norm_attention(x)
        q = attn.W_q(h).view(b, s_new, heads, d)
        k, v = attn.W_k(h).view(b, s_new, kv_heads, d), attn.W_v(h).view(b, s_new, kv_heads, d)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], dim=1), torch.cat([cache[layer][1], v], dim=1)
        new_cache.append((k, v))
        t = k.shape[1]
        kr, vr = k.repeat_interleave(heads // kv_heads, dim=2), v.repeat_interleave(heads // kv_heads, dim=2)
        scores = torch.einsum("bshd,bthd->bhst", q, kr) / math.sqrt(d)
        causal = torch.ones(s_new, t, dtype=torch.bool).tril(t - s_new)
        p = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + attn.W_o(torch.einsum("bhst,bthd->bshd", p, vr).reshape(b, s_new, heads * d))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new_cache


def loop_over_kv_groups(model, tokens, cache):
    """Grouped-query attention as a loop over the key/value heads, each with its group of queries."""
    n_new = tokens.shape[1]
    past = cache[0][0].shape[2] if cache is not None else 0
    group = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, past)
    cache_out = []
    for layer, block in enumerate(model.blocks):
        W, normed = block.attention, block.norm_attention(x)
        q = split_heads(W.W_q(normed), model.n_heads)
        k, v = split_heads(W.W_k(normed), model.n_kv_heads), split_heads(W.W_v(normed), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], dim=2), torch.cat([cache[layer][1], v], dim=2)
        cache_out.append((k, v))
        mask = gpt.decoding_mask(n_new, k.shape[2])
        parts = [F.scaled_dot_product_attention(q[:, j * group:(j + 1) * group], k[:, j:j + 1], v[:, j:j + 1],
                                                attn_mask=mask) for j in range(model.n_kv_heads)]
        x = x + W.W_o(merge_heads(torch.cat(parts, dim=1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), cache_out


def _layers_yielding_kv(model, x, cache, past):
    g = model.n_heads // model.n_kv_heads
    for i, block in enumerate(model.blocks):
        att, h = block.attention, block.norm_attention(x)
        q = split_heads(att.W_q(h), model.n_heads)
        k, v = split_heads(att.W_k(h), model.n_kv_heads), split_heads(att.W_v(h), model.n_kv_heads)
        if cache:
            k, v = torch.cat([cache[i][0], k], dim=-2), torch.cat([cache[i][1], v], dim=-2)
        yield k, v
        mix = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                             attn_mask=gpt.decoding_mask(x.shape[1], k.shape[-2]))
        x = x + att.W_o(merge_heads(mix))
        x = x + block.mlp(block.norm_mlp(x))
    return x


def generator_of_layers(model, tokens, cache):
    """A generator yields each layer's (k, v) and hands x back through StopIteration."""
    past = cache[0][0].shape[-2] if cache else 0
    layers, gen = [], _layers_yielding_kv(model, model.embed(tokens, past), cache, past)
    while True:
        try:
            layers.append(next(gen))
        except StopIteration as done:
            return model.unembed(done.value), tuple(layers)


# ---- round 18 of unseen learner code, and two readers (notebook 08) ----------------------------------

def norm_before_unembed_too(model, tokens, cache):
    """A list of (k, v); the final LayerNorm by hand, then unembed, which applies it again."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    group, kept = model.n_heads // model.n_kv_heads, []
    for layer, block in enumerate(model.blocks):
        h = block.norm_attention(x)
        q = split_heads(block.attention.W_q(h), model.n_heads)
        k, v = (split_heads(w(h), model.n_kv_heads) for w in (block.attention.W_k, block.attention.W_v))
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        kept.append((k, v))
        out = F.scaled_dot_product_attention(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1),
                                             attn_mask=gpt.decoding_mask(tokens.shape[1], k.shape[-2]))
        x = x + block.attention.W_o(merge_heads(out))
        x = x + block.mlp(block.norm_mlp(x))
    x = model.norm_final(x)                                          # BUG: unembed normalises again
    return model.unembed(x), kept


def ln_f_then_unembed_dict(model, tokens, cache):
    """nanoGPT's ln_f habit: a dict cache, einsum, x = ln_f(x) then unembed (which has its own)."""
    cache = cache or {"k": [], "v": []}
    past = cache["k"][0].shape[2] if cache["k"] else 0
    t = tokens.shape[1]
    x = model.embed(tokens, past)
    out = {"k": [], "v": []}
    for i, blk in enumerate(model.blocks):
        z = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(z), model.n_heads)
        k, v = _heads(blk.attention.W_k(z), model.n_kv_heads), _heads(blk.attention.W_v(z), model.n_kv_heads)
        if cache["k"]:
            k, v = torch.cat((cache["k"][i], k), 2), torch.cat((cache["v"][i], v), 2)
        out["k"].append(k)
        out["v"].append(v)
        g = model.n_heads // model.n_kv_heads
        kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        s = torch.einsum("bhqd,bhkd->bhqk", q, kk) / math.sqrt(q.shape[-1])
        s = s.masked_fill(~_bottom_right(t, kk.shape[2]), torch.finfo(s.dtype).min)
        x = x + blk.attention.W_o(_unheads(torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), vv)))
        x = x + blk.mlp(blk.norm_mlp(x))
    ln_f = model.norm_final
    return model.unembed(ln_f(x)), out                               # BUG: ln_f twice


def first_blocks_line_pasted(model, tokens, cache):
    """Section 2's model.blocks[0] line pasted into the loop: every layer's attention is block 0's."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    n_new = tokens.shape[1]
    group = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, past)
    new_cache = []
    for layer, block in enumerate(model.blocks):
        normed, attention = model.blocks[0].norm_attention(x), model.blocks[0].attention      # BUG
        query = split_heads(attention.W_q(normed), model.n_heads)
        key = split_heads(attention.W_k(normed), model.n_kv_heads)
        value = split_heads(attention.W_v(normed), model.n_kv_heads)
        if cache is not None:
            key = torch.cat([cache[layer][0], key], dim=-2)
            value = torch.cat([cache[layer][1], value], dim=-2)
        new_cache.append((key, value))
        heads = F.scaled_dot_product_attention(query, key.repeat_interleave(group, dim=1),
                                               value.repeat_interleave(group, dim=1),
                                               attn_mask=gpt.decoding_mask(n_new, key.shape[-2]))
        x = x + attention.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new_cache


def block_zero_for_every_layer(model, tokens, cache):
    """A KVCache and a while loop over the layers that reads model.blocks[0] whole, every time."""
    past = 0 if cache is None else cache.length
    new = gpt.KVCache() if cache is None else cache.copy()
    x, layer = model.embed(tokens, past), 0
    while layer < len(model.blocks):
        blk = model.blocks[0]                                         # BUG: never model.blocks[layer]
        h = blk.norm_attention(x)
        q = split_heads(blk.attention.W_q(h), model.n_heads)
        k = split_heads(blk.attention.W_k(h), model.n_kv_heads)
        v = split_heads(blk.attention.W_v(h), model.n_kv_heads)
        k, v = new.append(layer, k, v)
        rep = model.n_heads // model.n_kv_heads
        w = (q @ k.repeat_interleave(rep, 1).transpose(-2, -1)) / math.sqrt(model.d_head)
        w = w.masked_fill(~gpt.decoding_mask(tokens.shape[1], k.shape[-2]), float("-inf")).softmax(-1)
        x = x + blk.attention.W_o(merge_heads(w @ v.repeat_interleave(rep, 1)))
        x = x + blk.mlp(blk.norm_mlp(x))
        layer += 1
    return model.unembed(x), new


def stream_named_h_after_attention(model, tokens, cache):
    """The stream after attention is called h, and the MLP line still adds to x: attention drops out."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    group = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, past)
    new_cache = []
    for layer, block in enumerate(model.blocks):
        normed = block.norm_attention(x)
        q = split_heads(block.attention.W_q(normed), model.n_heads)
        k = split_heads(block.attention.W_k(normed), model.n_kv_heads)
        v = split_heads(block.attention.W_v(normed), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], dim=-2), torch.cat([cache[layer][1], v], dim=-2)
        new_cache.append((k, v))
        heads = F.scaled_dot_product_attention(q, k.repeat_interleave(group, 1),
                                               v.repeat_interleave(group, 1),
                                               attn_mask=_bottom_right(tokens.shape[1], k.shape[-2]))
        h = x + block.attention.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(h))                          # BUG: h + ..., not x + ...
    return model.unembed(x), new_cache


def mlp_added_to_block_input(model, tokens, cache):
    """Keeps the block's input as `resid` for the MLP's residual: attention reaches it only via the MLP."""
    cache = cache or {}
    past = cache["len"] if cache else 0
    x = model.embed(tokens, past)
    out = {"len": past + tokens.shape[1]}
    for i, blk in enumerate(model.blocks):
        resid = x
        z = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(z), model.n_heads)
        k, v = _heads(blk.attention.W_k(z), model.n_kv_heads), _heads(blk.attention.W_v(z), model.n_kv_heads)
        if cache:
            k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
        out[i] = (k, v)
        g = model.n_heads // model.n_kv_heads
        s = q @ k.repeat_interleave(g, 1).transpose(2, 3) / math.sqrt(model.d_head)
        s = s.masked_fill(~_bottom_right(tokens.shape[1], k.shape[2]), -1e9)
        x = x + blk.attention.W_o(_unheads(s.softmax(-1) @ v.repeat_interleave(g, 1)))
        x = resid + blk.mlp(blk.norm_mlp(x))                          # BUG: resid, not x
    return model.unembed(x), out


def cached_columns_padded_false(model, tokens, cache):
    """Pads a square triangle for the cached columns, with False where True belongs."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    n_new = tokens.shape[1]
    group = model.n_heads // model.n_kv_heads
    square = torch.ones(n_new, n_new, dtype=torch.bool).tril()
    mask = torch.cat([torch.zeros(n_new, past, dtype=torch.bool), square], dim=1)   # BUG: zeros
    x = model.embed(tokens, past)
    new_cache = []
    for layer, block in enumerate(model.blocks):
        normed, attention = block.norm_attention(x), block.attention
        query = split_heads(attention.W_q(normed), model.n_heads)
        key = split_heads(attention.W_k(normed), model.n_kv_heads)
        value = split_heads(attention.W_v(normed), model.n_kv_heads)
        if cache is not None:
            key = torch.cat([cache[layer][0], key], dim=-2)
            value = torch.cat([cache[layer][1], value], dim=-2)
        new_cache.append((key, value))
        heads = F.scaled_dot_product_attention(query, key.repeat_interleave(group, dim=1),
                                               value.repeat_interleave(group, dim=1), attn_mask=mask)
        x = x + attention.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new_cache


def additive_bias_blocks_the_past(model, tokens, cache):
    """An additive bias: -inf over the cached columns (meant: 0), a causal -inf over the new ones."""
    past = 0 if cache is None else cache[0].shape[3]
    n_new = tokens.shape[1]
    bias = torch.full((n_new, past + n_new), float("-inf"))
    bias[:, past:] = torch.zeros(n_new, n_new).masked_fill(
        ~torch.ones(n_new, n_new, dtype=torch.bool).tril(), float("-inf"))   # BUG: the past stays -inf
    x = model.embed(tokens, past)
    keys, values = [], []
    for layer, block in enumerate(model.blocks):
        h = block.norm_attention(x)
        q = split_heads(block.attention.W_q(h), model.n_heads)
        k = split_heads(block.attention.W_k(h), model.n_kv_heads)
        v = split_heads(block.attention.W_v(h), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[0][layer], k], -2), torch.cat([cache[1][layer], v], -2)
        keys.append(k)
        values.append(v)
        g = model.n_heads // model.n_kv_heads
        w = torch.softmax(q @ k.repeat_interleave(g, 1).mT / math.sqrt(model.d_head) + bias, dim=-1)
        x = x + block.attention.W_o(merge_heads(w @ v.repeat_interleave(g, 1)))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), (torch.stack(keys), torch.stack(values))


def length_axis_from_rnn_habit(model, tokens, cache):
    """(batch, length, features) habit: the cached length from axis 1, for the positions and the mask."""
    b, t = tokens.shape
    past = cache[0][0].shape[1] if cache else 0                      # BUG: axis 1 is n_kv_heads
    x = model.embed(tokens, past)
    out = []
    for layer, blk in enumerate(model.blocks):
        h = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(h), model.n_heads)
        k, v = _heads(blk.attention.W_k(h), model.n_kv_heads), _heads(blk.attention.W_v(h), model.n_kv_heads)
        if cache:
            k, v = torch.cat((cache[layer][0], k), 2), torch.cat((cache[layer][1], v), 2)
        out.append((k, v))
        rep = model.n_heads // model.n_kv_heads
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        seen = torch.arange(k.shape[2])[None, :] <= torch.arange(past, past + t)[:, None]
        w = (q @ k.transpose(2, 3) / math.sqrt(model.d_head)).masked_fill(~seen, float("-inf")).softmax(-1)
        x = x + blk.attention.W_o(_unheads(w @ v))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), out


def past_as_len_of_layer_entry(model, tokens, cache):
    """A learner who counts with len(): len(cache[0]) is a layer's (keys, values) pair, always 2."""
    offset = len(cache[0]) if cache is not None else 0              # BUG: cache[0][0].shape[-2]
    x = model.embed(tokens, offset)
    layers = []
    for i, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[i][0], k], dim=-2), torch.cat([cache[i][1], v], dim=-2)
        layers.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1),
                                           v.repeat_interleave(g, 1),
                                           attn_mask=_bottom_right(tokens.shape[1], k.shape[-2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), layers


def past_from_size_minus_two(model, tokens, cache):
    """Right: the cached length as .size(-2), a mask from it, sdpa with a float bias."""
    n_new = tokens.size(1)
    past = cache[0][0].size(-2) if cache else 0
    x = model.embed(tokens, past)
    rows = torch.arange(past, past + n_new).unsqueeze(1)
    bias = torch.zeros(n_new, past + n_new).masked_fill(torch.arange(past + n_new) > rows, float("-inf"))
    kept = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        kept.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1),
                                           v.repeat_interleave(g, 1), attn_mask=bias)
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), kept


def wte_plus_wpe_on_top_of_embed(model, tokens, cache):
    """GPT-2 from scratch: x = wte + wpe, written after model.embed, which has both already."""
    past = cache[0][0].shape[-2] if cache else 0
    pos = torch.arange(past, past + tokens.shape[1], dtype=torch.long)
    x = model.embed(tokens, past)
    x = x + model.position_embedding(pos)[None]                      # BUG: embed added it already
    present = []
    for i, blk in enumerate(model.blocks):
        h = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(h), model.n_heads)
        k, v = _heads(blk.attention.W_k(h), model.n_kv_heads), _heads(blk.attention.W_v(h), model.n_kv_heads)
        if cache:
            k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
        present.append((k, v))
        r = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1),
                                           attn_mask=_bottom_right(q.shape[2], k.shape[2]))
        x = x + blk.attention.W_o(_unheads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), present


def token_embedding_added_again(model, tokens, cache):
    """Builds the input from the pieces it knows, then also calls embed: the tokens count twice."""
    offset = 0 if cache is None else cache[0][0].shape[-2]
    x = model.token_embedding(tokens) + model.embed(tokens, offset)  # BUG: embed holds the tokens too
    new = []
    for layer, block in enumerate(model.blocks):
        y, a = block.norm_attention(x), block.attention
        k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
        if cache is not None:
            k, v = torch.cat([cache[layer][0], k], -2), torch.cat([cache[layer][1], v], -2)
        new.append((k, v))
        g = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(split_heads(a.W_q(y), model.n_heads), k.repeat_interleave(g, 1),
                                           v.repeat_interleave(g, 1),
                                           attn_mask=gpt.decoding_mask(tokens.shape[1], k.shape[-2]))
        x = x + a.W_o(merge_heads(o))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new


def wte_plus_wpe_by_hand(model, tokens, cache):
    """Right: the GPT-2 sum written out from the two tables, without model.embed."""
    past = cache[0][0].shape[-2] if cache else 0
    x = model.token_embedding(tokens) + model.position_embedding(torch.arange(past, past + tokens.shape[1]))
    present = []
    for i, blk in enumerate(model.blocks):
        h = blk.norm_attention(x)
        q = _heads(blk.attention.W_q(h), model.n_heads)
        k, v = _heads(blk.attention.W_k(h), model.n_kv_heads), _heads(blk.attention.W_v(h), model.n_kv_heads)
        if cache:
            k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
        present.append((k, v))
        r = model.n_heads // model.n_kv_heads
        o = F.scaled_dot_product_attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1),
                                           attn_mask=_bottom_right(q.shape[2], k.shape[2]))
        x = x + blk.attention.W_o(_unheads(o))
        x = x + blk.mlp(blk.norm_mlp(x))
    return model.unembed(x), present


CASES = [
    # correct
    Case("solution", solution, PASS),
    Case("library_pieces", library_pieces, PASS),
    Case("prefill_in_chunks_right", prefill_in_chunks_right, PASS),
    Case("static_buffers_count_after", static_buffers_count_after, PASS),
    Case("shared_ptr_advanced_once", shared_ptr_advanced_once, PASS),
    Case("dict_cache", dict_cache, PASS),
    Case("kv_cache_object", kv_cache_object, PASS),
    Case("einsum_step", einsum_step, PASS),
    Case("expanded_cache", expanded_cache, "cache_holds_repeated_heads"),
    Case("merged_layout", merged_layout, PASS),
    Case("stacked_tensor", stacked_tensor, PASS),
    Case("loop_over_heads", loop_over_heads, PASS),
    Case("token_by_token", token_by_token, PASS),
    Case("preallocated_copied", preallocated_copied, PASS),
    Case("preallocated_shared", preallocated_shared, "cache_modified_in_place"),
    Case("step_object", StepObject(), PASS),
    Case("enable_gqa", enable_gqa, PASS),
    Case("causal_only_when_needed", causal_only_when_needed, PASS),
    Case("stable_softmax_by_hand", stable_softmax_by_hand, PASS),
    Case("additive_float_mask", additive_float_mask, PASS),
    Case("namedtuple_cache", namedtuple_cache, PASS),
    Case("bmm_flatten", bmm_flatten, PASS),
    Case("tuple_of_lists", tuple_of_lists, PASS),
    Case("expand_reshape_gqa", expand_reshape_gqa, PASS),
    Case("kv_cache_lists_copied", kv_cache_lists_copied, PASS),
    Case("sdpa_view_after_transpose", sdpa_view_after_transpose, PASS),
    # attention-level mistakes: they show on the prompt already
    Case("no_scale_einsum", no_scale_einsum, "missing_scale"),
    Case("sdpa_scale_one", sdpa_scale_one, "missing_scale"),
    Case("divided_by_d_head", divided_by_d_head, "wrong_scale"),
    Case("stale_global_d_k", stale_global_d_k, "wrong_scale"),
    Case("scale_multiplied", scale_multiplied, "scale_multiplied"),
    Case("scale_by_d_model", scale_by_d_model, {"scale_by_d_model", "wrong_scale"}),
    Case("softmax_over_queries", softmax_over_queries, "softmax_wrong_axis"),
    Case("softmax_over_heads", softmax_over_heads, "softmax_wrong_axis"),
    Case("mask_filled_where_true", mask_filled_where_true, "mask_inverted"),
    Case("sdpa_mask_negated", sdpa_mask_negated, "mask_inverted"),
    Case("adds_bool_mask", adds_bool_mask, "additive_mask_wrong"),
    Case("one_minus_mask_times_inf", one_minus_mask_times_inf, FAIL,
         note="every logit is NaN, as with several other mistakes: no single id fits"),
    Case("off_by_one_offset", off_by_one_offset, "causal_off_by_one"),
    Case("sees_next_by_index", sees_next_by_index, "causal_off_by_one"),
    Case("never_masks", never_masks, "causal_mask_missing"),
    Case("masks_prompt_only", masks_prompt_only, "causal_mask_missing"),
    Case("split_by_view_only", split_by_view_only, "heads_split_without_transpose"),
    Case("split_reshape_no_permute", split_reshape_no_permute, "heads_split_without_transpose"),
    Case("merge_by_reshape", merge_by_reshape, "heads_merged_without_transpose"),
    Case("merge_by_view_flat", merge_by_view_flat, "heads_merged_without_transpose"),
    Case("view_after_transpose", view_after_transpose, "missing_contiguous"),
    Case("squeezes_the_batch", squeezes_the_batch, "batch_one_only"),
    Case("merge_for_one_sequence", merge_for_one_sequence, "batch_one_only"),
    Case("dropout_on_weights", dropout_on_weights, "dropout_left_on"),
    Case("sdpa_dropout_p", sdpa_dropout_p, "dropout_left_on"),
    Case("forgets_w_o", forgets_w_o, "missing_output_projection"),
    Case("gqa_by_repeat", gqa_by_repeat, "kv_heads_repeated_not_interleaved"),
    Case("logits_from_the_residual", logits_from_the_residual, "final_norm_skipped"),
    Case("unembedding_layer_only", unembedding_layer_only, "final_norm_skipped"),
    Case("attends_then_appends", attends_then_appends, "new_token_not_attended"),
    Case("offset_the_other_way_sdpa", offset_the_other_way_sdpa, "causal_offset_negated"),
    Case("offset_the_other_way_by_hand", offset_the_other_way_by_hand, "causal_offset_negated"),
    Case("offset_the_other_way_minus_inf", offset_the_other_way_minus_inf, FAIL,
         note="NaN everywhere after the prefill: no variant can be told apart; the verdict explains NaN"),
    Case("cache_saved_values_first", cache_saved_values_first, "cache_keys_values_swapped"),
    Case("kv_dict_values_under_keys", kv_dict_values_under_keys, "cache_keys_values_swapped"),
    Case("layer_cache_before_append", layer_cache_before_append, "new_token_not_attended"),
    Case("gqa_by_tile_cat", gqa_by_tile_cat, "kv_heads_repeated_not_interleaved"),
    # cache-level mistakes: the prompt is right
    Case("embeds_from_zero", embeds_from_zero, "positions_not_advanced"),
    Case("positions_arange_n_new", positions_arange_n_new, "positions_not_advanced"),
    Case("positions_one_short", positions_one_short, "positions_not_advanced"),
    Case("positions_from_len_cache", positions_from_len_cache, "cached_length_misread"),
    Case("is_causal_everywhere", is_causal_everywhere, "is_causal_top_left"),
    Case("tril_by_hand_top_left", tril_by_hand_top_left, "is_causal_top_left"),
    Case("none_for_one_causal_for_several", none_for_one_causal_for_several, "is_causal_top_left"),
    Case("returns_the_given_cache", returns_the_given_cache, "cache_not_appended"),
    Case("stores_only_the_newest", stores_only_the_newest, "cache_not_appended"),
    Case("returns_its_argument", returns_its_argument, "cache_not_appended"),
    Case("squeezes_the_stream", squeezes_the_stream, "squeeze_drops_batch"),
    Case("loop_heads_kv_by_n_kv", loop_heads_kv_by_n_kv, "kv_head_index_wrong"),
    Case("gathers_kv_heads_by_n_kv", gathers_kv_heads_by_n_kv, "kv_head_index_wrong"),
    Case("forgot_to_cat_keys", forgot_to_cat_keys, "keys_not_appended"),
    Case("stores_old_keys", stores_old_keys, "keys_not_appended"),
    Case("forgot_to_cat_values", forgot_to_cat_values, "values_not_appended"),
    Case("stores_old_values", stores_old_values, "values_not_appended"),
    Case("values_left_behind_sdpa", values_left_behind_sdpa, "values_not_appended"),
    Case("cat_on_heads_axis", cat_on_heads_axis, "cache_wrong_axis"),
    Case("cat_on_last_axis_merged", cat_on_last_axis_merged, "cache_wrong_axis"),
    Case("kv_cache_without_copy", kv_cache_without_copy, "cache_modified_in_place"),
    Case("preallocated_in_place", preallocated_in_place, "cache_modified_in_place"),
    Case("list_entries_replaced", list_entries_replaced, "cache_modified_in_place"),
    # wrong, and no single known bug fits: the verdict must fail
    Case("blocked_get_a_bonus", blocked_get_a_bonus, "additive_mask_wrong"),
    Case("projections_from_the_stream", projections_from_the_stream, "attention_norm_skipped"),
    Case("keys_values_from_raw_x", keys_values_from_raw_x, "attention_norm_skipped"),
    Case("attention_overwrites_stream", attention_overwrites_stream, "attention_residual_missing"),
    Case("sublayer_outputs_summed_only", sublayer_outputs_summed_only, "attention_residual_missing"),
    Case("stream_normed_in_place", stream_normed_in_place, "residual_from_normed"),
    Case("mlp_residual_from_normed", mlp_residual_from_normed, "residual_from_normed"),
    Case("mlp_replaces_stream", mlp_replaces_stream, "mlp_residual_missing"),
    Case("feed_forward_without_residual", feed_forward_without_residual, "mlp_residual_missing"),
    Case("attention_only_blocks", attention_only_blocks, "mlp_skipped"),
    Case("return_inside_loop", return_inside_loop, "first_block_only"),
    Case("first_block_sliced", first_block_sliced, "first_block_only"),
    Case("one_counter_for_all_layers", one_counter_for_all_layers, "cache_layer_not_advanced"),
    Case("stack_of_one_slot", stack_of_one_slot, "cache_layer_not_advanced"),
    Case("hf_style_mask_order", hf_style_mask_order, "mask_cached_columns_last"),
    Case("bool_mask_new_then_old", bool_mask_new_then_old, "mask_cached_columns_last"),
    Case("static_buffers_read_whole", static_buffers_read_whole, "static_buffer_whole_attended"),
    Case("static_cache_object_whole", static_cache_object_whole, "static_buffer_whole_attended"),
    Case("positions_in_a_global", positions_in_a_global, "state_outside_cache"),
    Case("positions_on_the_function", positions_on_the_function, "state_outside_cache"),
    Case("aliased_layer_slots", aliased_layer_slots, "cache_layer_mixed_up"),
    Case("mlp_computed_not_added", mlp_computed_not_added, "mlp_skipped"),
    Case("mlp_on_the_raw_stream", mlp_on_the_raw_stream, "mlp_norm_skipped"),
    Case("mlp_norm_forgotten", mlp_norm_forgotten, "mlp_norm_skipped"),
    Case("both_halves_from_block_input", both_halves_from_block_input, "parallel_block"),
    Case("mlp_input_saved_too_early", mlp_input_saved_too_early, "parallel_block"),
    Case("values_cat_onto_cached_keys", values_cat_onto_cached_keys, "values_from_cached_keys"),
    Case("dict_cache_values_key_typo", dict_cache_values_key_typo, "values_from_cached_keys"),
    Case("values_joined_with_new_keys", values_joined_with_new_keys, "values_from_cached_keys"),
    Case("token_loop_one_position", token_loop_one_position, "positions_not_advanced"),
    Case("layer_index_forgotten", layer_index_forgotten, "cache_layer_mixed_up"),
    Case("one_norm_for_both", one_norm_for_both, "norms_mixed_up"),
    Case("norms_in_a_swapped_pair", norms_in_a_swapped_pair, "norms_mixed_up"),
    Case("half_size_cache", half_size_cache, "cache_low_precision"),
    Case("bf16_dict_cache_einsum", bf16_dict_cache_einsum, "cache_low_precision"),
    Case("new_positions_in_front", new_positions_in_front, "cache_prepended"),
    Case("stacked_cache_prepended", stacked_cache_prepended, "cache_prepended"),
    Case("next_token_logits_only", next_token_logits_only, "last_position_only"),
    Case("the_one_liner", the_one_liner, FAIL),
    Case("calls_generate", calls_generate, FAIL),
    Case("calls_cached_attention", calls_cached_attention, FAIL),
    Case("block_attention_for_prompt", block_attention_for_prompt, FAIL),
    Case("skips_the_mlp", skips_the_mlp, FAIL),
    Case("first_layers_cache_everywhere", first_layers_cache_everywhere, "cache_layer_mixed_up"),
    Case("flat_cache_read_at_i", flat_cache_read_at_i, "cache_read_at_wrong_index"),
    Case("stacked_cache_read_kind_first", stacked_cache_read_kind_first, "cache_read_at_wrong_index"),
    Case("blocks_zipped_with_cache", blocks_zipped_with_cache, "no_block_without_cache"),
    Case("blocks_from_cache_entries", blocks_from_cache_entries, "no_block_without_cache"),
    Case("last_position_only", last_position_only, "last_position_only"),
    Case("shares_heads_before_caching", shares_heads_before_caching, "cache_holds_repeated_heads"),
    Case("expanded_dict_cache", expanded_dict_cache, "cache_holds_repeated_heads"),
    Case("shared_ptr_mask_rows", shared_ptr_mask_rows, "counter_advanced_per_layer"),
    Case("static_length_bumped_per_block", static_length_bumped_per_block, "counter_advanced_per_layer"),
    Case("static_count_bumped_first", static_count_bumped_first, "counter_advanced_before_write"),
    Case("ring_buffer_cursor_moved_early", ring_buffer_cursor_moved_early, "counter_advanced_before_write"),
    Case("prefill_in_pairs", prefill_in_pairs, "prefill_pieces_isolated"),
    Case("prompt_in_chunks_of_three", prompt_in_chunks_of_three, "prefill_pieces_isolated"),
    Case("counter_moves_by_one", counter_moves_by_one, "positions_not_advanced",
         note="right for one token at a time; the token after a chunk stands too early"),
    Case("bshd_layout_einsum", bshd_layout_einsum, PASS),
    Case("loop_over_kv_groups", loop_over_kv_groups, PASS),
    Case("generator_of_layers", generator_of_layers, PASS),
    Case("norm_before_unembed_too", norm_before_unembed_too, "final_norm_twice"),
    Case("ln_f_then_unembed_dict", ln_f_then_unembed_dict, "final_norm_twice"),
    Case("first_blocks_line_pasted", first_blocks_line_pasted, "first_block_reused"),
    Case("block_zero_for_every_layer", block_zero_for_every_layer, "first_block_reused"),
    Case("stream_named_h_after_attention", stream_named_h_after_attention, "attention_output_left_out"),
    Case("mlp_added_to_block_input", mlp_added_to_block_input, "attention_output_left_out"),
    Case("cached_columns_padded_false", cached_columns_padded_false, "cache_masked_out"),
    Case("additive_bias_blocks_the_past", additive_bias_blocks_the_past, "cache_masked_out"),
    Case("length_axis_from_rnn_habit", length_axis_from_rnn_habit, "cached_length_misread"),
    Case("past_as_len_of_layer_entry", past_as_len_of_layer_entry, "cached_length_misread"),
    Case("past_from_size_minus_two", past_from_size_minus_two, PASS),
    Case("wte_plus_wpe_on_top_of_embed", wte_plus_wpe_on_top_of_embed, "embedding_added_twice"),
    Case("token_embedding_added_again", token_embedding_added_again, "embedding_added_twice"),
    Case("wte_plus_wpe_by_hand", wte_plus_wpe_by_hand, PASS),
]
