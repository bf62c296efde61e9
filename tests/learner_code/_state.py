"""A snapshot of the kernel state that learner code must not be able to change through a checker."""

import hashlib
import random

import numpy as np
import torch


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _who(obj) -> str:
    return f"{getattr(obj, '__qualname__', type(obj).__name__)}@{id(obj):x}"


def kernel_state() -> dict:
    """Default dtype, RNGs, global flags and the identity of the functions a checker relies on."""
    import attnviz
    import attnviz.core

    return {
        "default_dtype": str(torch.get_default_dtype()),
        "torch_rng": _digest(torch.random.get_rng_state().numpy().tobytes()),
        "numpy_rng": _digest(np.random.get_state()[1].tobytes()),
        "python_rng": _digest(repr(random.getstate()).encode()),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "grad_enabled": torch.is_grad_enabled(),
        "num_threads": torch.get_num_threads(),
        "attnviz.core": {name: _who(getattr(attnviz.core, name))
                         for name in ("scaled_dot_product_attention", "attention_scores",
                                      "causal_mask", "padding_mask")},
        "attnviz": {name: _who(getattr(attnviz, name))
                    for name in ("scaled_dot_product_attention", "causal_mask", "padding_mask",
                                 "MultiHeadAttention")},
        "torch": {name: _who(obj) for name, obj in (
            ("torch.softmax", torch.softmax), ("F.softmax", torch.nn.functional.softmax),
            ("Tensor.softmax", torch.Tensor.softmax), ("torch.matmul", torch.matmul),
            ("F.scaled_dot_product_attention", torch.nn.functional.scaled_dot_product_attention))},
    }


def state_changes(before: dict, after: dict) -> list[str]:
    """What differs between two snapshots, in words."""
    changes = []
    for key, old in before.items():
        new = after.get(key)
        if isinstance(old, dict):
            changes += [f"{key}.{name}: {value} -> {new.get(name)}" for name, value in old.items()
                        if new.get(name) != value]
        elif new != old:
            changes.append(f"{key}: {old} -> {new}")
    return changes
