"""Shared training helpers for the toys: one CPU thread, and Adam written out.

Torch only. ``torch.optim``'s first use imports ``torch._dynamo`` (about a second of CPU,
more than a whole toy experiment), so the toys use the written-out :class:`Adam`, whose
numbers equal ``torch.optim.Adam``'s (tested).
"""

from __future__ import annotations

import math

import torch

from .._threads import one_thread

__all__ = ["Adam", "one_thread"]


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
