"""What a checker's fork costs, with glibc's heap in small pages and in huge pages, side by side.

Run: .venv/bin/python benchmarks/fork_cost.py [--rounds 3] [--calls 40]

Every check runs the learner's code in a child forked from the calling process
(attnviz/check/_sandbox.py). The fork copies the page tables of the caller's memory and the child's
exit frees them; `make test` and `make check` run the tests with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``
(the Makefile's FAST_FORK), which lets glibc put its heap in transparent huge pages where the system
allows them (``/sys/kernel/mm/transparent_hugepage/enabled`` is ``always`` or ``madvise``).

Each round starts two fresh processes one after the other, one without the setting and one with it.
Each imports the checkers and the zoo and runs one check of each kind (as a test worker or a kernel
would have), then times, ``--calls`` times each: a bare ``os.fork`` whose child exits at once, one
empty step in the sandbox, and ``check_attention`` on a zoo bug; and a fork whose child seeds torch
first, with ``torch.manual_seed`` and with the sandbox's ``reseed`` (the CPU's generator alone). The
table shows each measurement's fastest round; CPU counts the process and its children, user and system.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SETTING = "glibc.malloc.hugetlb=1"

_PROBE = r"""
import contextlib, io, json, os, resource, sys, time
import torch
import attnviz.check as C
from attnviz import zoo
from attnviz.check import _sandbox

calls = int(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()):
    for check, members in ((C.check_attention, zoo.ATTENTION_BUGS),
                           (C.check_causal_mask, zoo.CAUSAL_MASK_BUGS),
                           (C.check_multi_head, zoo.MULTI_HEAD_BUGS)):
        check(next(iter(members.values())))


def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bare_fork(then=lambda: None):
    pid = os.fork()
    if pid == 0:
        then()
        os._exit(0)
    os.waitpid(pid, 0)


def timed(call):
    start, used = time.perf_counter(), cpu()
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(calls):
            call()
    return 1000 * (time.perf_counter() - start) / calls, 1000 * (cpu() - used) / calls


bug = zoo.ATTENTION_BUGS["missing_scale"]
rss = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
print(json.dumps({
    "rss": rss,
    "fork": timed(bare_fork),
    "fork, torch.manual_seed(0)": timed(lambda: bare_fork(lambda: torch.manual_seed(0))),
    "fork, reseed(0)": timed(lambda: bare_fork(lambda: _sandbox.reseed(0))),
    "empty step": timed(lambda: _sandbox.run_steps([lambda: None], time_limit=5, budget=5)),
    "check_attention": timed(lambda: C.check_attention(bug)),
}))
"""


def _run(setting: str, calls: int) -> dict:
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    if setting:
        env["GLIBC_TUNABLES"] = setting
    out = subprocess.run([sys.executable, "-c", _PROBE, str(calls)], env=env, cwd=HERE, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    try:
        thp = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    except OSError:
        thp = "(not readable here)"
    print(f"transparent huge pages: {thp}; {args.rounds} rounds of {args.calls} calls, fastest round shown")
    results = {"": [], SETTING: []}
    for _ in range(args.rounds):
        for setting in results:
            results[setting].append(_run(setting, args.calls))
    print()
    print("| measurement (per call) | small pages: wall / CPU ms | huge pages: wall / CPU ms | wall ratio |")
    print("|---|---|---|---|")
    for what in ("fork", "fork, torch.manual_seed(0)", "fork, reseed(0)", "empty step", "check_attention"):
        small = min(r[what][0] for r in results[""]), min(r[what][1] for r in results[""])
        huge = min(r[what][0] for r in results[SETTING]), min(r[what][1] for r in results[SETTING])
        print(f"| {what} | {small[0]:.1f} / {small[1]:.1f} | {huge[0]:.1f} / {huge[1]:.1f} "
              f"| {huge[0] / small[0]:.2f} |")
    rss = [min(r["rss"] for r in results[s]) for s in results]
    print(f"\nresident memory of the calling process: {rss[0]:.0f} MB and {rss[1]:.0f} MB")


if __name__ == "__main__":
    main()
