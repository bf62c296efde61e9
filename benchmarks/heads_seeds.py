"""Notebook 05's one-head-against-two experiment on many seeds: what its "three seeds are a small
sample" paragraph rests on.

    .venv/bin/python benchmarks/heads_seeds.py [--seeds 20]

Notebook 05 trains attnviz.toys.heads' model with 2 heads and with 1 (the same width) on seeds 0, 1
and 2 (vocab 8, length 10, 150 steps of 64). This makes the same call on seeds 0 .. S-1 and prints,
per seed and model, the held-out loss, both accuracies and each head's share of weight on the
previous and the first token; then how many seeds the two heads specialised on (each relation owned
by its own head with over 95 % of its weight) and where the one head went (over 95 % on one place,
40-60 % on each, or in between). About 0.7 s of CPU per seed.
"""

from __future__ import annotations

import argparse
import time

import torch

from attnviz.toys import heads as heads_toy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds 0 .. S-1 (default 20)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.process_time()
    specialised, one_place, split, between = [], [], [], []
    print(f"{'seed':>4} {'heads':>5} | {'held-out loss':>13} {'acc prev':>8} {'acc first':>9} | "
          "shares (previous, first)")
    for seed in range(args.seeds):
        for n_heads in (2, 1):
            r = heads_toy.train_heads(n_heads, seed=seed, vocab=8, length=10, steps=150, batch=64)
            shares = "  ".join(f"head {h}: {r.shares['previous'][h]:.3f}, {r.shares['first'][h]:.3f}"
                               for h in range(n_heads))
            print(f"{seed:>4} {n_heads:>5} | {r.held_out_loss:>13.4f} {r.accuracy_previous:>8.3f} "
                  f"{r.accuracy_first:>9.3f} | {shares}", flush=True)
            if n_heads == 2:
                owners = [max(range(2), key=lambda h, rel=rel: r.shares[rel][h])
                          for rel in heads_toy.RELATIONS]
                owned = zip(heads_toy.RELATIONS, owners, strict=True)
                if owners[0] != owners[1] and all(r.shares[rel][h] > 0.95 for rel, h in owned):
                    specialised.append(seed)
            else:
                top = max(r.shares[rel][0] for rel in heads_toy.RELATIONS)
                if top > 0.95:
                    one_place.append((seed, max(heads_toy.RELATIONS, key=lambda rel: r.shares[rel][0])))
                elif all(0.4 < r.shares[rel][0] < 0.6 for rel in heads_toy.RELATIONS):
                    split.append(seed)
                else:
                    between.append(seed)
    n = args.seeds
    print()
    print(f"{n} seeds, {time.process_time() - started:.0f} s of CPU")
    others = sorted(set(range(n)) - set(specialised))
    print(f"two heads specialised on {len(specialised)} of {n}; not on {others}")
    places = sorted({place for _, place in one_place})
    print(f"one head: over 95 % on one place on {len(one_place)} ({[s for s, _ in one_place]}, "
          f"always {places}); "
          f"40-60 % on each on {len(split)} ({split}); in between on {len(between)} ({between})")


if __name__ == "__main__":
    main()
