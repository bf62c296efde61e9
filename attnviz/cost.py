"""What attention costs: the arithmetic behind memory and the KV cache."""

from __future__ import annotations

from ._validate import require_positive_int

__all__ = ["kv_cache_bytes", "attention_matrix_bytes"]


def kv_cache_bytes(n_layers, n_kv_heads, d_head, seq_len, bytes_per_element=2, batch=1) -> int:
    """Bytes held by the KV cache: ``2 · n_layers · n_kv_heads · d_head · seq_len · bytes · batch``.

    The 2 is one key and one value per position. ``n_kv_heads`` is the number
    of key/value heads: equal to the query heads for ordinary multi-head
    attention, fewer with grouped-query attention, 1 with multi-query.
    ``bytes_per_element`` is 2 for fp16/bf16, 4 for fp32.
    """
    values = [
        require_positive_int(n_layers, "n_layers"),
        require_positive_int(n_kv_heads, "n_kv_heads"),
        require_positive_int(d_head, "d_head"),
        require_positive_int(seq_len, "seq_len", allow_zero=True),
        require_positive_int(bytes_per_element, "bytes_per_element"),
        require_positive_int(batch, "batch"),
    ]
    total = 2
    for value in values:
        total *= value
    return total


def attention_matrix_bytes(n, n_heads=1, batch=1, bytes_per_element=4) -> int:
    """Bytes of one ``n × n`` weights matrix per head per sequence: ``bytes · n² · heads · batch``."""
    n = require_positive_int(n, "n")
    n_heads = require_positive_int(n_heads, "n_heads")
    batch = require_positive_int(batch, "batch")
    bytes_per_element = require_positive_int(bytes_per_element, "bytes_per_element")
    return bytes_per_element * n * n * n_heads * batch
