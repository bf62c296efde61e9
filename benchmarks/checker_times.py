"""Checker times: correct code, buggy code and a timed-out call, per checker (target: < 2 s on correct code).

Run: .venv/bin/python benchmarks/checker_times.py
"""

import time

import torch

import attnviz
from attnviz import zoo
from attnviz.check import check_attention, check_causal_mask, check_multi_head, check_padding_mask


def _seconds(check, fn, **kwargs):
    start = time.perf_counter()
    check(fn, **kwargs)
    return time.perf_counter() - start


def _stuck(*args, **kwargs):
    return sum(range(10 ** 12))


ROWS = [
    ("check_attention", check_attention,
     lambda q, k, v, mask=None: attnviz.scaled_dot_product_attention(q, k, v, mask), zoo.mask_inverted),
    ("check_multi_head", check_multi_head, attnviz.MultiHeadAttention, zoo.MULTI_HEAD_BUGS["heads_averaged"]),
    ("check_causal_mask", check_causal_mask, lambda n: torch.ones(n, n, dtype=torch.bool).tril(),
     zoo.causal_future_visible),
    ("check_padding_mask", check_padding_mask, attnviz.padding_mask, zoo.padding_masks_queries),
]

if __name__ == "__main__":
    print("| checker | first call (builds its cache), correct | correct | buggy | timeout (limit 1 s) |")
    print("|---|---|---|---|---|")
    for name, check, right, wrong in ROWS:
        first = _seconds(check, right)
        again = min(_seconds(check, right) for _ in range(3))
        buggy = min(_seconds(check, wrong) for _ in range(3))
        stuck = _seconds(check, _stuck, time_limit=1.0)
        print(f"| {name} | {first:.2f} s | {again:.3f} s | {buggy:.3f} s | {stuck:.2f} s |")
