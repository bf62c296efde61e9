"""Notebook 04's leak experiment on many seeds: what its margins and its "seed 2 is the exception" rest on.

    .venv/bin/python benchmarks/leak_seeds.py [--languages 4] [--seeds 20]

Notebook 04 trains the tiny next-token model with and without a causal mask on training seeds 0, 1
and 2 of one language (PairsLanguage(vocab=8, n_pairs=6, seed=0)). This trains the same pair on
training seeds 0 .. S-1 for each of language seeds 0 .. L-1, with the notebook's own function
(attnviz.toys.language.train_next_token), and prints one row per run and a summary of the numbers
the notebook's assertions and text quote: the leaky model's training loss and accuracies, the masked
model's distance from the loss floor, and how far the leaky model lands from chance with the future
hidden. About 0.5 s of CPU per run (160 runs by default: about 70 s of CPU).
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from attnviz.toys import language


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", type=int, default=4, help="language seeds 0 .. L-1 (default 4)")
    parser.add_argument("--seeds", type=int, default=20, help="training seeds 0 .. S-1 (default 20)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.process_time()
    rows = []
    print(f"{'lang':>4} {'seed':>4} | {'leaky loss':>10} {'visible':>7} {'hidden':>7} {'from chance':>11} "
          f"| {'masked loss - floor':>19} {'hidden':>7}")
    for lang_seed in range(args.languages):
        lang = language.PairsLanguage(vocab=8, n_pairs=6, seed=lang_seed)
        best, floor, chance = language.best_possible_accuracy(lang), language.loss_floor(lang), 1 / lang.vocab
        for seed in range(args.seeds):
            leaky = language.train_next_token(lang, causal=False, seed=seed)
            masked = language.train_next_token(lang, causal=True, seed=seed)
            row = dict(lang=lang_seed, seed=seed, leaky_loss=leaky.final_loss,
                       visible=leaky.accuracy_future_visible, hidden=leaky.accuracy_future_hidden,
                       from_chance=leaky.accuracy_future_hidden - chance,
                       below_best=best - leaky.accuracy_future_hidden,
                       masked_over_floor=masked.final_loss - floor,
                       masked_below_best=best - masked.accuracy_future_hidden)
            rows.append(row)
            print(f"{lang_seed:>4} {seed:>4} | {row['leaky_loss']:>10.3f} {row['visible']:>7.3f} "
                  f"{row['hidden']:>7.3f} "
                  f"{row['from_chance']:>+11.3f} | {row['masked_over_floor']:>+19.3f} "
                  f"{masked.accuracy_future_hidden:>7.3f}", flush=True)
    n = len(rows)
    near = sum(abs(r["from_chance"]) < 0.05 for r in rows)
    print()
    print(f"{n} runs ({args.languages} languages x {args.seeds} training seeds), "
          f"{time.process_time() - started:.0f} s of CPU")
    print(f"leaky training loss: max {max(r['leaky_loss'] for r in rows):.3f}; below 0.1 in "
          f"{sum(r['leaky_loss'] < 0.1 for r in rows)} of {n}")
    print(f"leaky accuracy, future visible: min {min(r['visible'] for r in rows):.3f}; above 0.95 in "
          f"{sum(r['visible'] > 0.95 for r in rows)} of {n}")
    print(f"leaky accuracy, future hidden: at least {min(r['below_best'] for r in rows):.3f} below the best "
          f"possible")
    print(f"leaky, future hidden, within 0.05 of chance: {near} of {n}; above it by more: {n - near}, the "
          f"highest {max(r['from_chance'] for r in rows):+.3f}")
    over, below = max(r["masked_over_floor"] for r in rows), max(r["masked_below_best"] for r in rows)
    print(f"masked training loss: at most {over:+.3f} from the floor; masked accuracy, future hidden: at "
          f"most {below:.3f} below the best")
    assert not math.isnan(sum(r["leaky_loss"] for r in rows))


if __name__ == "__main__":
    main()
