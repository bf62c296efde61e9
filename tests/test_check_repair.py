"""A mask verdict's Fix found by changing one or two tokens of the learner's own lines and running them
(attnviz/check/_repair.py): pasted in place of their lines, it passes; it is never run in the kernel;
and where no small change passes, the Fix is what it was."""

import difflib
import time

import pytest
from test_check_your_names import _load  # the learner's code in a file of its own, as a cell

from attnviz import zoo
from attnviz.check import check_causal_mask, check_padding_mask
from attnviz.check._repair import edits


def _pasted(source: str, fix: str) -> str:
    """``source`` with each line of the Fix (its code, lines joined by '; ') in place of the learner's line
    most like it, indented as that line was."""
    lines = source.splitlines()
    for new in fix.split("   #")[0].split("; "):
        def like(i, new=new):
            return difflib.SequenceMatcher(None, lines[i].split("#")[0].strip(), new).ratio()

        at = max(range(len(lines)), key=like)
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        lines[at] = indent + new
    return "\n".join(lines) + "\n"


# replay 21's 04X3: a list per sequence with <= (off by one) and the query axis added last: two known bugs at
# once, and the verdict said "matches no known bug" with the whole answer as its Fix
TWO_MISTAKES = """
def my_padding_mask(lengths, n):
    sari = []
    for dairgho in lengths.tolist():
        sari.append([j <= dairgho for j in range(n)])   # আসল অবস্থানগুলো
    mukhosh = torch.tensor(sari)                        # (batch, n)
    return mukhosh.unsqueeze(-1)                        # প্রশ্নের অক্ষ
"""


def test_two_mistakes_on_two_lines_get_both_lines_changed_and_named(tmp_path):
    result = check_padding_mask(_load(tmp_path, "two", TWO_MISTAKES).my_padding_mask)
    assert not result.passed
    assert result.fix == ("sari.append([j < dairgho for j in range(n)]); return mukhosh.unsqueeze(1)   # in "
                          "place of your two lines: < where you wrote <=; unsqueeze(1) where you wrote "
                          "unsqueeze(-1)"), result.fix
    fixed = _load(tmp_path, "two_fixed", _pasted(TWO_MISTAKES, result.fix))
    assert check_padding_mask(fixed.my_padding_mask).passed


def test_a_changed_block_head_and_another_line_are_each_given_their_place(tmp_path):
    """'for j in range(i + 1):; return m.bool()' was one Fix line: pasted as it was, a SyntaxError (a
    replay's 04 c02). A block's head now stands alone, the other line and its place in the comment."""
    source = """
def my_causal_mask(n):
    m = torch.zeros(n, n, dtype=torch.int)
    for i in range(n):
        for j in range(i):
            m[i, j] = 1
    return m
"""
    result = check_causal_mask(_load(tmp_path, "head", source).my_causal_mask)
    assert result.fix.startswith("for j in range(i + 1):   # in place of your line 'for j in range(i):', and "
                                 "return m.bool() in place of your line 'return m': "), result.fix
    fixed = source.replace("for j in range(i):", "for j in range(i + 1):")
    fixed = fixed.replace("return m", "return m.bool()")
    assert check_causal_mask(_load(tmp_path, "head_fixed", fixed).my_causal_mask).passed


@pytest.mark.parametrize(("line", "fix"), [
    ("return torch.ones(n, n, dtype=torch.bool).triu(1)",
     "return torch.ones(n, n, dtype=torch.bool).tril()   # in place of your line: tril() where you wrote "
     "triu(1)"),
    ("return torch.tril(torch.ones(n, n, dtype=torch.bool), -1)",
     "return torch.tril(torch.ones(n, n, dtype=torch.bool))   # in place of your line: "),
    ("return torch.arange(n)[None, :] >= torch.arange(n)[:, None]",
     "return torch.arange(n)[None, :] <= torch.arange(n)[:, None]   # in place of your line: <= where you "
     "wrote >="),
    ("return ~torch.ones(n, n, dtype=torch.bool).tril()",
     "return torch.ones(n, n, dtype=torch.bool).tril()   # in place of your line: no ~ before "),
    # two changes in one call, said once: the diagonal's alone named triu, which read as "keep triu"
    # (replay 26's c05)
    ("return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)",
     "return torch.tril(torch.ones(n, n, dtype=torch.bool))   # in place of your line: "
     "tril(torch.ones(n, n, dtype=torch.bool)) where you wrote triu(torch.ones(n, n, dtype=torch.bool), "
     "diagonal=1)"),
])
def test_a_causal_mask_wrong_in_one_token_gets_its_own_line_with_that_token_changed(tmp_path, line, fix):
    source = f"def my_causal_mask(n):\n    {line}\n"
    result = check_causal_mask(_load(tmp_path, "one", source).my_causal_mask)
    assert result.fix.startswith(fix), result.fix
    assert check_causal_mask(_load(tmp_path, "one_fixed", _pasted(source, result.fix)).my_causal_mask).passed


