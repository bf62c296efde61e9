"""Kernel CPU time, wall time and memory of the cells each 60-minute lesson in docs/lessons/ runs.

    .venv/bin/python benchmarks/lesson_times.py                  # every lesson, a class of 30
    .venv/bin/python benchmarks/lesson_times.py 2 --students 24  # lesson 2 only, a class of 24

A lesson plan says which notebooks the class opens and which cells the teacher runs in front of the
room. Each of those notebooks runs here top to bottom in a fresh kernel, as *Run All* does (later
cells need earlier ones), and every cell is timed twice: the kernel process's CPU time (user +
system, from /proc, its waited-for children included) and the wall time around the cell. The table
prints, per notebook, the whole Run All (what each learner's kernel costs when the class opens the
notebook) with the kernel's peak memory (VmHWM from /proc), then each cell the plan shows live, then
the lesson's totals: per learner, and for a class (``--students``, default 30) whose every learner
runs the lesson's notebooks, either one kernel at a time (the last one shut down before the next is
opened) or with every kernel kept open. A busy machine inflates the wall times far more than the
CPU times; compare CPU times between machines. On a hub each learner also has a server process of
their own besides the kernels; this benchmark does not measure that.

The cells are named by their cell id (stable when cells are added around them) and checked before
anything runs: a plan naming a cell that no longer exists is an error that names it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent

# lesson number -> (title, {notebook stem: [(cell id, what the plan shows with it), ...]})
LESSONS = {
    1: ("01-03: the soft lookup, six lines, why divide by sqrt(d_k)", {
        "01_soft_lookup": [
            ("cell-007", "the four animals' scores and weights"),
            ("cell-010", "the temperature sweep"),
            ("cell-011d", "the finer sweep: which key gains weight first"),
            ("cell-017", "lookup explorer"),
        ],
        "02_scaled_dot_product_attention": [
            ("cell-003", "X to Q, K, V with shapes"),
            ("cell-017", "the six lines"),
            ("cell-019", "against PyTorch's fused function"),
            ("cell-023", "masking after the softmax: rows no longer sum to 1"),
            ("cell-038", "check_attention on the learner's code"),
        ],
        "03_why_sqrt_dk": [
            ("cell-003", "std of q.k against sqrt(d_k)"),
            ("cell-006", "largest weight and entropy against d_k"),
            ("cell-012", "the softmax's gradient against d_k"),
            ("cell-025", "saturation explorer"),
        ],
    }),
    2: ("04-05: masks and multi-head attention", {
        "04_masking": [
            ("cell-007", "the padding bug"),
            ("cell-009", "the padding mask fixes it"),
            ("cell-021", "the leak, trained live (3 seeds x 2 runs)"),
            ("cell-022", "its loss chart"),
            ("cell-036", "the inverted causal mask: NaN gradient"),
            ("cell-045", "-1e9 in float16: -inf (additive mask, where)"),
            ("cell-053", "mask explorer"),
            ("cell-058", "check_causal_mask on the learner's code"),
        ],
        "05_multi_head": [
            ("cell-003", "split, attend, merge, with shapes"),
            ("cell-012", "the missing transpose leaks the future"),
            ("cell-016", "the cost table"),
            ("cell-021", "heads specialise, trained live (3 seeds x 2 models)"),
            ("cell-023", "head explorer"),
            ("cell-026", "one head against two, per seed"),
        ],
    }),
    3: ("06-07: what attention costs, then the induction heads of a tiny GPT", {
        "06_cost_and_fused": [
            ("cell-011", "time and peak memory against n"),
            ("cell-013", "the memory chart and slopes"),
            ("cell-016", "the time chart"),
            ("cell-019", "which kernel each call picks"),
            ("cell-022", "the KV cache of LLaMA-2 7B's shape"),
            ("cell-028", "KV cache calculator"),
            ("cell-031", "entropy as a diagnostic, trained live (3 seeds x 2 runs)"),
            ("cell-032", "the entropy chart"),
        ],
        "07_tiny_gpt": [
            ("cell-003", "the forward pass written out, with shapes"),
            ("cell-007", "three sequences of random periods"),
            ("cell-009", "the induction model, trained live (3 seeds)"),
            ("cell-011", "head explorer on seed 0's model"),
            ("cell-013", "what the explorer shows, checked"),
            ("cell-015", "previous-token and induction scores"),
            ("cell-016", "which head is which, per seed"),
            ("cell-021", "the knockout table (3 seeds)"),
            ("cell-030", "the phase change chart (and 1 layer, trained)"),
            ("cell-031", "the halfway steps, per seed"),
            ("cell-033", "the engineer's report"),
        ],
    }),
    4: ("08: generation with a KV cache, and the decode_step exercise", {
        "08_generation_kv_cache": [
            ("cell-003", "the repeat model, trained live (3 seeds)"),
            ("cell-004", "its loss chart with the floor"),
            ("cell-011", "one cached step by hand"),
            ("cell-012", "the same tokens with and without the cache"),
            ("cell-013", "the cache's bytes against kv_cache_bytes"),
            ("cell-015", "time per token, with and without the cache"),
            ("cell-016", "its chart with fitted slopes"),
            ("cell-019", "is_causal=True on one new query"),
            ("cell-021", "what that does to generation (3 seeds)"),
            ("cell-023", "several new queries: the bottom-right mask"),
            ("cell-036", "check_decoding_step on the learner's code"),
            ("cell-025", "the leak on the exact repeat (3 seeds)"),
            ("cell-027", "the leak with 30% corrupted (3 seeds x 2)"),
            ("cell-030", "grouped-query attention (3 seeds)"),
            ("cell-031", "its cache: half the bytes"),
            ("cell-033", "the engineer's report"),
        ],
    }),
}


def _peak_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process and of its children it has waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")


def check_plans(lessons=LESSONS) -> list[str]:
    """Plain-words problems with the plans: missing notebooks or cell ids, and a row that says it
    times an explorer (or the calculator) at a cell that does not draw one."""
    problems = []
    for number, (_, notebooks) in lessons.items():
        for stem, cells in notebooks.items():
            path = REPO / "notebooks" / f"{stem}.ipynb"
            if not path.exists():
                problems.append(f"lesson {number}: no notebook {path.name}")
                continue
            sources = {cell.get("id"): "".join(cell["source"])
                       for cell in json.loads(path.read_text())["cells"]}
            for cell_id, what in cells:
                if cell_id not in sources:
                    problems.append(f"lesson {number}: {path.name} has no cell {cell_id!r} ({what})")
                elif (re.fullmatch(r"[\w ]*(explorer|calculator)( on .*)?", what)
                      and "_explorer(" not in sources[cell_id]):
                    problems.append(f"lesson {number}: {path.name}'s {cell_id} draws no explorer, "
                                    f"but the plan times it as the {what}")
    return problems


def time_cells(path: Path, timeout: int = 600) -> dict:
    """Run `path` top to bottom in a fresh kernel; CPU and wall seconds per cell id, and in total."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    per_cell = {}
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        start_cpu, start_wall = _cpu_seconds(pid), time.monotonic()
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            cpu, wall = _cpu_seconds(pid), time.monotonic()
            client.execute_cell(cell, index)
            per_cell[cell.get("id")] = (_cpu_seconds(pid) - cpu, time.monotonic() - wall)
        total = (_cpu_seconds(pid) - start_cpu, time.monotonic() - start_wall)
        peak = _peak_mb(pid)
    return {"cells": per_cell, "total": total, "peak_mb": peak}


