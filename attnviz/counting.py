"""Count the multiply-adds of the matrix products a block of torch code runs.

    with count_multiply_adds() as counter:
        layer(x)
    counter.total        # multiply-adds of every matmul / @ / F.linear inside the block

A matrix product whose output has ``N`` numbers, each a sum of ``k`` products,
costs ``N * k`` multiply-adds. The counter watches the calls through a
``torch.overrides.TorchFunctionMode`` (it sees every torch function call made
in the block) and adds ``output.numel() * input.shape[-1]`` for ``torch.matmul``,
the ``@`` operator and ``torch.nn.functional.linear`` (which is what ``nn.Linear``
calls). Other operations (softmax, additions, ``torch.bmm``, ``torch.einsum``,
fused attention) are not counted. Torch only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

__all__ = ["MultiplyAddCounter", "count_multiply_adds"]

_COUNTED = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, F.linear)


class MultiplyAddCounter(TorchFunctionMode):
    """A ``TorchFunctionMode`` whose ``total`` adds up the multiply-adds of matrix products."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func in _COUNTED:
            # each output number is a sum of (length of the first input's last dimension) products
            self.total += result.numel() * args[0].shape[-1]
        return result


def count_multiply_adds() -> MultiplyAddCounter:
    """A context manager counting matrix-product multiply-adds; read ``.total`` after the block."""
    return MultiplyAddCounter()
