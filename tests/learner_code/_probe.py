"""The corpus's own, independent probe: does a case really behave as its label says?

Not a checker (it names no bug): it lists the symptoms an implementation shows against a float64
reference written here, on inputs the exercises allow (no batch, batch, heads, n_q != n_k,
d_k != d_v, a fully masked row, non-contiguous inputs, large scores, float16 and float64), plus a
backward pass, a second call, and a look at the inputs afterwards. A correct case must show none;
a buggy case at least one. tests/test_learner_corpus_sound.py holds the corpus to that.
"""

import functools
import math

import torch

_GEN = 20260101


def _rand(gen, *shape, scale=1.0):
    return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale


def _mask(gen, lead, n_q, n_k, fully_masked_row=True):
    mask = torch.rand(*lead, n_q, n_k, generator=gen) > 0.4
    mask[..., :, 0] = True                       # every row keeps a key ...
    if fully_masked_row:
        mask[..., 0, :] = False                  # ... except query 0, which has none
    return mask


def _reference_attention(q, k, v, mask):
    """float64, -inf fill; rows with no key come out NaN (they are not compared)."""
    scores = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is None:
        return torch.softmax(scores, dim=-1) @ v.double()
    mask = mask.expand(scores.shape)
    has_key = mask.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~has_key, 0.0)   # finite gradients
    out = torch.softmax(scores, dim=-1) @ v.double()
    return torch.where(has_key, out, torch.nan)


@functools.cache
def attention_probes():
    gen = torch.Generator().manual_seed(_GEN)
    probes = [
        ("2-D, n_q != n_k, d_k != d_v", _rand(gen, 3, 5), _rand(gen, 4, 5), _rand(gen, 4, 2), None, {}),
        ("batch, rectangular mask", _rand(gen, 2, 3, 6), _rand(gen, 2, 5, 6), _rand(gen, 2, 5, 4),
         _mask(gen, (), 3, 5), {}),
        ("batch and heads, per-batch mask", _rand(gen, 2, 3, 4, 5), _rand(gen, 2, 3, 7, 5),
         _rand(gen, 2, 3, 7, 6), _mask(gen, (2, 1), 4, 7), {}),
        ("square, d_k == d_v, no masked row", _rand(gen, 2, 4, 4), _rand(gen, 2, 4, 4), _rand(gen, 2, 4, 4),
         _mask(gen, (), 4, 4, fully_masked_row=False), {}),
        ("large scores", _rand(gen, 2, 3, 5, scale=12), _rand(gen, 2, 6, 5, scale=12), _rand(gen, 2, 6, 3),
         None, {}),
        ("float16, masked row", _rand(gen, 2, 3, 8), _rand(gen, 2, 5, 8), _rand(gen, 2, 5, 4),
         _mask(gen, (), 3, 5), {"dtype": torch.float16}),
        ("float64", _rand(gen, 2, 2, 3, 6), _rand(gen, 2, 2, 5, 6), _rand(gen, 2, 2, 5, 7),
         _mask(gen, (), 3, 5), {"dtype": torch.float64}),
    ]
    heads = _rand(gen, 2, 5, 3, 4)                              # (batch, n, heads, d_k): transposed in
    probes.append(("non-contiguous (heads transposed in)", heads.transpose(1, 2), heads.transpose(1, 2),
                   _rand(gen, 2, 5, 3, 6).transpose(1, 2), None, {}))
    probes.append(("a batch of one, a mask", _rand(gen, 1, 3, 5), _rand(gen, 1, 4, 5), _rand(gen, 1, 4, 2),
                   _mask(gen, (), 3, 4), {}))
    q, k = _rand(gen, 2, 4, 8), _rand(gen, 2, 5, 8)             # key 0 blocked, 50000 above for query 0
    k[:, 0] = q[:, 0] * (50000 * math.sqrt(8) / (q[:, 0] ** 2).sum(dim=-1, keepdim=True))
    far = torch.rand(2, 4, 5, generator=gen) > 0.4
    far[..., 1], far[..., 0] = True, False
    probes.append(("a blocked key far above the others", q, k, _rand(gen, 2, 5, 3), far, {}))
    probes.append(("more queries than keys, a mask", _rand(gen, 6, 5), _rand(gen, 3, 5), _rand(gen, 3, 2),
                   _mask(gen, (), 6, 3), {}))
    # last, so that the draws above stay as they were: code that walks the keys in tiles
    probes.append(("40 keys, a mask", _rand(gen, 2, 3, 8), _rand(gen, 2, 40, 8), _rand(gen, 2, 40, 3),
                   _mask(gen, (), 3, 40), {}))
    # last too: a padding mask (batch, 1, n_k) for lengths 5, 3, 2, against 6 queries (code that walks
    # the queries in tiles slices a mask row that is not there)
    padding = (torch.arange(5)[None, :] < torch.tensor([5, 3, 2])[:, None])[:, None, :]
    probes.append(("6 queries, a padding mask (3, 1, 5)", _rand(gen, 3, 6, 8), _rand(gen, 3, 5, 8),
                   _rand(gen, 3, 5, 3), padding, {}))
    return probes


