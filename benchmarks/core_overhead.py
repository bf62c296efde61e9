"""What the core's checks cost: attnviz.scaled_dot_product_attention against F.scaled_dot_product_attention.

The core checks shapes, dtypes, scale and temperature, and that the scores and v are finite (so an
overflow is an error that says by how much, never a silent NaN). This prints the time per call of
the core and of PyTorch's fused function at a few sizes, from widget-sized to training-sized.

    .venv/bin/python benchmarks/core_overhead.py                      # the installed core
    .venv/bin/python benchmarks/core_overhead.py --baseline /tmp/old  # also a copy of an older attnviz/

``--baseline DIR`` takes a directory holding an ``attnviz/`` package (e.g. made with
``git archive <commit> attnviz | tar -x -C DIR``) and times it in the same run, the repeats
interleaved, so the columns share the machine's load. Times are CPU time (process time, not wall
time: the machine may be shared), the median of several repeats, in µs per call.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
import timeit
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

import attnviz

CASES = [  # (label, leading dims, n, d_k, causal)
    ("widget (1 head, n=8, d_k=16)", (), 8, 16, False),
    ("widget, causal", (), 8, 16, True),
    ("heads (2×4, n=64, d_k=64)", (2, 4), 64, 64, False),
    ("heads, causal", (2, 4), 64, 64, True),
    ("long (1×8, n=512, d_k=64)", (1, 8), 512, 64, True),
]


def load_baseline(directory: str):
    """Import the attnviz package found in ``directory`` under the name ``attnviz_baseline``."""
    init = Path(directory) / "attnviz" / "__init__.py"
    spec = importlib.util.spec_from_file_location("attnviz_baseline", init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["attnviz_baseline"] = module
    spec.loader.exec_module(module)
    return module


def per_call_us(fns: dict, repeats: int = 9) -> dict:
    """Median µs per call of each function, the repeats interleaved so all share the same load."""
    number = max(1, timeit.Timer(next(iter(fns.values())), timer=time.process_time).autorange()[0] // 4)
    samples = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            samples[name].append(timeit.timeit(fn, number=number, timer=time.process_time) / number * 1e6)
    return {name: statistics.median(times) for name, times in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="directory holding an older attnviz/ to time alongside")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cores = {"core": attnviz}
    if args.baseline:
        cores = {"baseline": load_baseline(args.baseline), **cores}

    header = f"{'case':<30}" + "".join(f"{name + ' µs':>14}" for name in cores) + f"{'fused µs':>10}"
    header += "".join(f"{name + '/fused':>15}" for name in cores)
    print(f"PyTorch {torch.__version__}, 1 thread, float32; median CPU time per call")
    print(header)
    print("-" * len(header))
    for label, lead, n, d_k, causal in CASES:
        gen = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(*lead, n, d_k, generator=gen) for _ in range(3))
        mask = attnviz.causal_mask(n) if causal else None
        fns = {name: partial(module.scaled_dot_product_attention, q, k, v, mask)
               for name, module in cores.items()}
        fns["fused"] = partial(F.scaled_dot_product_attention, q, k, v, attn_mask=mask)
        times = per_call_us(fns)
        fused = times.pop("fused")
        row = f"{label:<30}" + "".join(f"{t:>14.1f}" for t in times.values()) + f"{fused:>10.1f}"
        row += "".join(f"{t / fused:>15.2f}" for t in times.values())
        print(row)


if __name__ == "__main__":
    main()
