"""Whether the code a check is handed is what the learner meant: a warning when a newer cell failed,
and plain words when their code sits below (or above) the stub's ``raise NotImplementedError`` line;
which of the notebook's globals that code reads (:func:`globals_read`), and which names it uses
(:func:`names_used`, :func:`code_notes`: a fill of ``torch.finfo(...).tiny`` told as such).

A learner fixes an exercise cell, runs it, gets a SyntaxError (or any error before the ``def``
finishes), and runs the check cell: the name still holds the *previous* definition, so the verdict is
about code no longer on screen. IPython keeps every cell's text in the list ``In`` in the kernel's
``__main__`` namespace, and every cell's code in :mod:`linecache` under the file name its functions
carry; comparing the two says which cell made the object checked and whether a later cell tried to
define the same name. Read without importing IPython (the checkers' layer must not); outside a kernel
(plain Python, pytest) there is no ``In`` and no note.
"""

from __future__ import annotations

import ast
import dataclasses
import dis
import functools
import inspect
import linecache
import re
import sys
import textwrap
import tokenize
import types

from ._verdict import fixes_shown

__all__ = ["stale_note", "ran_note", "below_stub", "above_stub", "with_stale_note", "globals_read",
           "values_read", "shared_defaults", "code_objects", "own_functions", "names_used", "code_notes",
           "globals_note", "library_used", "syntax_tree", "segment", "source_of", "code_of", "unwrapped",
           "signature_of"]


@functools.lru_cache(maxsize=256)
def syntax_tree(text: str) -> ast.Module:
    """``ast.parse(text)``, kept: one verdict reads the same cell's or function's text a dozen times
    (a third of a check's time went to parsing it again). The tree is shared: read it, never change it.

    Its columns (``col_offset``, ``end_col_offset``) count characters, where ``ast.parse``'s count UTF-8
    bytes, so that they index the text as Python's strings do: a learner's ``pondérés`` or ``trọng_số``
    puts every column after it off by a byte or more, and a Fix cut at such a column came out garbled.
    Read a node's text with :func:`segment`, not ``ast.get_source_segment`` (which counts bytes)."""
    tree = ast.parse(text)
    if text.isascii():
        return tree
    lines = _lines(text)
    for node in ast.walk(tree):
        for line_key, col_key in (("lineno", "col_offset"), ("end_lineno", "end_col_offset")):
            line, col = getattr(node, line_key, None), getattr(node, col_key, None)
            if line is not None and col is not None and 0 < line <= len(lines):
                setattr(node, col_key, len(lines[line - 1].encode()[:col].decode(errors="ignore")))
    return tree


