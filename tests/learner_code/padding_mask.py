"""Learner versions of notebook 04's exercise 2 ``my_padding_mask(lengths, n)``, for check_padding_mask.

``lengths`` (a 1-D int tensor) holds each sequence's number of real tokens, padding at the end,
each at most ``n`` (and possibly all below ``n``, or 0). The result is a bool ``(batch, 1, n)`` mask,
True on the real *key columns*; a full ``(batch, n, n)`` whose rows all repeat the key pattern is
accepted too. ``lengths`` must not be changed.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from ._case import FAIL, PASS, Case

# ---------------------------------------------------------------- correct -----------------------------


def solution(lengths, n):
    lengths = torch.as_tensor(lengths)
    return (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]


def unsqueeze_style(lengths, n):
    return (torch.arange(n).unsqueeze(0) < lengths.unsqueeze(1)).unsqueeze(1)


def loop_fill(lengths, n):
    mask = torch.zeros(len(lengths), 1, n, dtype=torch.bool)
    for b, length in enumerate(lengths.tolist()):
        mask[b, 0, :length] = True
    return mask


def stacked_rows(lengths, n):
    rows = [torch.arange(n) < int(length) for length in lengths]
    return torch.stack(rows).view(-1, 1, n)


def list_of_bools(lengths, n):
    rows = [[True] * int(length) + [False] * (n - int(length)) for length in lengths]
    return torch.tensor(rows, dtype=torch.bool).reshape(len(rows), 1, n)


def full_square_expanded(lengths, n):
    keys = torch.arange(n)[None, :] < lengths[:, None]          # (batch, n)
    return keys[:, None, :].expand(-1, n, -1)                   # (batch, n, n), every row the same


def numpy_version(lengths, n):
    lengths_np = np.asarray(lengths)
    return torch.from_numpy(np.arange(n)[None, None, :] < lengths_np[:, None, None])


def ge_inverted_twice(lengths, n):
    padding = torch.arange(n).expand(len(lengths), n) >= lengths.view(-1, 1)     # True on padding
    return (~padding).unsqueeze(-2)


def cumulative_ones(lengths, n):
    ones = torch.ones(len(lengths), n, dtype=torch.long).cumsum(dim=-1)          # 1, 2, ..., n
    return (ones <= lengths[:, None]).unsqueeze(1)


def clone_then_unsqueeze_(lengths, n):
    column = lengths.clone().unsqueeze_(1)                      # in place on a copy: fine
    return (torch.arange(n) < column)[:, None]


def pad_sequence_then_pad_to_n(lengths, n):
    rows = [torch.ones(int(length), dtype=torch.bool) for length in lengths]
    padded = pad_sequence(rows, batch_first=True, padding_value=False)       # (batch, max(lengths))
    padded = F.pad(padded, (0, n - padded.shape[1]), value=False)             # ... up to n
    return padded.unsqueeze(1)


def expand_compare(lengths, n):
    return (torch.arange(n).expand(len(lengths), n) < lengths.unsqueeze(-1))[:, None]


# ---------------------------------------------------------------- buggy -------------------------------

def masks_query_rows(lengths, n):
    return (torch.arange(n)[None, :] < lengths[:, None])[:, :, None]          # (batch, n, 1)


def masks_query_rows_expanded(lengths, n):
    real = torch.arange(n)[None, :] < lengths[:, None]
    return real[:, :, None].expand(-1, -1, n)


def true_on_padding(lengths, n):
    return (torch.arange(n)[None, :] >= lengths[:, None])[:, None, :]


def true_on_padding_loop(lengths, n):
    mask = torch.ones(len(lengths), 1, n, dtype=torch.bool)
    for b, length in enumerate(lengths.tolist()):
        mask[b, 0, :length] = False
    return mask


def off_by_one_le(lengths, n):
    return (torch.arange(n)[None, :] <= lengths[:, None])[:, None, :]


def off_by_one_loop(lengths, n):
    mask = torch.zeros(len(lengths), 1, n, dtype=torch.bool)
    for b, length in enumerate(lengths.tolist()):
        mask[b, 0, : length - 1] = True
    return mask


def last_index_compare(lengths, n):
    """Reads a length as the index of the last real token."""
    last = lengths.view(-1, 1, 1)
    return torch.arange(n).view(1, 1, n) <= last


def lengths_unsqueezed_in_place(lengths, n):
    lengths.unsqueeze_(1)                                        # the caller's lengths become (batch, 1)
    return (torch.arange(n)[None, :] < lengths)[:, None, :]


def lengths_decremented_in_place(lengths, n):
    lengths -= 1                                                 # "last real index", in place
    return (torch.arange(n)[None, :] <= lengths[:, None])[:, None, :]


def lengths_sub_out(lengths, n):
    last = torch.sub(lengths, 1, out=lengths)                    # out= is the caller's tensor
    return (torch.arange(n)[None, :] <= last[:, None])[:, None, :]


def uses_max_length(lengths, n):
    width = int(lengths.max())                                   # ignores n
    return (torch.arange(width)[None, :] < lengths[:, None])[:, None, :]


def max_length_loop(lengths, n):
    longest = max(lengths.tolist())
    return torch.stack([torch.arange(longest) < length for length in lengths])[:, None, :]

def pad_sequence_only(lengths, n):
    rows = [torch.ones(int(length), dtype=torch.bool) for length in lengths]
    return pad_sequence(rows, batch_first=True, padding_value=False).unsqueeze(1)   # width max(lengths)


def no_query_axis(lengths, n):
    return torch.arange(n)[None, :] < lengths[:, None]           # (batch, n)


def int_mask(lengths, n):
    return (torch.arange(n)[None, :] < lengths[:, None]).long()[:, None, :]


def first_sequence_only(lengths, n):
    row = torch.arange(n) < lengths[0]
    return row.expand(len(lengths), n)[:, None, :]


def item_only(lengths, n):
    return (torch.arange(n) < lengths.item())[None, None, :]     # works for a batch of one


def rows_and_columns(lengths, n):
    real = torch.arange(n)[None, :] < lengths[:, None]
    return real[:, None, :] & real[:, :, None]                   # padded query rows fully masked too


def ones_then_slice_first_axis(lengths, n):
    mask = torch.zeros(len(lengths), 1, n, dtype=torch.bool)
    for b in range(len(lengths)):
        mask[b, : int(lengths[b])] = True                        # the size-1 axis, not the keys
    return mask


def everything_real(lengths, n):
    return torch.ones(len(lengths), 1, n, dtype=torch.bool)      # forgot to compare with lengths


def batch_in_front(lengths, n):
    return (torch.arange(n)[None, :] < lengths[:, None])[None]   # (1, batch, n)


def float_loop(lengths, n):
    mask = torch.zeros(len(lengths), 1, n)                       # no dtype: float zeros
    for b, length in enumerate(lengths.tolist()):
        mask[b, 0, :length] = 1.0
    return mask


def padded_on_both_sides(lengths, n):
    real = torch.arange(n).expand(len(lengths), n) < lengths.unsqueeze(1)
    return real.unsqueeze(2) * real.unsqueeze(1)                 # bool * bool: rows and columns


def float_loop_then_bool(lengths, n):
    mask = torch.zeros(len(lengths), 1, n)
    for b, length in enumerate(lengths.tolist()):
        mask[b, 0, :length] = 1.0
    return mask.bool()


def ge_then_logical_not(lengths, n):
    padded = torch.arange(n).unsqueeze(0) >= lengths.unsqueeze(1)         # True on padding
    return padded.logical_not().unsqueeze(1)


def view_compare(lengths, n):
    positions = torch.arange(n).view(1, 1, n)
    return positions < lengths.view(-1, 1, 1)


def negative_slice_loop(lengths, n):
    mask = torch.ones(lengths.shape[0], 1, n, dtype=torch.bool)
    for b in range(lengths.shape[0]):
        pad = n - int(lengths[b])
        mask[b, 0, -pad:] = False              # pad == 0 clears the whole row
    return mask


def negative_slice_float(lengths, n):
    mask = torch.ones(len(lengths), n)
    for b, length in enumerate(lengths.tolist()):
        mask[b, length - n:] = 0.0
    return mask.bool().unsqueeze(1)


def real_tokens_at_the_end(lengths, n):
    start = n - lengths                        # left padding: the real tokens fill the end
    return (torch.arange(n)[None, :] >= start[:, None])[:, None, :]


def flipped_prefix(lengths, n):
    prefix = torch.arange(n)[None, :] < lengths[:, None]
    return prefix.flip(-1).unsqueeze(1)        # "padding on the left, as the tokenizer does"


def flipped_twice(lengths, n):
    suffix = (torch.arange(n)[None, :] >= n - lengths[:, None]).flip(-1)   # the end, mirrored: the start
    return suffix.unsqueeze(1)


def pad_counts_loop(lengths, n):
    mask = torch.zeros(len(lengths), 1, n, dtype=torch.bool)
    for b, pad in enumerate(lengths.tolist()):  # "lengths: how much padding each sequence has"
        mask[b, 0, : n - pad] = True
    return mask


def pad_counts_compare(lengths, n):
    return (torch.arange(n) < (n - lengths).unsqueeze(-1)).unsqueeze(1)


def padding_and_causal(lengths, n):
    keys = torch.arange(n)[None, :] < lengths[:, None]            # (batch, n)
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))       # "a decoder needs both"
    return keys[:, None, :] & causal


def padding_and_causal_loop(lengths, n):
    mask = torch.zeros(len(lengths), n, n, dtype=torch.bool)
    for b in range(len(lengths)):
        for i in range(n):
            for j in range(min(i + 1, int(lengths[b]))):
                mask[b, i, j] = True
    return mask


def expanded_padding(lengths, n):
    keys = torch.arange(n)[None, :] < lengths[:, None]
    return keys[:, None, :].expand(len(lengths), n, n)             # every query row the same: still right


def lengths_clamped(lengths, n):
    safe = torch.clamp(lengths, min=1)        # "avoid an all-masked row"
    return (torch.arange(n)[None, :] < safe[:, None]).unsqueeze(1)


def lengths_max_one(lengths, n):
    real = torch.arange(n).unsqueeze(0) < torch.maximum(lengths, torch.ones_like(lengths)).unsqueeze(1)
    return real[:, None, :]


def sorted_for_packing(lengths, n):
    lengths, _ = torch.sort(lengths, descending=True)
    return (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]


def sorted_ascending(lengths, n):
    ordered = sorted(lengths.tolist())
    rows = [torch.arange(n) < length for length in ordered]
    return torch.stack(rows)[:, None, :]


def negative_slice_guarded(lengths, n):
    mask = torch.ones(len(lengths), 1, n, dtype=torch.bool)
    for b, length in enumerate(lengths.tolist()):
        if length < n:                         # -(n - length) would be -0: the whole row
            mask[b, 0, -(n - length):] = False
    return mask


def positive_slice_loop(lengths, n):
    mask = torch.ones(len(lengths), 1, n, dtype=torch.bool)
    for b, length in enumerate(lengths.tolist()):
        mask[b, 0, length:] = False
    return mask


def sorted_then_put_back(lengths, n):
    ordered, order = torch.sort(lengths, descending=True)
    mask = torch.arange(n)[None, :] < ordered[:, None]
    unsorted = torch.empty_like(mask)
    unsorted[order] = mask                     # each row back at its sequence
    return unsorted[:, None, :]


def clamp_upper_only(lengths, n):
    kept = lengths.clamp(max=n)                # lengths never exceed n; 0 stays 0
    return (torch.arange(n)[None, :] < kept[:, None])[:, None, :]


CASES = [
    Case("real_tokens_at_the_end", real_tokens_at_the_end, "padding_left_aligned"),
    Case("pad_counts_loop", pad_counts_loop, "padding_lengths_as_pad_counts"),
    Case("pad_counts_compare", pad_counts_compare, "padding_lengths_as_pad_counts"),
    Case("padding_and_causal", padding_and_causal, "padding_combined_with_causal"),
    Case("padding_and_causal_loop", padding_and_causal_loop, "padding_combined_with_causal"),
    Case("expanded_padding", expanded_padding, PASS),
    Case("flipped_prefix", flipped_prefix, "padding_left_aligned"),
    Case("flipped_twice", flipped_twice, PASS),
    Case("solution", solution, PASS),
    Case("float_loop_then_bool", float_loop_then_bool, PASS),
    Case("view_compare", view_compare, PASS),
    Case("ge_then_logical_not", ge_then_logical_not, PASS),
    Case("unsqueeze_style", unsqueeze_style, PASS),
    Case("loop_fill", loop_fill, PASS),
    Case("stacked_rows", stacked_rows, PASS),
    Case("list_of_bools", list_of_bools, PASS),
    Case("full_square_expanded", full_square_expanded, PASS),
    Case("numpy_version", numpy_version, PASS),
    Case("ge_inverted_twice", ge_inverted_twice, PASS),
    Case("cumulative_ones", cumulative_ones, PASS),
    Case("clone_then_unsqueeze_", clone_then_unsqueeze_, PASS),
    Case("pad_sequence_then_pad_to_n", pad_sequence_then_pad_to_n, PASS),
    Case("expand_compare", expand_compare, PASS),
    Case("masks_query_rows", masks_query_rows, "padding_masks_queries"),
    Case("masks_query_rows_expanded", masks_query_rows_expanded, "padding_masks_queries"),
    Case("true_on_padding", true_on_padding, "mask_inverted"),
    Case("true_on_padding_loop", true_on_padding_loop, "mask_inverted"),
    Case("off_by_one_le", off_by_one_le, "padding_off_by_one"),
    Case("last_index_compare", last_index_compare, "padding_off_by_one"),
    Case("off_by_one_loop", off_by_one_loop, FAIL),   # length - 1 as a slice end: length 0 keeps n - 1
    Case("lengths_unsqueezed_in_place", lengths_unsqueezed_in_place,
         {"padding_lengths_modified", "inputs_modified", "modifies_inputs"}),
    Case("lengths_decremented_in_place", lengths_decremented_in_place,
         {"padding_lengths_modified", "inputs_modified", "modifies_inputs"}),
    Case("lengths_sub_out", lengths_sub_out,
         {"padding_lengths_modified", "inputs_modified", "modifies_inputs"}),
    Case("uses_max_length", uses_max_length, "padding_width_from_lengths"),
    Case("max_length_loop", max_length_loop, "padding_width_from_lengths"),
    Case("pad_sequence_only", pad_sequence_only, "padding_width_from_lengths"),
    Case("no_query_axis", no_query_axis, "padding_query_axis_misplaced"),
    Case("batch_in_front", batch_in_front, "padding_query_axis_misplaced"),
    Case("int_mask", int_mask, "mask_not_bool"),
    Case("float_loop", float_loop, "mask_not_bool"),
    Case("ones_then_slice_first_axis", ones_then_slice_first_axis, "mask_blocks_nothing"),
    Case("everything_real", everything_real, "mask_blocks_nothing"),
    Case("first_sequence_only", first_sequence_only, "batch_one_only"),
    Case("item_only", item_only, "batch_one_only"),
    Case("rows_and_columns", rows_and_columns, "padding_masks_queries_too",
         note="a (batch, n, n) mask whose padded rows are fully masked: rows do not repeat the key pattern"),
    Case("padded_on_both_sides", padded_on_both_sides, "padding_masks_queries_too"),
    Case("negative_slice_guarded", negative_slice_guarded, PASS),
    Case("positive_slice_loop", positive_slice_loop, PASS),
    Case("sorted_then_put_back", sorted_then_put_back, PASS),
    Case("clamp_upper_only", clamp_upper_only, PASS),
    Case("negative_slice_loop", negative_slice_loop, "padding_full_sequence_blocked"),
    Case("negative_slice_float", negative_slice_float, "padding_full_sequence_blocked"),
    Case("lengths_clamped", lengths_clamped, "padding_lengths_clamped"),
    Case("lengths_max_one", lengths_max_one, "padding_lengths_clamped"),
    Case("sorted_for_packing", sorted_for_packing, "padding_lengths_reordered"),
    Case("sorted_ascending", sorted_ascending, "padding_lengths_reordered"),
]
