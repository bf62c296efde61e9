"""What a class costs a JupyterHub: each student's kernel memory and CPU per notebook, the hub's own.

    .venv/bin/python benchmarks/hub_sizing.py [--students 30]           # plays a class on a real hub
    .venv/bin/python benchmarks/hub_sizing.py --from [FILE] [--students 30]

The first form plays the class of tests/test_hub.py (a teacher and three students on a real
JupyterHub with real accounts, in headless Chromium; needs root, Chromium and `npm ci`) and prints
the table; ``--from`` prints it from the measurements the hub test wrote last
(benchmarks/results/hub_sizing.json by default).

Memory: a kernel's peak is its own VmHWM (the exact high-water mark, read from /proc while it runs);
"with children" adds the processes it forked (the checkers run learner code in a forked child),
summed at one sample (every 0.25 s). Resident sizes count the shared libraries (torch's among them)
in every process, so a sum of peaks is an upper bound; "the class at once, PSS" is the measured
peak of the proportional set sizes of every process of the three students together, where a
page shared by several processes is split between them. CPU: user + system seconds of each kernel
(with the children it waited for) from Run All to the moved control, which a busy machine inflates
less than the wall time. The 30-student sizing scales the per-student numbers: memory if every
student has both notebooks' kernels running at once (JupyterLab leaves a kernel running when its
tab closes), and CPU-seconds per student per notebook (the cores needed if a whole class presses
Run All within the same minute).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
RESULTS = REPO / "benchmarks" / "results" / "hub_sizing.json"
GB = 1024


def _students(result: dict) -> list[str]:
    return sorted({entry["student"] for entry in result["notebooks"].values()})


def _notebooks(result: dict) -> list[str]:
    return sorted({entry["notebook"] for entry in result["notebooks"].values()})


def _peak(result: dict, owner: str, kind: str) -> tuple[float, float]:
    found = [p for p in result["processes"] if p["owner"] == owner and p["kind"] == kind]
    return max((p["peak_rss_mb"] for p in found), default=0.0), sum(p["cpu_s"] for p in found)


def sizing(result: dict, students: int = 30) -> dict:
    """Per-student numbers, and what ``students`` of them need at once."""
    per_student = {}
    for role in _students(result):
        kernels = [e for e in result["notebooks"].values() if e["student"] == role]
        server, server_cpu = _peak(result, role, "server")
        per_student[role] = {"server_mb": server, "server_cpu_s": server_cpu,
                             "kernels_mb": sum(e["kernel_tree_peak_mb"] for e in kernels),
                             "largest_kernel_mb": max(e["kernel_tree_peak_mb"] for e in kernels)}
    worst = max(per_student.values(), key=lambda s: s["server_mb"] + s["kernels_mb"])
    hub_mb = _peak(result, "hub", "hub")[0] + _peak(result, "hub", "proxy")[0]
    cpu = {nb: max(e["kernel_cpu_s"] for e in result["notebooks"].values() if e["notebook"] == nb)
           for nb in _notebooks(result)}
    n = len(per_student)
    return {
        "students": students,
        "per_student": per_student,
        "all_kernels_mb": students * (worst["server_mb"] + worst["kernels_mb"]) + hub_mb,
        "one_kernel_mb": students * (worst["server_mb"] + worst["largest_kernel_mb"]) + hub_mb,
        "measured_pss_per_student_mb": result["totals"]["peak_students_pss_mb"] / n,
        "pss_mb": students * result["totals"]["peak_students_pss_mb"] / n + hub_mb,
        "hub_mb": hub_mb,
        "cpu_per_student_s": cpu,
        "cores_for_a_minute": {nb: students * s / 60 for nb, s in cpu.items()},
    }


def table(result: dict, students: int = 30) -> str:
    lines = ["Each student's kernel, per notebook (Run All, then one control moved; three students at once)",
             f"{'student':<10} {'notebook':<22} {'peak RSS (MB)':>13} {'with children':>13} {'CPU (s)':>8}",
             "-" * 70]
    for key in sorted(result["notebooks"]):
        e = result["notebooks"][key]
        lines.append(f"{e['student']:<10} {e['notebook']:<22} {e['kernel_hwm_mb']:>13.0f} "
                     f"{e['kernel_tree_peak_mb']:>13.0f} {e['kernel_cpu_s']:>8.1f}")
    size = sizing(result, students)
    lines += ["", "Each student's Jupyter server and their other processes (terminals, nbgrader, git, and",
              "the `yarn config` JupyterLab runs on a page load when node is on the PATH), whole session",
              f"{'student':<10} {'server peak RSS (MB)':>20} {'server CPU (s)':>14} {'others CPU (s)':>14}",
              "-" * 61]
    for role, s in size["per_student"].items():
        others = sum(p["cpu_s"] for p in result["processes"] if p["owner"] == role and p["kind"] == "other")
        lines.append(f"{role:<10} {s['server_mb']:>20.0f} {s['server_cpu_s']:>14.1f} {others:>14.1f}")
    lines += ["", "The hub's own processes (the whole session)", f"{'process':<28} {'peak RSS (MB)':>13} "
              f"{'CPU (s)':>8}", "-" * 51]
    for kind, label in (("hub", "jupyterhub"), ("proxy", "configurable-http-proxy")):
        peak, cpu = _peak(result, "hub", kind)
        lines.append(f"{label:<28} {peak:>13.0f} {cpu:>8.1f}")
    teacher = [p for p in result["processes"] if p["owner"] == "teacher"]
    teacher_peak = max((p["peak_tree_mb"] for p in teacher), default=0)
    teacher_cpu = sum(p["cpu_s"] for p in teacher)
    lines.append(f"{'the teacher (incl. grading)':<28} {teacher_peak:>13.0f} {teacher_cpu:>8.1f}")
    totals = result["totals"]
    rss, pss = totals["peak_all_rss_mb"], totals["peak_all_pss_mb"]
    students_pss, samples = totals["peak_students_pss_mb"], totals["samples"]
    lines += ["", f"Measured at once, every process of the class: peak RSS sum {rss:.0f} MB, "
              f"PSS {pss:.0f} MB;", f"  the three students' PSS {students_pss:.0f} MB ({samples} samples)",
              "", f"Sizing for {students} students (worst measured student; hub and proxy added once)"]
    rows = [("both notebooks' kernels running (sum of RSS peaks)", size["all_kernels_mb"]),
            ("one kernel at a time (sum of RSS peaks)", size["one_kernel_mb"]),
            (f"measured PSS, {size['measured_pss_per_student_mb']:.0f} MB a student", size["pss_mb"])]
    lines += [f"  memory, {label + ':':<52} {mb / GB:5.1f} GB" for label, mb in rows]
    for nb, s in size["cpu_per_student_s"].items():
        lines.append(f"  CPU, {nb}: {s:.1f} s a student; {students * s:.0f} core-seconds for the class, "
                     f"{size['cores_for_a_minute'][nb]:.1f} cores if all press Run All in the same minute")
    steps = ", ".join(f"{name.split(':')[0]} {seconds}" for name, seconds in result["steps"].items())
    lines += ["", f"Steps (wall seconds): {steps}"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="source", nargs="?", const=str(RESULTS), default=None,
                        help="print from the hub test's measurements instead of playing a class")
    parser.add_argument("--students", type=int, default=30)
    args = parser.parse_args(argv)
    if args.source:
        result = json.loads(Path(args.source).read_text())
    else:
        from _hub import missing_reason, write_json
        from _hub_class import run_class
        from _lab import browser_missing_reason, chromium

        reason = browser_missing_reason() or missing_reason()
        if reason:
            print(f"hub_sizing: cannot play a class here: {reason}", file=sys.stderr)
            return 1
        with chromium() as browser:
            result = run_class(browser, log=lambda line: print(line, file=sys.stderr, flush=True))
        write_json(RESULTS, result)
    print(table(result, args.students))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