def main(argv: list[str]) -> int:
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    students = 30
    if "--students" in argv:
        at = argv.index("--students")
        students = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    problems = check_plans()
    if problems:
        print("\n".join(problems))
        return 1
    wanted = [int(a) for a in argv] or sorted(LESSONS)
    for number in wanted:
        title, notebooks = LESSONS[number]
        print(f"\nLesson {number}: {title}")
        print(f"{'notebook / cell':<58} {'CPU (s)':>8} {'wall (s)':>9} {'peak MB':>8}")
        print("-" * 86)
        run_all, live, peaks = [0.0, 0.0], [0.0, 0.0], []
        for stem, cells in notebooks.items():
            timed = time_cells(REPO / "notebooks" / f"{stem}.ipynb")
            cpu, wall = timed["total"]
            run_all[0] += cpu
            run_all[1] += wall
            peaks.append(timed["peak_mb"])
            print(f"{stem + ': Run All (every cell)':<58} {cpu:>8.1f} {wall:>9.1f} {peaks[-1]:>8.0f}",
                  flush=True)
            for cell_id, what in cells:
                cpu, wall = timed["cells"][cell_id]
                live[0] += cpu
                live[1] += wall
                print(f"  {cell_id:<10} {what[:44]:<44} {cpu:>8.2f} {wall:>9.2f}", flush=True)
        print("-" * 86)
        print(f"{'per learner: Run All of the lesson notebooks':<58} {run_all[0]:>8.1f} {run_all[1]:>9.1f}")
        print(f"{'per learner: the cells run live':<58} {live[0]:>8.1f} {live[1]:>9.1f}")
        print(f"per learner, kernel memory: {max(peaks):.0f} MB one kernel at a time, "
              f"{sum(peaks):.0f} MB with every kernel kept open")
        print(f"a class of {students}: {students * run_all[0]:.0f} CPU seconds for everyone's Run All; "
              f"kernel memory {students * max(peaks) / 1024:.1f} GB one kernel at a time, "
              f"{students * sum(peaks) / 1024:.1f} GB with every kernel kept open", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