# replay 26's p11: the padding cleared with a negative slice, -0 for a full sequence
NEGATIVE_SLICE = """
def my_padding_mask(lengths, n):
    mask = torch.ones(len(lengths), 1, n, dtype=torch.bool)
    for b in range(len(lengths)):
        n_pad = n - int(lengths[b])
        mask[b, 0, -n_pad:] = False          # the last n_pad positions are padding
    return mask
"""


def test_padding_cleared_with_a_negative_slice_gets_its_own_line_counted_from_n(tmp_path):
    """The catalog's whole mask, pasted over the learner's first mask line, left the loop's slice to
    block every full sequence again, and its "or mask[b, :, length:] = False" named a length the learner
    had not written (a NameError)."""
    result = check_padding_mask(_load(tmp_path, "neg", NEGATIVE_SLICE).my_padding_mask)
    assert result.bug == "padding_full_sequence_blocked", repr(result)
    assert result.fix.startswith("mask[b, 0, n - n_pad:] = False   # in place of your line: n - n_pad where "
                                 "you wrote -n_pad (-0 is 0"), result.fix
    fixed = _load(tmp_path, "neg_fixed", _pasted(NEGATIVE_SLICE, result.fix))
    assert check_padding_mask(fixed.my_padding_mask).passed


def test_every_mask_bug_of_the_zoo_given_its_lines_changed_passes_once_they_are_pasted(tmp_path):
    """Each zoo mask whose Fix is its own lines changed: pasted in place of them, the check passes."""
    import inspect

    changed = 0
    for table, check in ((zoo.CAUSAL_MASK_BUGS, check_causal_mask),
                         (zoo.PADDING_MASK_BUGS, check_padding_mask)):
        for name, fn in table.items():
            result = check(fn)
            if "where you wrote" not in result.fix and "   # in place of your line: no " not in result.fix:
                continue
            changed += 1
            source = inspect.getsource(fn)
            fixed = _load(tmp_path, f"z{changed}", _pasted(source, result.fix))
            assert check(getattr(fixed, fn.__name__)).passed, (name, result.fix)
    assert changed >= 12, changed


def test_the_changed_code_never_runs_in_the_kernel(tmp_path):
    source = """
RAN = []

def my_causal_mask(n):
    RAN.append(n)
    return torch.ones(n, n, dtype=torch.bool).tril(1)
"""
    module = _load(tmp_path, "kernel", source)
    result = check_causal_mask(module.my_causal_mask)
    assert result.fix.startswith("return torch.ones(n, n, dtype=torch.bool).tril()   # in place of your line")
    assert module.RAN == []


def test_no_small_change_leaves_the_fix_as_it_was(tmp_path):
    source = "def my_causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool)\n"
    result = check_causal_mask(_load(tmp_path, "none", source).my_causal_mask)
    assert result.bug == "mask_blocks_nothing"
    assert "where you wrote" not in result.fix
    assert result.fix.startswith("return torch.ones(n, n, dtype=torch.bool).tril()"), result.fix


def test_a_while_loops_test_is_never_changed_and_a_verdict_comes_in_time(tmp_path):
    source = """
def my_causal_mask(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    i = 0
    while i < n:
        mask[i, :i] = True
        i += 1
    return mask
"""
    fn = _load(tmp_path, "loop", source).my_causal_mask
    assert not any(e.new in (">", ">=", "<=") for e in edits(fn))
    began = time.perf_counter()
    result = check_causal_mask(fn)
    assert time.perf_counter() - began < 5
    assert result.bug == "causal_excludes_self"
    assert result.fix.startswith("mask[i, :i + 1] = True   # in place of your line"), result.fix


