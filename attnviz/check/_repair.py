"""A mask verdict's Fix found by trying small changes to the learner's own lines, and proved by running them.

A mask goes wrong in one token more often than in its approach: ``<=`` for ``<``, ``tril(-1)`` for
``tril()``, ``unsqueeze(-1)`` for ``unsqueeze(1)``, a ``~`` too many. The catalog's Fix is the whole
mask, pasted over the return line, and the learner's wrong line stays behind unexplained (replays 19
and 21). Here each such token of the learner's function (and of the helpers it calls, in its cell) is
changed in the ways a mask goes wrong (:func:`edits`). Each change alone, then each pair of changes
on two places, is compiled and run on the check's own inputs, in one child process with a time
limit (:func:`found`); the first that gives the right mask everywhere is run through the whole check
again, in another. Only if it passes does the Fix become the learner's changed lines, each to paste
in place of their own, and its comment names each change (``<`` where you wrote ``<=``).

The learner's code runs only in children: the parent reads and compiles text, never runs it.
"""

from __future__ import annotations

import ast
import inspect
import io
import itertools
import linecache
import time
import tokenize
import types
from dataclasses import dataclass

import torch

from ._rules import NO_KNOWN_BUG
from ._sandbox import run_steps
from ._stale import code_of, syntax_tree, unwrapped

__all__ = ["Edit", "diagonal_moved", "edits", "repaired"]

_ORDER = ("<", "<=", ">", ">=")
_AXES = ("0", "1", "2", "-1", "-2")
_CASTS = ("float", "int", "long", "double", "half", "byte", "short")
_FAR = 10 ** 9   # the score of a change that raises or gives no mask
_SEARCH_SECONDS = 1.0   # the child stops trying after this long; a found change is then checked whole


@dataclass(frozen=True)
class Edit:
    """One change: the text from ``start`` to ``end`` (offsets in the cell's text) becomes ``new``;
    ``said`` names it for the Fix's comment; ``group``: changes of the same token share it (never two
    at once)."""

    start: int
    end: int
    new: str
    said: str
    group: int
    rank: int = 1           # tried before the others when lower (a returned mask made bool: the least change)
    axis: bool = False      # an axis moved: two of them are tried together even where neither helps alone


