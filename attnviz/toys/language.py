"""A tiny synthetic language for next-token prediction, and the causal-mask leak.

The language ("pairs"): a sentence is a run of word pairs ``w, partner[w]``.
Each first word is drawn uniformly from the vocabulary; its partner is fixed
by a seeded permutation. So half of the next tokens are predictable (the
partner of the word just read) and the rest are a fair die: no model can do
better than :func:`best_possible_accuracy`.

The model (:class:`TinyNextTokenModel`): token and position embeddings, one
attention layer (single head, optional causal mask), a residual connection
and a linear read-out to the vocabulary. Trained with the causal mask it
learns the language; trained without it, each position can read the token it
is asked to predict, so the training loss collapses, but once the future is
hidden (as it is when generating) the model has learned nothing usable.

Torch only; everything is seeded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from .._validate import require_positive_int
from ..core import causal_mask
from ._training import fit, one_thread

__all__ = [
    "PairsLanguage",
    "TinyNextTokenModel",
    "LeakResult",
    "best_possible_accuracy",
    "loss_floor",
    "train_next_token",
    "accuracy_future_hidden",
    "accuracy_future_visible",
]


@dataclass(frozen=True)
class PairsLanguage:
    """Sentences of ``n_pairs`` pairs ``(w, partner[w])`` over ``vocab`` words.

    ``partner`` is a permutation of ``range(vocab)`` fixed by ``seed``.
    A sentence has ``2 * n_pairs`` tokens.
    """

    vocab: int = 8
    n_pairs: int = 6
    seed: int = 0

    def __post_init__(self):
        require_positive_int(self.vocab, "vocab")
        require_positive_int(self.n_pairs, "n_pairs")
        if self.vocab < 2:
            raise ValueError(f"vocab must be at least 2, got {self.vocab}.")

    @property
    def length(self) -> int:
        return 2 * self.n_pairs

    @property
    def partner(self) -> torch.Tensor:
        """``(vocab,)`` long: the partner of each word."""
        generator = torch.Generator().manual_seed(10_000 + self.seed)
        return torch.randperm(self.vocab, generator=generator)

    def sample(self, batch: int, generator: torch.Generator) -> torch.Tensor:
        """``(batch, length)`` long tokens."""
        batch = require_positive_int(batch, "batch")
        words = torch.randint(self.vocab, (batch, self.n_pairs), generator=generator)
        pairs = torch.stack([words, self.partner[words]], dim=-1)  # (batch, n_pairs, 2)
        return pairs.reshape(batch, self.length)


def best_possible_accuracy(language: PairsLanguage) -> float:
    """The highest next-token accuracy any model can reach with the future hidden.

    Predictions are made at positions ``0 .. length-2`` (target: the next
    token). ``n_pairs`` targets are partners (certain); ``n_pairs - 1`` are
    fresh words (a guess, right with probability ``1/vocab``).
    """
    n_pred = language.length - 1
    return (language.n_pairs + (language.n_pairs - 1) / language.vocab) / n_pred


def loss_floor(language: PairsLanguage) -> float:
    """The lowest mean cross-entropy (nats) reachable with the future hidden."""
    n_pred = language.length - 1
    return (language.n_pairs - 1) * math.log(language.vocab) / n_pred


class TinyNextTokenModel(nn.Module):
    """Embeddings → one single-head attention layer (+ residual) → logits.

    ``forward(tokens)`` takes ``(batch, n)`` long tokens and returns
    ``(batch, n, vocab)`` logits: the prediction at position t is for token
    t+1. With ``causal=True`` position t may attend to keys ``0..t`` only.
    """

    def __init__(self, vocab: int, max_len: int, d_model: int = 32, causal: bool = True):
        super().__init__()
        self.causal = bool(causal)
        self.max_len = require_positive_int(max_len, "max_len")
        self.token_embedding = nn.Embedding(vocab, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.unembedding = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor, return_weights: bool = False):
        n = tokens.shape[-1]
        if n > self.max_len:
            raise ValueError(f"tokens has {n} positions but the model knows only max_len={self.max_len}.")
        x = self.token_embedding(tokens) + self.position_embedding.weight[:n]  # (batch, n, d)
        query, key, value = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])   # (batch, n, n)
        if self.causal:
            scores = scores.masked_fill(~causal_mask(n), float("-inf"))
        weights = scores.softmax(dim=-1)
        logits = self.unembedding(x + weights @ value)                             # (batch, n, vocab)
        return (logits, weights) if return_weights else logits


@dataclass
class LeakResult:
    """What one training run measured."""

    causal: bool
    seed: int
    losses: list = field(default_factory=list)       # training loss per step (future visible if not causal)
    final_loss: float = float("nan")                  # mean of the last 20 steps
    accuracy_future_hidden: float = float("nan")      # as in generation: only the prefix is given
    accuracy_future_visible: float = float("nan")     # the whole sentence given, as in training
    chance: float = float("nan")                      # 1 / vocab
    best_possible: float = float("nan")               # what the language allows
    model: nn.Module | None = None


def accuracy_future_visible(model: nn.Module, tokens: torch.Tensor) -> float:
    """Next-token accuracy when the model reads whole sentences (as in training)."""
    with torch.no_grad():
        logits = model(tokens)
    return (logits[:, :-1].argmax(-1) == tokens[:, 1:]).float().mean().item()


def accuracy_future_hidden(model: nn.Module, tokens: torch.Tensor) -> float:
    """Next-token accuracy when predicting token t+1 from tokens ``0..t`` only.

    The model is run once per prefix, so nothing after position t exists,
    exactly as when generating one token at a time.
    """
    n = tokens.shape[-1]
    correct = 0
    with torch.no_grad():
        for t in range(n - 1):
            logits = model(tokens[:, : t + 1])          # (batch, t+1, vocab)
            correct += (logits[:, -1].argmax(-1) == tokens[:, t + 1]).sum().item()
    return correct / (tokens.shape[0] * (n - 1))


def train_next_token(
    language: PairsLanguage | None = None,
    *,
    causal: bool = True,
    seed: int = 0,
    steps: int = 200,
    batch: int = 64,
    d_model: int = 32,
    lr: float = 0.03,
    eval_batch: int = 256,
    progress=None,
) -> LeakResult:
    """Train :class:`TinyNextTokenModel` on ``language`` with or without the causal mask.

    Seeded by ``seed`` (weights, batches and the held-out sentences). Returns
    a :class:`LeakResult` with the loss curve and both accuracies measured on
    ``eval_batch`` fresh sentences. ``progress`` (optional) is called as
    ``progress(step, steps)``.
    """
    language = language or PairsLanguage()
    steps = require_positive_int(steps, "steps")
    with one_thread():
        return _train(language, causal, seed, steps, batch, d_model, lr, eval_batch, progress)


def _train(language, causal, seed, steps, batch, d_model, lr, eval_batch, progress) -> LeakResult:
    torch.manual_seed(seed)
    model = TinyNextTokenModel(language.vocab, language.length, d_model, causal=causal)
    generator = torch.Generator().manual_seed(1_000 + seed)

    def loss_of(tokens):
        logits = model(tokens)
        return nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, language.vocab), tokens[:, 1:].reshape(-1)), None

    losses = fit(model, lambda: language.sample(batch, generator), loss_of, steps=steps, lr=lr,
                 on_step=None if progress is None else lambda step, *_: progress(step, steps))
    model.eval()
    held_out = language.sample(eval_batch, torch.Generator().manual_seed(2_000 + seed))
    return LeakResult(
        causal=causal,
        seed=seed,
        losses=losses,
        final_loss=sum(losses[-20:]) / len(losses[-20:]),
        accuracy_future_hidden=accuracy_future_hidden(model, held_out),
        accuracy_future_visible=accuracy_future_visible(model, held_out),
        chance=1 / language.vocab,
        best_possible=best_possible_accuracy(language),
        model=model,
    )
