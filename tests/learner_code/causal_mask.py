"""Learner versions of notebook 04's exercise 1 ``my_causal_mask(n)``, for check_causal_mask.

A bool ``(n, n)`` mask, True where query i may attend to key j, i.e. j <= i. Some learners write
the two-argument form ``(n_q, n_k=None)`` of ``attnviz.causal_mask``; for ``n_q != n_k`` the course's
triangle starts at the top-left corner (query i may attend to keys j <= i), as PyTorch's
``is_causal=True`` does. Those ``causal_not_rectangular`` cases can only be caught by a checker that
calls a two-argument function with ``n_q != n_k``.
"""

import numpy as np
import torch

from ._case import FAIL, PASS, Case

# ---------------------------------------------------------------- correct -----------------------------


def solution(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


def tril_function(n):
    return torch.tril(torch.ones(n, n)).bool()


def not_strict_upper(n):
    return ~torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)


def arange_compare(n):
    i = torch.arange(n)
    return i[None, :] <= i[:, None]                  # key j <= query i


def nested_loops(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        for j in range(i + 1):
            mask[i, j] = True
    return mask


def list_comprehension(n):
    return torch.tensor([[j <= i for j in range(n)] for i in range(n)], dtype=torch.bool).reshape(n, n)


def numpy_tril(n):
    return torch.from_numpy(np.tril(np.ones((n, n), dtype=bool)))


def upper_transposed(n):
    return torch.ones(n, n, dtype=torch.bool).triu().T.contiguous()


_BIG = torch.ones(64, 64, dtype=torch.bool).tril()      # nanoGPT's registered buffer, sliced per call


def cached_slice(n):
    if n > _BIG.shape[0]:
        return torch.ones(n, n, dtype=torch.bool).tril()
    return _BIG[:n, :n].clone()


_SMALL = torch.ones(16, 16, dtype=torch.bool).tril()      # built once, "long enough for the examples"


def sliced_from_a_small_buffer(n):
    return _SMALL[:n, :n]


def two_args_tril(n_q, n_k=None):
    n_k = n_q if n_k is None else n_k
    return torch.ones(n_q, n_k, dtype=torch.bool).tril()


def two_args_arange(n_q, n_k=None):
    n_k = n_k or n_q
    return torch.arange(n_k)[None, :] <= torch.arange(n_q)[:, None]


def unsqueeze_ge(n):
    positions = torch.arange(n)
    return positions.unsqueeze(1) >= positions.unsqueeze(0)


def float_tril_equals_one(n):
    return torch.ones(n, n).tril() == 1


# ---------------------------------------------------------------- buggy -------------------------------

def upper_triangle(n):
    return torch.ones(n, n, dtype=torch.bool).triu()


def upper_arange(n):
    i = torch.arange(n)
    return i[None, :] >= i[:, None]


def inverted_tril(n):
    return ~torch.ones(n, n, dtype=torch.bool).tril()


def strict_lower(n):
    return torch.ones(n, n, dtype=torch.bool).tril(diagonal=-1)


def strict_lower_arange(n):
    i = torch.arange(n)
    return i[None, :] < i[:, None]


def loop_excludes_self(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        mask[i, :i] = True
    return mask


def one_future_key(n):
    return torch.ones(n, n, dtype=torch.bool).tril(diagonal=1)


def one_future_arange(n):
    i = torch.arange(n)
    return i[None, :] <= i[:, None] + 1


def float_ones_tril(n):
    return torch.tril(torch.ones(n, n))                          # 0./1. floats, not bool


def additive_minus_inf(n):
    return torch.zeros(n, n).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))


def nested_lists(n):
    return [[j <= i for j in range(n)] for i in range(n)]


def numpy_array(n):
    return np.tril(np.ones((n, n), dtype=bool))


