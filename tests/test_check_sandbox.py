"""Learner code runs in a forked child: it cannot hang, kill or change the kernel."""

import os
import time

import torch
from _fresh import modules_after

import attnviz
import attnviz.core
from attnviz import zoo
from attnviz.check import check_attention, check_causal_mask, check_multi_head, check_padding_mask
from attnviz.check._sandbox import fork_available, run_steps


def _right(q, k, v, mask=None):
    return attnviz.scaled_dot_product_attention(q, k, v, mask)[0]


def test_round_trip_is_fast_and_results_come_back():
    run_steps([lambda: 1], time_limit=5, budget=5)  # warm up
    start = time.perf_counter()
    run = run_steps([lambda: 1, lambda: [2.0, "x"]], time_limit=5, budget=5)
    assert time.perf_counter() - start < 0.5
    assert [s.value for s in run.steps] == [1, [2.0, "x"]] and run.isolated == fork_available()


def test_a_loop_inside_one_c_call_is_killed_and_the_cpu_goes_back_to_idle():
    def stuck(q, k, v, mask=None):
        return sum(range(10**12))  # never leaves one C call

    cpu, wall = time.process_time(), time.perf_counter()
    result = check_attention(stuck, time_limit=0.5)
    assert not result.passed and "did not finish within 0.5 s" in repr(result)
    assert time.perf_counter() - wall < 3
    assert time.process_time() - cpu < 1.0  # the parent only waited
    idle = time.process_time()
    time.sleep(0.5)
    assert time.process_time() - idle < 0.1  # nothing left spinning in the kernel


def test_python_loops_and_sleeps_time_out():
    def loops(n):
        while True:
            pass

    assert "did not finish" in repr(check_causal_mask(loops, time_limit=0.3))
    assert "did not finish" in repr(check_padding_mask(lambda lengths, n: time.sleep(30), time_limit=0.3))


def test_slow_calls_hit_the_total_budget():
    def slow(q, k, v, mask=None):
        time.sleep(0.4)                          # each call is under the limit, all of them are not
        return _right(q, k, v, mask)
    start = time.perf_counter()
    result = check_attention(slow, time_limit=1.0)
    assert time.perf_counter() - start < 2
    assert "too slow" in repr(result) and "per call" in repr(result)


def test_os_exit_is_a_verdict_not_a_dead_kernel():
    result = check_attention(lambda q, k, v, mask=None: os._exit(3))
    assert not result.passed and "exit code 3" in repr(result)


def test_global_state_the_learner_changes_stays_in_the_child():
    dtype, rng = torch.get_default_dtype(), torch.get_rng_state()
    deterministic = torch.are_deterministic_algorithms_enabled()
    sdpa = attnviz.core.scaled_dot_product_attention

    def hostile(q, k, v, mask=None):
        torch.set_default_dtype(torch.float64)
        torch.manual_seed(123)
        torch.rand(10)
        torch.use_deterministic_algorithms(not deterministic)
        attnviz.core.scaled_dot_product_attention = lambda *a, **kw: None
        return _right(q, k, v, mask)

    check_attention(hostile)
    check_multi_head(attnviz.MultiHeadAttention)
    assert torch.get_default_dtype() == dtype and torch.equal(torch.get_rng_state(), rng)
    assert torch.are_deterministic_algorithms_enabled() == deterministic
    assert attnviz.core.scaled_dot_product_attention is sdpa


def test_the_kernels_default_dtype_does_not_fail_correct_code():
    torch.set_default_dtype(torch.float64)
    try:
        assert check_multi_head(attnviz.MultiHeadAttention).passed
    finally:
        torch.set_default_dtype(torch.float32)


def test_a_rebound_core_does_not_make_wrong_code_pass():
    code = (
        "import attnviz.core, attnviz.zoo as zoo\n"
        "attnviz.core.scaled_dot_product_attention = lambda q, k, v, mask=None, **kw: "
        "(zoo.missing_scale(q, k, v, mask)[0], None)\n"
        "from attnviz.check import check_attention\n"
        "r = check_attention(zoo.missing_scale)\n"
        "assert r.bug == 'missing_scale', r\n"
    )
    modules_after(code)             # a fresh process: nothing rebound in this one


def test_odd_returns_and_odd_exceptions_get_verdicts():
    class Sub(torch.Tensor):
        pass

    class BadStr(Exception):
        def __str__(self):
            raise ValueError("no")

    def raises_bad(q, k, v, mask=None):
        raise BadStr()

    cases = {
        "complex": lambda q, k, v, mask=None: _right(q, k, v, mask).to(torch.complex64),
        "meta": lambda q, k, v, mask=None: torch.empty(q.shape[:-1] + v.shape[-1:], device="meta"),
        "sparse": lambda q, k, v, mask=None: _right(q, k, v, mask).to_sparse(),
        "subclass": lambda q, k, v, mask=None: _right(q, k, v, mask).as_subclass(Sub),
        "object": lambda q, k, v, mask=None: object(),
        "BadStr": raises_bad,
    }
    for words, fn in cases.items():
        result = check_attention(fn)
        assert not result.passed and result.status == "problem", (words, result)
        assert words in repr(result) or "could not be turned into text" in repr(result), (words, result)
    instance = check_multi_head(attnviz.MultiHeadAttention(12, 3))
    assert "instance" in repr(instance) and not instance.passed


