"""The learner corpus (tests/learner_code/) is honest: its labels hold, checked without attnviz.check.

Every case labelled correct behaves like a float64 reference written in tests/learner_code/_probe.py
on every input the exercises allow (and in a backward pass, a second call, and with its inputs left
alone); every buggy case shows at least one symptom there. So a checker that passes a buggy case,
or fails a correct one, is wrong, not the corpus. Also: the corpus is as large and as varied as
issue 12 asks. Runs in `make check` and `make test` (10 to 30 s). A new bug id goes in LATER_IDS
below, with two corpus cases that name it (docs/checkers.md, "Adding a bug").
"""

import warnings
from collections import Counter

import pytest
import torch
from learner_code import _probe, attention, causal_mask, decoding, hostile, multi_head, padding_mask
from learner_code._case import PASS

SYMPTOMS = {attention: _probe.attention_symptoms, multi_head: _probe.multi_head_symptoms,
            causal_mask: _probe.causal_symptoms, padding_mask: _probe.padding_symptoms,
            decoding: _probe.decoding_symptoms}
CASES = [(module, case) for module in SYMPTOMS for case in module.CASES]

# the ids the lead listed for issue 12, and the ids of today's catalog some cases may also be given
NEW_IDS = {
    "missing_scale", "wrong_scale", "scale_after_softmax", "softmax_wrong_axis", "scores_transposed",
    "mask_inverted", "mask_after_softmax", "mask_fill_zero", "nan_on_fully_masked_row", "forgot_values",
    "heads_split_without_transpose", "heads_merged_without_transpose", "missing_key_transpose",
    "missing_contiguous", "mask_ignored", "scale_multiplied", "weights_not_normalised",
    "keys_values_swapped", "queries_keys_swapped", "additive_mask_wrong", "fill_overflows_float16",
    "dropout_left_on", "heads_not_split", "batch_one_only", "causal_off_by_one", "causal_not_rectangular",
    "heads_averaged", "softmax_overflow", "gradient_blocked", "dtype_changed", "inputs_modified",
    "padding_lengths_modified",
}
LEGACY_IDS = {"scale_by_d_model", "missing_output_projection", "causal_future_visible",
              "causal_excludes_self", "padding_masks_queries", "modifies_inputs"}
# the decoding ids of issue 20 (notebook 07's decode_step)
DECODING_IDS = {"cache_not_appended", "keys_not_appended", "values_not_appended", "cache_wrong_axis",
                "is_causal_top_left", "positions_not_advanced", "causal_mask_missing",
                "kv_heads_repeated_not_interleaved", "cache_modified_in_place"}
# ids added since, from what fresh learners wrote
LATER_IDS = {"cached_length_misread", "head_left_out", "embedding_added_twice",
             "final_norm_skipped", "new_token_not_attended", "cache_keys_values_swapped",
             "causal_offset_negated", "attention_norm_skipped", "attention_residual_missing",
             "residual_from_normed", "mlp_residual_missing", "mlp_norm_skipped", "parallel_block",
             "values_from_cached_keys", "heads_merged_interleaved", "heads_split_interleaved",
             "weight_not_transposed", "mask_replaced_by_causal", "cache_layer_mixed_up", "cache_prepended",
             "last_position_only", "cache_low_precision", "norms_mixed_up", "residual_added",
             "layer_norm_added", "heads_count_and_width_swapped", "padding_off_by_one",
             "squeeze_drops_batch", "output_and_weights_swapped", "mask_transposed", "mask_axis_misplaced",
             "weights_modified_in_place", "weights_transposed", "output_transposed", "kv_head_index_wrong",
             "mask_not_bool",
             "mask_fixed_size", "mask_blocks_nothing", "padding_width_from_lengths",
             "padding_query_axis_misplaced", "padding_masks_queries_too", "softmax_sum_not_kept",
             "mask_boolean_indexed", "heads_overlap", "cache_holds_repeated_heads",
             "causal_first_row_blocked", "padding_full_sequence_blocked", "padding_lengths_clamped",
             "padding_lengths_reordered", "key_reshaped_not_transposed", "additive_mask_too_small",
             "softmax_max_over_blocked", "causal_last_row_blocked", "padding_left_aligned",
             "causal_when_no_mask", "padding_lengths_as_pad_counts", "padding_combined_with_causal",
             "mlp_skipped", "first_block_only", "state_outside_cache", "cache_read_at_wrong_index",
             "no_block_without_cache",
             "cache_layer_not_advanced", "causal_added_to_mask", "mask_cached_columns_last",
             "three_dims_only", "static_buffer_whole_attended",
             "counter_advanced_per_layer", "counter_advanced_before_write", "prefill_pieces_isolated",
             "final_norm_twice", "first_block_reused", "attention_output_left_out", "cache_masked_out",
             "sequence_first_input", "heads_split_along_positions", "softmax_low_precision",
             "softmax_applied_twice"}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one thread is faster, and far faster on a loaded machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize(("module", "case"), CASES,
                         ids=[f"{module.__name__.rsplit('.', 1)[-1]}-{case.name}" for module, case in CASES])
def test_label_holds(module, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        symptoms = SYMPTOMS[module](case.obj)
    if case.expect == PASS:
        # a case labelled correct behaves like the reference on every probe
        assert symptoms == []
    else:
        # a case labelled buggy shows its bug on at least one probe
        assert symptoms, f"{case.name} is labelled {case.expect} but behaves like the reference"


def test_corpus_size_and_coverage():
    cases = [case for _, case in CASES]
    correct = sum(case.expect == PASS for case in cases)
    # at least 150 implementations, about a third of them correct
    assert len(cases) >= 150 and 0.25 < correct / len(cases) < 0.45
    named = Counter(bug for case in cases for bug in case.ids)
    # every id issue 12 lists, every decoding id and every later id: expected of two implementations
    assert {bug for bug in NEW_IDS | DECODING_IDS | LATER_IDS if named[bug] < 2} == set()
    # no case expects an id outside the agreed list and today's catalog
    assert set(named) <= NEW_IDS | LEGACY_IDS | DECODING_IDS | LATER_IDS
    # names are unique within each file
    for module in (*SYMPTOMS, hostile):
        names = [case.name for case in module.CASES]
        assert len(names) == len(set(names)), module.__name__
