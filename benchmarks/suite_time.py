"""How long `make test` takes in a fresh clone, and where its CPU goes, by kind of process.

    python3 benchmarks/suite_time.py                     # .ci/run in a fresh clone of this checkout
    python3 benchmarks/suite_time.py --command "make check"
    python3 benchmarks/suite_time.py --rev f5f11b5            # an earlier commit, the same way

Clones the checkout (its committed HEAD) into a temporary folder, runs the command there and, once a
second, reads every new process's CPU time (user + system) from /proc, so that processes nobody
waits for (Chromium's renderers, a hub's user servers) count too; `time` misses those. Prints the
wall time, pytest's summary line, the CPU seconds per kind of process, the notebook kernels by
the folder they ran in (how many, their CPU) and the costliest commands among the other Python
processes and pytest's (--top). Needs only Python 3 and Linux. Exits 1 if the command
failed, or if `.ci/run` took over the 6-minute target.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 6 * 60
TICK = os.sysconf("SC_CLK_TCK")
KINDS = (   # first match wins: (kind, words any of which the command line holds)
    ("Chromium", ("chromium",)),
    ("notebook kernels (ipykernel)", ("ipykernel",)),
    ("nbgrader commands", ("nbgrader",)),
    ("JupyterHub, its proxy, user servers", ("jupyterhub", "configurable-http-proxy")),
    ("JupyterLab and Notebook servers", ("jupyter-lab", "jupyter_server", "jupyterlab", "ServerApp")),
    ("uv", ("/uv ", " uv ")),
    ("pip", ("-m pip", "pip install")),
    ("hostile learner cases", ("run_hostile",)),
    ("pytest and its workers", ("pytest", "exec(eval(sys.stdin")),
    ("node (Playwright's driver, biome, npm)", ("node", "npm")),
    ("other Python", ("python",)),
)


def kind_of(command: str) -> str:
    for kind, words in KINDS:
        if any(word in command for word in words):
            return kind
    return "other"


class Sampler:
    """CPU seconds per kind of process, for every process that starts after it."""

    def __init__(self):
        self.before = set(self._pids())
        self.seen: dict[int, list] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _pids():
        return (int(name) for name in os.listdir("/proc") if name.isdigit())

    def _loop(self):
        while not self.stopped.wait(1.0):
            self.sample()

    def sample(self):
        for pid in self._pids():
            if pid in self.before:
                continue
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                ticks = int(fields[11]) + int(fields[12])
                if pid not in self.seen:
                    command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                        errors="replace")
                    self.seen[pid] = [kind_of(command), ticks, _folder(pid), command]
            except (OSError, IndexError, ValueError):
                continue
            self.seen[pid][1] = ticks

    def totals(self) -> dict[str, float]:
        out = collections.Counter()
        for kind, ticks, *_ in self.seen.values():
            out[kind] += ticks / TICK
        return dict(out.most_common())

    def kernels(self, clone: Path) -> list[tuple[str, int, float]]:
        """Notebook kernels by the folder they ran in (a kernel runs in its notebook's folder):
        (folder, how many kernels, CPU seconds), costliest first."""
        return _grouped((_relative(folder, clone), ticks)
                        for kind, ticks, folder, _ in self.seen.values()
                        if kind == "notebook kernels (ipykernel)")

    def commands(self, kinds: tuple[str, ...]) -> list[tuple[str, int, float]]:
        """Processes of these kinds grouped by their command line, temporary paths, ports and other
        numbers written as *: (command, how many, CPU seconds), costliest first."""
        return _grouped((_masked(command), ticks)
                        for kind, ticks, _, command in self.seen.values() if kind in kinds)


def _masked(command: str) -> str:
    """A command on one line, its temporary folders written as /tmp/.../ and its numbers as *."""
    one_line = " ".join(command.split())
    return re.sub(r"\d+", "*", re.sub(r"/tmp/\S*?/(?=\S)", "/tmp/.../", one_line))


def _grouped(rows) -> list[tuple[str, int, float]]:
    """(name, ticks) rows summed by name: (name, how many, CPU seconds), costliest first."""
    count, seconds = collections.Counter(), collections.Counter()
    for name, ticks in rows:
        count[name] += 1
        seconds[name] += ticks / TICK
    return [(name, count[name], seconds[name]) for name, _ in seconds.most_common()]


def _folder(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return "?"


def _relative(folder: str, clone: Path) -> str:
    """A folder inside the clone relative to it; a temporary folder by its first part after /tmp."""
    path = Path(folder)
    if path.is_relative_to(clone):
        return str(path.relative_to(clone)) or "."
    parts = path.parts
    if len(parts) > 2 and parts[1] == "tmp":
        return "/tmp/" + "/".join(re.sub(r"[0-9a-z_]{6,}$", "*", part) for part in parts[2:5])
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--command", default=".ci/run", help="what to run in the clone (default .ci/run)")
    parser.add_argument("--rev", default="HEAD", help="the commit to clone (default HEAD): time an earlier "
                        "tree the same way, for a table beside today's")
    parser.add_argument("--keep", action="store_true", help="keep the clone and print its path")
    parser.add_argument("--top", type=int, default=12, metavar="N",
                        help="list the N costliest commands among 'other Python' and pytest's (default 12)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="attnviz-suite-"))
    clone = folder / "course"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "-c", "advice.detachedHead=false", "checkout", "-q", args.rev], cwd=clone,
                   check=True)
    sampler = Sampler()
    sampler.thread.start()
    start = time.monotonic()
    done = subprocess.run(args.command, shell=True, cwd=clone, capture_output=True, text=True)
    wall = time.monotonic() - start
    sampler.stopped.set()
    sampler.thread.join()
    summary = [line for line in done.stdout.splitlines() if " passed" in line or " failed" in line]
    totals = sampler.totals()
    print(f"{args.command} in a fresh clone of {args.rev}: {wall:.0f} s wall ({wall / 60:.1f} min), "
          f"exit {done.returncode}")
    print(f"pytest: {summary[-1].strip('= ') if summary else '(no summary line)'}")
    print()
    print(f"{'CPU by kind of process':44s} {'seconds':>8s} {'share':>6s}")
    print("-" * 60)
    total = sum(totals.values())
    for kind, seconds in totals.items():
        print(f"{kind:44s} {seconds:8.1f} {seconds / total:6.0%}")
    print(f"{'all':44s} {total:8.1f}   (two cores: at least {total / 2:.0f} s of wall time)")
    print()
    print(f"{'notebook kernels by the folder they ran in':60s} {'kernels':>7s} {'CPU s':>7s}")
    print("-" * 76)
    for name, count, seconds in sampler.kernels(clone):
        print(f"{name[:60]:60s} {count:7d} {seconds:7.1f}")
    if args.top:
        print()
        print(f"{'costliest other Python and pytest commands':78s} {'count':>5s} {'CPU s':>7s}")
        print("-" * 92)
        for name, count, seconds in sampler.commands(("other Python", "pytest and its workers"))[:args.top]:
            print(f"{name[:78]:78s} {count:5d} {seconds:7.1f}")
    if args.keep:
        print(f"\nthe clone: {clone}")
    else:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
        shutil.rmtree(folder, ignore_errors=True)
    if done.returncode:
        print(done.stdout[-3000:] + done.stderr[-3000:], file=sys.stderr)
        return 1
    if args.command == ".ci/run" and wall > TARGET_S:
        print(f"\nover the {TARGET_S // 60}-minute target by {wall - TARGET_S:.0f} s")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