class _Text:
    """The cell's text with AST positions (:func:`._stale.syntax_tree`'s, whose columns count characters)
    turned into offsets into it."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = list(itertools.accumulate((len(line) for line in self.lines), initial=0))

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node) -> tuple[int, int]:
        return self.at(node.lineno, node.col_offset), self.at(node.end_lineno, node.end_col_offset)

    def of(self, node) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def code_of(self, number: int) -> str:
        """Line ``number`` without its comment (read by tokenize; the line whole where it cannot be)."""
        line = self.lines[number - 1].rstrip("\n")
        try:
            for token in tokenize.generate_tokens(io.StringIO(line).readline):
                if token.type == tokenize.COMMENT:
                    return line[:token.start[1]].rstrip()
        except (tokenize.TokenError, SyntaxError):
            pass
        return line

    def line_of(self, offset: int) -> int:
        return next(i for i, start in enumerate(self.starts[1:], 1) if offset < start)


def _atom(node, text: str) -> str:
    """``text`` (a node's), in parentheses unless it binds tighter than any operator."""
    tight = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
    return text if isinstance(node, tight) else f"({text})"


def _int(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand,
                                                                                      ast.Constant):
        return -node.operand.value if type(node.operand.value) is int else None
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _name_of(func) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _on_torch(func) -> bool:
    return isinstance(func, ast.Attribute) and getattr(func.value, "id", None) in ("torch", "th")


class _Edits:
    """Every change of :func:`edits`, node by node."""

    def __init__(self, text: _Text, width: str | None, additive: bool = False):
        self.t, self.width, self.found, self.group = text, width, [], 0
        self.additive = additive      # the code fills with -inf or a large negative: a float mask to add

    def add(self, start, end, new, said, rank=1, axis=False):
        self.found.append(Edit(start, end, new, said, self.group, rank, axis))

    def node(self, node, parents):
        self.group += 1
        t = self.t
        if isinstance(node, ast.Compare):
            left = node.left
            for _, right in zip(node.ops, node.comparators, strict=True):
                gap_start, gap_end = t.span(left)[1], t.span(right)[0]
                gap = t.text[gap_start:gap_end]
                for old in sorted(("==", "!=", *_ORDER), key=len, reverse=True):
                    if (at := gap.find(old)) >= 0:
                        break
                else:
                    continue
                others = [o for o in _ORDER if o != old] if old in _ORDER else \
                    ["!=" if old == "==" else "=="]
                for new in others:
                    self.add(gap_start + at, gap_start + at + len(old), new, f"{new} where you wrote {old}")
                left = right
                self.group += 1
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
            start, end = t.span(node)
            sign = "~" if isinstance(node.op, ast.Invert) else "not"
            self.add(start, end, _atom(node.operand, t.of(node.operand)),
                     f"no {sign} before {t.of(node.operand)}", rank=0)
        elif isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Call) and _name_of(node.value.func) == "bool"):
            start, end = t.span(node.value)
            # 0 = may attend in an additive mask: .bool() reads it the other way round (replay 24's 04A4)
            if self.additive:
                self.add(start, end, _atom(node.value, t.of(node.value)) + " == 0",
                         "the additive mask made bool: == 0 at the end (0 = may attend)", rank=0)
            else:
                self.add(start, end, _atom(node.value, t.of(node.value)) + ".bool()",
                         "the mask made bool: .bool() at the end", rank=0)
        elif isinstance(node, ast.Call):
            self.call(node, parents)
        elif isinstance(node, ast.Subscript):
            self.subscript(node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and \
                _int(node.right) == 1:
            start, end = t.span(node)
            other = "-" if isinstance(node.op, ast.Add) else "+"
            left = t.of(node.left)
            self.add(start, end, left, f"{left} where you wrote {t.of(node)}", rank=0)
            self.add(start, end, f"{left} {other} 1", f"{left} {other} 1 where you wrote {t.of(node)}")
        elif isinstance(node, ast.Slice):                    # mask[i, :i] for mask[i, :i + 1]
            lower = node.lower
            if self.width and isinstance(lower, ast.UnaryOp) and isinstance(lower.op, ast.USub) \
                    and not isinstance(lower.operand, ast.Constant):
                # mask[b, :, -pad:] = False: -0 is 0, the whole row, where a sequence has no padding
                a, b = t.span(lower)
                new = f"{self.width} - {_atom(lower.operand, t.of(lower.operand))}"
                self.add(a, b, new, f"{new} where you wrote {t.of(lower)} (-0 is 0: the slice was the whole "
                         "row)")
                self.group += 1
            for bound in (node.lower, node.upper):
                if isinstance(bound, (ast.Name, ast.Attribute)):
                    a, b = t.span(bound)
                    for new in (f"{t.of(bound)} + 1", f"{t.of(bound)} - 1"):
                        self.add(a, b, new, f"{new} where you wrote {t.of(bound)} in [...]")
                    self.group += 1
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.Mult)):
            start, end = t.span(node)           # a mask and'ed with another that it should not be
            for kept, dropped in ((node.left, node.right), (node.right, node.left)):
                sign = {ast.BitAnd: "&", ast.BitOr: "|", ast.Mult: "*"}[type(node.op)]
                self.add(start, end, _atom(kept, t.of(kept)), f"no {sign} {t.of(dropped)}", rank=0)
        elif isinstance(node, ast.Attribute) and node.attr in ("T", "mT") and isinstance(node.ctx, ast.Load):
            start, end = t.span(node)
            self.add(start, end, t.of(node.value), f"no .{node.attr}", rank=0)

    def call(self, node, parents):
        t, name, func = self.t, _name_of(node.func), node.func
        start, end = t.span(node)
        method = isinstance(func, ast.Attribute) and not _on_torch(func)
        args = node.args[1:] if not method and isinstance(func, ast.Attribute) else node.args
        if name in ("tril", "triu", "tril_", "triu_"):
            base = t.span(func)[1] - len(name)
            old = t.text[base:end]                                      # tril(...) as written
            swapped = name.replace("tril", "TMP").replace("triu", "tril").replace("TMP", "triu")
            self.add(base, base + len(name), swapped, f"{swapped} where you wrote {name}")
            self.group += 1
            given = next((k.value for k in node.keywords if k.arg == "diagonal"), args[0] if args else None)
            if given is not None:
                value, (a, b) = _int(given), t.span(given)
                news = [str(value - 1), str(value + 1)] if value is not None else \
                    [f"{t.of(given)} - 1", f"{t.of(given)} + 1"]
                keyword = next((k for k in node.keywords if k.value is given), None)
                for new in news:
                    at = a
                    if new == "0" and (given in node.args or keyword):   # tril(1) -> tril()
                        before = [x for x in (*node.args, *node.keywords) if t.span(x)[1] <= a]
                        at = t.span(before[-1])[1] if before else t.span(keyword or given)[0]
                        new = ""
                    self.add(at, b, new, f"{old[:at - base]}{new}{old[b - base:]} where you wrote {old}")
            elif not node.keywords or all(k.arg != "diagonal" for k in node.keywords):
                for new in ("1", "-1"):
                    sep = ", " if node.args and not method else ""
                    self.add(end - 1, end - 1, sep + new, f"{old[:-1]}{sep}{new}) where you wrote {old}")
        elif name in ("unsqueeze", "unsqueeze_") and args:
            a, b = t.span(args[0])
            for axis in _AXES:
                if axis != t.of(args[0]).replace(" ", ""):
                    self.add(a, b, axis, f"{name}({axis}) where you wrote {name}({t.of(args[0])})", axis=True)
        elif name in ("view", "reshape") and method and len(args) >= 2 and any(_int(a) == 1 for a in args):
            texts = [t.of(a) for a in args]
            a, b = t.span(args[0])[0], t.span(args[-1])[1]
            for order in dict.fromkeys(itertools.permutations(texts)):
                if list(order) != texts:
                    new = ", ".join(order)
                    self.add(a, b, new, f"{name}({new}) where you wrote {name}({t.text[a:b]})")
        elif name in ("to", "type") and method and len(node.args) + len(node.keywords) == 1:
            a = t.span(func)[1] - len(name)
            self.add(a, end, "bool()", f".bool() where you wrote .{t.text[a:end]}")
        elif name in _CASTS and method and not node.args and not node.keywords:
            a = t.span(func)[1] - len(name)
            self.add(a, end, "bool()", f".bool() where you wrote .{name}()")
        elif name in ("logical_not", "logical_not_") and (method or len(node.args) == 1):
            inner = func.value if method else node.args[0]
            self.add(start, end, _atom(inner, t.of(inner)), f"no {name}", rank=0)
        elif name in ("t", "transpose", "flip", "fliplr", "flipud") and method:
            self.add(start, end, t.of(func.value), f"no .{name}(...)", rank=0)
        elif name == "where" and len(node.args) == 3:
            (a1, b1), (a2, b2) = t.span(node.args[1]), t.span(node.args[2])
            one, two = t.text[a1:b1], t.text[a2:b2]
            self.add(a1, b2, f"{two}{t.text[b1:a2]}{one}", f"where(..., {two}, {one}) where you wrote "
                     f"where(..., {one}, {two})")
        elif name in ("ones", "ones_like", "tensor", "as_tensor") \
                and _on_torch(func):
            dtype = next((k for k in node.keywords if k.arg == "dtype"), None)
            if dtype is None:
                self.add(end - 1, end - 1, ", dtype=torch.bool", f"{name}(..., dtype=torch.bool)")
            elif t.of(dtype.value) != "torch.bool":
                a, b = t.span(dtype.value)
                self.add(a, b, "torch.bool", f"dtype=torch.bool where you wrote dtype={t.of(dtype.value)}")
        elif name == "range":
            for arg in node.args[:2]:
                a, b = t.span(arg)
                if (value := _int(arg)) is not None:
                    news = [str(value - 1), str(value + 1)]
                elif isinstance(arg, (ast.Name, ast.Attribute, ast.Call)):
                    news = [f"{t.of(arg)} + 1", f"{t.of(arg)} - 1"]
                else:
                    continue
                before = t.text[start:end]
                for new in news:
                    upto = b
                    if new == "0" and arg is node.args[0] and len(node.args) == 2:   # range(1, n) -> range(n)
                        upto, new = t.span(node.args[1])[0], ""
                    self.add(a, upto, new,
                             f"{before[:a - start]}{new}{before[upto - start:]} where you wrote {before}")
                self.group += 1
        if self.width and name == "max" and (method and not node.args or not method and len(node.args) == 1):
            outer = node
            parent = parents.get(outer)
            if isinstance(parent, ast.Attribute) and parent.attr == "item" and \
                    isinstance(parents.get(parent), ast.Call):
                outer = parents[parent]
            elif isinstance(parent, ast.Call) and getattr(parent.func, "id", None) == "int":
                outer = parent
            a, b = t.span(outer)
            self.group += 1
            self.add(a, b, self.width, f"{self.width} where you wrote {t.of(outer)}")

    def subscript(self, node):
        t = self.t
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else []
        plain = [isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None
                 or isinstance(e, ast.Constant) and e.value is None for e in items]
        if len(items) < 2 or not all(plain) or not any(isinstance(e, ast.Constant) for e in items):
            return
        texts = [t.of(e) for e in items]
        a, b = t.span(items[0])[0], t.span(items[-1])[1]
        for order in dict.fromkeys(itertools.permutations(texts)):
            if list(order) != texts:
                new = ", ".join(order)
                what = t.of(node.value) if len(t.of(node.value)) <= 24 else ""
                self.add(a, b, new, f"{what}[{new}] where you wrote {what}[{t.text[a:b]}]", axis=True)