def _lines(text: str) -> list[str]:
    """``text``'s lines with their ends, split where Python's tokenizer splits them (\\n, \\r\\n, \\r)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def segment(text: str, node) -> str | None:
    """The text of ``node`` (from :func:`syntax_tree` of ``text``): ``ast.get_source_segment`` in
    characters; None where the node has no position."""
    if getattr(node, "end_col_offset", None) is None or getattr(node, "col_offset", None) is None:
        return None
    lines = _lines(text)
    first, last = node.lineno - 1, node.end_lineno - 1
    if not 0 <= first <= last < len(lines):
        return None
    if first == last:
        return lines[first][node.col_offset:node.end_col_offset]
    return lines[first][node.col_offset:] + "".join(lines[first + 1:last]) + lines[last][:node.end_col_offset]


_SOURCES: dict = {}


def source_of(fn) -> str:
    """``textwrap.dedent(inspect.getsource(fn))``, kept for the same code in the same text of its cell (or
    file): a verdict reads each of the learner's functions a dozen times. A function that wraps another
    (``__wrapped__``) is read afresh each time, as inspect reads the one it wraps."""
    if type(fn) is not types.FunctionType or "__wrapped__" in fn.__dict__:
        return textwrap.dedent(_getsource(fn))
    key = (fn.__code__, "".join(linecache.getlines(fn.__code__.co_filename)))
    if key not in _SOURCES:
        if len(_SOURCES) >= 256:
            _SOURCES.clear()
        _SOURCES[key] = textwrap.dedent(_getsource(fn))
    return _SOURCES[key]


def _getsource(fn) -> str:
    """``inspect.getsource(fn)``, raising OSError (no text to read) for the other ways it fails on a
    learner's code: a file saved in the middle of an edit after it was imported (tokenize's TokenError:
    inspect reads the file as it is now), a wrapper that wraps itself (ValueError: a wrapper loop)."""
    try:
        return inspect.getsource(fn)
    except (tokenize.TokenError, ValueError, RecursionError) as err:
        raise OSError(f"no readable source: {err}") from err


def code_of(obj):
    """The code object of a learner's function (or of the function of a bound method); None for anything
    else. Never ``getattr(obj, "__code__", None)``: on an object of the learner's, that runs its own
    ``__getattr__`` here in the kernel, which may raise anything, or never return."""
    if type(obj) is types.MethodType:
        obj = obj.__func__
    return obj.__code__ if type(obj) is types.FunctionType else None


def unwrapped(obj):
    """What a learner's function wraps (``@functools.wraps``, ``functools.lru_cache`` and the like:
    ``__wrapped__`` in the wrapper's own ``__dict__``), read without running anything of the learner's (an
    object's own ``__getattr__``), and stopped at a wrapper loop (``functools.update_wrapper(wrapper,
    wrapper)``, where ``inspect.unwrap`` raises ValueError); anything else as it is."""
    seen = set()
    while id(obj) not in seen:
        seen.add(id(obj))
        try:
            own = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            break
        if type(own) is not dict or "__wrapped__" not in own:
            break
        obj = own["__wrapped__"]
    return obj


def signature_of(fn) -> inspect.Signature:
    """``inspect.signature`` of a learner's function (what it wraps: :func:`unwrapped`), or of a callable
    object's class ``__call__`` (its ``self`` left out): read from the class, not the object, whose own
    ``__getattr__`` would run in the kernel for ``__signature__`` and ``__wrapped__``. TypeError for
    anything else."""
    fn = unwrapped(fn)
    if type(fn) is types.FunctionType and "__wrapped__" in fn.__dict__:       # a wrapper loop: nothing known
        raise TypeError("a wrapper that wraps itself")
    if type(fn) in (types.FunctionType, types.MethodType, functools.partial):    # nothing of the learner's
        return inspect.signature(fn, follow_wrapped=False)                        # runs to read these
    call = vars(type(fn)).get("__call__")
    if type(call) is not types.FunctionType:
        raise TypeError(f"no signature read from a {type(fn).__name__}")
    signature = inspect.signature(call, follow_wrapped=False)
    return signature.replace(parameters=list(signature.parameters.values())[1:])


def code_objects(code) -> list:
    """``code`` and every code object written inside it (nested functions, lambdas, comprehensions)."""
    found, todo = [], [code]
    while todo:
        found.append(todo.pop())
        todo += [c for c in found[-1].co_consts if type(c) is types.CodeType]
    return found


def own_functions(obj) -> list:
    """A plain function itself, or the plain functions in a plain class's own body; [] for anything
    else (nothing the learner wrote is called or looked up by attribute)."""
    if type(obj) is types.FunctionType:
        return [obj]
    if type(obj) is type:                       # a @staticmethod's or @classmethod's function too (their own)
        return [value for value in (v.__func__ if type(v) in (staticmethod, classmethod) else v
                                    for v in obj.__dict__.values()) if type(value) is types.FunctionType]
    # an object of a plain class of theirs whose own __call__ does the work (decode_step = IgbeseDecode():
    # replay 24's 08A3 had no line of its read); its __call__ first. type() and the class's __dict__ run
    # none of their code. The course's own objects (the zoo's steps) are not a learner's
    kind = type(obj)
    theirs = type(kind) is type and not kind.__module__.startswith(("attnviz", "builtins", "torch"))
    call = kind.__dict__.get("__call__") if theirs else None
    if type(call) is types.FunctionType:
        return [call] + [f for f in own_functions(kind) if f is not call]
    return []


def names_used(obj) -> set:
    """The global and attribute names the learner's code uses: a plain function's (functions written
    inside it included), or for a plain class those of the functions in its own body. Read from the
    code objects only: nothing the learner wrote is called or looked up by attribute."""
    codes = [code for fn in own_functions(obj) for code in code_objects(fn.__code__)]
    return {name for code in codes for name in code.co_names}


def globals_note(fn, result, sizes: str = ""):
    """A verdict that matched no known bug says first when a plain function reads tensors or whole
    numbers of the notebook's (Q, K, V or n from section 1's cells) instead of its own arguments: run
    by hand on the notebook's values it works, so "run it by hand" alone would send the learner the
    wrong way. ``sizes``: where the sizes come from instead (``"q.shape[-1], k.shape[-2]"``), if said."""
    if type(fn) is not types.FunctionType:
        return result
    read = values_read(fn)
    code = fn.__code__
    typo = _capital_of_an_argument(fn, read)
    if result.status == "bug" and typo:
        # K for k: the error K's shape gives looked like a known bug the line does not have; keep only
        # what happened, not the bug's explanation of it
        result = dataclasses.replace(result, status="problem", bug=None, what="", shows="",
                                     observed=result.observed[:1],
                                     headline=result.headline.split(". It looks like the known bug")[0] + ".")
    own = ", ".join(code.co_varnames[:code.co_argcount]) or "its arguments"
    numbers = [words for name, words in read.items() if " = " in words]
    if result.status == "bug" and numbers and not typo:
        # a named bug (wrong_scale from the notebook's d_k, say) whose line reads a size of the notebook's:
        # the list of ways the bug comes about is general, this says which one the learner wrote
        result.observed.insert(0, (
            f"Your function reads the notebook's {', '.join(numbers)}, left by an earlier cell: the check "
            "calls it with other sizes, so take every size from its arguments"
            + (f" ({sizes})" if sizes else "") + "."))
        return result
    if result.status != "problem" or not read:
        return result
    result.observed.insert(0, (
        f"Your function reads the notebook's {', '.join(read.values())}, not only its own arguments ({own}): "
        f"the check calls it with other values, of other sizes, so inside it use its arguments"
        + (f" and what they give ({sizes})" if sizes else "") + " everywhere."
        + (f" {typo} is not {typo.lower()}: Python tells capitals apart." if typo else "")))
    result.fix = (f"inside {fn.__name__}, only {own} and sizes taken from them: never the notebook's "
                  f"{', '.join(read)}")
    return result


def _capital_of_an_argument(fn, read) -> str:
    """The first tensor of the notebook's the function reads whose name is one of its arguments' in
    another case (the notebook's ``K`` typed for the argument ``k``, the likeliest typo of 02), or ''."""
    code = fn.__code__
    arguments = code.co_varnames[:code.co_argcount]
    lower = {name.lower() for name in arguments}
    return next((name for name, words in read.items()
                 if name.lower() in lower and name not in arguments and "tensor" in words), "")


def code_notes(obj, result):
    """Plain words from the names the code uses: a mask_fill_zero verdict on code that fills with
    torch.finfo(...).tiny says why that is a fill of 0; a mask_inverted one on code that hands the mask
    to F.scaled_dot_product_attention gives the fix in that form; sizes that do not match, on code
    whose max (a softmax by hand) drops its axis, say keepdim=True; a wrong answer from code that
    starts from torch.empty says what torch.empty hands back."""
    if result.status == "problem" and _max_without_keepdim(obj, result):
        result.observed.insert(1, (
            "Your code takes a max over the keys without keepdim=True: that drops the keys' axis, so "
            "subtracting it lines each query's maximum up with a key instead of its own row (a shape "
            "error when n_q ≠ n_k, wrong weights when they are equal). Keep the axis: "
            "scores.max(dim=-1, keepdim=True).values."))
        result.fix = "row_max = scores.max(dim=-1, keepdim=True).values   # (..., n_q, 1): one per query row"
        return result
    dropped = [] if result.passed else discarded_results(obj)
    if dropped:
        call, function, line = dropped[0]
        method = "." not in call
        keep = f"t = t.{call}(...)" if method else f"t = {call}(...)"
        in_place = (f", or call {call}_, which changes the tensor in place"
                    if method and hasattr(_tensor_class(), call + "_") else "")
        result.observed.insert(0, (
            f"Your code calls {call}(...) on a line of its own (in {function}, line {line}) and drops what "
            f"it returns: {call} makes a new tensor and leaves the one it was given as it was. Keep what it "
            f"returns ({keep}, with your tensor's name for t){in_place}."))
    names = names_used(obj)
    if not result.passed and names & _UNSET.keys() and not _unset_only_scaled_away(obj):
        called = _UNSET[sorted(names & _UNSET.keys())[0]]
        result.observed.insert(0, (
            f"Your code calls {called}: it hands back memory as it was left, not zeros or ones, so unless "
            "your code sets every entry, what your tensor starts from changes from call to call (often "
            "zeros, sometimes not), and so can this verdict. Start from torch.ones(...) or "
            "torch.zeros(...)."))
        if result.status == "problem" and not result.bug:
            return result
    if result.bug not in ("mask_fill_zero", "mask_inverted"):
        return result
    if result.bug == "mask_fill_zero" and "tiny" in names:
        result.observed.insert(0, (
            "Your code uses torch.finfo(...).tiny: the smallest POSITIVE float (about 1.2e-38 in float32), "
            "so a blocked score becomes almost exactly 0. The most negative finite float is "
            "torch.finfo(...).min."))
    if result.bug == "mask_inverted" and "scaled_dot_product_attention" in names:
        result.fix = ("F.scaled_dot_product_attention(q, k, v, attn_mask=mask)   # the bool mask as given: "
                      "True = may attend, for it as for this course")
    return result


_NEW_TENSOR = {"masked_fill", "where", "add", "sub", "mul", "div", "softmax", "log_softmax", "transpose",
               "float", "double", "half", "to", "clamp", "tril", "triu", "logical_not", "unsqueeze", "view",
               "reshape", "contiguous", "exp", "sqrt", "nan_to_num", "permute", "expand", "repeat_interleave",
               "cat", "bool"}
"""Tensor methods and torch functions that return a new tensor and leave their input as it was."""


def discarded_results(obj) -> list:
    """``[(call, function, line)]`` for each call in the learner's code to a function of
    :data:`_NEW_TENSOR` whose result is dropped (``scores.masked_fill(~mask, ...)`` on a line of its
    own, which changes nothing), ``call`` as written (``masked_fill``, ``torch.where``), ``line`` as a
    traceback counts it. Read from the code objects (their instructions' positions) only; empty where
    Python keeps no positions."""
    found = []
    for fn in own_functions(obj):
        for code in code_objects(fn.__code__):
            instructions = list(dis.get_instructions(code))
            for at, call in enumerate(instructions[:-1]):
                if call.opname != "CALL" or instructions[at + 1].opname != "POP_TOP" or not call.positions:
                    continue
                start = (call.positions.lineno, call.positions.col_offset)
                callee = [i for i in instructions[:at] if i.opname in ("LOAD_METHOD", "LOAD_ATTR")
                          and i.positions and (i.positions.lineno, i.positions.col_offset) == start]
                if callee and callee[-1].argval in _NEW_TENSOR:
                    before = instructions[instructions.index(callee[-1]) - 1]
                    module = before.argval if before.opname in ("LOAD_GLOBAL", "LOAD_NAME") \
                        and before.argval in ("torch", "F") else ""
                    name = f"{module}.{callee[-1].argval}" if module else callee[-1].argval
                    found.append((name, code.co_name, call.positions.lineno))
    return found


_UNSET = {"empty": "torch.empty", "empty_like": "torch.empty_like", "new_empty": ".new_empty",
          "empty_strided": "torch.empty_strided"}   # torch's uninitialised memory


_BETA_INPUT = {"baddbmm", "addmm", "addbmm", "addmv", "addr"}   # input * beta + a product: beta=0 reads none


def _unset_only_scaled_away(obj) -> bool:
    """Whether each of the learner's calls of torch.empty (and its kin) is the input of an add-product
    given beta=0 (``torch.baddbmm(torch.empty(...), q3, k3t, beta=0)``, or under a name only used so),
    which reads none of it (replay 22's 02Y4 was warned of torch.empty three times, and passed with it
    in place)."""
    calls = ignored = 0
    for fn in own_functions(obj):
        try:
            tree = syntax_tree(source_of(fn))
        except (OSError, TypeError, SyntaxError):
            return False
        inputs = [given for node in ast.walk(tree) if (given := _scaled_away(node)) is not None]
        for node in ast.walk(tree):
            if _called(node) not in _UNSET:
                continue
            calls += 1
            named = next((a.targets[0].id for a in ast.walk(tree) if isinstance(a, ast.Assign)
                          and a.value is node and isinstance(a.targets[0], ast.Name)), None)
            uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == named
                    and isinstance(n.ctx, ast.Load)]
            ignored += any(node is given for given in inputs) or bool(uses) and all(
                any(use is given for given in inputs) for use in uses)
    return calls > 0 and calls == ignored


