"""What autograding costs the teacher: `nbgrader autograde` of correct submissions, per assignment.

    .venv/bin/python benchmarks/autograde_cost.py                          # 04 and 08, two rounds
    .venv/bin/python benchmarks/autograde_cost.py 02_scaled_dot_product_attention --rounds 3

Builds the nbgrader course folder (`tools/make_nbgrader.py`) in a temporary folder, generates each
assignment, submits the teacher's solution as three students (`--students`), and times
`nbgrader autograde` of them: wall time, and CPU time (user + system) of the command with the kernels
it starts and waits for. Rounds alternate between the assignments, so that a busy machine weighs on
each alike. A correct submission runs every cell of the notebook, as a learner's Run All does, then
the checks; a wrong one costs about the same.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import make_nbgrader  # noqa: E402

DEFAULT = ("04_masking", "08_generation_kv_cache")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def nbgrader(course: Path, *args: str) -> tuple[float, float]:
    """Run one nbgrader command in the course folder; its wall and CPU seconds."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    cpu, wall = _children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nbgrader {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - wall, _children_cpu() - cpu


def one_round(course: Path, assignment: str, students: int) -> tuple[float, float]:
    """Submit the solution as `students` students (replacing the last round's) and autograde them."""
    for folder in ("submitted", "autograded"):
        shutil.rmtree(course / folder, ignore_errors=True)
    (course / "gradebook.db").unlink(missing_ok=True)
    nbgrader(course, "generate_assignment", assignment, "--force")
    solution = json.loads((course / "source" / assignment / f"{assignment}.ipynb").read_text())
    for n in range(students):
        target = course / "submitted" / f"student{n + 1}" / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(solution))
    return nbgrader(course, "autograde", assignment)


def span(values: list[float]) -> str:
    low, high = f"{min(values):.1f}", f"{max(values):.1f}"
    return low if low == high else f"{low}-{high}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", default=list(DEFAULT),
                        help="exercise notebooks' names (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="autogrades per assignment (default 2)")
    parser.add_argument("--students", type=int, default=3, help="submissions per autograde (default 3)")
    args = parser.parse_args()
    if args.rounds < 1 or args.students < 1:
        parser.error("--rounds and --students must be at least 1")
    with tempfile.TemporaryDirectory(prefix="attnviz-autograde-") as tmp:
        course = Path(tmp) / "course"
        written = make_nbgrader.make_nbgrader(REPO / "notebooks", course)
        names = {Path(path).stem for path in written}
        unknown = sorted(set(args.assignments) - names)
        if unknown:
            parser.error(f"no assignment {', '.join(unknown)}; the course has {', '.join(sorted(names))}")
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in args.assignments}
        for round_ in range(args.rounds):
            for name in args.assignments:
                print(f"round {round_ + 1} of {args.rounds}: autograde {name}", file=sys.stderr, flush=True)
                results[name].append(one_round(course, name, args.students))
    print(f"`nbgrader autograde` of {args.students} correct submissions, {args.rounds} rounds each "
          f"(CPU: the command and its kernels, user + system)")
    print(f"{'assignment':26} {'wall (s)':>11} {'CPU (s)':>11} {'CPU per submission':>19}")
    print("-" * 70)
    for name, runs in results.items():
        walls = [wall for wall, _ in runs]
        cpus = [cpu for _, cpu in runs]
        print(f"{name:26} {span(walls):>11} {span(cpus):>11} {span([c / args.students for c in cpus]):>19}")

if __name__ == "__main__":
    main()
