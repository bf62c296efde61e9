"""attnviz: the reference math, toy tasks, widgets and checkers for the course
"Attention from first principles".

``import attnviz`` loads torch only. The widgets live in ``attnviz.widgets``
(ipywidgets and plotly) and are imported only when asked for.
"""

from .core import attention_scores, causal_mask, padding_mask, scaled_dot_product_attention
from .cost import attention_matrix_bytes, kv_cache_bytes
from .diagnostics import (
    attention_entropy,
    row_max_weight,
    softmax_jacobian,
    softmax_jacobian_norm,
    softmax_max_gradient,
)
from .mha import MultiHeadAttention
from .positions import rotary

__version__ = "0.1.0"

__all__ = [
    "scaled_dot_product_attention",
    "attention_scores",
    "causal_mask",
    "padding_mask",
    "MultiHeadAttention",
    "rotary",
    "kv_cache_bytes",
    "attention_matrix_bytes",
    "attention_entropy",
    "row_max_weight",
    "softmax_jacobian",
    "softmax_jacobian_norm",
    "softmax_max_gradient",
]
