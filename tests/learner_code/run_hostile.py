"""Run one hostile case through its checker in a fresh process and print what happened as JSON.

    python tests/learner_code/run_hostile.py CASE_NAME TIME_LIMIT
    python tests/learner_code/run_hostile.py --serve

The process plays the learner's kernel: the case's ``setup`` runs first, then ``attnviz.check`` is
imported and the checker called with ``time_limit=TIME_LIMIT``. The last stdout line starting with
``MARK`` holds the report: the verdict's public fields, whether the checker raised, how long it
took, what kernel state changed, and the CPU the process used in the second after the verdict.

With ``--serve`` the process imports what every case's process imports first (torch, numpy,
``attnviz`` and ``attnviz.core``, through the corpus's modules) and nothing else, then reads
``CASE_NAME TIME_LIMIT`` lines from stdin and runs each case in a child forked from that state: a
fresh process each, as above, without paying for Python and torch's start each time. After each
child ends it prints ``DONE`` and the child's exit status.
"""

import json
import os
import sys
import time
import traceback
from pathlib import Path

MARK = "@@hostile-report@@ "
DONE = "@@hostile-done@@ "


def _text(obj) -> str:
    try:
        return repr(obj)
    except BaseException:  # noqa: BLE001 - learner objects may refuse to print
        return f"<unprintable {type(obj).__name__}>"


def describe(result) -> dict:
    """The verdict's public fields, read defensively."""
    report = {name: getattr(result, name, None) for name in ("passed", "bug", "status", "headline")}
    report["type"] = type(result).__name__
    report["text"] = _text(result)
    try:
        report["html"] = bool(result._repr_html_())
    except BaseException as err:  # noqa: BLE001
        report["html"] = False
        report["html_error"] = type(err).__name__
    for name in ("passed", "bug", "status", "headline"):
        if not isinstance(report[name], (bool, str, type(None))):
            report[name] = _text(report[name])
    return report


def main(name: str, limit: float) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from learner_code import hostile
    from learner_code._state import kernel_state, state_changes

    case = next(c for c in hostile.CASES if c.name == name)
    if case.setup is not None:
        case.setup()
    before = kernel_state()
    import attnviz.check

    checker = getattr(attnviz.check, f"check_{case.checker}")
    report = {"raised": None}
    start = time.perf_counter()
    try:
        result = checker(case.obj, time_limit=limit)
    except BaseException as err:  # noqa: BLE001 - the checker promises never to raise
        report["raised"] = f"{type(err).__name__}: {_text(err)}"[:300]
        result = None
    report["elapsed"] = time.perf_counter() - start
    report["state_changes"] = state_changes(before, kernel_state())
    cpu = time.process_time()
    time.sleep(1.0)
    report["busy_cpu"] = time.process_time() - cpu
    report["verdict"] = None if result is None else describe(result)
    sys.stdout.write("\n" + MARK + json.dumps(report) + "\n")
    sys.stdout.flush()
    os._exit(0)                  # do not wait for threads the learner (or the checker) left running


def serve() -> None:
    """Fork one child per ``CASE_NAME TIME_LIMIT`` line on stdin, from the state every case starts in."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from learner_code import _state, hostile  # noqa: F401 - imported once, before every fork

    for line in sys.stdin:
        if not line.strip():
            continue
        name, limit = line.split()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)   # the cases' code never reads our commands
            try:
                main(name, float(limit))               # ends with os._exit(0)
            except BaseException:  # noqa: BLE001 - say why, as a fresh process would
                traceback.print_exc()
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(f"\n{DONE}{os.waitstatus_to_exitcode(status)}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        main(sys.argv[1], float(sys.argv[2]))