def _output(result):
    return result[0] if isinstance(result, tuple) else result


def attention_symptoms(fn) -> list[str]:
    """Symptoms of ``fn(q, k, v, mask=None)`` against the reference, on every probe."""
    symptoms = []
    for label, q, k, v, mask, options in attention_probes():
        dtype = options.get("dtype", torch.float32)
        grads = dtype != torch.float16
        inputs = [t.to(dtype).clone().requires_grad_(grads) for t in (q, k, v)]   # strides kept
        given = None if mask is None else mask.clone()          # fresh copies: the probes are cached
        copies = [t.detach().clone() for t in inputs] + ([mask] if mask is not None else [])
        args = (*inputs, given) if mask is not None else tuple(inputs)
        try:
            out = _output(fn(*args))
            again = _output(fn(*args)) if mask is None else None
        except Exception as err:  # noqa: BLE001
            symptoms.append(f"{label}: raised {type(err).__name__}")
            continue
        expected = _reference_attention(q, k, v, mask)
        if not isinstance(out, torch.Tensor) or out.shape != expected.shape:
            got = getattr(out, "shape", type(out))
            symptoms.append(f"{label}: output {got}, expected {tuple(expected.shape)}")
            continue
        if out.dtype != dtype:
            symptoms.append(f"{label}: dtype {out.dtype} for {dtype} inputs")
        if not torch.isfinite(out).all():
            symptoms.append(f"{label}: non-finite output")
        rows = ~torch.isnan(expected).any(-1)                    # rows with at least one key
        tol = {torch.float16: 2e-2, torch.float32: 2e-4, torch.float64: 1e-9}[dtype]
        if not torch.allclose(out.detach().double()[rows], expected[rows], atol=tol, rtol=tol):
            symptoms.append(f"{label}: wrong values")
        if again is not None and not torch.equal(out, again):
            symptoms.append(f"{label}: a second call differs")
        now = [t.detach() for t in inputs] + ([given] if mask is not None else [])
        if any(a.shape != b.shape or not torch.equal(a, b) for a, b in zip(now, copies, strict=True)):
            symptoms.append(f"{label}: inputs changed")
        if grads:
            symptoms += [f"{label}: {s}" for s in _attention_grad_symptoms(out, inputs, q, k, v, mask, rows)]
    return symptoms


def _attention_grad_symptoms(out, inputs, q, k, v, mask, rows):
    weight = torch.linspace(-1, 1, out[rows].numel(), dtype=torch.float64).reshape(out[rows].shape)
    if not out.requires_grad:
        return ["no gradient reaches the inputs"]
    got = torch.autograd.grad((out[rows].double() * weight).sum(), inputs, allow_unused=True)
    ref_in = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    ref_out = _reference_attention(*ref_in, mask)
    want = torch.autograd.grad((ref_out[rows] * weight).sum(), ref_in)
    problems = []
    for name, g, w in zip("qkv", got, want, strict=True):
        if g is None or not torch.allclose(g.double(), w, atol=1e-3, rtol=1e-3):
            problems.append(f"gradient of {name} wrong or missing")
    return problems


