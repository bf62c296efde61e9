"""Interactive explorers and plotly figures for the course (the only part of attnviz using plotly/ipywidgets).

Explorers (leave one as a cell's last expression to display it; each has ``.controls``,
``.panels`` (the arrays each picture shows, see :mod:`.canvas`) and ``.metrics``). They paint
on one small canvas front-end (``canvas.js``), not plotly:
    ``saturation_explorer``, ``lookup_explorer``, ``mask_explorer``, ``head_explorer``,
    ``kv_cache_explorer``.

Figures (static ``go.Figure``):
    ``attention_heatmap``, ``scores_heatmap``, ``line_chart``, ``bar_chart`` in :mod:`.figures`.
"""

from .figures import attention_heatmap, bar_chart, line_chart, scores_heatmap
from .heads import head_explorer
from .kv_cache import kv_cache_explorer
from .lookup import lookup_explorer
from .masks import mask_explorer
from .saturation import saturation_explorer

__all__ = [
    "saturation_explorer",
    "lookup_explorer",
    "mask_explorer",
    "head_explorer",
    "kv_cache_explorer",
    "attention_heatmap",
    "scores_heatmap",
    "line_chart",
    "bar_chart",
]
