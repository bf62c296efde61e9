"""A simple recurrent network, and the two measurements that explain why attention replaced it.

1. Gradient reach: how much gradient from the last output reaches the *first*
   input after ``n`` steps. In an RNN it must pass back through ``n - 1`` hidden
   steps; in self-attention the last position reads the first one directly.
2. Sequential steps: an RNN needs ``n`` dependent steps, one after another;
   self-attention handles the whole sequence in a few matrix products.
   :func:`sequential_depth` counts the longest chain of dependent operations
   in the autograd graph (deterministic); :func:`time_rnn_vs_attention` times both (noisy).

Torch only, seeded.
"""

from __future__ import annotations

import math
import time

import torch
from torch import nn

from .._validate import require_positive_int, require_tensor
from ..core import scaled_dot_product_attention

__all__ = [
    "SimpleRNN",
    "SelfAttentionLayer",
    "first_input_gradient",
    "sequential_depth",
    "time_rnn_vs_attention",
    "time_rnn_widths",
]


class SimpleRNN(nn.Module):
    """``h_t = tanh(x_t W_xᵀ + h_{t-1} W_hᵀ + b)``, the loop written out.

    ``forward(x)`` takes ``x`` of shape ``(batch, n, d_in)`` and returns every
    hidden state, ``(batch, n, d_hidden)``; ``h_0`` is zeros. The weights are
    initialised like ``torch.nn.RNN`` (uniform in ±1/√d_hidden) and the layout
    matches it, so ``load_into(torch.nn.RNN(...))`` copies them across.
    """

    def __init__(self, d_in: int, d_hidden: int):
        super().__init__()
        self.d_hidden = require_positive_int(d_hidden, "d_hidden")
        self.W_x = nn.Linear(require_positive_int(d_in, "d_in"), d_hidden)
        self.W_h = nn.Linear(d_hidden, d_hidden)
        bound = 1.0 / math.sqrt(d_hidden)
        for param in self.parameters():
            nn.init.uniform_(param, -bound, bound)

    def forward(self, x):
        require_tensor(x, "x", 3)
        hidden = x.new_zeros(x.shape[0], self.d_hidden)          # (batch, d_hidden)
        states = []
        for t in range(x.shape[1]):                              # n steps, each needs the last
            hidden = torch.tanh(self.W_x(x[:, t]) + self.W_h(hidden))
            states.append(hidden)
        return torch.stack(states, dim=1)                        # (batch, n, d_hidden)

    def load_into(self, rnn: nn.RNN) -> nn.RNN:
        """Copy these weights into a one-layer, batch-first ``torch.nn.RNN`` (tanh)."""
        with torch.no_grad():
            rnn.weight_ih_l0.copy_(self.W_x.weight)
            rnn.weight_hh_l0.copy_(self.W_h.weight)
            rnn.bias_ih_l0.copy_(self.W_x.bias)
            rnn.bias_hh_l0.copy_(self.W_h.bias)
        return rnn


class SelfAttentionLayer(nn.Module):
    """One head of self-attention, ``(batch, n, d)`` → ``(batch, n, d)``, scaled by 1/√d."""

    def __init__(self, d: int):
        super().__init__()
        d = require_positive_int(d, "d")
        self.W_q = nn.Linear(d, d, bias=False)
        self.W_k = nn.Linear(d, d, bias=False)
        self.W_v = nn.Linear(d, d, bias=False)

    def forward(self, x):
        require_tensor(x, "x", 3)
        output, _ = scaled_dot_product_attention(self.W_q(x), self.W_k(x), self.W_v(x))
        return output


def _model(kind: str, d: int) -> nn.Module:
    if kind == "rnn":
        return SimpleRNN(d, d)
    if kind == "attention":
        return SelfAttentionLayer(d)
    raise ValueError(f"kind must be 'rnn' or 'attention', got {kind!r}.")


