"""Repeat the first half: a task a tiny GPT can only solve by reaching back into its context.

Each sequence is ``half`` random tokens followed by the same ``half`` tokens again. The model is
trained on next-token prediction at every position: ``2·half - 1`` targets per sequence, the
``half - 1`` later tokens of the first half and the ``half`` tokens of the copy. The first half is
random, so no model can beat ``log(vocab)`` there; the copy always sits exactly ``half`` positions
back, so a model that reaches back that far predicts it almost perfectly (by position alone: see
:mod:`attnviz.toys.induction` for a repeat whose offset varies). Torch only; seeded.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from .._validate import require_positive_int
from ..gpt import TinyGPT, generate
from ._training import fit, one_thread

__all__ = ["sample_repeats", "next_token_losses", "split_losses", "copy_accuracy", "CopyResult", "train_copy",
           "chance_loss", "loss_floor"]


def sample_repeats(batch: int, half: int, vocab: int, generator: torch.Generator,
                   corrupt: float = 0.0) -> torch.Tensor:
    """``(batch, 2·half)`` long: random first halves, each followed by itself.

    ``corrupt``: the chance that a token of the copy is replaced by a random one (0: an exact copy).
    """
    batch, half = require_positive_int(batch, "batch"), require_positive_int(half, "half")
    first = torch.randint(vocab, (batch, half), generator=generator)
    second = first
    if corrupt:
        noisy = torch.rand(batch, half, generator=generator) < corrupt
        second = torch.where(noisy, torch.randint(vocab, (batch, half), generator=generator), first)
    return torch.cat([first, second], dim=1)


def next_token_losses(model, tokens, *, causal=True):
    """``(batch, n - 1)``: the cross-entropy (nats) of predicting token ``t + 1`` at position ``t``.

    Its mean is the loss over every target, the one training minimises."""
    logits, _ = model(tokens, causal=causal)
    return nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")


def split_losses(model, tokens, *, causal=True):
    """Mean next-token cross-entropy ``(first_half, repeat)`` in nats.

    ``first_half``: predicting tokens 1 .. half-1 (``half - 1`` random targets: ``log vocab`` is the
    best possible). ``repeat``: predicting tokens half .. 2·half-1 (``half`` targets, each a copy of
    the one ``half`` positions back).
    """
    half = tokens.shape[1] // 2
    losses = next_token_losses(model, tokens, causal=causal)
    return losses[:, : half - 1].mean(), losses[:, half - 1:].mean()   # targets 1..half-1 | half..2·half-1


def copy_accuracy(model, tokens, continued=None) -> float:
    """Greedy generation from the first half: the share of the ``half`` generated tokens that repeat it.

    ``continued`` ``(batch, 2·half)``: a generation made elsewhere (default: :func:`attnviz.gpt.generate`).
    """
    half = tokens.shape[1] // 2
    if continued is None:
        continued = generate(model, tokens[:, :half], half)
    return (continued[:, half:] == tokens[:, :half]).float().mean().item()


@dataclass
class CopyResult:
    """What one training run measured (held-out numbers on ``eval_tokens``)."""

    seed: int
    causal: bool
    n_kv_heads: int
    corrupt: float
    losses: list = field(default_factory=list)     # training loss per step (every target)
    loss: float = float("nan")                     # held-out loss over every target
    first_half_loss: float = float("nan")
    repeat_loss: float = float("nan")
    seconds: float = float("nan")                  # CPU time of the training loop
    model: TinyGPT | None = None
    eval_tokens: torch.Tensor | None = None        # (eval_batch, 2·half) held-out sequences


def train_copy(*, seed=0, vocab=16, half=8, d_model=32, n_heads=4, n_layers=2, n_kv_heads=None,
               causal=True, corrupt=0.0, steps=60, batch=32, lr=2e-2, eval_batch=128,
               progress=None) -> CopyResult:
    """Train a :class:`TinyGPT` on the repeat task; ``causal=False`` trains it without the mask.

    ``corrupt`` > 0 replaces that share of the copy's tokens by random ones (see :func:`sample_repeats`).
    ``progress`` (optional) is called as ``progress(step, steps, loss)`` every 20 steps and at the end.
    """
    steps = require_positive_int(steps, "steps")
    with one_thread():
        start = time.thread_time()
        torch.manual_seed(seed)
        model = TinyGPT(vocab, d_model, n_heads, n_layers, 2 * half, n_kv_heads=n_kv_heads)
        generator = torch.Generator().manual_seed(10_000 + seed)

        def loss_of(tokens):
            return next_token_losses(model, tokens, causal=causal).mean(), None   # mean over all targets

        def report(step, loss, *_):
            if progress is not None and (step % 20 == 0 or step == steps):
                progress(step, steps, loss)

        losses = fit(model, lambda: sample_repeats(batch, half, vocab, generator, corrupt), loss_of,
                     steps=steps, lr=lr, on_step=report)
        seconds = time.thread_time() - start
        model.eval()
        held_out = sample_repeats(eval_batch, half, vocab, torch.Generator().manual_seed(20_000 + seed),
                                  corrupt)
        with torch.no_grad():
            loss = next_token_losses(model, held_out, causal=causal).mean()
            first, repeat = split_losses(model, held_out, causal=causal)
    return CopyResult(seed=seed, causal=causal, n_kv_heads=model.n_kv_heads, corrupt=corrupt, losses=losses,
                      loss=loss.item(), first_half_loss=first.item(), repeat_loss=repeat.item(),
                      seconds=seconds, model=model, eval_tokens=held_out)


def chance_loss(vocab: int) -> float:
    """``log(vocab)``: the loss of a uniform guess, the best possible on random tokens."""
    return math.log(vocab)


def loss_floor(vocab: int, half: int) -> float:
    """The lowest loss over every target a model that cannot see ahead can reach (exact copies):
    ``half - 1`` of the ``2·half - 1`` targets are random and cost ``log(vocab)`` each at best, the
    ``half`` copied ones can cost 0."""
    half = require_positive_int(half, "half")
    return (half - 1) / (2 * half - 1) * math.log(vocab)
