"""Run a block of PyTorch on one CPU thread, then restore the thread count."""

from __future__ import annotations

import contextlib

import torch

__all__ = ["one_thread"]


@contextlib.contextmanager
def one_thread():
    """Run torch on one CPU thread inside the block, then restore the setting.

    The course's matrices and toy models are small: a second thread only adds waiting, and on
    a busy 2-core machine waking PyTorch's thread pool costs milliseconds (a 128x128 ``exp``
    took 3 ms instead of 0.05 ms) or, for training loops, threads stall each other for seconds.
    """
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