def test_a_cached_function_and_a_float_mask_get_both_their_lines(tmp_path):
    """Replay 22's 04Y1: under functools.lru_cache, triu() (the diagonal blocked) and 1 - triu (a float
    mask); the Fix was the whole mask with no word of where it goes, and pasted over the triu line it
    raised on the 1 - line."""
    source = """
from functools import lru_cache


@lru_cache(maxsize=None)
def my_causal_mask(n: int) -> torch.Tensor:
    tulevik = torch.ones(n, n).triu()
    lubatud = 1 - tulevik
    return lubatud
"""
    result = check_causal_mask(_load(tmp_path, "cached", source).my_causal_mask)
    assert result.fix.startswith("tulevik = torch.ones(n, n).triu(1); return lubatud.bool()   # in place of "
                                 "your two lines: triu(1) where you wrote triu()"), result.fix
    fixed = _load(tmp_path, "cached_fixed", _pasted(source, result.fix))
    assert check_causal_mask(fixed.my_causal_mask).passed


def test_a_transposed_comparison_gets_both_axes_moved(tmp_path):
    """Replay 22's 04Y4: positions as a column and lengths as a row, read back with .view; the Fix made the
    lengths a column and left the positions one, and it raised when pasted."""
    source = """
def my_padding_mask(lengths, n):
    lote = lengths.shape[0]
    posicions = torch.arange(n, device=lengths.device)
    mascara = (posicions[:, None] < lengths[None, :]).float()
    mascara = mascara.view(lote, 1, n)
    return mascara.bool()
"""
    result = check_padding_mask(_load(tmp_path, "transposed", source).my_padding_mask)
    assert result.fix.startswith("mascara = (posicions[None, :] < lengths[:, None]).float()   # in place "
                                 "of your line: posicions[None, :] where you wrote posicions[:, None]; "), \
        result.fix
    fixed = _load(tmp_path, "transposed_fixed", _pasted(source, result.fix))
    assert check_padding_mask(fixed.my_padding_mask).passed


CACHED = """
_maszk_tar: dict[int, torch.Tensor] = {}


def my_causal_mask(n: int) -> torch.Tensor:
    if n in _maszk_tar:
        return _maszk_tar[n]
    egyesek = torch.ones(n, n)
    maszk = torch.tril(egyesek, diagonal=-1) == 1
    _maszk_tar[n] = maszk
    return RETURNED
"""


def test_a_cache_that_stores_another_mask_is_caught_on_a_repeat_call_and_its_line_is_the_fix(tmp_path):
    """Replay 23's 04Z2: a cache keyed by n with the diagonal blocked; the Fix went over the return line, the
    cache kept the wrong mask, and the check passed: it never called the same n twice."""
    source = CACHED.replace("RETURNED", "maszk")
    result = check_causal_mask(_load(tmp_path, "cached0", source).my_causal_mask)
    assert result.bug == "causal_excludes_self", repr(result)
    assert result.fix == ("maszk = torch.tril(egyesek) == 1   # in place of your line: tril(egyesek) where "
                          "you wrote tril(egyesek, diagonal=-1)"), result.fix
    # the return line alone mended, as the old Fix did: right on each first call, wrong on a repeat call
    source = CACHED.replace("RETURNED", "torch.ones(n, n, dtype=torch.bool).tril()")
    result = check_causal_mask(_load(tmp_path, "cached1", source).my_causal_mask)
    assert not result.passed
    assert result.headline.startswith("your function returned the wrong mask for n=4 called a second time"), \
        result.headline
    assert result.fix.startswith("maszk = torch.tril(egyesek) == 1   # in place of your line"), result.fix
    fixed = _load(tmp_path, "cached2", _pasted(source, result.fix))
    assert check_causal_mask(fixed.my_causal_mask).passed


# replay 24's 04A1: a cache that stores the float triangle before it is turned into the bool mask returned
FLOAT_CACHED = """
_pamiec = {}


def my_causal_mask(n):
    if n in _pamiec:
        return _pamiec[n]
    gorny_trojkat = torch.triu(torch.ones(n, n), diagonal=1)
    _pamiec[n] = gorny_trojkat
    maska = gorny_trojkat.logical_not()
    return maska
"""


def test_a_float_mask_handed_back_by_a_cache_on_a_repeat_call_is_said_as_a_repeat_call(tmp_path):
    """Replay 24's 04A1 (stuck) was told five times that its pattern was right and its dtype float32, and
    given '.bool()' once more each round: only the repeat call returned the cached float triangle."""
    result = check_causal_mask(_load(tmp_path, "float_cached", FLOAT_CACHED).my_causal_mask)
    assert result.bug is None and "dtype" not in result.headline, repr(result)
    assert result.headline.startswith("your function returned the wrong mask for n=4 called a second time, "
                                      "where the first call was right"), result.headline
    assert not any("float32" in line for line in result.observed + result.notes), result
    assert result.fix.startswith("return torch.ones(n, n, dtype=torch.bool).tril()   # in place of your "
                                 "lines 'if n in _pamiec:' and the one under it"), result.fix
    pasted = FLOAT_CACHED.replace("    if n in _pamiec:\n        return _pamiec[n]\n",
                                  "    " + result.fix.split("   #")[0] + "\n")
    assert check_causal_mask(_load(tmp_path, "float_cached_fixed", pasted).my_causal_mask).passed


