"""Verdicts for runs that were stopped: a time limit, the total budget, or the process ended."""

from __future__ import annotations

from . import _verdict

__all__ = ["stop_verdict", "where_note"]


def where_note(error: dict | None) -> str:
    """' (raised in name, line N)' for the learner's last line in the traceback, else ''."""
    where = (error or {}).get("where")
    if not where:
        return ""
    _, line, function = where
    return f" (in {function}, line {line})"


def stop_verdict(name, run, labels, time_limit, notes):
    """A verdict when ``run`` (a sandbox Run) stopped early, else None; ``labels[i]`` names step i."""
    index = run.stopped
    if index is None:
        return None
    step, label = run.steps[index], labels[index]
    isolated = run.isolated
    stopped = (
        "It was stopped, and the kernel is unaffected."
        if isolated
        else "If it is still running, restart the kernel (Kernel > Restart Kernel) to stop it."
    )
    if step.status == "timeout":
        return _verdict.problem(
            name,
            f"your code did not finish within {time_limit:g} s.",
            [
                f"{label}: tiny inputs that correct code handles in milliseconds. Look for a loop that never "
                f"ends (or a very long one). {stopped}"
            ]
            + notes,
        )
    if step.status == "over_budget":
        done = [s.seconds for s in run.steps[:index] if s.status in ("ok", "error")]
        each = f" (about {sum(done) / len(done):.2g} s per call)" if done else ""
        return _verdict.problem(
            name,
            "your code is too slow for this check.",
            [
                f"The check makes {len(run.steps)} calls and stopped at call {index + 1}, "
                f"{label[:1].lower()}{label[1:]}, after "
                f"using its whole time budget{each}. Correct code takes milliseconds per call. {stopped}"
            ]
            + notes,
        )
    if "checker's own code" in run.note:
        return _verdict.problem(name, "the check itself failed (not your code).", [f"{label}: {run.note}."])
    return _verdict.problem(
        name,
        "the process running your code ended before it finished.",
        [
            f"{label}: {run.note}. Your code (or something it called) ended the process; in the "
            f"kernel itself that would have killed the kernel. The kernel is unaffected."
        ]
        + notes,
    )
