"""Associative recall: the dictionary lookup made literal, and the √d_k ablation trained on it.

The task. A sequence holds ``n_pairs`` key→value pairs, then one query key that is
one of the keys in the sequence; the answer is the value stored with it. Keys are
drawn without replacement from ``n_keys`` symbols, so each key appears once;
values are drawn freely from ``n_values`` symbols.

The model. One attention layer and nothing else:
    each pair i becomes one memory slot     x_i = key_embedding[k_i] + value_embedding[v_i]
    the query key becomes                   x_q = key_embedding[k_q]
    query = x_q W_q,  keys = x W_k,  values = x W_v        (d_k features each)
    scores = query · keysᵀ · scale,   scale = 1/√d_k  or  1  (the ablation)
    weights = softmax(scores over the slots);  logits = (weights @ values) W_out
Embeddings have unit-variance entries and W_q, W_k have variance 1/d_model, so
``query`` starts with unit-variance entries, but a slot adds two embeddings, so
``keys`` start with entries of variance about 2. The scores therefore start with a
standard deviation of about √(2·d_k) unscaled (about 11 at d_k = 64, not the
variance argument's √d_k = 8) and about √2 after ÷√d_k, not 1.

Torch only. Everything is seeded: the same seed gives the same data, the same
initial weights and the same curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from .._validate import require_positive_int, require_positive_number
from ..diagnostics import attention_entropy, softmax_jacobian_norm
from ._training import fit

__all__ = ["make_batch", "RecallAttention", "TrainResult", "train_recall", "compare_scaling"]


def make_batch(batch_size: int, n_pairs: int = 16, n_keys: int = 32, n_values: int = 32,
               generator: torch.Generator | None = None):
    """One batch of associative-recall problems.

    Returns ``(pair_keys, pair_values, query_key, answer)``:
        pair_keys, pair_values: int64 ``(batch_size, n_pairs)``; keys distinct within a row.
        query_key: int64 ``(batch_size,)``, one of that row's keys.
        answer: int64 ``(batch_size,)``, the value stored with the query key.
    """
    batch_size = require_positive_int(batch_size, "batch_size")
    n_pairs = require_positive_int(n_pairs, "n_pairs")
    n_keys = require_positive_int(n_keys, "n_keys")
    n_values = require_positive_int(n_values, "n_values")
    if n_pairs > n_keys:
        raise ValueError(
            f"n_pairs={n_pairs} is larger than n_keys={n_keys}: each key may appear only "
            f"once in a sequence, so there must be at least as many key symbols as pairs."
        )
    # distinct keys per row: the first n_pairs entries of a random permutation
    pair_keys = torch.rand(batch_size, n_keys, generator=generator).argsort(dim=1)[:, :n_pairs]
    pair_values = torch.randint(n_values, (batch_size, n_pairs), generator=generator)
    which = torch.randint(n_pairs, (batch_size,), generator=generator)
    rows = torch.arange(batch_size)
    return pair_keys, pair_values, pair_keys[rows, which], pair_values[rows, which]


class RecallAttention(nn.Module):
    """A single attention layer that answers associative recall.

    ``forward(pair_keys, pair_values, query_key)`` returns ``(logits, weights)``:
        logits: ``(batch, n_values)``, a score for each possible answer;
        weights: ``(batch, n_pairs)``, the query's attention over the slots (rows sum to 1).
    ``scaled=True`` divides the scores by √d_k; ``scaled=False`` does not. Nothing else differs.
    """

    def __init__(self, n_keys: int = 32, n_values: int = 32, d_model: int = 64, d_k: int = 64,
                 scaled: bool = True):
        super().__init__()
        self.d_k = require_positive_int(d_k, "d_k")
        d_model = require_positive_int(d_model, "d_model")
        self.scaled = bool(scaled)
        self.key_embedding = nn.Embedding(require_positive_int(n_keys, "n_keys"), d_model)
        self.value_embedding = nn.Embedding(require_positive_int(n_values, "n_values"), d_model)
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_k, bias=False)
        self.W_out = nn.Linear(d_k, n_values)
        for layer in (self.W_q, self.W_k, self.W_v):
            # variance 1/d_model: unit-variance inputs give unit-variance outputs (a slot, the sum of
            # two embeddings, has variance 2, so its keys and values have variance about 2)
            nn.init.normal_(layer.weight, std=1.0 / math.sqrt(d_model))

    def forward(self, pair_keys, pair_values, query_key):
        slots = self.key_embedding(pair_keys) + self.value_embedding(pair_values)  # (batch, n_pairs, d_model)
        asking = self.key_embedding(query_key)                                     # (batch, d_model)
        query = self.W_q(asking).unsqueeze(1)                                      # (batch, 1, d_k)
        key = self.W_k(slots)                                                      # (batch, n_pairs, d_k)
        value = self.W_v(slots)                                                    # (batch, n_pairs, d_k)
        scores = query @ key.transpose(1, 2)                                       # (batch, 1, n_pairs)
        if self.scaled:
            scores = scores / math.sqrt(self.d_k)
        weights = torch.softmax(scores, dim=-1)                                    # (batch, 1, n_pairs)
        blended = (weights @ value).squeeze(1)                                     # (batch, d_k)
        return self.W_out(blended), weights.squeeze(1)


@dataclass
class TrainResult:
    """Curves from one training run, one entry per step."""

    scaled: bool
    seed: int
    loss: list[float] = field(default_factory=list)        # cross-entropy on the training batch
    entropy: list[float] = field(default_factory=list)     # mean attention entropy (nats) of the batch
    accuracy: list[float] = field(default_factory=list)    # fraction of the batch answered right
    max_weight: list[float] = field(default_factory=list)  # mean over the batch of each row's largest weight
    on_target: list[float] = field(default_factory=list)   # share of rows whose top weight is on the answer
    softmax_grad: list[float] = field(default_factory=list)  # batch median of ‖∂weights/∂scores‖ (Frobenius)
    model: RecallAttention | None = None

    def final(self, name: str = "loss", last: int = 20) -> float:
        """Mean of the last ``last`` steps of a curve (smooths batch noise)."""
        curve = getattr(self, name)
        tail = curve[-last:]
        return sum(tail) / len(tail)


def train_recall(scaled: bool = True, seed: int = 0, *, d_k: int = 64, d_model: int = 64,
                 n_pairs: int = 16, n_keys: int = 32, n_values: int = 32, steps: int = 100,
                 batch_size: int = 32, lr: float = 5e-3, progress=None) -> TrainResult:
    """Train one :class:`RecallAttention` with Adam from ``seed``; return its curves.

    The seed fixes the initial weights and the data stream, so a scaled and an
    unscaled run with the same seed see the same batches from the same start.
    ``progress``, if given, is called as ``progress(step, steps)`` after each step.
    """
    steps = require_positive_int(steps, "steps")
    lr = require_positive_number(lr, "lr")
    torch.manual_seed(seed)
    model = RecallAttention(n_keys, n_values, d_model, d_k, scaled=scaled)
    data = torch.Generator().manual_seed(10_000 + seed)
    result = TrainResult(scaled=bool(scaled), seed=int(seed), model=model)

    def loss_of(batch):
        pair_keys, pair_values, query_key, answer = batch
        logits, weights = model(pair_keys, pair_values, query_key)
        return nn.functional.cross_entropy(logits, answer), (logits.detach(), weights.detach())

    def on_step(step, loss, batch, details):
        pair_keys, _, query_key, answer = batch
        logits, weights = details                        # (batch, n_values), (batch, n_pairs)
        result.entropy.append(attention_entropy(weights).mean().item())
        result.accuracy.append((logits.argmax(-1) == answer).float().mean().item())
        result.max_weight.append(weights.max(dim=-1).values.mean().item())
        target = (pair_keys == query_key[:, None]).float().argmax(dim=-1)    # the asked-for pair's slot
        result.on_target.append((weights.argmax(dim=-1) == target).float().mean().item())
        result.softmax_grad.append(softmax_jacobian_norm(weights).median().item())
        if progress is not None:
            progress(step, steps)

    result.loss = fit(model, lambda: make_batch(batch_size, n_pairs, n_keys, n_values, data), loss_of,
                      steps=steps, lr=lr, on_step=on_step)
    return result


def compare_scaling(seeds=(0, 1, 2), progress=None, **kwargs) -> dict[bool, list[TrainResult]]:
    """Train a scaled and an unscaled model for each seed; ``{True: [...], False: [...]}``.

    Keyword arguments go to :func:`train_recall`. ``progress(done, total)`` counts runs.
    """
    seeds = list(seeds)
    results: dict[bool, list[TrainResult]] = {True: [], False: []}
    total, done = 2 * len(seeds), 0
    for seed in seeds:
        for scaled in (True, False):
            results[scaled].append(train_recall(scaled, seed, **kwargs))
            done += 1
            if progress is not None:
                progress(done, total)
    return results
