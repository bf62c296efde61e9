"""Trained at one length, tested at longer ones: a one-layer attention model on "repeat the previous token".

Torch only, seeded. The task: at every position ``i >= 1`` predict the token at
position ``i - 1``. Tokens are random, so the only way to do it is to attend
from position ``i`` to position ``i - 1``; that needs to know *where* each
token is, which attention alone cannot tell (it is blind to order). The model
adds a learned position embedding (one learned vector per position, as in
GPT-2) to each token embedding, then runs one causal attention head.

Training uses sequences of ``train_len`` positions only. The position table has
``max_len`` rows so the model *can* be run on longer sequences, but the rows
past ``train_len`` never receive a gradient and keep their random initial
values: what happens there is the measurement.

During training :func:`train` records, at every step, the loss and the mean
attention entropy of the causal rows (nats), the diagnostic the notebook plots.
``score_gain`` multiplies the query and key weights at initialisation: at 8 the
scores start 64 times too large, the softmax is saturated before anything is
learned, and the entropy shows it.

``positions="rotary"`` builds the same model without a position table: queries and
keys are rotated by their position (:func:`attnviz.positions.rotary`), so scores
depend on the offset between query and key, and every position has the same
rule. Rows past ``train_len`` then meet offsets longer than any seen in training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from .._validate import require_positive_int, require_positive_number, require_tensor, shape_str
from ..core import causal_mask, scaled_dot_product_attention
from ..diagnostics import attention_entropy
from ..positions import rotary
from ._training import fit

__all__ = [
    "LengthConfig",
    "PreviousTokenModel",
    "TrainResult",
    "initial_model",
    "make_batch",
    "uniform_entropy",
    "train",
    "accuracy_by_length",
    "accuracy_by_position",
]

IGNORE = -100  # target at position 0: it has no previous token
POSITIONS = ("learned", "rotary")  # a learned table added to the input, or queries and keys rotated


@dataclass(frozen=True)
class LengthConfig:
    """Everything that decides a run. Same config, same numbers."""

    vocab: int = 16
    d_model: int = 32
    train_len: int = 16
    max_len: int = 128
    steps: int = 50
    batch: int = 32
    lr: float = 1e-2
    score_gain: float = 1.0
    seed: int = 0
    positions: str = "learned"
    rope_base: float = 10000.0      # rotary only: pair p turns by rope_base ** (-2p / d_model) per position

    def __post_init__(self):
        for name in ("vocab", "d_model", "train_len", "max_len", "steps", "batch"):
            require_positive_int(getattr(self, name), name)
        require_positive_int(self.seed, "seed", allow_zero=True)
        require_positive_number(self.lr, "lr")
        require_positive_number(self.score_gain, "score_gain")
        if self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {self.positions!r}.")
        if not require_positive_number(self.rope_base, "rope_base") > 1:
            raise ValueError(f"rope_base must be greater than 1, got {self.rope_base:g}.")
        if self.d_model % 2 and self.positions == "rotary":
            raise ValueError(f"d_model must be even for rotary positions (pairs of features), "
                             f"got {self.d_model}.")
        if self.vocab < 2:
            raise ValueError(f"vocab must be at least 2, got {self.vocab}.")
        if self.train_len < 2:
            raise ValueError(
                f"train_len must be at least 2 (a previous token to copy), got {self.train_len}."
            )
        if self.max_len < self.train_len:
            raise ValueError(
                f"max_len={self.max_len} is shorter than train_len={self.train_len}; the position "
                f"table must cover the training length."
            )


def make_batch(batch: int, n: int, vocab: int, generator: torch.Generator | None = None):
    """Random tokens ``(batch, n)`` and targets ``(batch, n)``: ``targets[:, i] = tokens[:, i-1]``.

    ``targets[:, 0]`` is -100 (ignored by ``cross_entropy``): position 0 has no previous token.
    """
    batch = require_positive_int(batch, "batch")
    n = require_positive_int(n, "n")
    vocab = require_positive_int(vocab, "vocab")
    tokens = torch.randint(vocab, (batch, n), generator=generator)
    targets = torch.full((batch, n), IGNORE, dtype=torch.long)
    targets[:, 1:] = tokens[:, :-1]
    return tokens, targets


class PreviousTokenModel(nn.Module):
    """Token embedding + learned position embedding → one causal attention head → vocabulary logits.

    ``forward(tokens)`` with tokens ``(batch, n)``, ``n <= max_len``, returns
    ``(logits, weights)``: logits ``(batch, n, vocab)``, weights ``(batch, n, n)``
    (causal, each row sums to 1). With ``positions="rotary"`` there is no position table
    (``position_embedding`` is None): queries and keys are rotated by their position instead,
    and any length runs.
    """

    def __init__(self, vocab: int, d_model: int, max_len: int, score_gain: float = 1.0,
                 positions: str = "learned", rope_base: float = 10000.0):
        super().__init__()
        if positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {positions!r}.")
        self.max_len = require_positive_int(max_len, "max_len")
        self.positions, self.rope_base = positions, rope_base
        self.token_embedding = nn.Embedding(vocab, d_model)
        learned = positions == "learned"
        self.position_embedding = nn.Embedding(max_len, d_model) if learned else None
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.unembedding = nn.Linear(d_model, vocab)
        with torch.no_grad():
            self.W_q.weight.mul_(score_gain)
            self.W_k.weight.mul_(score_gain)

    def forward(self, tokens):
        require_tensor(tokens, "tokens", 2)
        if tokens.dim() != 2:
            raise ValueError(f"tokens has shape {shape_str(tokens.shape)}; expected (batch, n).")
        n = tokens.shape[1]
        if self.position_embedding is None:                                     # rotary
            x = self.token_embedding(tokens)                                    # (batch, n, d_model)
            base = self.rope_base
            query, key, value = rotary(self.W_q(x), base=base), rotary(self.W_k(x), base=base), self.W_v(x)
        else:
            if n > self.max_len:
                raise ValueError(
                    f"tokens has {n} positions (dimension 1) but the position table has only "
                    f"max_len={self.max_len} rows; this model cannot represent position {n - 1}."
                )
            x = self.token_embedding(tokens) + self.position_embedding.weight[:n]  # (batch, n, d_model)
            query, key, value = self.W_q(x), self.W_k(x), self.W_v(x)        # (batch, n, d_model) each
        heads, weights = scaled_dot_product_attention(query, key, value, causal_mask(n))  # w: (batch, n, n)
        return self.unembedding(heads + x), weights                                # logits (batch, n, vocab)


@dataclass
class TrainResult:
    """A trained model and what was recorded at every training step."""

    config: LengthConfig
    model: PreviousTokenModel
    losses: list = field(default_factory=list)     # cross-entropy per step (nats)
    entropies: list = field(default_factory=list)  # mean entropy of rows 1..n-1 per step (nats)


def uniform_entropy(n: int) -> float:
    """Mean entropy (nats) of causal rows 1..n-1 if every row were uniform: mean of ``log(i + 1)``."""
    n = require_positive_int(n, "n")
    if n < 2:
        raise ValueError("uniform_entropy needs n >= 2 (row 0 always has one key).")
    return sum(math.log(i + 1) for i in range(1, n)) / (n - 1)


def _mean_row_entropy(weights) -> float:
    return attention_entropy(weights.detach())[:, 1:].mean().item()  # row 0 sees one key: entropy 0


def initial_model(config: LengthConfig = LengthConfig()) -> PreviousTokenModel:
    """The untrained model that :func:`train` starts from for ``config`` (same seed, same weights).

    Built inside ``torch.random.fork_rng``, so calling it leaves PyTorch's global random state as it was.
    """
    if not isinstance(config, LengthConfig):
        raise TypeError(f"config must be a LengthConfig, got {type(config).__name__}.")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return PreviousTokenModel(config.vocab, config.d_model, config.max_len, config.score_gain,
                                  config.positions, config.rope_base)


def train(config: LengthConfig = LengthConfig(), progress=None) -> TrainResult:
    """Train on sequences of ``config.train_len`` with Adam; record loss and attention entropy per step.

    Position rows that a step does not use get a zero gradient, so Adam leaves them exactly where
    they started.

    ``progress``, if given, is called as ``progress(step, loss)`` every 25 steps and at the end.
    """
    if not isinstance(config, LengthConfig):
        raise TypeError(f"config must be a LengthConfig, got {type(config).__name__}.")
    data = torch.Generator().manual_seed(config.seed)
    model = initial_model(config)
    result = TrainResult(config=config, model=model)

    def loss_of(batch):
        tokens, targets = batch
        logits, weights = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, config.vocab), targets.reshape(-1), ignore_index=IGNORE)
        return loss, weights

    def on_step(step, loss, batch, weights):
        result.entropies.append(_mean_row_entropy(weights))
        if progress is not None and (step % 25 == 0 or step == config.steps):
            progress(step, loss)

    result.losses = fit(model, lambda: make_batch(config.batch, config.train_len, config.vocab, data),
                        loss_of, steps=config.steps, lr=config.lr, on_step=on_step)
    model.eval()
    return result


def _predictions(model, n, n_sequences, seed):
    vocab = model.token_embedding.num_embeddings
    data = torch.Generator().manual_seed(10_000 + seed)  # evaluation data never seen in training
    tokens, targets = make_batch(n_sequences, n, vocab, data)
    with torch.no_grad():
        logits, _ = model(tokens)
    return (logits.argmax(-1) == targets)[:, 1:].float()  # (n_sequences, n - 1): positions 1..n-1


def accuracy_by_length(model, lengths, n_sequences: int = 256, seed: int = 0) -> dict:
    """``{n: accuracy}``: share of positions 1..n-1 whose previous token is predicted, on fresh data."""
    if not isinstance(model, PreviousTokenModel):
        raise TypeError(f"model must be a PreviousTokenModel, got {type(model).__name__}.")
    result = {}
    for n in lengths:
        n = require_positive_int(n, "n")
        if n < 2:
            raise ValueError(f"each length must be at least 2, got {n}.")
        result[n] = _predictions(model, n, n_sequences, seed).mean().item()
    return result


def accuracy_by_position(model, n: int, n_sequences: int = 256, seed: int = 0) -> torch.Tensor:
    """Accuracy at each position 1..n-1 of length-``n`` sequences: a tensor of ``n - 1`` numbers."""
    if not isinstance(model, PreviousTokenModel):
        raise TypeError(f"model must be a PreviousTokenModel, got {type(model).__name__}.")
    n = require_positive_int(n, "n")
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}.")
    return _predictions(model, n, n_sequences, seed).mean(dim=0)
