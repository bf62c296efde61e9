"""Interactive explorers and plotly figures for the course (the only part of attnviz using plotly/ipywidgets).

Figures (static ``go.Figure``; leave one as a cell's last expression):
    ``attention_heatmap``, ``scores_heatmap``, ``line_chart``, ``bar_chart`` in :mod:`.figures`.
"""

from .figures import attention_heatmap, bar_chart, line_chart, scores_heatmap

__all__ = ["attention_heatmap", "scores_heatmap", "line_chart", "bar_chart"]
