"""Notebook 03's gradient table (section 3) on many draws: where unscaled rows pass more softmax
gradient than scaled ones, what its "one surprise" paragraph and the asserts under it rest on.

    .venv/bin/python benchmarks/gradient_draws.py [--draws 200]

Draw s (s = 0 .. N-1) is drawn exactly as notebook 03's cell-006 draws its scores, from global seed s
instead of 6 (seed 6 is the notebook's own draw): for each d_k, 256 queries and 16 keys with unit
normal entries, the scores q·k unscaled and divided by √d_k. Each query row's softmax gradient is the
Frobenius norm of its Jacobian (attnviz.softmax_jacobian_norm, which the notebook checks against
autograd). For d_k = 4, 8 and 16 the script counts the draws on which the unscaled rows pass more than
the scaled ones, on the mean over the rows and on the median row. About 1 s of CPU per 20 draws.
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from attnviz import softmax_jacobian_norm

D_KS = [4, 8, 16, 32, 64, 128, 256, 512, 1024]   # notebook 03's widths, drawn in its order
N_QUERIES, N_KEYS = 256, 16
SHOWN = (4, 8, 16)


def draw(seed: int) -> dict:
    """{(d_k, scaled): (mean, median)} for one draw, as cell-006 and cell-012 compute them."""
    torch.manual_seed(seed)
    out = {}
    for d_k in D_KS:
        raw = torch.randn(N_QUERIES, d_k) @ torch.randn(N_KEYS, d_k).T
        for scaled in (True, False):
            per_row = softmax_jacobian_norm(torch.softmax(raw / math.sqrt(d_k) if scaled else raw, -1))
            out[d_k, scaled] = (per_row.mean().item(), per_row.median().item())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    draws = parser.parse_args().draws
    torch.set_num_threads(1)
    start = time.process_time()
    counts = {(d_k, which): 0 for d_k in SHOWN for which in ("mean", "median")}
    for seed in range(draws):
        got = draw(seed)
        for d_k in SHOWN:
            for i, which in enumerate(("mean", "median")):
                counts[d_k, which] += got[d_k, False][i] > got[d_k, True][i]
    print(f"unscaled rows pass more softmax gradient than scaled ones: draws of {draws} (seeds 0 .. "
          f"{draws - 1}; the notebook's is seed 6)")
    print("  d_k   on the mean   on the median row")
    for d_k in SHOWN:
        print(f"{d_k:>5}   {counts[d_k, 'mean']:>11}   {counts[d_k, 'median']:>17}")
    print(f"{time.process_time() - start:.0f} s of CPU")


if __name__ == "__main__":
    main()