# ---------------------------------------------------------------- multi-head --------------------------

def _reference_multi_head(x, weights, n_heads, mask):
    b, t, d_model = x.shape
    d_k = d_model // n_heads
    w_q, w_k, w_v, w_o = (w.double() for w in weights)
    def split(z):
        return z.view(b, t, n_heads, d_k).transpose(1, 2)
    xd = x.double()
    out = _reference_attention(split(xd @ w_q.T), split(xd @ w_k.T), split(xd @ w_v.T), mask)
    return out.transpose(1, 2).reshape(b, t, d_model) @ w_o.T


def _module_with(cls, d_model, n_heads, weights, dtype):
    """``cls(d_model, n_heads)`` in ``dtype`` with W_q, W_k, W_v, W_o set to ``weights`` (biases 0)."""
    module = cls(d_model, n_heads).to(dtype)
    with torch.no_grad():
        for layer, w in zip((module.W_q, module.W_k, module.W_v, module.W_o), weights, strict=True):
            layer.weight.copy_(w)
            if layer.bias is not None:
                layer.bias.zero_()
    return module


def multi_head_symptoms(cls) -> list[str]:
    gen = torch.Generator().manual_seed(_GEN + 1)
    configs = [(12, 3, 2, 5, torch.float32), (10, 5, 3, 4, torch.float32), (8, 2, 1, 6, torch.float32),
               (16, 4, 2, 4, torch.float32), (12, 4, 2, 5, torch.float64), (8, 2, 2, 4, torch.float16)]
    symptoms = []
    for d_model, n_heads, b, t, dtype in configs:
        label = f"d_model={d_model}, n_heads={n_heads}, batch={b}, n={t}, {dtype}"
        weights = [_rand(gen, d_model, d_model) / math.sqrt(d_model) for _ in range(4)]
        x = _rand(gen, b, t, d_model)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        causal[1] = False                                        # query 1 has no key
        try:
            module = _module_with(cls, d_model, n_heads, weights, dtype)
        except Exception as err:  # noqa: BLE001
            symptoms.append(f"{label}: building raised {type(err).__name__}")
            continue
        for mask in (None, causal):
            xin = x.to(dtype).requires_grad_(dtype != torch.float16)
            saved = (xin.detach().clone(), None if mask is None else mask.clone())
            try:
                out = _output(module(xin) if mask is None else module(xin, mask))
                again = _output(module(xin) if mask is None else module(xin, mask))
            except Exception as err:  # noqa: BLE001
                symptoms.append(f"{label}, mask={mask is not None}: raised {type(err).__name__}")
                continue
            mask = saved[1]                                      # the learner's code may have changed it
            expected = _reference_multi_head(x, weights, n_heads, mask)
            where = f"{label}, mask={mask is not None}"
            if not isinstance(out, torch.Tensor) or out.shape != expected.shape:
                symptoms.append(f"{where}: output shape {getattr(out, 'shape', type(out))}")
                continue
            if out.dtype != dtype:
                symptoms.append(f"{where}: dtype {out.dtype}")
            if not torch.isfinite(out).all():
                symptoms.append(f"{where}: non-finite output")
            rows = torch.ones(t, dtype=torch.bool)
            if mask is not None:
                rows[1] = False
            tol = {torch.float16: 3e-2, torch.float32: 2e-4, torch.float64: 1e-9}[dtype]
            if not torch.allclose(out.detach().double()[:, rows], expected[:, rows], atol=tol, rtol=tol):
                symptoms.append(f"{where}: wrong values")
            if not torch.equal(out, again):
                symptoms.append(f"{where}: a second call differs")
            given = causal if mask is not None else None
            if not torch.equal(xin.detach(), saved[0]) or (given is not None and (
                    given.shape != saved[1].shape or not torch.equal(given, saved[1]))):
                symptoms.append(f"{where}: inputs changed")
            if dtype != torch.float16:
                grad = _multi_head_grad(out, xin, x, weights, n_heads, mask, rows)
                symptoms += [f"{where}: {s}" for s in grad]
    return symptoms + _negative_float16(cls) + _blocked_far_multi_head(cls)


