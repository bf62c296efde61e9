"""The toys' one training loop, :func:`fit`, with Adam written out and one CPU thread.

Torch only. ``torch.optim``'s first use imports ``torch._dynamo`` (about a second of CPU,
more than a whole toy experiment), so the toys use the written-out :class:`Adam`, whose
numbers equal ``torch.optim.Adam``'s (tested).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from .._threads import one_thread
from .._validate import require_positive_int, require_positive_number

__all__ = ["Adam", "fit", "one_thread"]


class Adam:
    """Adam with torch.optim.Adam's default update (no weight decay), written out.

    ``torch.optim``'s first use imports ``torch._dynamo``, which costs about a second of
    CPU: more than a whole toy experiment. The numbers are the same (tested).
    """

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8):
        self.params = list(params)
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.steps = 0
        self.mean = [torch.zeros_like(p) for p in self.params]      # first moment
        self.square = [torch.zeros_like(p) for p in self.params]    # second moment

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        self.steps += 1
        correction1 = 1 - self.beta1**self.steps
        correction2 = 1 - self.beta2**self.steps
        for p, mean, square in zip(self.params, self.mean, self.square, strict=True):
            if p.grad is None:
                continue
            mean.lerp_(p.grad, 1 - self.beta1)
            square.mul_(self.beta2).addcmul_(p.grad, p.grad, value=1 - self.beta2)
            denominator = (square.sqrt() / math.sqrt(correction2)).add_(self.eps)
            p.addcdiv_(mean, denominator, value=-self.lr / correction1)


def fit(
    model: nn.Module,
    next_batch: Callable[[], object],
    loss_of: Callable[[object], tuple],
    *,
    steps: int,
    lr: float,
    on_step: Callable[..., None] | None = None,
    optimizer=None,
) -> list[float]:
    """Train ``model`` for ``steps`` Adam steps; return the training loss of every step.

    Each step: ``batch = next_batch()``; ``loss, details = loss_of(batch)`` (``loss`` a
    scalar tensor, ``details`` anything the caller wants to record, e.g. the attention
    weights); zero the gradients, ``loss.backward()``, one optimiser step; then
    ``on_step(step, loss_value, batch, details)`` if given, with ``step`` counted from 1.
    ``optimizer`` defaults to the written-out :class:`Adam` over ``model.parameters()``.
    The caller sets the seed and the thread count; ``fit`` draws no random numbers itself.
    """
    steps = require_positive_int(steps, "steps")
    lr = require_positive_number(lr, "lr")
    optimizer = optimizer if optimizer is not None else Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(1, steps + 1):
        batch = next_batch()
        loss, details = loss_of(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1], batch, details)
    return losses
