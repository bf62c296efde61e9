"""A verdict says so when the code it checked is not the learner's latest: a newer cell that defines
the same name failed (a SyntaxError, say), so the name still holds the older definition; and when the
learner wrote their code below the stub's raise line, which still runs first."""

import ast
import linecache
import math
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from attnviz.check import check_attention, check_causal_mask, check_multi_head, show_fixes
from attnviz.check._stale import above_stub, below_stub, names_used, stale_note

ROOT = Path(__file__).resolve().parent.parent


def _define(text, filename, space):
    """Run ``text`` as IPython runs a cell: compiled under a file name whose lines linecache holds."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), space)                # noqa: S102 - the test's own cell


@pytest.fixture
def cells(monkeypatch):
    """A fake kernel history: ``In`` on __main__, as IPython keeps it."""
    history = [""]
    monkeypatch.setattr(sys.modules["__main__"], "In", history, raising=False)
    yield history
    for key in [k for k in linecache.cache if k.startswith("<cell-")]:
        del linecache.cache[key]


OLD = "def my_causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).tril(-1)\n"
BROKEN = "def my_causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).tril(\n"


def test_a_failed_newer_cell_is_named_and_the_verdict_says_which_cell_it_checked(cells):
    space = {"torch": torch}
    _define(OLD, "<cell-1>", space)
    cells.append(OLD)
    cells.append(BROKEN)                                        # cell [2]: SyntaxError, nothing defined
    note = stale_note(space["my_causal_mask"])
    assert note.startswith("This checked the my_causal_mask your cell [1] defined. Cell [2], run after it")
    result = check_causal_mask(space["my_causal_mask"])
    assert result.bug == "causal_excludes_self" and result.warnings[0] == note
    assert result.headline.endswith("But this was an older definition: read the warning.")
    assert repr(result).splitlines()[1] == f"  Warning: {note}"       # the first row under the headline


def test_a_pass_of_an_older_definition_warns_first(cells):
    right = "def my_causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).tril()\n"
    space = {"torch": torch}
    _define(right, "<cell-1>", space)
    cells.extend([right, BROKEN])
    result = check_causal_mask(space["my_causal_mask"])
    assert result.passed and result.warnings == [stale_note(space["my_causal_mask"])]
    assert "older definition" in result.headline and "Warning:" in result._repr_html_()
    # not a green ✓ under the failed cell's red error: amber, with a warning sign (a reader's finding)
    assert repr(result).startswith("⚠") and "#1b7f3b" not in result._repr_html_()


def test_no_note_when_the_latest_cell_defined_it_or_outside_a_kernel(cells, monkeypatch):
    space = {"torch": torch}
    cells.append(BROKEN)
    _define(OLD, "<cell-2>", space)                            # the broken cell, then a good one
    cells.append(OLD)
    assert stale_note(space["my_causal_mask"]) is None
    cells.append("print(my_causal_mask(3))")                  # a later cell that only uses it
    assert stale_note(space["my_causal_mask"]) is None
    assert stale_note(lambda n: n) is None and stale_note(torch.tril) is None
    monkeypatch.delattr(sys.modules["__main__"], "In")
    assert stale_note(space["my_causal_mask"]) is None


def test_a_class_is_followed_through_its_methods(cells):
    text = ("class MyMultiHeadAttention(torch.nn.Module):\n"
            "    def __init__(self, d_model, n_heads):\n"
            "        super().__init__()\n")
    space = {"torch": torch}
    _define(text, "<cell-1>", space)
    cells.extend([text, "class MyMultiHeadAttention(torch.nn.Module)\n    pass\n"])
    cls = space["MyMultiHeadAttention"]
    assert "MyMultiHeadAttention your cell [1] defined. Cell [2]" in stale_note(cls)
    assert check_multi_head(cls).warnings[0] == stale_note(cls)


STUB = "def my_attention(q, k, v, mask=None):\n    raise NotImplementedError(\"write your code here\")\n"
BELOW = STUB + ("    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
                "    return torch.softmax(scores, dim=-1) @ v\n")


def test_code_written_below_the_stubs_raise_is_told_apart_from_no_code(cells):
    space = {"torch": torch, "math": math}
    _define(STUB, "<cell-1>", space)
    cells.append(STUB)
    untouched = check_attention(space["my_attention"])
    assert not below_stub(space["my_attention"]) and untouched.headline.startswith("not written yet")
    _define(BELOW, "<cell-2>", space)
    cells.append(BELOW)
    below = check_attention(space["my_attention"])
    assert below_stub(space["my_attention"]) and below.status == "not_implemented"
    assert "below the stub's line raise NotImplementedError" in below.headline
    assert "delete that line" in below.headline
    # a raise of the learner's own, at the end of a branch, is not the stub's
    own = ("def my_attention(q, k, v, mask=None):\n    if q.dim() > 4:\n"
           "        raise NotImplementedError(\"too many dims\")\n    return q\n")
    _define(own, "<cell-3>", space)
    assert not below_stub(space["my_attention"])


def test_code_written_above_the_stubs_raise_is_told_to_put_its_return_there(cells):
    space = {"torch": torch, "math": math}
    above = ('def my_attention(q, k, v, mask=None):\n    """docstring"""\n'
             "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
             "    out = torch.softmax(scores, dim=-1) @ v\n" + STUB.splitlines(keepends=True)[1])
    _define(above, "<cell-1>", space)
    cells.append(above)
    verdict = check_attention(space["my_attention"])
    assert above_stub(space["my_attention"]) and verdict.status == "not_implemented"
    assert "is still at its end" in verdict.headline and "put your return in its place" in verdict.headline
    # the untouched stub (a docstring, comments, nbgrader's hint = "..." above the raise) is not code above it
    stub = ('def my_attention(q, k, v, mask=None):\n    """docstring"""\n    # a hint\n'
            '    hint = "q @ kT"\n    raise NotImplementedError(hint)\n')
    _define(stub, "<cell-2>", space)
    cells.append(stub)
    assert not above_stub(space["my_attention"])
    assert check_attention(space["my_attention"]).headline.startswith("not written yet")


@pytest.mark.slow
def test_in_a_real_kernel_the_check_after_a_syntax_error_says_so():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (
        "import torch\nfrom attnviz.check import check_causal_mask",
        OLD,
        BROKEN,
        "check_causal_mask(my_causal_mask)",
    )]
    NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3").execute(cwd=str(ROOT))
    assert nb.cells[2].outputs[0]["ename"] == "SyntaxError"
    verdict = nb.cells[3].outputs[0]["data"]["text/plain"]
    assert "causal excludes self" in verdict
    assert "This checked the my_causal_mask your cell [2] defined. Cell [3], run after it" in verdict


def test_a_fill_of_finfo_tiny_is_told_as_the_fill_of_zero_it_is():
    """finfo.tiny sounds like 'the tiniest float'; it is the smallest positive one: a fill of 0."""
    def tiny_fill(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).tiny)
        return scores.softmax(dim=-1) @ v

    class TinyFill(torch.nn.Module):
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.h = n_heads
            self.W_q, self.W_k, self.W_v, self.W_o = (torch.nn.Linear(d_model, d_model, bias=False)
                                                      for _ in range(4))

        def forward(self, x, mask=None):
            b, n, d = x.shape
            q, k, v = (w(x).view(b, n, self.h, d // self.h).transpose(1, 2)
                       for w in (self.W_q, self.W_k, self.W_v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).tiny)
            return self.W_o((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, d))

    said = "torch.finfo(...).tiny: the smallest POSITIVE float"
    for result in (check_attention(tiny_fill), check_multi_head(TinyFill)):
        assert result.bug == "mask_fill_zero" and said in result.observed[0], result


def test_names_used_reads_code_only_never_the_learners_attributes():
    class Meta(type):
        def __getattribute__(cls, name):
            raise AssertionError("looked up on the learner's class")

    class Hostile(metaclass=Meta):
        def forward(self):
            return torch.finfo(torch.float32).tiny

    class Plain:
        def forward(self):
            return torch.finfo(torch.float32).tiny

    assert names_used(Hostile) == set()
    assert "tiny" in names_used(Plain)
    assert "tiny" in names_used(Plain.forward) and names_used(42) == set()


def test_an_inverted_mask_handed_to_the_fused_function_gets_its_fix_in_that_form():
    def fused_inverted(q, k, v, mask=None):
        blocked = None if mask is None else ~mask
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=blocked)

    result = check_attention(fused_inverted)
    # the line that turns the mask, kept as given (replay 23's 05Z3: the fused call as an expression named
    # no result and dropped its other arguments)
    assert result.bug == "mask_inverted" and result.fix.startswith(
        "blocked = mask   # in place of your line blocked = None if mask is None else ~mask"), result


def test_a_failing_verdict_says_which_run_of_a_cell_it_checked(cells, monkeypatch):
    """A check reads the kernel, not the editor: a learner who fixed the cell but did not run it again
    got the old verdict, with a Fix line just like the line on screen (a fresh reader's finding)."""
    space = {"torch": torch}
    cells.append("import torch")
    _define(OLD, "<cell-2>", space)
    cells.append(OLD)
    cells.append("check_causal_mask(my_causal_mask)")       # IPython's In holds the running cell too
    result = check_causal_mask(space["my_causal_mask"])
    # the cell ran just before this check: the learner has just run it, so no note (read on every try,
    # it was noise to a teacher and to a reader)
    assert result.bug == "causal_excludes_self" and not result.warnings and result.notes == [], result
    cells.append("check_causal_mask(my_causal_mask)")       # checked again later: edited since?
    result = check_causal_mask(space["my_causal_mask"])
    note = ("This checked my_causal_mask as your cell [2] defined it when it last ran. Edited that cell "
            "since? Run it (Shift+Enter), then this check again.")
    assert result.notes[-1] == note and f"  Note: {note}" in repr(result)
    # in a graded release (fixes hidden) the note would stand on every failure of a feedback page
    show_fixes(False)
    try:
        assert check_causal_mask(space["my_causal_mask"]).notes == []
    finally:
        show_fixes(True)
    right = "def my_causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).tril()\n"
    _define(right, "<cell-5>", space)
    cells.append(right)
    assert check_causal_mask(space["my_causal_mask"]).notes == []       # a pass needs no such note
    monkeypatch.delattr(sys.modules["__main__"], "In")
    assert check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1)).notes == []


