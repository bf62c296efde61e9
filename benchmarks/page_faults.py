"""Where a no-cache token's CPU time goes in notebook 08's timing model: user time, system time and
page faults of one forward pass, at each context length.

    .venv/bin/python benchmarks/page_faults.py [--calls 20]

Notebook 08 (section 2) times one forward pass of an untrained TinyGPT (d_model 64, 4 heads, 2
layers) over n positions, for n = 32 to 512, round after round, with the calling thread's CPU clock,
which counts the time the operating system spends on the thread as well as the thread's own. Here
the same calls run in the same order, ``--calls`` rounds, and each n's calls are summed: the
thread's user and system time (``getrusage(RUSAGE_THREAD)``, which counts in clock ticks, so one
call alone is too short to read) and its minor page faults (the operating system handing the process
fresh memory: a fault maps a page, and its setting up is system time). Linux only (RUSAGE_THREAD).
The last column: the factor of user + system time over the previous n.

Run with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (as `make test` runs the notebooks) for malloc's heap
in huge pages: fewer, larger faults.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys

import torch

from attnviz.gpt import TinyGPT

CONTEXTS = (32, 64, 128, 256, 512)


def _usage() -> tuple[float, float, int]:
    used = resource.getrusage(resource.RUSAGE_THREAD)
    return used.ru_utime, used.ru_stime, used.ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20, help="rounds; each times every n once (default 20)")
    args = parser.parse_args()
    if not hasattr(resource, "RUSAGE_THREAD"):
        sys.exit("page_faults.py needs getrusage(RUSAGE_THREAD): Linux only")
    torch.set_num_threads(1)
    torch.manual_seed(1)                       # notebook 08's timing model
    model = TinyGPT(vocab_size=16, d_model=64, n_heads=4, n_layers=2, max_len=512).eval()
    text = torch.randint(16, (1, max(CONTEXTS)))
    totals = {n: [0.0, 0.0, 0] for n in CONTEXTS}
    with torch.no_grad():
        for n in CONTEXTS:                     # one warm-up call each, as the notebook's earlier cells give
            model(text[:, :n])
        for _ in range(args.calls):
            for n in CONTEXTS:
                before = _usage()
                model(text[:, :n])
                after = _usage()
                for i in range(3):
                    totals[n][i] += after[i] - before[i]
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    print(f"{args.calls} calls at each n, one thread; GLIBC_TUNABLES={tunables!r}")
    print(f"{'n':>5} {'user ms/call':>13} {'system ms/call':>15} {'faults/call':>12} {'factor':>7}")
    previous = None
    for n in CONTEXTS:
        user, system, faults = totals[n]
        both = (user + system) / args.calls
        factor = f"{both / previous:7.1f}" if previous else f"{'':>7}"
        print(f"{n:>5} {user / args.calls * 1e3:13.2f} {system / args.calls * 1e3:15.2f} "
              f"{faults / args.calls:12.0f} {factor}")
        previous = both


if __name__ == "__main__":
    main()
