"""One learner implementation and what a checker should say about it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

PASS, FAIL, ANY = "pass", "fail", "any"


@dataclass(frozen=True)
class Case:
    """``obj`` is what the learner hands to the checker (a function, a class, an instance).

    ``expect`` is "pass", "fail" (any failing verdict), "any" (hostile code: only the
    robustness is judged), one bug id, or a set of ids any one of which is a right name.
    ``setup`` (hostile cases only) runs in the learner's kernel before ``attnviz.check``
    is imported, as a learner's earlier cells would. ``ids`` is the set form of ``expect``
    (empty for "pass", "fail" and "any").
    """

    name: str
    obj: object
    expect: str | frozenset = PASS
    setup: Callable[[], None] | None = None
    note: str = ""
    checker: str = ""          # hostile cases name their checker: attention, multi_head, causal_mask, ...
    ids: frozenset = field(init=False)

    def __post_init__(self):
        expect = self.expect
        if isinstance(expect, str) and expect not in (PASS, FAIL, ANY):
            expect = frozenset({expect})
        elif isinstance(expect, (set, frozenset)):
            expect = frozenset(expect)
        object.__setattr__(self, "expect", expect)
        object.__setattr__(self, "ids", expect if isinstance(expect, frozenset) else frozenset())


def verdict_problem(result, case: Case) -> str | None:
    """Why the verdict ``result`` disagrees with ``case.expect``, or None if it agrees.

    The one place that reads a verdict: ``.passed`` (bool) and ``.bug`` (an id or None), and for
    the message ``.status`` and ``.headline`` (see attnviz.check.CheckResult).
    """
    said = f"{getattr(result, 'status', '?')}, bug={result.bug!r}: {getattr(result, 'headline', '')}"
    if case.expect == ANY:
        return None
    if case.expect == PASS:
        return None if result.passed else f"a correct implementation failed ({said})"
    if result.passed:
        return f"a buggy implementation passed ({said})"
    if case.ids and result.bug not in case.ids:
        return f"expected the verdict to name one of {sorted(case.ids)}, it said {said}"
    return None