def test_what_the_checkers_keep_of_a_functions_text_is_its_cells_latest_text():
    """The checkers keep what they read of a function's text (a verdict reads it a dozen times), for the
    same code in the same text of its cell: a comment changed in the same cell (the same code object) is
    read anew, and two functions wrapped by one decorator are each read as themselves."""
    from attnviz.check._stale import source_of, syntax_tree

    space = {}
    _define("def f(q):\n    return q  # erste\n", "<cell-kept-1>", space)
    first = space["f"]
    assert "# erste" in source_of(first)
    _define("def f(q):\n    return q  # zweite\n", "<cell-kept-1>", space)
    assert space["f"].__code__ == first.__code__            # what the text is kept for has not changed
    assert "# zweite" in source_of(space["f"]) and "# erste" not in source_of(space["f"])
    wrapped = ("import functools\n\ndef wrap(g):\n    @functools.wraps(g)\n    def inner(*a):\n"
               "        return g(*a)\n    return inner\n\n@wrap\ndef eins(q):\n    return q + 1\n\n"
               "@wrap\ndef zwei(q):\n    return q + 2\n")
    _define(wrapped, "<cell-kept-2>", space)
    assert space["eins"].__code__ == space["zwei"].__code__  # both are the decorator's inner
    assert "q + 1" in source_of(space["eins"]) and "q + 2" in source_of(space["zwei"])
    assert syntax_tree("x = 1\n") is syntax_tree("x = 1\n")
    assert ast.unparse(syntax_tree("x = 2\n")) == "x = 2"
