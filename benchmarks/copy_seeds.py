"""Notebook 08's copy model on many seeds: what its bands and its grouped-query sentences rest on.

    .venv/bin/python benchmarks/copy_seeds.py [--seeds 40]

Notebook 08 trains the tiny copy model (attnviz.toys.copy.train_copy) on seeds 0, 1 and 2, with 4
key/value heads and with 2 (grouped-query attention). This trains both on seeds 0 .. S-1 with the
notebook's own functions and prints one row per seed and a summary of the numbers the notebook
quotes: the first half's loss against chance (log 16), the loss against the expected floor, the
repeat loss and greedy accuracy of both models, and the accuracy of generation with the is_causal
pitfall (a top-left mask on every cached step) against what chance predicts (1/8 + 7/8 * 1/16).
About 1 s of CPU per seed.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from attnviz.check.decoding import DECODING_BUGS
from attnviz.toys import copy as copy_toy

VOCAB, HALF = 16, 8


def greedy_with_step(step, model, prompt, steps):
    """Greedy generation with a decoding step (here: the is_causal pitfall from attnviz.zoo)."""
    with torch.no_grad():
        logits, cache = step(model, prompt, None)
        tokens = prompt
        for _ in range(steps):
            new = logits[:, -1].argmax(dim=-1, keepdim=True)
            tokens = torch.cat([tokens, new], dim=1)
            logits, cache = step(model, new, cache)
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="seeds 0 .. S-1 (default 40)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.process_time()
    chance, floor = copy_toy.chance_loss(VOCAB), copy_toy.loss_floor(VOCAB, HALF)
    pitfall_chance = 1 / HALF + (HALF - 1) / HALF / VOCAB
    rows = []
    print(f"{'seed':>4} | {'1st half - log 16':>17} {'loss - floor':>12} {'repeat loss':>11} {'accuracy':>8} "
          f"{'pitfall':>7} | {'GQA repeat loss':>15} {'GQA accuracy':>12}")
    for seed in range(args.seeds):
        full = copy_toy.train_copy(seed=seed)
        accuracy = copy_toy.copy_accuracy(full.model, full.eval_tokens)
        pitfall = copy_toy.copy_accuracy(full.model, full.eval_tokens, greedy_with_step(
            DECODING_BUGS["is_causal_top_left"], full.model, full.eval_tokens[:, :HALF], HALF))
        gqa = copy_toy.train_copy(seed=seed, n_kv_heads=2)
        row = dict(first_half=full.first_half_loss - chance, over_floor=full.loss - floor,
                   repeat=full.repeat_loss,
                   accuracy=accuracy, pitfall=pitfall, gqa_repeat=gqa.repeat_loss,
                   gqa_accuracy=copy_toy.copy_accuracy(gqa.model, gqa.eval_tokens))
        rows.append(row)
        print(f"{seed:>4} | {row['first_half']:>+17.3f} {row['over_floor']:>+12.3f} {row['repeat']:>11.4f} "
              f"{row['accuracy']:>8.3f} {row['pitfall']:>7.3f} | {row['gqa_repeat']:>15.4f} "
              f"{row['gqa_accuracy']:>12.3f}", flush=True)
    n = len(rows)
    higher = sum(r["gqa_repeat"] > r["repeat"] for r in rows)
    print()
    print(f"{n} seeds, {time.process_time() - started:.0f} s of CPU")
    print(f"first half's loss minus log 16: {min(r['first_half'] for r in rows):+.3f} to "
          f"{max(r['first_half'] for r in rows):+.3f}")
    print(f"loss minus the expected floor: {min(r['over_floor'] for r in rows):+.3f} to "
          f"{max(r['over_floor'] for r in rows):+.3f}")
    print(f"full model: repeat loss at most {max(r['repeat'] for r in rows):.4f}, accuracy at least "
          f"{min(r['accuracy'] for r in rows):.3f}")
    low, high = min(r['pitfall'] for r in rows), max(r['pitfall'] for r in rows)
    print(f"is_causal pitfall: accuracy {low:.3f} to {high:.3f}"
          f" (chance predicts {pitfall_chance:.3f}); at most "
          f"{max(abs(r['pitfall'] - pitfall_chance) for r in rows) * 100:.1f} points from it")
    ratios = [r["gqa_repeat"] / r["repeat"] for r in rows]
    print(f"grouped-query model: repeat loss higher than the full model's on {higher} of {n} seeds, median "
          f"ratio {statistics.median(ratios):.2f}, over 10x on {sum(q > 10 for q in ratios)}; accuracy at "
          f"least {min(r['gqa_accuracy'] for r in rows):.3f}")


if __name__ == "__main__":
    main()
