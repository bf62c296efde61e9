"""Run one hostile case through its checker in a fresh process and print what happened as JSON.

    python tests/learner_code/run_hostile.py CASE_NAME TIME_LIMIT

The process plays the learner's kernel: the case's ``setup`` runs first, then ``attnviz.check`` is
imported and the checker called with ``time_limit=TIME_LIMIT``. The last stdout line starting with
``MARK`` holds the report: the verdict's public fields, whether the checker raised, how long it
took, what kernel state changed, and the CPU the process used in the second after the verdict.
"""

import json
import os
import sys
import time
from pathlib import Path

MARK = "@@hostile-report@@ "


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


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