def everything_visible_loop(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        mask[i] = True                                           # meant mask[i, :i + 1]
    return mask


TRIANGLE = torch.ones(16, 16, dtype=torch.bool).tril()            # built once, at import


def table_built_at_import(n):
    return TRIANGLE[:n, :n]


def long_int_tril(n):
    return torch.ones(n, n, dtype=torch.long).tril()             # 0/1 integers


def two_args_ignores_n_k(n_q, n_k=None):
    return torch.ones(n_q, n_q, dtype=torch.bool).tril()


def two_args_bottom_right(n_q, n_k=None):
    n_k = n_q if n_k is None else n_k
    return torch.ones(n_q, n_k, dtype=torch.bool).tril(diagonal=n_k - n_q)   # the KV-cache convention


def two_args_swapped_sizes(n_q, n_k=None):
    n_k = n_q if n_k is None else n_k
    return torch.ones(n_k, n_q, dtype=torch.bool).tril()


def two_args_strict(n_q, n_k=None):
    n_k = n_q if n_k is None else n_k
    return torch.ones(n_q, n_k, dtype=torch.bool).tril(-1)


def float_tril_then_bool(n):
    return torch.tril(torch.ones(n, n)).bool()


def not_above_diagonal(n):
    return torch.ones(n, n, dtype=torch.bool).triu(diagonal=1).logical_not()


def loop_from_row_one(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(1, n):                      # row 0 never filled
        for j in range(i + 1):
            mask[i, j] = True
    return mask


def tril_then_first_row_cleared(n):
    mask = torch.tril(torch.ones(n, n)).bool()
    mask[0] = False                            # "the first token has nothing before it"
    return mask


def loop_stops_one_short(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n - 1):                     # the last row never filled
        mask[i, : i + 1] = True
    return mask


def tril_then_last_row_cleared(n):
    mask = torch.ones(n, n).tril().bool()
    mask[-1] = False                           # "nothing comes after the last token"
    return mask


def loop_every_row(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        mask[i, : i + 1] = True
    return mask


def first_row_then_rest(n):
    mask = torch.zeros(n, n, dtype=torch.bool)
    mask[0, 0] = True                          # the first token sees itself
    for i in range(1, n):
        mask[i] = mask[i - 1]
        mask[i, i] = True
    return mask


CASES = [
    Case("loop_stops_one_short", loop_stops_one_short, "causal_last_row_blocked"),
    Case("tril_then_last_row_cleared", tril_then_last_row_cleared, "causal_last_row_blocked"),
    Case("solution", solution, PASS),
    Case("float_tril_then_bool", float_tril_then_bool, PASS),
    Case("not_above_diagonal", not_above_diagonal, PASS),
    Case("tril_function", tril_function, PASS),
    Case("not_strict_upper", not_strict_upper, PASS),
    Case("arange_compare", arange_compare, PASS),
    Case("nested_loops", nested_loops, PASS),
    Case("list_comprehension", list_comprehension, PASS),
    Case("numpy_tril", numpy_tril, PASS),
    Case("upper_transposed", upper_transposed, PASS),
    Case("cached_slice", cached_slice, PASS),
    Case("sliced_from_a_small_buffer", sliced_from_a_small_buffer, "mask_fixed_size"),
    Case("table_built_at_import", table_built_at_import, "mask_fixed_size"),
    Case("two_args_tril", two_args_tril, PASS),
    Case("two_args_arange", two_args_arange, PASS),
    Case("unsqueeze_ge", unsqueeze_ge, PASS),
    Case("float_tril_equals_one", float_tril_equals_one, PASS),
    Case("upper_triangle", upper_triangle, {"causal_future_visible", "mask_inverted"}),
    Case("upper_arange", upper_arange, {"causal_future_visible", "mask_inverted"}),
    Case("inverted_tril", inverted_tril, {"mask_inverted", "causal_future_visible"}),
    Case("strict_lower", strict_lower, {"causal_off_by_one", "causal_excludes_self"}),
    Case("strict_lower_arange", strict_lower_arange, {"causal_off_by_one", "causal_excludes_self"}),
    Case("loop_excludes_self", loop_excludes_self, {"causal_off_by_one", "causal_excludes_self"}),
    Case("one_future_key", one_future_key, "causal_off_by_one"),
    Case("one_future_arange", one_future_arange, "causal_off_by_one"),
    Case("float_ones_tril", float_ones_tril, "mask_not_bool", note="0/1 floats, the exercise asks for bool"),
    Case("additive_minus_inf", additive_minus_inf, "mask_not_bool", note="an additive float mask, not bool"),
    Case("long_int_tril", long_int_tril, "mask_not_bool"),
    Case("everything_visible_loop", everything_visible_loop, "mask_blocks_nothing"),
    Case("loop_every_row", loop_every_row, PASS),
    Case("first_row_then_rest", first_row_then_rest, PASS),
    Case("loop_from_row_one", loop_from_row_one, "causal_first_row_blocked"),
    Case("tril_then_first_row_cleared", tril_then_first_row_cleared, "causal_first_row_blocked"),
    Case("nested_lists", nested_lists, FAIL),
    Case("numpy_array", numpy_array, FAIL),
    Case("two_args_ignores_n_k", two_args_ignores_n_k, "causal_not_rectangular"),
    # either corner passes (the exercise asks for squares; notebook 08 uses the bottom-right one)
    Case("two_args_bottom_right", two_args_bottom_right, PASS),
    Case("two_args_swapped_sizes", two_args_swapped_sizes, "causal_not_rectangular"),
    Case("two_args_strict", two_args_strict, {"causal_off_by_one", "causal_excludes_self"}),
]