def first_input_gradient(n: int, kind: str = "rnn", *, d: int = 32, seed: int = 0) -> float:
    """Norm of the gradient of the last position's output with respect to the first input.

    A random sequence ``x`` of shape ``(1, n, d)`` (unit-variance entries) goes
    through a freshly initialised ``kind`` (``'rnn'`` or ``'attention'``) built
    from ``seed``; the returned number is ``‖∂(u · y_last)/∂x_0‖`` for a fixed
    random unit direction ``u``. The model weights depend on ``seed`` only, not
    on ``n``, so a sweep over ``n`` changes the length and nothing else.
    """
    n = require_positive_int(n, "n")
    d = require_positive_int(d, "d")
    torch.manual_seed(seed)
    model = _model(kind, d)
    data = torch.Generator().manual_seed(1_000 + seed)
    direction = torch.randn(d, generator=data)
    direction = direction / direction.norm()
    x = torch.randn(1, n, d, generator=data).requires_grad_(True)
    last = model(x)[0, -1]                    # (d,) the last position's output
    (grad,) = torch.autograd.grad(last @ direction, x)
    return grad[0, 0].norm().item()


def sequential_depth(output: torch.Tensor) -> int:
    """Longest chain of operations in the autograd graph that produced ``output``.

    Each operation in a chain needs the result of the one before it, so this is
    how many steps must run one after another, however many processors there
    are. It counts nodes of the backward graph (one per differentiable
    operation, plus one per leaf that requires grad), so it is deterministic.
    """
    require_tensor(output, "output", 0)
    if output.grad_fn is None:
        raise ValueError("output has no autograd graph: compute it from a tensor with "
                         "requires_grad=True, outside torch.no_grad().")
    # iterative post-order walk: depth(node) = 1 + max(depth(child))
    depth: dict = {}
    stack = [(output.grad_fn, False)]
    while stack:
        node, children_done = stack.pop()
        if node in depth:
            continue
        children = [child for child, _ in node.next_functions if child is not None]
        if children_done:
            depth[node] = 1 + max((depth[child] for child in children), default=0)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in children if child not in depth)
    return depth[output.grad_fn]


def _fastest(runs: dict, repeats: int) -> dict:
    """``{name: (model, x)}`` -> ``{name: seconds}``: each model's fastest of ``repeats`` forward
    passes without autograd, the models run in turn in one loop after one warm-up pass each."""
    best = dict.fromkeys(runs, math.inf)
    with torch.no_grad():
        for model, x in runs.values():
            model(x)  # warm up
        for _ in range(repeats):
            for name, (model, x) in runs.items():
                start = time.perf_counter()
                model(x)
                best[name] = min(best[name], time.perf_counter() - start)
    return best


def time_rnn_vs_attention(n: int = 256, d: int = 64, repeats: int = 7, seed: int = 0) -> dict:
    """Wall-clock time of one forward pass over ``n`` positions: RNN loop against attention.

    Returns ``{'rnn_seconds', 'attention_seconds', 'ratio'}``; each time is the
    *minimum* over ``repeats`` runs (the least disturbed by other work on the
    machine), and ``ratio = rnn_seconds / attention_seconds``. Runs without
    autograd. Timings vary from machine to machine and run to run.
    """
    n = require_positive_int(n, "n")
    d = require_positive_int(d, "d")
    repeats = require_positive_int(repeats, "repeats")
    torch.manual_seed(seed)
    rnn, attention = SimpleRNN(d, d), SelfAttentionLayer(d)
    x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(seed))
    best = _fastest({"rnn": (rnn, x), "attention": (attention, x)}, repeats)
    return {
        "rnn_seconds": best["rnn"],
        "attention_seconds": best["attention"],
        "ratio": best["rnn"] / best["attention"],
    }


def time_rnn_widths(n: int = 256, widths=(64, 4), repeats: int = 9, seed: int = 0) -> dict:
    """Wall-clock time of the RNN loop over ``n`` positions at each width in ``widths``.

    Returns ``{width: seconds}``, each the *minimum* over ``repeats`` runs. The widths run in
    turn inside one loop, so that other work on the machine slows them alike: comparing two
    separate timings would also compare what else the machine was doing at the time.
    """
    n = require_positive_int(n, "n")
    repeats = require_positive_int(repeats, "repeats")
    widths = [require_positive_int(d, "widths") for d in widths]
    if not widths:
        raise ValueError("widths must name at least one width, got none")
    torch.manual_seed(seed)
    models = {d: SimpleRNN(d, d) for d in widths}
    inputs = {d: torch.randn(1, n, d, generator=torch.Generator().manual_seed(seed)) for d in widths}
    return _fastest({d: (models[d], inputs[d]) for d in widths}, repeats)