def _scaled_away(node):
    """The input of an add-product called with beta=0 (``torch.baddbmm(I, a, b, beta=0)``,
    ``I.addmm(a, b, beta=0)``); else None."""
    if _called(node) not in _BETA_INPUT:
        return None
    beta = next((k.value for k in node.keywords if k.arg == "beta"), None)
    if not (isinstance(beta, ast.Constant) and beta.value == 0):
        return None
    func = node.func
    on_torch = not isinstance(func, ast.Attribute) or isinstance(func.value, ast.Name) \
        and func.value.id == "torch"
    keyword = next((k.value for k in node.keywords if k.arg == "input"), None)
    return (node.args[0] if node.args else keyword) if on_torch else func.value


def _called(node) -> str | None:
    """The name a call calls (``empty`` for ``torch.empty(...)`` and ``x.new_empty(...)``); else None."""
    func = node.func if isinstance(node, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _tensor_class():
    import torch

    return torch.Tensor


def _max_without_keepdim(obj, result) -> bool:
    """A verdict of mismatched sizes on code that calls max (or amax) without keepdim in that call."""
    if not any("must match the size of tensor" in line for line in result.observed):
        return False
    if type(obj) is not types.FunctionType:
        return False
    for code in code_objects(obj.__code__):
        instructions = list(dis.get_instructions(code))
        for at, instruction in enumerate(instructions):
            if instruction.opname in ("LOAD_METHOD", "LOAD_ATTR") and instruction.argval in ("max", "amax"):
                call = next((k for k in range(at + 1, len(instructions))
                             if instructions[k].opname.startswith("CALL")), len(instructions))
                keywords = [i.argval for i in instructions[at + 1:call] if type(i.argval) is tuple]
                if not any("keepdim" in names for names in keywords):
                    return True
    return False


def globals_read(fn) -> dict:
    """``{name: value}`` for each global a plain function's code reads (functions written inside it
    included), in the order first read: a model or a size left by an earlier cell. Empty for anything
    but a plain function (nothing of an object the learner wrote is called, as in :func:`_name_and_code`)."""
    if type(fn) is not types.FunctionType:
        return {}
    found = {}
    for code in code_objects(fn.__code__):
        for instruction in dis.get_instructions(code):
            name = instruction.argval
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and name in fn.__globals__:
                found.setdefault(name, fn.__globals__[name])
    return found


def library_used(obj, wanted: dict) -> list:
    """Which of ``wanted`` (public name -> the course's own function or class) the learner's code hands
    its work to: ``obj`` is one of them, a plain class derives from one, a global the code reads is one
    (whatever the learner named it), or the code reads the name from a module of attnviz (``attnviz.
    causal_mask``, an import inside the function). Read from code objects and dictionaries only."""
    targets = {id(value): name for name, value in wanted.items()}
    if id(obj) in targets:
        return [targets[id(obj)]]
    if type(obj) is types.FunctionType:
        functions, bases = [obj], ()
    elif type(obj) is type:
        functions = [value for value in obj.__dict__.values() if type(value) is types.FunctionType]
        bases = obj.__mro__[1:]
    else:
        return []
    used = names_used(obj)
    found = [targets[id(base)] for base in bases if id(base) in targets]
    reads_attnviz = any(name == "attnviz" or name.startswith("attnviz.") for name in used)
    for fn in functions:
        for value in globals_read(fn).values():
            if id(value) in targets:
                found.append(targets[id(value)])
            elif isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == "attnviz":
                reads_attnviz = True
    if reads_attnviz:
        found += [name for name in wanted if name in used]
    return list(dict.fromkeys(found))


def shared_defaults(fn) -> list:
    """``[(name, value)]`` for each parameter of a plain function whose default is a list, dict or set:
    one object, made when ``def`` ran, that every call leaving it out shares. Empty for anything else
    (the kernel reads no attribute of a learner's object)."""
    if type(fn) is not types.FunctionType:
        return []
    code, defaults = fn.__code__, fn.__defaults__ or ()
    named = code.co_varnames[:code.co_argcount]
    pairs = [*zip(named[len(named) - len(defaults):], defaults, strict=True),
             *(fn.__kwdefaults__ or {}).items()]
    return [(name, value) for name, value in pairs if type(value) in (list, dict, set)]


def shared_defaults_in_classes(fn) -> tuple:
    """``(class, [(name, value)])`` for the first class of the learner's own that a plain function names
    (written where it was) whose ``__init__`` has a list, dict or set as a default (``Memoria(strata=[])``:
    every ``Memoria()`` shares one list); else ``(None, [])``. Read from the class's own dict only."""
    if type(fn) is not types.FunctionType:
        return None, []
    for name in sorted({name for code in code_objects(fn.__code__) for name in code.co_names}):
        value = fn.__globals__.get(name)
        init = vars(value).get("__init__") if isinstance(value, type) else None
        if type(init) is types.FunctionType and init.__code__.co_filename == fn.__code__.co_filename and \
                (shared := shared_defaults(init)):
            return value, shared
    return None, []


def _assigned_in_own_cell(fn) -> set:
    """The names the cell (or file) that defined ``fn`` assigns at its top level: the learner's own
    constants, not left by an earlier cell."""
    try:
        tree = syntax_tree("".join(linecache.getlines(fn.__code__.co_filename)))
    except Exception:  # noqa: BLE001 - no text to read: nothing known to be their own
        return set()
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def values_read(fn) -> dict:
    """``{name: words}`` for each tensor or whole number of the notebook's a plain function reads
    (:func:`globals_read`), its own cell's constants aside: ``Q`` -> "Q (a tensor of shape (5, 8))",
    ``n`` -> "n = 5"."""
    import torch

    own = _assigned_in_own_cell(fn) if type(fn) is types.FunctionType else set()
    read = {name: value for name, value in globals_read(fn).items()
            if (isinstance(value, torch.Tensor) or type(value) is int) and name not in own}
    return {name: f"{name} (a tensor of shape {tuple(value.shape)})" if isinstance(value, torch.Tensor)
            else f"{name} = {value}" for name, value in read.items()}


def _name_and_code(obj):
    """``(name, code)``: a plain function's, or a class's and the code of its first own method; (None,
    None) for anything else. Read without calling the learner's code: no ``getattr`` on an object
    whose class the learner wrote (its ``__getattr__`` could hang the kernel)."""
    if type(obj) is types.FunctionType:
        return obj.__name__, obj.__code__
    if issubclass(type(obj), type):
        name = type.__dict__["__name__"].__get__(obj, type(obj))
        for member in type.__dict__["__dict__"].__get__(obj, type(obj)).values():
            if type(member) is types.FunctionType:
                return name, member.__code__
    return None, None


def _cells(obj):
    """``(name, made, tried)``: the cells (their numbers in ``In``) whose text made ``obj`` and those that
    define its name, or None outside a kernel or when it cannot tell."""
    history = getattr(sys.modules.get("__main__"), "In", None)
    name, code = _name_and_code(obj)
    if type(history) is not list or code is None or not name.isidentifier():
        return None
    made_by = "".join(linecache.getlines(code.co_filename)).strip()
    if not made_by:
        return None
    defines = re.compile(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", re.MULTILINE)
    cells = [(i, text) for i, text in enumerate(history) if isinstance(text, str)]
    made = [i for i, text in cells if text.strip() == made_by]
    tried = [i for i, text in cells if defines.search(text)]
    return (name, made, tried) if made else None


def stale_note(obj) -> str | None:
    """Words for the verdict when a cell run after the one that defined ``obj`` also defines its name
    (so that run did not finish defining it); None when ``obj`` is the latest, or when it cannot tell."""
    try:
        found = _cells(obj)
        if found is None or not found[2] or found[2][-1] <= found[1][-1]:
            return None
        name, made, tried = found
        return (f"This checked the {name} your cell [{made[-1]}] defined. Cell [{tried[-1]}], run after it, "
                f"also defines {name} but did not finish (an error under that cell?): fix it, run it "
                f"again, then run this check.")
    except Exception:  # noqa: BLE001 - a note is a courtesy; never let it break a verdict
        return None


def ran_note(obj) -> str | None:
    """Words for a failing verdict: which run of a cell made the code it checked. A check reads what the
    kernel holds, not the editor: a cell edited and not run again still holds its last run's code, and
    the verdict (its Fix line too) is about that. None outside a kernel, when it cannot tell, and when
    that cell ran just before the one running the check (IPython's ``In`` already holds the check's own
    cell): then the learner has just run it, and the note, read on every try, is noise (a teacher and
    a reader found it so)."""
    try:
        found = _cells(obj)
        if found is None:
            return None
        name, made, _ = found
        history = sys.modules["__main__"].In
        if made[-1] == len(history) - 2:
            return None
        return (f"This checked {name} as your cell [{made[-1]}] defined it when it last ran. Edited that "
                f"cell since? Run it (Shift+Enter), then this check again.")
    except Exception:  # noqa: BLE001 - a note is a courtesy; never let it break a verdict
        return None


def _raises_not_implemented(node):
    exc = node.exc.func if isinstance(getattr(node, "exc", None), ast.Call) else getattr(node, "exc", None)
    return isinstance(node, ast.Raise) and isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _cell_tree(obj) -> ast.AST:
    """The syntax tree of the cell (or file) that made ``obj``; an empty module when there is none."""
    _, code = _name_and_code(obj)
    return syntax_tree("".join(linecache.getlines(code.co_filename)) if code is not None else "")


def below_stub(obj) -> bool:
    """Whether the cell that made ``obj`` has a ``raise NotImplementedError`` with more statements
    after it in the same block: the learner wrote their code under the stub's line instead of in its
    place, so the raise still runs first. Read from the cell's text (never by calling their code)."""
    try:
        for node in ast.walk(_cell_tree(obj)):
            for body in (getattr(node, field, None) for field in ("body", "orelse", "finalbody")):
                if isinstance(body, list) and any(_raises_not_implemented(s) for s in body[:-1]):
                    return True
        return False
    except Exception:  # noqa: BLE001 - words are a courtesy; never let them break a verdict
        return False


def _stub_part(statement) -> bool:
    """A statement a stub has besides its raise: a docstring, or nbgrader's ``hint = "..."``."""
    value = getattr(statement, "value", None)
    return isinstance(statement, (ast.Expr, ast.Assign)) and isinstance(value, ast.Constant) \
        and isinstance(value.value, str)


def above_stub(obj) -> bool:
    """Whether a function in the cell that made ``obj`` ends with the stub's ``raise
    NotImplementedError`` after statements of its own (a docstring or nbgrader's ``hint = "..."``
    aside): the learner wrote their code
    above the stub's line and left it, so the function still raises before it returns."""
    try:
        for node in ast.walk(_cell_tree(obj)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                    and _raises_not_implemented(node.body[-1]):
                own = [s for s in node.body[:-1] if not _stub_part(s)]
                if own:
                    return True
        return False
    except Exception:  # noqa: BLE001 - words are a courtesy; never let them break a verdict
        return False


def with_stale_note(check):
    """Decorator for a public checker: :func:`stale_note`'s words as the verdict's first warning (and
    its headline says so), else on a failing verdict :func:`ran_note`'s as its last note; and the
    not-written verdict told apart from code written under the stub's
    ``raise`` line (:func:`below_stub`)."""
    @functools.wraps(check)
    def wrapper(fn, *args, **kwargs):
        result = check(fn, *args, **kwargs)
        if not hasattr(result, "warnings"):
            return result
        if result.status == "not_implemented" and below_stub(fn):
            result.headline = (
                "your code is written, but below the stub's line raise NotImplementedError(...), which "
                "still runs first: delete that line, run the cell, then run this cell again.")
        elif result.status == "not_implemented" and above_stub(fn):
            result.headline = (
                "your code is written, but the stub's line raise NotImplementedError(...) is still at its "
                "end, and it raises before anything is returned: put your return in its place, run the "
                "cell, then run this cell again.")
        note = stale_note(fn)
        if note:
            result.warnings.insert(0, note)
            result.headline += " But this was an older definition: read the warning."
        elif result.status in ("bug", "problem") and fixes_shown():
            # not in a graded release (fixes hidden): a "runs" test cell sits between the exercise and its
            # check there, and the note would stand on every failure of a feedback page, which no student
            # can act on
            ran = ran_note(fn)
            result.notes += [ran] if ran else []
        return result
    return wrapper
