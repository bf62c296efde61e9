"""Checkers that run a learner's attention code and name the classic mistake it makes.

``check_attention(fn)``, ``check_multi_head(cls)``, ``check_causal_mask(fn)``,
``check_padding_mask(fn)`` and ``check_decoding_step(fn)`` (notebook 08) each
return a :class:`CheckResult` with ``.passed`` and ``.bug`` (a bug id from
:data:`BUGS`, or None) that shows itself in a notebook as a short verdict: what
happened, which bug it looks like, how it shows, the one-line fix (``show_fixes(False)``
leaves the fix out: an nbgrader release does, where it would be the answer). Learner code
that raises, returns the wrong thing, changes its inputs or runs too long gets a
verdict too; nothing it does escapes as an exception. All five run on one engine
(:mod:`._engine`: probes, and one ordered list of rules in :mod:`._rules`).

The learner's code runs in a child process forked from the kernel (it sees
every definition made there; see :mod:`._sandbox`), killed when the check's
``time_limit`` runs out, so it cannot hang, kill or change the kernel. The
checkers compare with their own private reference math (:mod:`._reference`),
not with :mod:`attnviz.core`, and name a bug by which hypothesis (the
reference with one thing done wrong, in several styles) reproduces the
learner's outputs on every probe. When a cell run after the one that defined the code checked
also defines its name and failed (a SyntaxError, say), the verdict says which cell it checked
(:mod:`._stale`). A fix line uses the learner's own names for their scores, queries, keys and values
where their code shows them (:mod:`._yournames`). Every bug id is documented in
``docs/checkers.md`` (generated from :mod:`._catalog`), which also says how to
add one.

Torch only (no ipywidgets or plotly).
"""

from ._catalog import BUGS
from ._verdict import CheckResult, show_fixes
from .attention import check_attention
from .decoding import check_decoding_step
from .masks import check_causal_mask, check_padding_mask
from .multi_head import check_multi_head

__all__ = [
    "check_attention",
    "check_multi_head",
    "check_causal_mask",
    "check_padding_mask",
    "CheckResult",
    "BUGS",
    "check_decoding_step",
    "show_fixes",
]
