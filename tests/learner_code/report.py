"""Print how the checkers do on the learner corpus: one row per checker, then every disagreement.

    .venv/bin/python tests/learner_code/report.py            # the in-kernel cases (a minute or two)
    .venv/bin/python tests/learner_code/report.py --hostile  # also the hostile ones, a process each

Columns: correct cases that passed; buggy cases that failed; of those expecting an id, how many
the verdict named; buggy cases that passed (missed); cases after which the kernel state had changed;
the time for all cases, and the longest check of a correct case (issue 12 asks for under 2 s).
"""

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from learner_code import attention, causal_mask, decoding, hostile, multi_head, padding_mask  # noqa: E402
from learner_code._case import ANY, PASS, verdict_problem  # noqa: E402
from learner_code._state import kernel_state, state_changes  # noqa: E402

MODULES = {"check_attention": attention, "check_multi_head": multi_head,
           "check_causal_mask": causal_mask, "check_padding_mask": padding_mask,
           "check_decoding_step": decoding}


def run_cases():
    import attnviz.check

    rows, notes = [], []
    for checker, module in MODULES.items():
        tally = Counter()
        start = time.perf_counter()
        for case in module.CASES:
            before = kernel_state()
            started = time.perf_counter()
            result = getattr(attnviz.check, checker)(case.obj)
            if case.expect == PASS:
                tally["slowest correct"] = max(tally["slowest correct"], time.perf_counter() - started)
            changed = state_changes(before, kernel_state())
            problem = verdict_problem(result, case)
            correct = case.expect == PASS
            tally["correct" if correct else "buggy"] += 1
            if correct:
                tally["correct passed"] += result.passed
            else:
                tally["buggy failed"] += not result.passed
                tally["buggy missed"] += result.passed
                if case.ids:
                    tally["expect id"] += 1
                    tally["id named"] += (not result.passed) and result.bug in case.ids
            tally["state changed"] += bool(changed)
            if problem or changed:
                notes.append(f"{checker[6:]}/{case.name}: {problem or ''}"
                             f"{' | state: ' + '; '.join(changed) if changed else ''}")
        tally["seconds"] = time.perf_counter() - start
        rows.append((checker, tally))
    return rows, notes


def print_labels():
    """How many cases each file has, and how many expect each label."""
    per_label = Counter()
    for module in (*MODULES.values(), hostile):
        kinds = Counter("id" if case.ids else case.expect for case in module.CASES)
        print(f"{module.__name__.rsplit('.', 1)[-1]:14} {len(module.CASES):4} cases  {dict(kinds)}")
        if module is not hostile:
            per_label.update(bug for case in module.CASES for bug in case.ids)
            per_label.update(case.expect for case in module.CASES if not case.ids)
    for label, count in sorted(per_label.items()):
        print(f"  {label:34} {count}")


def main():
    if "--labels" in sys.argv:
        print_labels()
        return
    rows, notes = run_cases()
    print(f"{'checker':20} {'correct passed':>15} {'buggy failed':>13} {'id named':>10} {'missed':>7} "
          f"{'state changed':>14} {'seconds':>8} {'slowest correct':>16}")
    total = Counter()
    for checker, tally in rows:
        total.update(tally)
        print(_row(checker, tally))
    print(_row("all", total))
    print("\ndisagreements:")
    for note in notes:
        print("  " + note)
    if "--hostile" in sys.argv:
        import pytest
        from test_learner_corpus import run_hostile
        print("\nhostile:")
        for case in hostile.CASES:
            start = time.perf_counter()
            try:
                report = run_hostile(case)
            except pytest.fail.Exception as err:
                took = time.perf_counter() - start
                print(f"  {case.name:36} FAIL  {str(err).splitlines()[0]}  ({took:.0f} s)")
                continue
            verdict = report["verdict"] or {}
            said = f"passed={verdict.get('passed')} bug={verdict.get('bug')}"
            extra = [] if case.expect == ANY else [verdict_problem(_Verdict(verdict), case) or ""]
            print(f"  {case.name:36} {said:40} {report['elapsed']:5.1f} s  cpu after {report['busy_cpu']:.2f}"
                  f"  raised={report['raised']}  state={report['state_changes']}  {' '.join(extra)}")


def _row(name, t):
    return (f"{name:20} {t['correct passed']:>7} of {t['correct']:<5} {t['buggy failed']:>5} of "
            f"{t['buggy']:<5} {t['id named']:>3} of {t['expect id']:<4} {t['buggy missed']:>7} "
            f"{t['state changed']:>14} {t['seconds']:>8.1f} {t['slowest correct']:>16.2f}")


class _Verdict:
    def __init__(self, fields):
        self.passed, self.bug = fields.get("passed"), fields.get("bug")
        self.status, self.headline = fields.get("status"), fields.get("headline")


if __name__ == "__main__":
    main()