def _negative_float16(cls) -> list[str]:
    """float16, W_k = -W_q and every position about the same x: every score is -|q|^2 / sqrt(d_k), below
    -16 in each head; query 1 has no key. An additive float16-minimum mask gives -inf there, so NaN."""
    gen = torch.Generator().manual_seed(_GEN + 2)
    d_model, n_heads, t = 8, 2, 4
    w_q, w_v, w_o = (_rand(gen, d_model, d_model) / math.sqrt(d_model) for _ in range(3))
    x = _rand(gen, d_model)
    q = (w_q @ x).view(n_heads, -1)
    x = x * math.sqrt(40 * math.sqrt(d_model // n_heads) / float(q.pow(2).sum(-1).min()))   # scores <= -40
    x = x + 0.001 * _rand(gen, 1, t, d_model)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    mask[1] = False
    try:
        module = _module_with(cls, d_model, n_heads, (w_q, -w_q, w_v, w_o), torch.float16)
        with torch.no_grad():
            out = _output(module(x.to(torch.float16), mask))
    except Exception as err:  # noqa: BLE001
        return [f"float16, every score below -16: raised {type(err).__name__}"]
    if not isinstance(out, torch.Tensor) or not torch.isfinite(out).all():
        return ["float16, every score below -16: non-finite output"]
    return []


def _blocked_far_multi_head(cls) -> list[str]:
    """Every W the identity, so a head's score is the dot product of x's own slices; x at position 3 is
    x at position 0 times a large number, so position 0 scores it 50000 above the others in each head.
    Position 3 is blocked for every query (its own row has no key): it must get no weight."""
    gen = torch.Generator().manual_seed(_GEN + 3)
    d_model, n_heads, t = 8, 2, 4
    x = _rand(gen, 1, t, d_model).float()
    own = x[0, 0].view(n_heads, -1).pow(2).sum(-1).min()
    x[0, 3] = x[0, 0] * (50000 * math.sqrt(d_model // n_heads) / float(own) + 10)
    mask = torch.ones(t, t, dtype=torch.bool)
    mask[:, 3] = False
    mask[3] = False
    eye = torch.eye(d_model)
    try:
        module = _module_with(cls, d_model, n_heads, (eye, eye, eye, eye), torch.float32)
        with torch.no_grad():
            out = _output(module(x, mask))
    except Exception as err:  # noqa: BLE001
        return [f"a blocked position 50000 above: raised {type(err).__name__}"]
    expected = _reference_multi_head(x, (eye, eye, eye, eye), n_heads, mask)
    if not isinstance(out, torch.Tensor) or out.shape != expected.shape or not torch.allclose(
            out[:, :3].double(), expected[:, :3], atol=1e-3, rtol=1e-3):
        return ["a blocked position 50000 above: wrong values"]
    return []


def _multi_head_grad(out, xin, x, weights, n_heads, mask, rows):
    if not out.requires_grad:
        return ["no gradient"]
    weight = torch.linspace(-1, 1, out[:, rows].numel(), dtype=torch.float64).reshape(out[:, rows].shape)
    try:
        (got,) = torch.autograd.grad((out[:, rows].double() * weight).sum(), [xin], allow_unused=True)
    except RuntimeError as err:                                  # e.g. a weight changed in place since
        return [f"backward raised {type(err).__name__}"]
    ref_x = x.clone().requires_grad_()
    ref_out = _reference_multi_head(ref_x, weights, n_heads, mask)
    (want,) = torch.autograd.grad((ref_out[:, rows] * weight).sum(), [ref_x])
    if got is None or not torch.allclose(got.double(), want, atol=1e-3, rtol=1e-3):
        return ["gradient of x wrong or missing"]
    return []


# ---------------------------------------------------------------- masks -------------------------------

def causal_symptoms(fn) -> list[str]:
    import inspect

    sizes = [(n, None) for n in (1, 4, 7, 20)]
    try:
        two_args = len(inspect.signature(fn).parameters) >= 2
    except (TypeError, ValueError):
        two_args = False
    if two_args:
        sizes += [(3, 5), (5, 3)]
    symptoms, corners = [], set()
    for n_q, n_k in sizes:
        try:
            mask = fn(n_q) if n_k is None else fn(n_q, n_k)
        except Exception as err:  # noqa: BLE001
            symptoms.append(f"n={n_q},{n_k}: raised {type(err).__name__}")
            continue
        # a rectangle's triangle may start at the top-left or the bottom-right corner (a KV cache's)
        wants = {"top-left": torch.ones(n_q, n_k or n_q, dtype=torch.bool).tril()}
        if n_k is not None:
            wants["bottom-right"] = torch.ones(n_q, n_k, dtype=torch.bool).tril(n_k - n_q)
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            symptoms.append(f"n={n_q},{n_k}: not a bool tensor ({type(mask).__name__})")
            continue
        found = [c for c, want in wants.items() if mask.shape == want.shape and torch.equal(mask, want)]
        if not found:
            symptoms.append(f"n={n_q},{n_k}: not the causal triangle")
        elif n_k is not None:
            corners.add(found[0])
    if len(corners) > 1:
        symptoms.append("rectangles: the triangle starts from two corners")
    return symptoms


def padding_symptoms(fn) -> list[str]:
    symptoms = []
    for lengths, n in (([3, 5, 0, 1], 5), ([2, 4], 6), ([4], 4), ([1, 3, 2], 7)):
        given = torch.tensor(lengths)
        try:
            mask = fn(given, n)
        except Exception as err:  # noqa: BLE001
            symptoms.append(f"lengths={lengths}, n={n}: raised {type(err).__name__}")
            continue
        if given.shape != (len(lengths),) or given.tolist() != lengths:
            symptoms.append(f"lengths={lengths}, n={n}: lengths changed to {given.tolist()}")
        keys = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]       # (batch, n)
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            symptoms.append(f"lengths={lengths}, n={n}: not a bool tensor")
        elif mask.shape == (len(lengths), 1, n):
            if not torch.equal(mask, keys[:, None, :]):
                symptoms.append(f"lengths={lengths}, n={n}: wrong mask")
        elif mask.shape == (len(lengths), n, n):
            if not torch.equal(mask, keys[:, None, :].expand(-1, n, -1)):
                symptoms.append(f"lengths={lengths}, n={n}: rows do not repeat the key pattern")
        else:
            symptoms.append(f"lengths={lengths}, n={n}: shape {tuple(mask.shape)}")
    return symptoms


# ---------------------------------------------------------------- decoding (notebook 08) ---------------

def _decoding_models():
    """Three tiny GPTs unlike the checker's: multi-query, plain multi-head, grouped-query with 8 heads;
    every LayerNorm given its own scale and shift (new ones are all alike)."""
    from attnviz.gpt import TinyGPT

    shapes = [(13, 16, 4, 3, 16, 1), (9, 12, 3, 2, 14, 3), (10, 32, 8, 1, 12, 2)]
    models = []
    with torch.random.fork_rng():
        for seed, (vocab, d_model, heads, layers, max_len, kv_heads) in enumerate(shapes):
            torch.manual_seed(100 + seed)
            model = TinyGPT(vocab, d_model, heads, layers, max_len, n_kv_heads=kv_heads).float().eval()
            with torch.no_grad():
                for layer in model.modules():
                    if isinstance(layer, torch.nn.LayerNorm):
                        layer.weight.normal_(1.0, 0.3)
                        layer.bias.normal_(0.0, 0.2)
            models.append(model)
    return models


def _cached_tensors(obj, depth=0) -> list:
    """Every floating-point tensor a cache holds (lists, tuples, dicts, objects)."""
    if depth > 5:
        return []
    if isinstance(obj, torch.Tensor):
        return [obj] if obj.is_floating_point() else []
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _cached_tensors(item, depth + 1)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in _cached_tensors(item, depth + 1)]
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return [t for item in vars(obj).values() for t in _cached_tensors(item, depth + 1)]
    return []


def _heads_repeated(cache, model, batch) -> bool:
    """A 4-D cached tensor (batch, heads, ...) or (batch, positions, heads, ...) with a head for every
    query head, where the model has fewer key/value heads (the probes' lengths never equal n_heads)."""
    if model.n_kv_heads == model.n_heads:
        return False
    return any(t.dim() == 4 and t.shape[0] == batch and model.n_heads in t.shape[1:3]
               for t in _cached_tensors(cache))


def decoding_symptoms(fn) -> list[str]:
    """Symptoms of ``fn(model, tokens, cache) -> (logits, cache)`` handed ``model.pieces()``: its
    logits piece by piece against the library's own forward on the whole text, for batch 3 (a
    prompt of 5, single tokens, chunks of 2 and 1) and batch 1; a second call on the same prompt;
    a second continuation from the prompt's cache (a caller may reuse a cache), then the second piece's
    cache used again; tokens unchanged; the last cache holding the model's key/value heads, not one per
    query head."""
    symptoms = []
    gen = torch.Generator().manual_seed(_GEN + 7)
    for m, model in enumerate(_decoding_models()):
        view = model.pieces()
        for batch, cuts in ((3, (0, 5, 6, 7, 9, 10, 11)), (1, (0, 3, 4, 7))):
            text = torch.randint(model.vocab_size, (batch, cuts[-1]), generator=gen)
            label = f"model {m}, batch {batch}"
            with torch.no_grad():
                full = model(text)[0]
                cache, caches = None, []
                try:
                    for start, stop in zip(cuts, cuts[1:], strict=False):
                        given = text[:, start:stop].clone()
                        logits, cache = fn(view, given, cache)
                        caches.append(cache)
                        if not torch.equal(given, text[:, start:stop]):
                            symptoms.append(f"{label}: tokens changed")
                        if (not isinstance(logits, torch.Tensor) or logits.shape != full[:, start:stop].shape
                                or not torch.allclose(logits, full[:, start:stop], atol=1e-4, rtol=1e-4)):
                            symptoms.append(f"{label}: positions {start}..{stop - 1} wrong")
                            break
                    else:
                        if _heads_repeated(cache, model, batch):
                            symptoms.append(f"{label}: the cache holds a key/value head for every query head")
                        again = fn(view, text[:, :cuts[1]], None)[0]
                        if not torch.equal(again, fn(view, text[:, :cuts[1]], None)[0]):
                            symptoms.append(f"{label}: the same prompt twice gives different logits")
                        other = (text[:, cuts[1]:cuts[1] + 1] + 1) % model.vocab_size
                        branch = fn(view, other, caches[0])[0]
                        want = model(torch.cat([text[:, :cuts[1]], other], dim=1))[0][:, -1:]
                        if not torch.allclose(branch, want, atol=1e-4, rtol=1e-4):
                            symptoms.append(f"{label}: the prompt's cache, used again, gives wrong logits")
                        back = fn(view, text[:, cuts[2]:cuts[3]], caches[1])[0]     # after that branch
                        if not torch.allclose(back, full[:, cuts[2]:cuts[3]], atol=1e-4, rtol=1e-4):
                            symptoms.append(f"{label}: the second piece's cache, reused, gives wrong logits")
                        third = fn(view, other, caches[0])[0]                       # after all of them
                        if not torch.allclose(third, want, atol=1e-4, rtol=1e-4):
                            symptoms.append(f"{label}: the prompt's cache, used a third time, gives wrong "
                                            "logits")
                except Exception as err:  # noqa: BLE001
                    symptoms.append(f"{label}: raised {type(err).__name__}")
    return symptoms
