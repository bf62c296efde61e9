"""Measuring what attention costs on the CPU: wall time, peak allocation, which kernel ran.

Torch only. Three measurements, each chosen to survive a shared, busy machine:

* :func:`median_seconds` times a call several times and keeps the median, so a
  few runs slowed by another process do not move the answer. With
  ``clock="thread"`` it counts CPU time instead of elapsed time, which does not
  grow while another program holds the CPU.
* :func:`peak_allocated_bytes` reads PyTorch's own allocation events. On the
  CPU there is no ``torch.cuda.max_memory_allocated``; Python's ``tracemalloc``
  sees nothing either, because tensors are allocated by PyTorch's C++
  allocator, not by Python. PyTorch's profiler (``torch.autograd.profiler.profile``,
  the engine under ``torch.profiler.profile``) with ``profile_memory=True`` records
  every allocation and free of that allocator, including scratch buffers that
  a fused kernel allocates internally; summing them in time order gives the
  high-water mark. Allocation is deterministic, so this number does not wobble.
* :func:`aten_ops_called` lists the ATen operators that ran, which is how you
  see which attention kernel ``scaled_dot_product_attention`` picked.

:func:`single_thread` runs a block on one CPU thread: on a 2-core machine that
other programs share, a multi-threaded kernel waits at every barrier for a
thread the scheduler has parked, which turns microseconds into milliseconds.
One thread measures the algorithm rather than the scheduler; it also fixes the
size of per-thread scratch buffers, so allocations match on every machine.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import sys
import time

import torch

from ._training import one_thread

__all__ = [
    "single_thread",
    "median_seconds",
    "peak_allocated_bytes",
    "aten_ops_called",
    "loglog_slope",
]


single_thread = one_thread   # run the block on one CPU thread, then restore the count


CLOCKS = {"wall": time.perf_counter, "thread": time.thread_time}


def median_seconds(fn, *args, repeats: int = 5, warmup: int = 1, clock: str = "wall", **kwargs) -> float:
    """Median time of ``fn(*args, **kwargs)`` in seconds over ``repeats`` runs.

    ``warmup`` untimed calls come first (the first call pays for one-off setup).
    ``clock="wall"`` measures elapsed time (``time.perf_counter``). ``clock="thread"``
    measures the CPU time of the calling thread (``time.thread_time``): time spent
    waiting while another program had the CPU is not counted, so it stays steady on
    a busy machine. It sees all of PyTorch's work only when PyTorch runs on the
    calling thread, i.e. inside :func:`single_thread` (or ``torch.set_num_threads(1)``).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}.")
    if int(repeats) < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}.")
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}.")
    if clock == "thread" and torch.get_num_threads() != 1:
        raise ValueError(
            f"clock='thread' counts only the calling thread's CPU time, but PyTorch is using "
            f"{torch.get_num_threads()} threads; wrap the call in single_thread() or use clock='wall'."
        )
    now = CLOCKS[clock]
    for _ in range(int(warmup)):
        fn(*args, **kwargs)
    times = []
    for _ in range(int(repeats)):
        start = now()
        fn(*args, **kwargs)
        times.append(now() - start)
    return statistics.median(times)


@contextlib.contextmanager
def _quiet_stderr():
    """Silence file descriptor 2: the profiler's C++ layer prints start/stop lines there."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real fd 2 (unusual hosts): stay noisy
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _profile(fn, args, kwargs, memory: bool):
    # torch.autograd.profiler.profile is the CPU profiler that torch.profiler.profile wraps; used
    # directly it skips the wrapper's first-use import of torch._inductor (seconds, for nothing here).
    from torch.autograd.profiler import profile

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}.")
    # Kineto (the profiler's C++ part) logs "USDT ... profiler_start/stop" to stderr unless its level,
    # read once at its first use, is above all of its levels (USDT is 5); a level the user set is kept
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with _quiet_stderr(), profile(use_cpu=True, profile_memory=memory, use_kineto=True) as prof:
        fn(*args, **kwargs)
    return prof


def peak_allocated_bytes(fn, *args, **kwargs) -> int:
    """Peak bytes PyTorch's CPU allocator held during ``fn(*args, **kwargs)``, above where it started.

    Every allocation and free the call makes is recorded by PyTorch's profiler
    (``profile_memory=True``); the running sum of those events, in time order,
    has this maximum. Tensors that existed before the call are not counted;
    tensors the call returns are (they were allocated during it).
    """
    prof = _profile(fn, args, kwargs, memory=True)
    try:
        events = prof.kineto_results.events()
    except AttributeError as err:  # the profiler's result layout is not public API
        raise RuntimeError(
            f"this PyTorch ({torch.__version__}) does not expose the profiler's memory events "
            f"where attnviz expects them; peak_allocated_bytes cannot measure here."
        ) from err
    changes = sorted((event.start_ns(), event.nbytes()) for event in events if event.name() == "[memory]")
    running = peak = 0
    for _, nbytes in changes:
        running += nbytes
        peak = max(peak, running)
    return int(peak)


def aten_ops_called(fn, *args, **kwargs) -> list[str]:
    """Names of the ATen operators that ran during ``fn(*args, **kwargs)``, in the order they started.

    Each name appears once. ``scaled_dot_product_attention`` shows the kernel
    it dispatched to, e.g. ``aten::_scaled_dot_product_flash_attention_for_cpu``
    or ``aten::_scaled_dot_product_attention_math``.
    """
    prof = _profile(fn, args, kwargs, memory=False)
    names = []
    for event in sorted(prof.function_events, key=lambda e: e.time_range.start):
        if event.name.startswith("aten::") and event.name not in names:
            names.append(event.name)
    return names


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x``: the exponent p in ``y ≈ c · x^p``."""
    x = [float(v) for v in x]
    y = [float(v) for v in y]
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} values but y has {len(y)}; they must pair up.")
    if len(x) < 2:
        raise ValueError("loglog_slope needs at least 2 points.")
    if min(x) <= 0 or min(y) <= 0:
        raise ValueError("loglog_slope needs positive x and y (a log of 0 or less is undefined).")
    lx = [math.log(v) for v in x]
    ly = [math.log(v) for v in y]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    spread = sum((a - mx) ** 2 for a in lx)
    if spread == 0:
        raise ValueError("loglog_slope needs at least two different x values.")
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / spread