def test_an_exception_gets_its_own_headline_with_the_probe():
    def broken(q, k, v, mask=None):
        raise KeyError("oops")

    result = check_attention(broken)
    assert "raised KeyError" in result.headline and "On 4 queries" in repr(result)


def test_raw_pytorch_errors_of_a_forgotten_transpose_or_contiguous_are_named():
    def no_transpose(q, k, v, mask=None):
        scores = q @ k / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return scores.softmax(-1) @ v

    assert check_attention(no_transpose).bug == "missing_key_transpose"

    class NoContiguous(zoo.MultiHeadWith):
        def merge(self, x):
            batch, _, n, _ = x.shape
            return x.transpose(1, 2).view(batch, n, self.d_model)

    assert check_multi_head(NoContiguous).bug == "missing_contiguous"


def test_without_fork_the_thread_fallback_says_so(monkeypatch):
    monkeypatch.setenv("ATTNVIZ_CHECK_NO_FORK", "1")
    assert not fork_available()
    result = check_attention(_right)
    assert result.passed and "thread of the kernel" in repr(result)
    dtype = torch.get_default_dtype()

    def changes_dtype(q, k, v, mask=None):
        torch.set_default_dtype(torch.float64)
        return _right(q, k, v, mask)
    check_attention(changes_dtype)
    assert torch.get_default_dtype() == dtype                    # restored even in a thread


def test_call_is_the_runner_for_other_checkers():
    """attnviz.check._run.call: one isolated call; tensors, errors and in-place changes come back."""
    from attnviz.check._run import Odd, call
    x = torch.arange(6.0).reshape(2, 3)
    done = call(lambda x, scale: (x * scale, "note", 3), {"x": x, "scale": 2.0}, positional=("x",))
    value = done.value
    assert torch.equal(value[0], x * 2) and value[0].dtype == torch.float32 and value[1:] == ["note", 3]
    assert done.error is None and not done.timed_out and done.modified == ()
    assert isinstance(call(lambda: object(), {}).value, Odd)
    assert isinstance(call(lambda: 1 / 0, {}).error, ZeroDivisionError)
    assert call(lambda x: x.add_(1), {"x": x}, positional=("x",)).modified == ("x",)
    assert torch.equal(x, torch.arange(6.0).reshape(2, 3))      # the caller's tensor is untouched
    assert call(lambda: time.sleep(5), {}, time_limit=0.3).timed_out
    assert "exit code 4" in call(lambda: os._exit(4), {}).exited


def test_processes_the_learner_starts_are_killed_too():
    import subprocess
    import sys

    def spawns(n):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(marker, "w") as f:
            f.write(str(child.pid))
        time.sleep(60)
    import tempfile
    marker = tempfile.mktemp()
    check_causal_mask(spawns, time_limit=2.0)
    pid = int(open(marker).read())
    time.sleep(0.2)
    try:
        os.kill(pid, 0)
        alive = open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        alive = False
    assert not alive


def test_kernel_settings_do_not_break_the_checkers_own_math():
    """Grad mode off and another default device in the kernel, before the first check."""
    code = ("import torch, attnviz\n"
            "torch.set_grad_enabled(False)\n"
            "torch.set_default_device('meta')\n"
            "from attnviz.check import check_attention, check_multi_head\n"
            "right = lambda q, k, v, mask=None: attnviz.scaled_dot_product_attention(q, k, v, mask)\n"
            "r = check_attention(right)\n"
            "assert r.passed, r\n"
            "assert check_multi_head(attnviz.MultiHeadAttention).passed\n"
            "assert not torch.is_grad_enabled()\n")
    modules_after(code)             # a fresh process: this one keeps its own settings


def test_the_child_leaves_the_kernels_objects_out_of_its_garbage_collector():
    """A collection in the child would write into each of the kernel's objects it looks at, and each
    write copies a page of the kernel's memory (half the child's page faults): the child freezes them
    first. The kernel's own collector is left as it was."""
    import gc

    run = run_steps([gc.get_freeze_count], time_limit=5, budget=5)
    if fork_available():
        assert run.steps[0].value > 10_000, run.steps[0]
    assert gc.get_freeze_count() == 0


def test_each_step_starts_from_seed_0_without_torch_manual_seed(monkeypatch):
    """The child seeds the CPU's generator as ``torch.manual_seed(0)`` would, so a learner's dropout or
    ``torch.rand`` draws the same numbers in every check, whatever the kernel drew before; it does not
    call ``torch.manual_seed``, which queues the seed for each accelerator torch knows and records the
    Python stack each time (benchmarks/fork_cost.py)."""
    torch.manual_seed(0)
    expected = torch.rand(3).tolist()
    torch.rand(5)                                  # the kernel's generator has moved on

    def refused(seed):
        raise AssertionError("torch.manual_seed was called")

    monkeypatch.setattr(torch, "manual_seed", refused)
    run = run_steps([lambda: torch.rand(3).tolist()], time_limit=5, budget=5)
    if fork_available():
        assert run.steps[0].status == "ok", run.steps[0]
        assert run.steps[0].value == expected
