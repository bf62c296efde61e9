"""Whatever shape the learner's code has, a checker answers with a verdict, never a traceback: the
checkers read the learner's text and objects in the kernel (to put their Fix in the learner's names), and
that reading must survive code no rule foresaw. Cases from a fuzzing pass (2,576 variants; 10 ways out,
each closed here, with a last guard for the ones nobody has thought of yet)."""

import importlib.util
import os
import textwrap

import pytest

from attnviz.check import check_attention, check_causal_mask, check_multi_head, check_padding_mask

HEAD = "import math\nimport functools\nimport torch\nimport torch.nn as nn\n\n"

NO_SCALE = """
def my_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
"""

# an object that hands every attribute it lacks to a dict: looking up __wrapped__, __code__ or
# __signature__ on it raises KeyError, not AttributeError
CONFIGURED = """
class Configured:
    def __init__(self, fn, **options):
        self.__dict__.update(fn=fn, options=options)
    def __getattr__(self, name):
        return self.options[name]
    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)
"""


# a decorator that wraps with itself (meant: update_wrapper(wrapper, fn)): a wrapper loop
TRACED = """
def traced(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    functools.update_wrapper(wrapper, wrapper)
    return wrapper
"""

def _load(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def test_a_file_saved_in_the_middle_of_an_edit_still_gets_its_verdict(tmp_path):
    """inspect reads a module's file as it is now: saved mid-line after the import, it raised tokenize's
    TokenError out of every checker."""
    module, path = _load(tmp_path, "edited", NO_SCALE)
    path.write_text(HEAD + "def my_attention(q, k, v, mask=None):\n"
                           "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]\n")
    stamp = os.stat(path)
    os.utime(path, (stamp.st_atime, stamp.st_mtime + 5))
    result = check_attention(module.my_attention)
    assert result.bug == "missing_scale", repr(result)


def test_a_wrapper_that_wraps_itself_still_gets_its_verdict(tmp_path):
    """functools.update_wrapper(wrapper, wrapper) makes a wrapper loop: inspect raised ValueError."""
    module, _ = _load(tmp_path, "loop", TRACED + """
@traced
def my_causal_mask(n):
    return torch.ones(n, n, dtype=torch.bool).triu(1)
""")
    assert check_causal_mask(module.my_causal_mask).bug == "mask_inverted"


def test_an_object_whose_getattr_raises_is_never_asked_for_attributes_in_the_kernel(tmp_path):
    """The checkers looked up __wrapped__, __code__ and __signature__ on the learner's object, which ran
    its own __getattr__ in the kernel: a KeyError out of the checker."""
    module, _ = _load(tmp_path, "configured", NO_SCALE + CONFIGURED + """
attention = Configured(my_attention, verbose=False)
padding = Configured(lambda lengths, n: (torch.arange(n)[None, :] <= lengths[:, None])[:, None, :])
""")
    assert check_attention(module.attention).bug == "missing_scale"
    assert check_padding_mask(module.padding).bug == "padding_off_by_one"


def test_a_module_whose_init_is_a_lambda_gets_its_verdict(tmp_path):
    """The reader of __init__'s attribute names took the first statement of its text for a def."""
    module, _ = _load(tmp_path, "lambda_init", """
class MHA(nn.Module):
    __init__ = lambda self, d_model, n_heads: self._setup(d_model, n_heads)

    def _setup(self, d_model, n_heads):
        nn.Module.__init__(self)
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, mask=None):
        b, n, d = x.shape
        q, k, v = (w(x).view(b, n, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        s = q @ k.transpose(-2, -1)
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        return self.W_o((s.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))
""")
    assert check_multi_head(module.MHA).bug == "missing_scale"


def test_a_slip_of_the_checkers_own_reading_is_a_verdict_in_plain_words(tmp_path, monkeypatch):
    """The last guard: whatever the checker's own reading still raises is told as the checker's gap, not
    as a traceback and not as a verdict on the learner's code."""
    from attnviz.check import attention

    def slips(fn, result):
        raise KeyError("a reader's own slip")

    monkeypatch.setattr(attention, "fix_in_your_names", slips)
    module, _ = _load(tmp_path, "any", NO_SCALE)
    with pytest.raises(KeyError):       # in the tests, the slip itself (tests/conftest.py)
        check_attention(module.my_attention)
    monkeypatch.delenv("ATTNVIZ_CHECK_RAISE")       # as a learner has it
    result = check_attention(module.my_attention)
    assert not result.passed and result.status == "problem" and result.bug is None
    assert result.headline.startswith("the checker could not finish reading your code"), repr(result)
    assert "KeyError: \"a reader's own slip\"" in repr(result)


def test_stopping_a_check_goes_through_the_guard(tmp_path, monkeypatch):
    """KeyboardInterrupt (the learner pressing stop) is not turned into a verdict."""
    from attnviz.check import attention

    def stopped(fn, result):
        raise KeyboardInterrupt

    monkeypatch.setattr(attention, "fix_in_your_names", stopped)
    module, _ = _load(tmp_path, "stop", NO_SCALE)
    with pytest.raises(KeyboardInterrupt):
        check_attention(module.my_attention)


def test_a_tensor_method_returned_without_its_parentheses_is_named_so(tmp_path):
    """``return mask.bool`` read "returned a builtin_function_or_method", which a replay's learner (04 c13)
    could not tell from anything else they might have returned."""
    module, _ = _load(tmp_path, "method", """
def my_causal_mask(n):
    return torch.ones(n, n).tril().bool
""")
    result = check_causal_mask(module.my_causal_mask)
    assert "the tensor method .bool itself, not its result" in result.headline, repr(result)
    assert ".bool()" in result.headline
    # and the Fix is the learner's own line, called (it was return output, a name their code lacked)
    module, _ = _load(tmp_path, "uncalled", NO_SCALE.replace("weights = torch.softmax(scores, dim=-1)",
                                                             "weights = torch.softmax(scores / 4, dim=-1)")
                      .replace("return weights @ v, weights", "return (weights @ v).contiguous"))
    result = check_attention(module.my_attention)
    assert result.fix.startswith("return (weights @ v).contiguous()   # in place of your line"), repr(result)


def test_the_checkers_read_columns_and_code_objects_only_through_their_own_readers():
    """docs/checkers.md's two rules for readers: a node's text by _stale.segment (character columns; a
    learner's é put ast.get_source_segment's byte columns off), a code object by _stale.code_of (getattr
    runs a learner's object's own __getattr__ in the kernel)."""
    import ast
    from pathlib import Path

    import attnviz.check

    found = []
    for path in sorted(Path(attnviz.check.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            call = ast.unparse(node.func) if isinstance(node, ast.Call) else ""
            code_read = call == "getattr" and len(node.args) > 1 and ast.unparse(node.args[1]) == "'__code__'"
            if call == "ast.get_source_segment" or code_read:
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


def test_no_attribute_is_looked_up_on_a_learners_object_in_the_kernel(tmp_path):
    """A callable object's own __getattr__ ran in the kernel when the checkers read its signature,
    __wrapped__ or __name__ (one that slept 3 s per lookup made check_causal_mask take 36 s past its time
    limit; one that looped would hang the kernel). Its class's __call__ is read instead."""
    module, _ = _load(tmp_path, "recorded", """
asked = []

class Recorded:
    def __getattr__(self, name):
        asked.append(name)
        raise AttributeError(name)

class Causal(Recorded):
    def __call__(self, n):
        return torch.ones(n, n, dtype=torch.bool).triu(1)

class Padding(Recorded):
    def __call__(self, lengths, n):
        return (torch.arange(n)[None, :] <= lengths[:, None])[:, None, :]

causal, padding = Causal(), Padding()
""" + TRACED + """
@traced
def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) @ v
""")
    assert check_causal_mask(module.causal).bug == "mask_inverted"
    assert check_padding_mask(module.padding).bug == "padding_off_by_one"
    assert module.asked == [], module.asked
    assert check_attention(module.attention).bug == "missing_scale"      # a wrapper loop, through _readers
