"""Run learner code in a child process forked from the kernel, with a hard time limit.

``run_steps(steps, time_limit=..., budget=...)`` is the one entry point. Each
step is a zero-argument callable; the steps run in order in a child process
made by ``os.fork()``, so they see every definition the learner made in the
kernel without pickling any code. Each step must return *plain data* (None,
bool, int, float, str, lists/tuples/dicts of those, NumPy arrays); use
:func:`to_plain` to turn what learner code returned into that. The child
pickles each step's result and writes it to a pipe as soon as it is done.

The parent waits on the pipe (select, no busy loop) and kills the child with
SIGKILL when one step runs longer than ``time_limit`` seconds or all steps
together longer than ``budget`` seconds, then reaps it, so the CPU goes back
to idle. Whatever the learner's code does in the child (loops inside one C
call, sleeps, ``os._exit``, ``torch.set_default_dtype``, the RNG, monkey
patches of torch or attnviz) cannot hang, kill or change the kernel.

The child calls ``torch.set_num_threads(1)`` before any torch op: OpenMP's
thread pool is not fork-safe, and a child that uses it after the parent did
deadlocks. It then freezes the kernel's objects out of its garbage collector
(``gc.freeze``): a collection writes into every object it looks at, copying the
kernel's memory page by page. Where ``fork`` does not exist (Windows), or with
the environment variable ``ATTNVIZ_CHECK_NO_FORK=1``, the steps run in a daemon thread of the
kernel instead; ``Run.note`` then says that a timed-out step keeps running
and that global changes are not undone (default dtype and RNG are restored).
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import pickle
import queue
import select
import signal
import struct
import sys
import threading
import time
import types
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = [
    "Step",
    "Run",
    "run_steps",
    "to_plain",
    "error_info",
    "fork_available",
    "on_cpu",
    "reseed",
    "THREAD_NOTE",
]

THREAD_NOTE = (
    "This check ran your code in a thread of the kernel (this system has no fork), so a "
    "timed-out call keeps running until the kernel restarts, and changes your code makes to "
    "global state stay."
)
_HEADER = struct.Struct("!I")
_INTERNAL = 70  # the child's exit code when the checker's side (not the learner's code) failed
_MAX_TEXT = 400


def on_cpu():
    """``torch.device("cpu")`` as a context when the kernel's default device is another, else nothing:
    the device context sees every torch call in Python (a third of a check's time), so it is entered
    only when it changes something."""
    return torch.device("cpu") if torch.get_default_device().type != "cpu" else contextlib.nullcontext()


def reseed(seed: int) -> None:
    """``torch.manual_seed(seed)`` for a check's child, where only the CPU's generator draws.

    ``torch.manual_seed`` also queues the seed for every accelerator torch was built to know (CUDA,
    XPU, MTIA, ...) and records the Python stack for each, and its first call in a process wraps
    itself for torch's compiler: 3 to 5 ms of a check's child, which lives for one check
    (benchmarks/fork_cost.py). Where an accelerator is there, this is ``torch.manual_seed`` itself."""
    if torch.accelerator.is_available():
        torch.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(seed)


def fork_available() -> bool:
    return hasattr(os, "fork") and os.environ.get("ATTNVIZ_CHECK_NO_FORK") != "1"


@dataclass
class Step:
    """What happened to one step. ``status``: 'ok', 'error', 'timeout', 'over_budget', 'exited' or
    'skipped' (a step after a timeout or exit is not run). ``error`` is an :func:`error_info` dict."""

    status: str
    value: object = None
    error: dict | None = None
    seconds: float = 0.0
    printed: str = ""  # what the step printed (its first lines; the child's stdout goes nowhere else)


@dataclass
class Run:
    steps: list[Step] = field(default_factory=list)
    isolated: bool = True  # True: a child process; False: the thread fallback
    note: str = ""  # how the child ended when it did not end normally

    @property
    def stopped(self):
        """The first step that timed out, ran over budget or killed its process, or None."""
        return next(
            (i for i, s in enumerate(self.steps) if s.status in ("timeout", "over_budget", "exited")), None
        )


def _safe_text(thing) -> str:
    try:
        text = str(thing)
    except BaseException:  # noqa: BLE001 - a learner's __str__ may raise anything
        return "<its message could not be turned into text>"
    if not isinstance(text, str):
        return "<its message is not text>"
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + " ..."


def error_info(err: BaseException) -> dict:
    """Plain data for an exception: its type name, first message line, and the last line of the
    learner's code it went through (file, line number, source text) when there is one."""
    try:
        name = type(err).__name__
    except BaseException:  # noqa: BLE001
        name = "an exception"
    lines = _safe_text(err).strip().splitlines()
    where = None
    try:
        tb = err.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            path = code.co_filename.replace("\\", "/")
            if not any(part in path for part in ("/attnviz/check/", "/torch/", "/numpy/")):
                where = (code.co_filename, tb.tb_lineno, code.co_name)  # the learner's last line
            tb = tb.tb_next
    except BaseException:  # noqa: BLE001
        where = None
    builtin = isinstance(
        err,
        (
            ArithmeticError,
            AssertionError,
            AttributeError,
            ImportError,
            IndexError,
            KeyError,
            NameError,
            NotImplementedError,
            RuntimeError,
            TypeError,
            ValueError,
            RecursionError,
            MemoryError,
            SystemExit,
            KeyboardInterrupt,
        ),
    )
    return {
        "type": name,
        "message": lines[0] if lines else "",
        "where": where,
        "not_implemented": isinstance(err, NotImplementedError),
        "builtin": builtin,
    }


# ---- plain data -----------------------------------------------------------------------------


def to_plain(value, depth=0):
    """What learner code returned, as plain data that pickles safely.

    A tensor becomes ``{"kind": "tensor", "array", "dtype", "shape", "requires_grad",
    "has_grad_fn"}``; tensors torch cannot hand to NumPy become ``{"kind": "odd", "what": ...}``
    (complex, meta, sparse, quantized, a Tensor subclass). Tuples and lists keep their items
    (up to 4 levels), anything else becomes ``{"kind": "object", "type": name}``.
    """
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value[:_MAX_TEXT]
    if isinstance(value, torch.Tensor):
        return _tensor_to_plain(value)
    if isinstance(value, np.ndarray):
        return {"kind": "ndarray", "shape": list(value.shape), "dtype": str(value.dtype)}
    if isinstance(value, (tuple, list)) and depth < 4:
        return {
            "kind": type(value).__name__ if type(value) in (tuple, list) else "tuple",
            "items": [to_plain(item, depth + 1) for item in list(value)[:8]],
            "length": len(value),
        }
    if type(value) is types.BuiltinMethodType and isinstance(value.__self__, torch.Tensor):
        # t.bool without its parentheses: the method itself (a replay's 04 c13 read "a
        # builtin_function_or_method" and could not tell why)
        name = value.__name__
        return {"kind": "odd", "what": f"the tensor method .{name} itself, not its result (its parentheses, "
                                       f".{name}(), call it)"}
    try:
        name = type(value).__name__
    except BaseException:  # noqa: BLE001
        name = "object"
    return {"kind": "object", "type": name}


def _tensor_to_plain(t):
    kind = type(t)
    if kind is not torch.Tensor and kind is not torch.nn.Parameter:
        return {"kind": "odd", "what": f"a torch.Tensor subclass ({kind.__name__})"}
    try:
        if t.is_meta:
            return {"kind": "odd", "what": "a tensor on the 'meta' device (a shape without numbers)"}
        if t.layout != torch.strided:
            return {
                "kind": "odd",
                "what": f"a {str(t.layout).replace('torch.', '')} tensor (not a dense one)",
            }
        if t.is_quantized:
            return {"kind": "odd", "what": "a quantized tensor"}
        if t.is_complex():
            return {"kind": "odd", "what": f"a complex tensor ({str(t.dtype).replace('torch.', '')})"}
        plain = {
            "kind": "tensor",
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "requires_grad": bool(t.requires_grad),
            "has_grad_fn": t.grad_fn is not None,
        }
        data = t.detach().cpu()
        if data.dtype in (torch.bfloat16, torch.float16) or data.is_floating_point():
            data = data.to(torch.float64)
        elif data.dtype == torch.bool:
            pass
        else:
            data = data.to(torch.int64)
        plain["array"] = data.numpy().copy()
        return plain
    except BaseException as err:  # noqa: BLE001 - exotic tensors: say what it is, never raise
        return {"kind": "odd", "what": f"a tensor that cannot be read ({error_info(err)['type']})"}


# ---- the child ------------------------------------------------------------------------------


def _child_setup():
    torch.set_num_threads(1)  # before any torch op: OpenMP is not fork-safe
    # The kernel's objects out of the child's garbage collector: a collection writes into every object
    # it looks at, and each write copies a page of the kernel's memory (half the child's page faults
    # and a third of its time)
    gc.freeze()
    sys.stdout = io.StringIO()  # the kernel's streams belong to the parent
    sys.stderr = io.StringIO()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    torch.set_default_dtype(torch.float32)  # the checker's inputs and modules are float32
    torch.set_grad_enabled(True)
    reseed(0)


def _printed():
    """What the learner's code printed since the last call (the child's stdout is a StringIO), cut
    to its first lines; emptied for the next step."""
    out = sys.stdout
    if type(out) is not io.StringIO:              # the learner's code replaced sys.stdout
        return ""
    text = out.getvalue()
    out.seek(0)
    out.truncate()
    return text[:_MAX_TEXT]


def _encode(status, value, error, seconds, printed=""):
    try:
        body = pickle.dumps((status, value, error, seconds, printed), protocol=4)
    except BaseException as err:  # noqa: BLE001
        body = pickle.dumps(
            (
                "error",
                None,
                {
                    "type": "TypeError",
                    "where": None,
                    "not_implemented": False,
                    "builtin": True,
                    "message": f"the result could not be sent back ({error_info(err)['type']})",
                },
                seconds,
                printed,
            ),
            protocol=4,
        )
    return _HEADER.pack(len(body)) + body


def _run_one(step):
    start = time.perf_counter()
    try:
        value = step()
        return "ok", value, None, time.perf_counter() - start
    except BaseException as err:  # noqa: BLE001 - anything the learner raises is a verdict
        return "error", None, error_info(err), time.perf_counter() - start


def _child(steps, write_fd):
    try:
        _child_setup()
        for step in steps:
            message = _encode(*_run_one(step), _printed())
            view = memoryview(message)
            while view:
                written = os.write(write_fd, view)
                view = view[written:]
    except BaseException as err:  # noqa: BLE001 - the checker's own side failed in the child
        try:
            os.write(2, f"attnviz.check child: {error_info(err)}\n".encode())
        finally:
            os._exit(_INTERNAL)
    finally:
        os._exit(0)  # never return into the kernel's code


def _parse(buffer: bytearray):
    """Complete messages at the front of ``buffer`` (consumed)."""
    out = []
    while len(buffer) >= _HEADER.size:
        (size,) = _HEADER.unpack_from(buffer)
        if len(buffer) < _HEADER.size + size:
            break
        body = bytes(buffer[_HEADER.size : _HEADER.size + size])
        del buffer[: _HEADER.size + size]
        out.append(pickle.loads(body))
    return out


def _own_group(pid):
    try:
        os.setpgid(pid, 0)
    except OSError:                               # already done by the other side, or not allowed
        pass


def _kill(pid):
    """SIGKILL the child's whole process group (processes the learner's code started die too)."""
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
            break
        except (ProcessLookupError, PermissionError):
            continue
    return _reap(pid)


def _reap(pid):
    try:
        _, status = os.waitpid(pid, 0)
        return status
    except ChildProcessError:
        return None


def _exit_note(status):
    if status is None:
        return "the process running your code ended"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"the process running your code was killed by signal {name}"
    code = os.WEXITSTATUS(status)
    if code == _INTERNAL:
        return ("the checker's own code failed in the child process (a bug in attnviz.check; "
                "its message went to stderr)")
    return f"the process running your code exited (exit code {code}): os._exit or a crash in C code"


def _run_forked(steps, time_limit, budget) -> Run:
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, fork may deadlock"
        pid = os.fork()
    if pid == 0:  # the child
        os.close(read_fd)
        _own_group(0)
        _child(steps, write_fd)
    _own_group(pid)                               # both sides: no race with the kill
    os.close(write_fd)
    run, buffer, done = Run(isolated=True), bytearray(), False
    start = last = time.monotonic()
    try:
        while len(run.steps) < len(steps):
            now = time.monotonic()
            step_left, budget_left = last + time_limit - now, start + budget - now
            wait = min(step_left, budget_left)
            ready = select.select([read_fd], [], [], max(wait, 0))[0] if wait > 0 else []
            if not ready:
                status = "over_budget" if budget_left < step_left else "timeout"
                _kill(pid)
                done = True
                run.steps.append(Step(status, seconds=time.monotonic() - last))
                break
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:  # the child is gone before sending everything
                status = _reap(pid)
                done = True
                if status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and not buffer:
                    run.note = "the process running your code ended early"
                else:
                    run.note = _exit_note(status)
                run.steps.append(Step("exited", seconds=time.monotonic() - last))
                break
            buffer.extend(chunk)
            for status, value, error, seconds, printed in _parse(buffer):
                run.steps.append(Step(status, value, error, seconds, printed))
                last = time.monotonic()
    finally:
        os.close(read_fd)
        if not done:
            if len(run.steps) < len(steps):
                _kill(pid)
            else:
                _reap(pid)
    run.steps += [Step("skipped") for _ in range(len(steps) - len(run.steps))]
    return run


def _run_threaded(steps, time_limit, budget) -> Run:
    results: queue.Queue = queue.Queue()
    dtype, rng = torch.get_default_dtype(), torch.get_rng_state()

    def target():
        for step in steps:
            results.put(_run_one(step))

    threading.Thread(target=target, name="attnviz-check", daemon=True).start()
    run = Run(isolated=False, note=THREAD_NOTE)
    start = last = time.monotonic()
    try:
        while len(run.steps) < len(steps):
            now = time.monotonic()
            step_left, budget_left = last + time_limit - now, start + budget - now
            try:
                status, value, error, seconds = results.get(timeout=max(min(step_left, budget_left), 0))
            except queue.Empty:
                run.steps.append(Step("over_budget" if budget_left < step_left else "timeout"))
                break
            run.steps.append(Step(status, value, error, seconds))
            last = time.monotonic()
    finally:
        torch.set_default_dtype(dtype)
        torch.set_rng_state(rng)
    run.steps += [Step("skipped") for _ in range(len(steps) - len(run.steps))]
    return run


def run_steps(steps, *, time_limit: float, budget: float) -> Run:
    """Run ``steps`` (zero-argument callables returning plain data) in order, isolated.

    A step taking more than ``time_limit`` seconds, or all of them together more
    than ``budget`` seconds, stops the run: that step gets status 'timeout' or
    'over_budget', the later ones 'skipped'. Returns a :class:`Run`; never raises
    because of what the steps do (KeyboardInterrupt in the parent kills the child
    and propagates).
    """
    steps = list(steps)
    if not steps:
        return Run()
    with on_cpu():  # whatever default device the kernel has set
        if fork_available():
            return _run_forked(steps, time_limit, budget)
        return _run_threaded(steps, time_limit, budget)
