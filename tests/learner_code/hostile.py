"""Hostile learner code: it raises, hangs, exits, changes global state or returns odd objects.

Each case says which checker it is handed to. Whatever it does, the checker must return a clear
verdict (never raise, never hang beyond its time limit plus a margin) and leave the kernel as it
was: default dtype, RNG states, global flags and the attnviz / torch functions (see _state.py).
``expect`` is "fail" where the code is wrong or unusable, "pass" where only the kernel around it
was changed beforehand (``setup``), and "any" where only the robustness is judged.

This module must not import attnviz.check: ``setup`` runs before that import, as a learner's
earlier cell would.
"""

import math
import os
import sys
import threading
import time

import torch
import torch.nn.functional as F

import attnviz
import attnviz.core

from ._case import ANY, FAIL, PASS, Case
from .multi_head import Solution as MultiHeadSolution


def _correct(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _no_scale(q, k, v, mask=None, **_):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _correct_causal(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


def _correct_padding(lengths, n):
    return (torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None])[:, None, :]


class UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("this exception's __str__ raises")

    def __repr__(self):
        raise RuntimeError("this exception's __repr__ raises")


# ---------------------------------------------------------------- raises ------------------------------

def raises_value_error(q, k, v, mask=None):
    raise ValueError("learner's own check: d_k must be even")


def raises_unprintable(q, k, v, mask=None):
    raise UnprintableError()


def calls_sys_exit(q, k, v, mask=None):
    sys.exit(1)


def raises_keyboard_interrupt(q, k, v, mask=None):
    raise KeyboardInterrupt


def infinite_recursion(q, k, v, mask=None):
    return infinite_recursion(q, k, v, mask)


# ---------------------------------------------------------------- hangs and exits ---------------------

def python_loop_forever(q, k, v, mask=None):
    while True:
        pass


def c_loop(q, k, v, mask=None):
    sum(range(10**12))                  # one C call: no bytecode boundary for a signal or a timeout
    return _correct(q, k, v, mask)


def sleeps_forever(q, k, v, mask=None):
    time.sleep(10**6)


def exits_the_process(q, k, v, mask=None):
    os._exit(3)


def four_seconds_per_call(q, k, v, mask=None):
    time.sleep(4)
    return _correct(q, k, v, mask)


def one_and_a_half_seconds_per_call(q, k, v, mask=None):
    time.sleep(1.5)                     # under a per-call limit, over any sensible total
    return _correct(q, k, v, mask)


def starts_busy_thread(q, k, v, mask=None):
    def spin():
        while True:
            pass
    threading.Thread(target=spin, daemon=True).start()
    return _correct(q, k, v, mask)


# ---------------------------------------------------------------- changes global state ----------------

def sets_default_float64(q, k, v, mask=None):
    torch.set_default_dtype(torch.float64)
    return _correct(q, k, v, mask)


def reseeds_rng(q, k, v, mask=None):
    torch.manual_seed(1234)
    return _correct(q, k, v, mask)


def draws_random_numbers(q, k, v, mask=None):
    torch.rand(1000)
    return _correct(q, k, v, mask)


def deterministic_on(q, k, v, mask=None):
    torch.use_deterministic_algorithms(True)
    return _correct(q, k, v, mask)


def grad_off_globally(q, k, v, mask=None):
    torch.set_grad_enabled(False)
    return _correct(q, k, v, mask)


def rebinds_softmax(q, k, v, mask=None):
    torch.softmax = lambda x, dim=None, **kw: F.softmax(x, dim=dim)
    return _correct(q, k, v, mask)


def rebinds_core_inside(q, k, v, mask=None):
    attnviz.core.scaled_dot_product_attention = _no_scale
    attnviz.scaled_dot_product_attention = _no_scale
    return _no_scale(q, k, v, mask)


def _rebind_core_before_import():
    attnviz.core.scaled_dot_product_attention = _no_scale
    attnviz.scaled_dot_product_attention = _no_scale


def _default_float64():
    torch.set_default_dtype(torch.float64)


def _deterministic_before():
    torch.use_deterministic_algorithms(True)


# ---------------------------------------------------------------- returns odd objects ----------------

def returns_complex(q, k, v, mask=None):
    return _correct(q, k, v, mask)[0].to(torch.complex64)


def returns_meta(q, k, v, mask=None):
    out = _correct(q, k, v, mask)[0]
    return torch.empty(out.shape, device="meta")


def returns_sparse(q, k, v, mask=None):
    return _correct(q, k, v, mask)[0].detach().to_sparse()


class LyingTensor(torch.Tensor):
    """Zeros that answer every comparison with 'equal'."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal"):
            return True
        if name in ("isclose", "eq", "__eq__"):
            return torch.ones(args[0].shape, dtype=torch.bool)
        if name in ("sub", "__sub__", "__rsub__"):
            return torch.zeros(args[0].shape)
        return super().__torch_function__(func, types, args, kwargs or {})


def returns_lying_subclass(q, k, v, mask=None):
    out = _correct(q, k, v, mask)[0]
    return torch.zeros_like(out).as_subclass(LyingTensor)


class ExplodingTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise UnprintableError()


def returns_exploding_subclass(q, k, v, mask=None):
    return _correct(q, k, v, mask)[0].detach().as_subclass(ExplodingTensor)


def returns_list(q, k, v, mask=None):
    return _correct(q, k, v, mask)[0].tolist()


def returns_none(q, k, v, mask=None):
    return None


def returns_dict(q, k, v, mask=None):
    out, weights = _correct(q, k, v, mask)
    return {"output": out, "weights": weights}


def returns_five_things(q, k, v, mask=None):
    out, weights = _correct(q, k, v, mask)
    return out, weights, q, k, v


# ---------------------------------------------------------------- multi-head --------------------------

class InitRaises(MultiHeadSolution):
    def __init__(self, d_model, n_heads):
        raise ValueError("d_model must be divisible by n_heads")     # even when it is


class ForwardLoops(MultiHeadSolution):
    def forward(self, x, mask=None):
        while True:
            pass


class ForwardExits(MultiHeadSolution):
    def forward(self, x, mask=None):
        os._exit(3)


class ForwardReturnsNone(MultiHeadSolution):
    def forward(self, x, mask=None):
        return None


class InitReseeds(MultiHeadSolution):
    def __init__(self, d_model, n_heads):
        torch.manual_seed(0)
        super().__init__(d_model, n_heads)


class ForwardSetsFloat64(MultiHeadSolution):
    def forward(self, x, mask=None):
        torch.set_default_dtype(torch.float64)
        return super().forward(x, mask)


# ---------------------------------------------------------------- masks -------------------------------

def causal_loops(n):
    while True:
        pass


def causal_c_loop(n):
    sum(range(10**12))
    return _correct_causal(n)


def causal_returns_none(n):
    return None


def causal_raises_unprintable(n):
    raise UnprintableError()


def causal_sets_float64(n):
    torch.set_default_dtype(torch.float64)
    return _correct_causal(n)


def padding_exits(lengths, n):
    os._exit(3)


def padding_raises_unprintable(lengths, n):
    raise UnprintableError()


def padding_sleeps(lengths, n):
    time.sleep(4)
    return _correct_padding(lengths, n)


def padding_reseeds(lengths, n):
    torch.manual_seed(0)
    return _correct_padding(lengths, n)


# ---------------------------------------------------------------- decoding ----------------------------

def _step(model, tokens, cache):
    from .decoding import solution
    return solution(model, tokens, cache)


def step_raises_keyboard_interrupt(model, tokens, cache):
    raise KeyboardInterrupt


def step_exits(model, tokens, cache):
    os._exit(3)


def step_loops_forever(model, tokens, cache):
    while True:
        pass


def step_sleeps_per_call(model, tokens, cache):
    time.sleep(1.5)
    return _step(model, tokens, cache)


def step_recursion(model, tokens, cache):
    return step_recursion(model, tokens, cache)


def step_returns_none(model, tokens, cache):
    return None


def step_returns_list_logits(model, tokens, cache):
    logits, cache = _step(model, tokens, cache)
    return logits.tolist(), cache


def step_returns_logits_only(model, tokens, cache):
    return _step(model, tokens, cache)[0]


class Sealed:
    """A cache whose attributes cannot be listed: vars() raises, repr raises."""

    __slots__ = ("layers",)

    def __init__(self, layers):
        self.layers = layers

    @property
    def __dict__(self):
        raise RuntimeError("no peeking")

    def __repr__(self):
        raise RuntimeError("no printing")


def step_sealed_cache(model, tokens, cache):
    logits, layers = _step(model, tokens, None if cache is None else cache.layers)
    return logits, Sealed(layers)


def step_changes_the_weights(model, tokens, cache):
    with torch.no_grad():
        model.blocks[0].attention.W_q.weight.mul_(1.5)
    return _step(model, tokens, cache)


def step_rebinds_torch_cat(model, tokens, cache):
    torch.cat = lambda tensors, dim=0: torch.stack(list(tensors)).sum(0)   # nonsense, in the child only
    return _step(model, tokens, cache)


def step_sets_default_float64(model, tokens, cache):
    torch.set_default_dtype(torch.float64)
    return _step(model, tokens, cache)


def step_huge_cache(model, tokens, cache):
    logits, layers = _step(model, tokens, None if cache is None else cache[0])
    return logits, (layers, [torch.zeros(3, 3)] * 5000)


A, M, C, P, D = "attention", "multi_head", "causal_mask", "padding_mask", "decoding_step"

CASES = [
    # raises
    Case("raises_value_error", raises_value_error, FAIL, checker=A),
    Case("raises_unprintable", raises_unprintable, FAIL, checker=A),
    Case("calls_sys_exit", calls_sys_exit, FAIL, checker=A),
    Case("raises_keyboard_interrupt", raises_keyboard_interrupt, FAIL, checker=A),
    Case("infinite_recursion", infinite_recursion, FAIL, checker=A),
    # hangs and exits
    Case("python_loop_forever", python_loop_forever, FAIL, checker=A),
    Case("c_loop", c_loop, FAIL, checker=A),
    Case("sleeps_forever", sleeps_forever, FAIL, checker=A),
    Case("exits_the_process", exits_the_process, FAIL, checker=A),
    Case("four_seconds_per_call", four_seconds_per_call, FAIL, checker=A),
    Case("one_and_a_half_seconds_per_call", one_and_a_half_seconds_per_call, FAIL, checker=A,
         note="each call is under the limit; the check as a whole is not"),
    Case("starts_busy_thread", starts_busy_thread, ANY, checker=A),
    # changes global state (inside the learner's code)
    Case("sets_default_float64", sets_default_float64, ANY, checker=A),
    Case("reseeds_rng", reseeds_rng, ANY, checker=A),
    Case("draws_random_numbers", draws_random_numbers, ANY, checker=A),
    Case("deterministic_on", deterministic_on, ANY, checker=A),
    Case("grad_off_globally", grad_off_globally, "gradient_blocked", checker=A),
    Case("rebinds_softmax", rebinds_softmax, ANY, checker=A),
    Case("rebinds_core_inside", rebinds_core_inside, "missing_scale", checker=A),
    # the kernel was changed before the check (by the learner's earlier cells)
    Case("core_rebound_before_import", _no_scale, "missing_scale", setup=_rebind_core_before_import,
         checker=A),
    Case("default_float64_before", _correct, PASS, setup=_default_float64, checker=A),
    Case("deterministic_before", _correct, PASS, setup=_deterministic_before, checker=A),
    # returns odd objects
    Case("returns_complex", returns_complex, FAIL, checker=A),
    Case("returns_meta", returns_meta, FAIL, checker=A),
    Case("returns_sparse", returns_sparse, FAIL, checker=A),
    Case("returns_lying_subclass", returns_lying_subclass, FAIL, checker=A),
    Case("returns_exploding_subclass", returns_exploding_subclass, FAIL, checker=A),
    Case("returns_list", returns_list, FAIL, checker=A),
    Case("returns_none", returns_none, FAIL, checker=A),
    Case("returns_dict", returns_dict, FAIL, checker=A),
    Case("returns_five_things", returns_five_things, FAIL, checker=A),
    # multi-head
    Case("instance_not_class", MultiHeadSolution(12, 3), FAIL, checker=M),
    Case("init_raises", InitRaises, FAIL, checker=M),
    Case("forward_loops", ForwardLoops, FAIL, checker=M),
    Case("forward_exits", ForwardExits, FAIL, checker=M),
    Case("forward_returns_none", ForwardReturnsNone, FAIL, checker=M),
    Case("init_reseeds", InitReseeds, ANY, checker=M),
    Case("forward_sets_float64", ForwardSetsFloat64, ANY, checker=M),
    Case("multi_head_default_float64_before", MultiHeadSolution, PASS, setup=_default_float64, checker=M),
    # masks
    Case("causal_loops", causal_loops, FAIL, checker=C),
    Case("causal_c_loop", causal_c_loop, FAIL, checker=C),
    Case("causal_returns_none", causal_returns_none, FAIL, checker=C),
    Case("causal_raises_unprintable", causal_raises_unprintable, FAIL, checker=C),
    Case("causal_sets_float64", causal_sets_float64, ANY, checker=C),
    Case("causal_default_float64_before", _correct_causal, PASS, setup=_default_float64, checker=C),
    Case("padding_exits", padding_exits, FAIL, checker=P),
    Case("padding_raises_unprintable", padding_raises_unprintable, FAIL, checker=P),
    Case("padding_sleeps", padding_sleeps, FAIL, checker=P),
    Case("padding_reseeds", padding_reseeds, ANY, checker=P),
    Case("padding_default_float64_before", _correct_padding, PASS, setup=_default_float64, checker=P),
    # decoding steps
    Case("step_raises_keyboard_interrupt", step_raises_keyboard_interrupt, FAIL, checker=D),
    Case("step_exits", step_exits, FAIL, checker=D),
    Case("step_loops_forever", step_loops_forever, FAIL, checker=D),
    Case("step_sleeps_per_call", step_sleeps_per_call, FAIL, checker=D),
    Case("step_recursion", step_recursion, FAIL, checker=D),
    Case("step_returns_none", step_returns_none, FAIL, checker=D),
    Case("step_returns_list_logits", step_returns_list_logits, FAIL, checker=D),
    Case("step_returns_logits_only", step_returns_logits_only, FAIL, checker=D),
    Case("step_sealed_cache", step_sealed_cache, PASS, checker=D),
    Case("step_changes_the_weights", step_changes_the_weights, FAIL, checker=D),
    Case("step_rebinds_torch_cat", step_rebinds_torch_cat, ANY, checker=D),
    Case("step_sets_default_float64", step_sets_default_float64, ANY, checker=D),
    Case("step_huge_cache", step_huge_cache, PASS, checker=D),
    Case("step_default_float64_before", _step, PASS, setup=_default_float64, checker=D),
    Case("step_deterministic_before", _step, PASS, setup=_deterministic_before, checker=D),
]
