"""Kernel CPU time of every cell over a threshold, per notebook, each run top to bottom in a fresh kernel.

    .venv/bin/python benchmarks/cell_times.py notebooks/07_tiny_gpt.ipynb notebooks/08_*.ipynb
    .venv/bin/python benchmarks/cell_times.py --over 0.2 notebooks/03_why_sqrt_dk.ipynb

The cells are timed as benchmarks/lesson_times.py times them (the kernel process's user + system CPU
from /proc, its waited-for children included, and the wall time around the cell); the table shows
each cell whose CPU time is over ``--over`` seconds (default 0.5) by its cell id and first line, then
the whole notebook's CPU time and the kernel's peak memory (VmHWM). Exits 1 if a notebook takes over
15 s of kernel CPU or 1 GiB, the course's budget for one notebook on Binder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_times import time_cells  # noqa: E402  (benchmarks/ is not a package)

CPU_BUDGET_S, MEMORY_BUDGET_MB = 15.0, 1024


def first_line(cell) -> str:
    lines = [line for line in cell.source.splitlines() if line.strip() and not line.startswith("#")]
    return (lines or [""])[0][:52]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--over", type=float, default=0.5, help="seconds of kernel CPU (default 0.5)")
    args = parser.parse_args(argv)
    over = args.over
    status = 0
    for path in args.notebooks:
        timed = time_cells(path)
        cells = {cell.get("id"): cell for cell in nbformat.read(path, as_version=4).cells}
        print(f"\n{path.name}: cells over {over} s of kernel CPU")
        print(f"{'cell id':<12} {'first line':<54} {'CPU (s)':>8} {'wall (s)':>9}")
        print("-" * 86)
        for cell_id, (cpu, wall) in timed["cells"].items():
            if cpu > over:
                print(f"{cell_id:<12} {first_line(cells[cell_id]):<54} {cpu:>8.2f} {wall:>9.2f}")
        cpu, wall = timed["total"]
        print("-" * 86)
        within = cpu <= CPU_BUDGET_S and timed["peak_mb"] < MEMORY_BUDGET_MB
        print(f"{'whole notebook (Run All)':<67} {cpu:>8.2f} {wall:>9.2f}")
        print(f"peak kernel memory {timed['peak_mb']:.0f} MB; within {CPU_BUDGET_S:.0f} s CPU and 1 GiB: "
              f"{'yes' if within else 'NO'}", flush=True)
        status |= not within
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