@dataclass
class _Cell:
    text: _Text
    name: str
    kept: list           # the statements compiled again for each change: imports, defs, literal globals
    targets: list        # the functions whose tokens are changed: the learner's and the helpers it calls


def _cell(fn) -> _Cell | None:
    """The learner's function read from its cell (or file), with the helpers it calls there; None for
    anything else (a closure, a lambda, a method, code without text)."""
    fn = unwrapped(fn)                      # under functools.cache or lru_cache: the def is rebuilt with it
    code = code_of(fn)
    if type(fn) is not types.FunctionType or code.co_freevars or fn.__name__ == "<lambda>":
        return None
    text = "".join(linecache.getlines(code.co_filename))
    try:
        tree = syntax_tree(text)
    except (SyntaxError, ValueError):
        return None
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    own = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn.__name__ and
                code.co_firstlineno in (n.lineno, *(d.lineno for d in n.decorator_list))), None)
    if own is None:
        return None
    targets, todo = [own], [own]
    while todo:
        for node in ast.walk(todo.pop()):
            helper = defs.get(getattr(node.func, "id", None)) if isinstance(node, ast.Call) else None
            if helper is not None and helper not in targets:
                targets.append(helper)
                todo.append(helper)
    read = {n.id for f in targets for n in ast.walk(f) if isinstance(n, ast.Name)}
    literal = (ast.Dict, ast.List, ast.Set, ast.Tuple, ast.Constant)
    # a global cache the function reads, set anew for each change (``_tar: dict[int, Tensor] = {}`` too)
    kept = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) or n in targets
            or isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, literal)
            and any(getattr(x, "id", None) in read
                    for x in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    return _Cell(_Text(text), fn.__name__, kept, targets)


def edits(fn, width: str | None = None, cell: _Cell | None = None) -> list[Edit]:
    """Every change tried, in the learner's function and its helpers (not inside a ``while``'s test: a
    loop that never ends is no fix); ``width``: the name that stands for n (a mask ``max(lengths)``
    wide); ``cell``: the function's :func:`_cell`, when read already."""
    cell = cell or _cell(fn)
    if cell is None:
        return []
    maker = _Edits(cell.text, width, additive=any(_fills_to_add(node) for target in cell.targets
                                                  for node in ast.walk(target)))
    for target in cell.targets:
        parents = {child: node for node in ast.walk(target) for child in ast.iter_child_nodes(node)}
        loops = {id(n) for w in ast.walk(target) if isinstance(w, ast.While) for n in ast.walk(w.test)}
        for node in ast.walk(target):
            if id(node) not in loops and node not in target.decorator_list:
                maker.node(node, parents)
    line = cell.text.line_of
    return [e for e in maker.found if line(e.start) == line(max(e.end - 1, e.start))]


def _fills_to_add(node) -> bool:
    """Whether ``node`` is a fill of an additive mask: -inf (``float("-inf")``, ``-math.inf``,
    ``-torch.inf``), a dtype's minimum (``torch.finfo(...).min``) or a number at or below -1e4."""
    if isinstance(node, ast.Call) and _name_of(node.func) == "float" and node.args:
        return isinstance(node.args[0], ast.Constant) and str(node.args[0].value).strip() == "-inf"
    if isinstance(node, ast.Attribute) and node.attr == "min" and isinstance(node.value, ast.Call):
        return _name_of(node.value.func) == "finfo"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = node.operand
        if isinstance(operand, ast.Attribute) and operand.attr == "inf":
            return True
        if isinstance(operand, ast.Call) and _name_of(operand.func) == "float" and operand.args:
            return isinstance(operand.args[0], ast.Constant) and str(operand.args[0].value) == "inf"
        return isinstance(operand, ast.Constant) and isinstance(operand.value, (int, float)) \
            and operand.value >= 1e4
    return False


def _snippet(cell: _Cell, chosen) -> str:
    """The kept statements' text, ``chosen`` made in it, one after the other (not the whole cell: a
    module of a thousand lines is parsed in milliseconds, and a search parses hundreds)."""
    text, parts = cell.text, []
    for node in cell.kept:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        start, end = text.starts[first - 1], text.at(node.end_lineno, node.end_col_offset)
        part = text.text[start:end]
        for e in sorted((e for e in chosen if start <= e.start and e.end <= end), key=lambda e: -e.start):
            part = part[:e.start - start] + e.new + part[e.end - start:]
        parts.append(part)
    return "\n".join(parts) + "\n"


def _compiled(cell: _Cell, chosen):
    """The kept statements of the cell with ``chosen`` made, compiled; None where they do not parse."""
    try:
        return compile(_snippet(cell, chosen), "<your function, changed>", "exec")
    except (SyntaxError, ValueError):
        return None


def _built(fn, code, name):
    namespace = dict(unwrapped(fn).__globals__)
    exec(code, namespace)   # noqa: S102 - the learner's own definitions, changed, in a child process
    return namespace[name]


def _score(candidate, probes, wrong) -> int:
    """How wrong ``candidate`` is on ``probes``: the sum of ``wrong(probe, candidate)``, large for a raise."""
    try:
        return sum(wrong(p, candidate) for p in probes)
    except Exception:  # noqa: BLE001 - a change that breaks the code is no fix
        return _FAR


def _search(fn, cell, edits_, probes, wrong):
    """In the child: the first change (as indices into ``edits_``) right on every probe, or None. Each
    change alone first, scored on the first two probes; then each change that made the mask less
    wrong there, paired with every other change (two mistakes at once: replay 21's 04X3, an off-by-one
    and the wrong axis)."""
    began, few = time.perf_counter(), probes[:2]
    base = _score(fn, few, wrong)

    def tried(chosen):
        code = _compiled(cell, [edits_[i] for i in chosen])
        if code is None:
            return _FAR
        try:
            candidate = _built(fn, code, cell.name)
        except Exception:  # noqa: BLE001
            return _FAR
        score = _score(candidate, few, wrong)
        if score:
            return score
        try:                    # all of them, in the check's order, on a fresh build (a cache starts empty)
            return _score(_built(fn, code, cell.name), probes, wrong)
        except Exception:  # noqa: BLE001
            return _FAR

    order = sorted(range(len(edits_)), key=lambda i: edits_[i].rank)
    better = []
    for i in order:
        score = tried((i,))
        if score == 0:
            return (i,)
        if score < base:
            better.append((score, i))
    # a comparison transposed: positions[:, None] < lengths[None, :], each axis moved alone raises
    axes = [i for i in order if edits_[i].axis]
    pairs = [(i, j) for _, i in sorted(better) for j in order] + [(i, j) for i in axes for j in axes if i < j]
    for i, j in pairs:
        a, b = edits_[i], edits_[j]
        if j == i or a.group == b.group or not (a.end <= b.start or b.end <= a.start):
            continue
        if time.perf_counter() - began > _SEARCH_SECONDS:
            return None
        if tried((i, j)) == 0:
            return (i, j)
    return None


def _proxy(fn, code, name):
    """A function that builds the changed definitions on its first call (in the check's child) and
    calls them; it has ``fn``'s signature, for the checks that read it."""
    made = {}

    def changed(*args, **kwargs):
        if "fn" not in made:
            made["fn"] = _built(fn, code, name)
        return made["fn"](*args, **kwargs)

    changed.__signature__ = inspect.signature(fn)
    changed.__name__ = unwrapped(fn).__name__
    return changed


def _lines_changed(cell: _Cell, chosen) -> dict:
    """The changes ``chosen``, by the number of the line each is on."""
    lines = {}
    for e in chosen:
        lines.setdefault(cell.text.line_of(e.start), []).append(e)
    return lines


def _fix(cell: _Cell, chosen) -> str:
    text, lines = cell.text, _lines_changed(cell, chosen)
    new_lines = []
    for number, made in sorted(lines.items()):
        start = text.starts[number - 1]
        line = text.code_of(number)
        for e in sorted(made, key=lambda e: -e.start):
            line = line[:e.start - start] + e.new + line[e.end - start:]
        new_lines.append(line.strip())
    which = "line" if len(new_lines) == 1 else "two lines"
    owners = [next(f.name for f in cell.targets if f.lineno <= number <= f.end_lineno)
              for number in sorted(lines)]
    if len(set(owners)) > 1:                    # lines of two functions: say whose each is
        which = " and ".join(f"your line in {owner}" for owner in owners)
        which = which.removeprefix("your ")
    first, *rest = sorted(chosen, key=lambda e: e.start)
    between = text.text[first.end:rest[0].start] if rest else ""
    # two changes in one call (tril(ones(n, n)) for triu(ones(n, n), diagonal=1)), or side by side
    inside = between.count("(") > between.count(")")
    if rest and text.line_of(first.start) == text.line_of(rest[0].start) and (len(between) <= 3 or inside):
        end = rest[0].end                      # one change, said once: tril() where you wrote triu(1)
        while text.text[first.start:end].count("(") > text.text[first.start:end].count(")"):
            end = text.text.index(")", end) + 1
        old = text.text[first.start:end]
        new = first.new + text.text[first.end:rest[0].start] + rest[0].new + text.text[rest[0].end:end]
        said = f"{new} where you wrote {old}"
    else:
        said = "; ".join(e.said for e in (first, *rest))
    if len(new_lines) == 2 and any(line.endswith(":") for line in new_lines):
        # a block's head (for j in range(i + 1):) cannot share a line with another statement: "a:; b" was a
        # SyntaxError when pasted (a replay's 04 c02), so the second line goes in the comment, each with its
        # place
        old = [text.code_of(number).strip() for number in sorted(lines)]
        return (f"{new_lines[0]}   # in place of your line '{old[0]}', and {new_lines[1]} in place of your "
                f"line '{old[1]}': {said}")
    return "; ".join(new_lines) + f"   # in place of your {which}: {said}"


def repaired(fn, result, probes, wrong, passes, width: str | None = None):
    """``result`` with its Fix the learner's own lines changed (one or two tokens), where such a change
    makes ``fn`` right on every probe (``wrong(probe, candidate)`` is 0: how many entries are wrong,
    run in a child) and then passes the whole check (``passes(candidate)``); else ``result`` as it was."""
    if result.passed or result.status == "not_implemented" or any("stopped" in o for o in result.observed):
        return result
    try:
        return _repaired(fn, result, probes, wrong, passes, width)
    except Exception:  # noqa: BLE001 - code the reader cannot follow keeps the Fix it had
        return result


def _repaired(fn, result, probes, wrong, passes, width):
    cell = _cell(fn)
    found = edits(fn, width, cell) if cell else []
    if not found:
        return result
    with torch.no_grad():
        run = run_steps([lambda: _search(fn, cell, found, probes, wrong)], time_limit=_SEARCH_SECONDS + 2,
                        budget=_SEARCH_SECONDS + 2)
    if run.steps[0].status != "ok" or run.steps[0].value is None:
        return result
    chosen = [found[i] for i in run.steps[0].value]
    if not passes(_proxy(fn, _compiled(cell, chosen), cell.name)):
        return result
    result.fix = _fix(cell, chosen)
    result.headline = _headline(result.headline, len(chosen), len(_lines_changed(cell, chosen)))
    return result


def _headline(headline: str, changes: int, lines: int) -> str:
    """A headline that said the mask matches no known bug, saying what the repair found instead: the
    mistakes are a token each, on one line or two (replay 23's 04Z3 read "no known bug" of an off-by-one
    and a misplaced axis at once, as if its code were strange)."""
    if not headline.endswith(NO_KNOWN_BUG):
        return headline
    changed = "one change" if changes == 1 else "two changes"
    where = "one of your lines" if lines == 1 else "two of your lines"
    makes, names = ("makes", "it") if changes == 1 else ("make", "each")
    return (headline[: -len(NO_KNOWN_BUG)] + f": no one known bug explains it, and {changed} to {where} "
            f"{makes} it right (the Fix names {names}).")


def diagonal_moved(fn, verdict, still_wrong) -> tuple | None:
    """For a function whose mask is built with ``tril`` or ``triu`` (a decoding step's bottom-right mask):
    the first change of one of those calls' diagonals by one after which ``still_wrong(verdict(changed))``
    is False (``verdict``: the whole check of the changed function, which runs it in a child); as
    ``(fix, that verdict)``, the Fix the learner's line with that change; else None. Replay 23's 08Z3 wrote
    ``tril(n_all - n_new - 1)``: no query saw its own key, the first row of a prefill was all -inf, and a
    NaN matches no known bug."""
    cell = _cell(fn)
    if cell is None:
        return None
    spans = []
    for target in cell.targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Call) and _name_of(node.func) in ("tril", "triu", "tril_", "triu_"):
                method = isinstance(node.func, ast.Attribute) and not _on_torch(node.func)
                args = node.args if method else node.args[1:]
                given = next((k.value for k in node.keywords if k.arg == "diagonal"),
                             args[0] if args else None)
                spans += [cell.text.span(given)] if given is not None else []
    found = [e for e in edits(fn, cell=cell) if any(a <= e.start and e.end <= b for a, b in spans)]
    for e in sorted(found, key=lambda e: e.rank):
        code = _compiled(cell, [e])
        if code is not None and not still_wrong(result := verdict(_proxy(fn, code, cell.name))):
            return _fix(cell, [e]), result
    return None

