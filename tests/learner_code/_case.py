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
    is imported, as a learner's earlier cells would.
    """

    name: str
    obj: object
    expect: str | frozenset = PASS
    setup: Callable[[], None] | None = None
    note: str = ""
    ids: frozenset = field(init=False)

    def __post_init__(self):
        expect = self.expect
        if isinstance(expect, str) and expect not in (PASS, FAIL, ANY):
            expect = frozenset({expect})
        elif isinstance(expect, (set, frozenset)):
            expect = frozenset(expect)
        object.__setattr__(self, "expect", expect)
        object.__setattr__(self, "ids", expect if isinstance(expect, frozenset) else frozenset())
