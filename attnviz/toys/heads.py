"""Two relations at once: a toy task on which attention heads specialise.

The task ("previous and first"): a sentence of random tokens; at every
position t >= 1 the model must name two things, the token just before it
(``tokens[t-1]``) and the sentence's first token (``tokens[0]``). Each answer
needs a different relation (previous position, first position), and both are
needed at the same time.

The model (:class:`TinyHeadsModel`): token and position embeddings, one
causal :class:`attnviz.MultiHeadAttention` layer, a residual connection and
two linear read-outs (one per question). With two heads, each head can look
at one place; a single head of the same total width has one softmax per
query, so it must split its weight between the two places and the blend of
their values mixes the two answers.

:func:`relation_shares` measures, for every head, the mean weight it puts on
each relation. Torch only; seeded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from .._validate import require_positive_int
from ..core import causal_mask
from ..mha import MultiHeadAttention
from ._training import fit, one_thread

__all__ = [
    "RELATIONS",
    "sample_sentences",
    "TinyHeadsModel",
    "relation_shares",
    "HeadsResult",
    "train_heads",
]

RELATIONS = ("previous", "first")


def sample_sentences(batch: int, length: int, vocab: int, generator: torch.Generator) -> torch.Tensor:
    """``(batch, length)`` long: uniform random tokens."""
    batch = require_positive_int(batch, "batch")
    length = require_positive_int(length, "length")
    return torch.randint(vocab, (batch, length), generator=generator)


class TinyHeadsModel(nn.Module):
    """Embeddings → one causal multi-head attention layer (+ residual) → two read-outs.

    ``forward(tokens)`` takes ``(batch, n)`` long tokens and returns
    ``(previous_logits, first_logits, weights)``: two ``(batch, n, vocab)``
    tensors and the attention weights ``(batch, n_heads, n, n)``.
    """

    def __init__(self, vocab: int, max_len: int, d_model: int = 32, n_heads: int = 2):
        super().__init__()
        self.max_len = require_positive_int(max_len, "max_len")
        self.token_embedding = nn.Embedding(vocab, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.attention = MultiHeadAttention(d_model, n_heads)
        self.read_previous = nn.Linear(d_model, vocab)
        self.read_first = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor):
        n = tokens.shape[-1]
        if n > self.max_len:
            raise ValueError(f"tokens has {n} positions but the model knows only max_len={self.max_len}.")
        x = self.token_embedding(tokens) + self.position_embedding.weight[:n]   # (batch, n, d_model)
        mixed, weights = self.attention(x, mask=causal_mask(n))                  # (batch, n, d_model)
        hidden = x + mixed
        return self.read_previous(hidden), self.read_first(hidden), weights


def _losses(model, tokens):
    previous_logits, first_logits, weights = model(tokens)
    vocab = previous_logits.shape[-1]
    # positions 1.. have a previous token; the first token is asked for at the same positions
    loss_previous = nn.functional.cross_entropy(
        previous_logits[:, 1:].reshape(-1, vocab), tokens[:, :-1].reshape(-1))
    first_target = tokens[:, :1].expand(-1, tokens.shape[1] - 1)
    loss_first = nn.functional.cross_entropy(first_logits[:, 1:].reshape(-1, vocab), first_target.reshape(-1))
    return loss_previous, loss_first, previous_logits, first_logits, weights


def relation_shares(weights: torch.Tensor) -> dict[str, torch.Tensor]:
    """Mean weight each head puts on each relation.

    ``weights``: ``(batch, n_heads, n, n)``. Only queries t >= 2 count (at
    t = 1 the previous token *is* the first token). Returns
    ``{"previous": (n_heads,), "first": (n_heads,)}``: the mean weight on key
    ``t-1`` and on key ``0``.
    """
    n = weights.shape[-1]
    if n < 3:
        raise ValueError(f"need at least 3 positions to tell the relations apart, got {n}.")
    queries = torch.arange(2, n)
    on_previous = weights[..., queries, queries - 1]   # (batch, n_heads, n-2)
    on_first = weights[..., queries, 0]                # (batch, n_heads, n-2)
    return {"previous": on_previous.mean(dim=(0, 2)), "first": on_first.mean(dim=(0, 2))}


@dataclass
class HeadsResult:
    """What one training run measured."""

    n_heads: int
    seed: int
    losses: list = field(default_factory=list)    # training loss (sum of both questions) per step
    held_out_loss: float = float("nan")           # the same loss on fresh sentences
    accuracy_previous: float = float("nan")       # held-out, positions t >= 2
    accuracy_first: float = float("nan")          # held-out, positions t >= 2
    shares: dict = field(default_factory=dict)    # relation -> list of per-head mean weights
    example_tokens: torch.Tensor | None = None    # (n,) one held-out sentence
    example_weights: torch.Tensor | None = None   # (n_heads, n, n) the weights on it
    model: nn.Module | None = None


def train_heads(
    n_heads: int = 2,
    *,
    seed: int = 0,
    d_model: int = 32,
    vocab: int = 8,
    length: int = 10,
    steps: int = 150,
    batch: int = 64,
    lr: float = 0.02,
    eval_batch: int = 256,
    progress=None,
) -> HeadsResult:
    """Train :class:`TinyHeadsModel` with ``n_heads`` heads of total width ``d_model``.

    Returns a :class:`HeadsResult`: loss curve, held-out accuracy on each
    question, each head's relation shares, and one example's weights.
    ``progress`` (optional) is called as ``progress(step, steps)``.
    """
    n_heads = require_positive_int(n_heads, "n_heads")
    steps = require_positive_int(steps, "steps")
    with one_thread():
        torch.manual_seed(seed)
        model = TinyHeadsModel(vocab, length, d_model, n_heads)
        generator = torch.Generator().manual_seed(3_000 + seed)

        def loss_of(tokens):
            loss_previous, loss_first, *_ = _losses(model, tokens)
            return loss_previous + loss_first, None

        losses = fit(model, lambda: sample_sentences(batch, length, vocab, generator), loss_of,
                     steps=steps, lr=lr,
                     on_step=None if progress is None else lambda step, *_: progress(step, steps))
        model.eval()
        held_out = sample_sentences(eval_batch, length, vocab, torch.Generator().manual_seed(4_000 + seed))
        with torch.no_grad():
            held_previous, held_first, previous_logits, first_logits, weights = _losses(model, held_out)
    later = slice(2, None)
    accuracy_previous = (previous_logits[:, later].argmax(-1) == held_out[:, 1:-1]).float().mean().item()
    accuracy_first = (first_logits[:, later].argmax(-1) == held_out[:, :1]).float().mean().item()
    shares = {name: share.tolist() for name, share in relation_shares(weights).items()}
    return HeadsResult(
        n_heads=n_heads,
        seed=seed,
        losses=losses,
        held_out_loss=(held_previous + held_first).item(),
        accuracy_previous=accuracy_previous,
        accuracy_first=accuracy_first,
        shares=shares,
        example_tokens=held_out[0],
        example_weights=weights[0],
        model=model,
    )