# replay 23's 04Z3: a helper off by one (<=) and the query axis added last in the function: "matches no
# known bug", no line said the mask ran down the queries, and the Fix joined two functions' lines unnamed
HELPER_AND_FUNCTION = """
def _gercek_konumlar(lengths, n):
    konumlar = torch.arange(n).view(1, -1)          # (1, n)
    return konumlar <= lengths.view(-1, 1)          # (batch, n)


def my_padding_mask(lengths, n):
    gercek = _gercek_konumlar(lengths, n)
    return gercek.unsqueeze(-1)
"""


def test_two_mistakes_in_two_functions_are_said_as_such_with_whose_line_each_is(tmp_path):
    result = check_padding_mask(_load(tmp_path, "helper", HELPER_AND_FUNCTION).my_padding_mask)
    assert not result.passed and result.bug is None
    assert result.headline.endswith(": no one known bug explains it, and two changes to two of your lines "
                                    "make it right (the Fix names each)."), result.headline
    assert any("Your mask has shape (1, 5, 1): its 5 positions run down the queries, so it blocks whole "
               "query rows, not key columns" in line for line in result.observed), result.observed
    assert result.fix == ("return konumlar < lengths.view(-1, 1); return gercek.unsqueeze(1)   # in place of "
                          "your line in _gercek_konumlar and your line in my_padding_mask: < where you wrote "
                          "<=; unsqueeze(1) where you wrote unsqueeze(-1)"), result.fix
    fixed = _load(tmp_path, "helper_fixed", _pasted(HELPER_AND_FUNCTION, result.fix))
    assert check_padding_mask(fixed.my_padding_mask).passed


def test_two_changes_on_one_line_are_said_so_and_one_known_bug_keeps_its_name(tmp_path):
    both = ("def my_padding_mask(lengths, n):\n"
            "    return (torch.arange(n)[None, :] <= lengths[:, None])[:, :, None]\n")
    result = check_padding_mask(_load(tmp_path, "both", both).my_padding_mask)
    assert result.headline.endswith(": no one known bug explains it, and two changes to one of your lines "
                                    "make it right (the Fix names each)."), result.headline
    assert result.fix.endswith("< where you wrote <=; [:, None, :] where you wrote [:, :, None]"), result.fix
    one = both.replace("[:, :, None]", "[:, None, :]")
    result = check_padding_mask(_load(tmp_path, "one", one).my_padding_mask)
    assert result.bug == "padding_off_by_one" and "no one known bug" not in result.headline, result.headline


# replay 24's 04A4: a helper off by one (<=) that builds an additive 0/-inf mask with torch.where
ADDITIVE_HELPER = """
def _mwgwd_allweddi(hydoedd, n):
    safleoedd = torch.arange(n)
    hyd_colofn = hydoedd[:, None].expand(-1, n)
    cyfan = safleoedd <= hyd_colofn
    return torch.where(cyfan, 0.0, float("-inf"))


def my_padding_mask(lengths, n):
    allweddi = _mwgwd_allweddi(lengths, n)
    return allweddi[:, None, :]
"""


def test_an_additive_mask_is_made_bool_with_equals_zero_not_bool_and_a_turned_comparison(tmp_path):
    """Replay 24's 04A4 was given '>= where you wrote <=' and '.bool()': .bool() reads an additive mask the
    other way round (True where -inf), and >= turned it back, against the verdict's own words (< for <=)."""
    result = check_padding_mask(_load(tmp_path, "additive", ADDITIVE_HELPER).my_padding_mask)
    assert result.bug == "padding_off_by_one", repr(result)
    assert result.fix == ("cyfan = safleoedd < hyd_colofn; return allweddi[:, None, :] == 0   # in place of "
                          "your line in _mwgwd_allweddi and your line in my_padding_mask: < where you wrote "
                          "<=; the additive mask made bool: == 0 at the end (0 = may attend)"), result.fix
    fixed = _load(tmp_path, "additive_fixed", _pasted(ADDITIVE_HELPER, result.fix))
    assert check_padding_mask(fixed.my_padding_mask).passed
