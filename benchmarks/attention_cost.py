"""Time and peak memory of explicit attention against F.scaled_dot_product_attention, over n.

Prints a table (and the fitted log-log slopes): one sequence, one head, d_k = 64, float32, CPU.
Run: ``.venv/bin/python benchmarks/attention_cost.py [--max-n 8192] [--repeats 5] [--clock thread]``

"weights" is the size of one n x n float32 weights matrix, 4 n^2 bytes. Peak allocation is read
from torch.profiler's memory events (PyTorch's CPU allocator; see attnviz/toys/timing.py) and is
deterministic for a given thread count. Times are medians of --repeats runs after one warm-up, by
default in CPU time of the calling thread (--clock thread, valid with --threads 1: time spent waiting
for a busy CPU is not counted); --clock wall gives elapsed time. Either way they are NOT deterministic.
"""

from __future__ import annotations

import argparse
import math
import platform

import torch
import torch.nn.functional as F

from attnviz.toys.timing import aten_ops_called, loglog_slope, median_seconds, peak_allocated_bytes

MiB = 1024**2


def explicit_attention(query, key, value):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (1, 1, n, n)
    weights = torch.softmax(scores, dim=-1)                               # (1, 1, n, n)
    return weights @ value                                                # (1, 1, n, d_k)


def fused_attention(query, key, value):
    return F.scaled_dot_product_attention(query, key, value)


def kernel_name(query):
    for name in aten_ops_called(fused_attention, query, query, query):
        if name.startswith("aten::_scaled_dot_product"):
            return name.removeprefix("aten::_scaled_dot_product_")
    return "?"


def case_table(n, d_k):
    """Which kernel scaled_dot_product_attention picks, and what it allocates, for common call shapes."""
    torch.manual_seed(0)
    query, key, value = (torch.randn(1, 1, n, d_k) for _ in range(3))
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    cases = {
        "4-D (batch, heads, n, d_k)": (query, key, value, {}),
        "is_causal=True": (query, key, value, {"is_causal": True}),
        "bool attn_mask (n x n)": (query, key, value, {"attn_mask": causal}),
        "dropout_p=0.1": (query, key, value, {"dropout_p": 0.1}),
        "3-D (batch, n, d_k)": (query[0], key[0], value[0], {}),
        "float64": (query.double(), key.double(), value.double(), {}),
        "bfloat16": (query.bfloat16(), key.bfloat16(), value.bfloat16(), {}),
    }
    weights_bytes = 4 * n * n
    print(f"\nF.scaled_dot_product_attention at n={n}, d_k={d_k}: kernel and peak allocation by call shape "
          f"(x weights = peak / {weights_bytes / MiB:.0f} MiB)")
    print(f"{'call':<28} {'kernel':<34} {'peak MiB':>9} {'x weights':>10}")
    for label, (q, k, v, kwargs) in cases.items():
        ops = aten_ops_called(F.scaled_dot_product_attention, q, k, v, **kwargs)
        kernel = next((o.removeprefix("aten::_scaled_dot_product_") for o in ops
                       if o.startswith("aten::_scaled_dot_product")), "?")
        peak = peak_allocated_bytes(F.scaled_dot_product_attention, q, k, v, **kwargs)
        print(f"{label:<28} {kernel:<34} {peak / MiB:>9.2f} {peak / weights_bytes:>10.3f}")

    print(f"\nforward + backward (training step) at n={n}: peak allocation")
    for label, fn in (("explicit", explicit_attention), ("fused", fused_attention)):
        q, k, v = (t.clone().requires_grad_() for t in (query, key, value))

        def step(fn=fn, q=q, k=k, v=v):
            fn(q, k, v).sum().backward()

        peak = peak_allocated_bytes(step)
        print(f"{label:<28} {peak / MiB:>9.2f} MiB {peak / weights_bytes:>10.3f} x weights")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-n", type=int, default=128)
    parser.add_argument("--max-n", type=int, default=8192)
    parser.add_argument("--d-k", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("thread", "wall"), default="thread")
    args = parser.parse_args()
    if args.clock == "thread" and args.threads != 1:
        parser.error("--clock thread counts one thread's CPU time; use it with --threads 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    print(f"torch {torch.__version__}, {platform.machine()}, {torch.get_num_threads()} thread(s), "
          f"d_k={args.d_k}, float32, batch 1, 1 head, {args.clock} clock, median of {args.repeats}")
    header = (f"{'n':>6} {'weights MiB':>12} {'explicit peak MiB':>18} {'x weights':>10} "
              f"{'fused peak MiB':>15} {'x weights':>10} {'explicit ms':>12} {'fused ms':>9} "
              f"{'speed-up':>9}  fused kernel")
    print(header)
    print("-" * len(header))
    rows = []
    n = args.min_n
    while n <= args.max_n:
        query, key, value = (torch.randn(1, 1, n, args.d_k) for _ in range(3))
        weights_bytes = 4 * n * n
        peak_explicit = peak_allocated_bytes(explicit_attention, query, key, value)
        peak_fused = peak_allocated_bytes(fused_attention, query, key, value)
        repeats = args.repeats if n <= 4096 else max(1, args.repeats // 2)
        timing = {"repeats": repeats, "clock": args.clock}
        time_explicit = median_seconds(explicit_attention, query, key, value, **timing)
        time_fused = median_seconds(fused_attention, query, key, value, **timing)
        rows.append((n, peak_explicit, peak_fused, time_explicit, time_fused))
        print(f"{n:>6} {weights_bytes / MiB:>12.2f} {peak_explicit / MiB:>18.2f} "
              f"{peak_explicit / weights_bytes:>10.2f} {peak_fused / MiB:>15.2f} "
              f"{peak_fused / weights_bytes:>10.3f} {time_explicit * 1e3:>12.2f} {time_fused * 1e3:>9.2f} "
              f"{time_explicit / time_fused:>8.1f}x  {kernel_name(query)}", flush=True)
        n *= 2

    big = [row for row in rows if row[0] >= 512] or rows
    ns = [row[0] for row in big]
    print(f"\nlog-log slopes over n = {ns[0]}..{ns[-1]} (2 = quadratic, 1 = linear):")
    for label, column in (("explicit peak", 1), ("fused peak", 2), ("explicit time", 3), ("fused time", 4)):
        print(f"  {label:<14} {loglog_slope(ns, [row[column] for row in big]):.2f}")
    case_table(min(2048, args.max_n), args.d_k)


if __name__ == "__main__":
    main()
