"""Interactive explorers for the course (the only part of attnviz using ipywidgets).

Explorers (leave one as a cell's last expression to display it; each has ``.controls``,
``.panels`` (the arrays each picture shows, see :mod:`.canvas`) and ``.metrics``). They paint
on one small canvas front-end (``canvas.js``), not plotly:
    ``saturation_explorer``, ``lookup_explorer``, ``mask_explorer``, ``head_explorer``,
    ``kv_cache_explorer``.

Static figures (plotly ``go.Figure``, no ipywidgets) live in :mod:`attnviz.figures`.
"""

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
]
