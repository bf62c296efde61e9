"""Induction heads: a repeat whose offset the model cannot know in advance.

Each sequence is a random *segment* of distinct tokens, of random length ``period``, repeated to fill
the sequence (``a b c d a b c d a b ...``). Once the segment has been seen, every next token is
predictable, but only by content: "find the earlier occurrence of my token, and predict the token
that followed it". Position alone cannot do it, because the period changes from one sequence to the
next. A two-layer attention-only :class:`attnviz.gpt.TinyGPT` learns it with two heads that compose
(Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"; Olsson et al. 2022, "In-context
Learning and Induction Heads"): a layer-0 *previous-token head*
copies each position's previous token into it, and a layer-1 *induction head* matches its own token
against those copies, so it attends to the position just after the earlier occurrence.

The two measures, per head, on held-out sequences (weights ``(n_layers, batch, n_heads, n, n)``):

* previous-token score: the mean weight a query at ``t`` puts on key ``t - 1``;
* induction (prefix-matching) score: for queries whose token occurred earlier, the mean total weight
  on the keys just after an earlier occurrence of that token (Olsson et al.'s prefix matching;
  notebook 07 counts a head with a score of 0.4 or more).

Both leave out the last position: it has no next token to predict, so nothing trained its query.
Torch only; seeded.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from .._validate import require_positive_int
from ..gpt import TinyGPT
from ._training import fit, one_thread

__all__ = ["sample_segments", "repeat_queries", "next_token_losses", "repeat_accuracy", "head_scores",
           "offset_habit", "knock_out", "InductionResult", "train_induction", "TRAIN_PERIODS"]

TRAIN_PERIODS = tuple(range(4, 13))     # segment lengths seen in training: 4 .. 12


def sample_segments(batch: int, length: int, vocab: int, periods, generator: torch.Generator):
    """``(tokens (batch, length) long, period (batch,) long)``: each row a segment of ``period``
    distinct random tokens (``period`` drawn uniformly from ``periods``), repeated to fill ``length``.

    Distinct tokens give each token of a segment exactly one successor, so the repeat is predictable
    from one token of context.
    """
    batch, length = require_positive_int(batch, "batch"), require_positive_int(length, "length")
    periods = torch.as_tensor(list(periods), dtype=torch.long)
    if periods.numel() == 0 or int(periods.min()) < 2 or int(periods.max()) > vocab:
        raise ValueError(f"periods must be whole numbers from 2 to vocab={vocab} (distinct tokens per "
                         f"segment), got {periods.tolist()}.")
    period = periods[torch.randint(len(periods), (batch,), generator=generator)]          # (batch,)
    segments = torch.rand(batch, vocab, generator=generator).argsort(dim=1)              # (batch, vocab)
    where = torch.arange(length)[None, :] % period[:, None]                               # (batch, length)
    return segments.gather(1, where), period


def repeat_queries(period: torch.Tensor, length: int) -> torch.Tensor:
    """Bool ``(batch, length - 1)``: True at query positions ``q`` whose next token is predictable by
    induction (``q >= period``: the query's own token occurred before, at ``q - period``)."""
    return torch.arange(length - 1)[None, :] >= period[:, None]


def next_token_losses(model, tokens: torch.Tensor) -> torch.Tensor:
    """``(batch, n - 1)``: the cross-entropy (nats) of predicting token ``q + 1`` at position ``q``."""
    logits, _ = model(tokens)
    return nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")


@torch.no_grad()
def repeat_accuracy(model, tokens: torch.Tensor, period: torch.Tensor) -> float:
    """The share of repeated tokens (targets of :func:`repeat_queries`) that get the model's highest
    logit, given the true sequence before them."""
    logits, _ = model(tokens)
    right = logits[:, :-1].argmax(-1) == tokens[:, 1:]                                   # (batch, n - 1)
    return right[repeat_queries(period, tokens.shape[1])].float().mean().item()


def head_scores(weights: torch.Tensor, tokens: torch.Tensor):
    """``(previous, induction)``, each ``(n_layers, n_heads)``, from ``weights``
    ``(n_layers, batch, n_heads, n, n)`` on ``tokens`` ``(batch, n)``.

    ``previous``: the mean weight from query ``t`` to key ``t - 1`` (queries 1 .. n-2).
    ``induction``: for each query ``t <= n - 2`` whose token occurred earlier, the total weight on
    the keys ``j`` with ``tokens[j - 1] == tokens[t]`` and ``j - 1 < t``, averaged over those queries.
    """
    n = tokens.shape[1]
    if weights.dim() != 5 or weights.shape[1] != tokens.shape[0] or weights.shape[-1] != n:
        raise ValueError(f"weights has shape {tuple(weights.shape)}; expected (n_layers, batch, n_heads, "
                         f"n, n) with batch={tokens.shape[0]} and n={n} from tokens.")
    queries = torch.arange(1, n - 1)
    previous = weights[..., queries, queries - 1].mean(dim=(1, 3))               # (n_layers, n_heads)
    after_copy = torch.zeros(tokens.shape[0], n, n, dtype=torch.bool)             # (batch, query t, key j)
    same = tokens[:, :, None] == tokens[:, None, :-1]                             # tokens[t] == tokens[j - 1]
    after_copy[:, :, 1:] = same & torch.ones(n, n - 1, dtype=torch.bool).tril(-1)  # and j - 1 < t
    after_copy[:, -1] = False                                                     # the last query: untrained
    asking = after_copy.any(-1)                                                   # (batch, query)
    on_target = (weights * after_copy[None, :, None]).sum(-1)                     # (L, batch, heads, query)
    induction = (on_target * asking[None, :, None]).sum(dim=(1, 3)) / asking.sum()
    return previous, induction


def offset_habit(weights: torch.Tensor) -> torch.Tensor:
    """``(n_layers, n_heads, n // 2)``: entry ``k - 1`` is the mean weight from query ``t`` to key
    ``t - k`` (over queries ``k .. n-2``, at least ``n/2 - 1`` of them), for ``k = 1 .. n // 2``. On
    sequences without repeats, a head that looks a fixed distance back scores near 1 at that ``k``;
    a head that searches by content does not."""
    n = weights.shape[-1]
    rows = []
    for k in range(1, n // 2 + 1):
        queries = torch.arange(k, n - 1)
        rows.append(weights[..., queries, queries - k].mean(dim=(1, 3)))                 # (n_layers, n_heads)
    return torch.stack(rows, dim=-1)


def knock_out(model: TinyGPT, heads) -> TinyGPT:
    """A copy of ``model`` with each ``(layer, head)`` of ``heads`` removed: its ``d_head`` columns of
    ``W_o`` zeroed (the merge puts head ``h`` in columns ``h·d_head .. (h+1)·d_head``)."""
    ablated = copy.deepcopy(model)
    d = model.d_head
    with torch.no_grad():
        for layer, head in heads:
            ablated.blocks[layer].attention.W_o.weight[:, head * d:(head + 1) * d] = 0
    return ablated


@dataclass
class InductionResult:
    """One training run. Held-out numbers are on ``eval_tokens`` (periods from the training range)."""

    seed: int
    n_layers: int
    periods: tuple
    losses: list = field(default_factory=list)             # training loss per step (every next token)
    repeat_losses: list = field(default_factory=list)      # the training batch's repeat loss per step
    score_steps: list = field(default_factory=list)        # steps at which the scores below were taken
    previous_history: list = field(default_factory=list)   # (n_layers, n_heads) previous-token scores
    induction_history: list = field(default_factory=list)  # (n_layers, n_heads) induction scores
    previous: torch.Tensor | None = None                    # held-out, (n_layers, n_heads)
    induction: torch.Tensor | None = None                   # held-out, (n_layers, n_heads)
    repeat_loss: float = float("nan")
    repeat_accuracy: float = float("nan")
    seconds: float = float("nan")                           # CPU time of the training loop
    model: TinyGPT | None = None
    eval_tokens: torch.Tensor | None = None                 # (eval_batch, length)
    eval_period: torch.Tensor | None = None                 # (eval_batch,)

    def curve(self, name: str, window: int = 10) -> tuple[list[int], list[float]]:
        """``(steps, values)``. ``"repeat_loss"``: the training batches' repeat loss at every step,
        averaged over the last ``window`` steps; ``"previous"``: layer 0's best previous-token score
        and ``"induction"``: the last layer's best induction score, at :attr:`score_steps`."""
        if name == "repeat_loss":
            values = [sum(self.repeat_losses[max(0, i - window + 1):i + 1]) / (i + 1 - max(0, i - window + 1))
                      for i in range(len(self.repeat_losses))]
            return list(range(1, len(values) + 1)), values
        if name == "previous":
            return list(self.score_steps), [float(score[0].max()) for score in self.previous_history]
        if name == "induction":
            return list(self.score_steps), [float(score[-1].max()) for score in self.induction_history]
        raise ValueError(f"name must be 'repeat_loss', 'previous' or 'induction', got {name!r}.")

    def halfway_step(self, name: str) -> int:
        """The first step at which :meth:`curve` ``name`` had covered half its way from its first
        value to its last (the middle of its rise, or of its fall)."""
        steps, values = self.curve(name)
        middle = (values[0] + values[-1]) / 2
        falling = values[-1] < values[0]
        for step, value in zip(steps, values, strict=True):
            if (value <= middle) if falling else (value >= middle):
                return step
        return steps[-1]


def train_induction(seed=0, *, vocab=24, length=24, periods=TRAIN_PERIODS, d_model=32, n_heads=2,
                    n_layers=2, mlp=False, steps=250, batch=32, lr=7e-3, eval_batch=256, score_every=10,
                    progress=None) -> InductionResult:
    """Train a :class:`TinyGPT` (attention only unless ``mlp``) on repeated segments, loss on every
    next token; each step's repeat loss is recorded, and every ``score_every`` steps (and before the
    first) the head scores are taken on 64 held-out sequences. ``progress`` (optional) is called as
    ``progress(step, steps, loss)`` every 50 steps and at the end.
    """
    steps = require_positive_int(steps, "steps")
    periods = tuple(periods)
    with one_thread():
        start = time.thread_time()
        torch.manual_seed(seed)
        model = TinyGPT(vocab, d_model, n_heads, n_layers, length, mlp=mlp)
        generator = torch.Generator().manual_seed(30_000 + seed)
        probe, _ = sample_segments(64, length, vocab, periods, torch.Generator().manual_seed(40_000 + seed))
        result = InductionResult(seed=seed, n_layers=n_layers, periods=periods)

        def take_scores(step):
            with torch.no_grad():
                previous, induction = head_scores(model.attention_weights(probe), probe)
            result.score_steps.append(step)
            result.previous_history.append(previous)
            result.induction_history.append(induction)

        def loss_of(sample):
            tokens, period = sample
            losses = next_token_losses(model, tokens)                                     # (batch, n - 1)
            return losses.mean(), losses.detach()[repeat_queries(period, length)].mean().item()

        def on_step(step, loss, _sample, repeat_loss):
            result.repeat_losses.append(repeat_loss)
            if step % score_every == 0 or step == steps:
                take_scores(step)
            if progress is not None and (step % 50 == 0 or step == steps):
                progress(step, steps, loss)

        take_scores(0)
        result.losses = fit(model, lambda: sample_segments(batch, length, vocab, periods, generator), loss_of,
                            steps=steps, lr=lr, on_step=on_step)
        result.seconds = time.thread_time() - start
        model.eval()
        tokens, period = sample_segments(eval_batch, length, vocab, periods,
                                         torch.Generator().manual_seed(50_000 + seed))
        with torch.no_grad():
            losses = next_token_losses(model, tokens)                                   # (eval_batch, n - 1)
            result.repeat_loss = losses[repeat_queries(period, length)].mean().item()
            result.previous, result.induction = head_scores(model.attention_weights(tokens), tokens)
        result.repeat_accuracy = repeat_accuracy(model, tokens, period)
    result.model, result.eval_tokens, result.eval_period = model, tokens, period
    return result
