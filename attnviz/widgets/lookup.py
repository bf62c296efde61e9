"""The soft dictionary lookup: move a query among five keys and watch the values blend."""

from __future__ import annotations

import math

import ipywidgets as w
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..explore import _KEY_ANGLES_DEG, LOOKUP_WORDS, lookup_state
from ._base import Explorer, metrics_table, note
from .figures import send_update, style

__all__ = ["lookup_explorer", "LookupExplorer"]

ANY_ANGLE = "(use the angle slider)"
KEY_COLOUR, QUERY_COLOUR, VALUE_COLOUR, OUTPUT_COLOUR = "#3b528b", "#e4572e", "#21918c", "#e4002b"


class LookupExplorer(Explorer):
    """Controls ``query_angle`` (degrees), ``word`` (aim the query exactly at one word's key),
    ``temperature``; figures ``space`` (keys and query | values and the blended output) and
    ``weights`` (bars, one per word). ``metrics``: ``entropy``, ``max_weight``, ``best_word``,
    ``distance_to_best``, ``distance_to_average``.
    """

    title = "Attention as a soft dictionary lookup"

    def __init__(self, query_angle=30.0, temperature=1.0):
        super().__init__()
        first = lookup_state(query_angle, temperature)
        wide = {"description_width": "90px"}
        self.controls = {
            "query_angle": w.FloatSlider(value=query_angle, min=0, max=360, step=1, description="query angle",
                                         readout_format=".0f", style=wide, layout=w.Layout(width="360px")),
            "word": w.Dropdown(options=[ANY_ANGLE, *LOOKUP_WORDS], value=ANY_ANGLE,
                               description="or aim at", style=wide, layout=w.Layout(width="300px")),
            "temperature": w.FloatLogSlider(value=temperature, base=10, min=-2, max=2, step=0.01,
                                            readout_format=".3g", description="temperature", style=wide,
                                            layout=w.Layout(width="360px")),
        }
        self.figures = {"space": self._space_figure(first), "weights": self._weights_figure()}
        self._sent = {name: {} for name in self.figures}
        c = self.controls
        controls = w.HBox([w.VBox([c["query_angle"], c["temperature"]]), c["word"]],
                          layout=w.Layout(flex_flow="row wrap"))
        heading = w.HTML(f"<b style='font-size:15px'>{self.title}</b>: the query is compared with every "
                         "key; the answer is a blend of every value")
        self._widget = w.VBox([heading, controls, self._problem,
                               w.HBox([self.figures["space"], self._text],
                                      layout=w.Layout(flex_flow="row wrap", align_items="flex-start")),
                               self.figures["weights"]])
        # Picking a word moves the angle slider to that key; moving the slider clears the word.
        c["word"].observe(self._on_word, names="value")
        c["query_angle"].observe(self._on_angle, names="value")
        c["temperature"].observe(self._on_change, names="value")
        self._setting_angle = False
        self.update()

    def _on_word(self, change):
        if change["new"] == ANY_ANGLE:
            return
        angle = _KEY_ANGLES_DEG[LOOKUP_WORDS.index(change["new"])]
        if self.controls["query_angle"].value == angle:
            self.update()
            return
        self._setting_angle = True
        try:
            self.controls["query_angle"].value = angle          # one change -> one update
        finally:
            self._setting_angle = False

    def _on_angle(self, change):
        if not self._setting_angle and self.controls["word"].value != ANY_ANGLE:
            self.controls["word"].unobserve(self._on_word, names="value")
            self.controls["word"].value = ANY_ANGLE
            self.controls["word"].observe(self._on_word, names="value")
        self.update()

    # -- figures ---------------------------------------------------------------------------------
    def _space_figure(self, state):
        fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                            subplot_titles=("keys (what a word advertises) and query",
                                            "values (what a word gives) and answer"))
        keys, values = state["keys"].numpy(), state["values"].numpy()
        circle = np.linspace(0, 2 * math.pi, 121)
        fig.add_trace(go.Scatter(x=np.cos(circle), y=np.sin(circle), mode="lines", hoverinfo="skip",
                                 line={"color": "#dddddd"}, showlegend=False), row=1, col=1)
        for x, y in keys:
            fig.add_trace(go.Scatter(x=[0, x], y=[0, y], mode="lines", line={"color": KEY_COLOUR, "width": 2},
                                     hoverinfo="skip", showlegend=False), row=1, col=1)
        fig.add_trace(go.Scatter(x=keys[:, 0], y=keys[:, 1], mode="markers+text", text=list(LOOKUP_WORDS),
                                 textposition="top center", name="keys",
                                 marker={"color": KEY_COLOUR, "size": 9},
                                 hovertemplate="key of '%{text}'<br>(%{x:.3f}, %{y:.3f})<extra></extra>"),
                      row=1, col=1)
        self._query_trace = len(fig.data)
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 0], mode="lines+markers", name="query",
                                 line={"color": QUERY_COLOUR, "width": 4},
                                 marker={"symbol": "arrow", "angleref": "previous", "size": [0, 16]},
                                 hovertemplate="query (%{x:.3f}, %{y:.3f})<extra></extra>"), row=1, col=1)
        self._values_trace = len(fig.data)
        fig.add_trace(go.Scatter(x=values[:, 0], y=values[:, 1], mode="markers+text", text=list(LOOKUP_WORDS),
                                 textposition="bottom center", name="values (size = weight)",
                                 marker={"color": VALUE_COLOUR, "size": 10, "opacity": 0.8},
                                 hovertemplate="value of '%{text}'<br>(%{x:.3f}, %{y:.3f})<extra></extra>"),
                      row=1, col=2)
        average = values.mean(axis=0)
        fig.add_trace(go.Scatter(x=[average[0]], y=[average[1]], mode="markers", name="plain average",
                                 marker={"symbol": "circle-open", "size": 14, "color": "#555555",
                                         "line": {"width": 2}},
                                 hovertemplate="plain average (%{x:.3f}, %{y:.3f})<extra></extra>"),
                      row=1, col=2)
        self._output_trace = len(fig.data)
        fig.add_trace(go.Scatter(x=[0], y=[0], mode="markers", name="answer: Σ weight · value",
                                 marker={"symbol": "star", "size": 18, "color": OUTPUT_COLOUR},
                                 hovertemplate="answer (%{x:.3f}, %{y:.3f})<extra></extra>"), row=1, col=2)
        fig.update_xaxes(range=[-1.4, 1.4], zeroline=True, row=1, col=1, title_text="key feature 1")
        fig.update_yaxes(range=[-1.4, 1.4], zeroline=True, row=1, col=1, title_text="key feature 2",
                         scaleanchor="x", scaleratio=1)
        fig.update_xaxes(range=[-0.5, 5.5], row=1, col=2, title_text="value feature 1")
        fig.update_yaxes(range=[-0.5, 4.5], row=1, col=2, title_text="value feature 2")
        style(fig, "", height=440)
        fig.update_layout(width=640, legend={"y": -0.18}, margin={"l": 60, "r": 20})
        fig.update_annotations(font_size=13)
        return go.FigureWidget(fig)

    def _weights_figure(self):
        fig = go.Figure(go.Bar(x=list(range(len(LOOKUP_WORDS))), y=[0] * len(LOOKUP_WORDS),
                               customdata=list(LOOKUP_WORDS), marker_color=KEY_COLOUR,
                               text=[""] * len(LOOKUP_WORDS), textposition="outside",
                               hovertemplate="'%{customdata}'<br>weight %{y:.6g}<extra></extra>"))
        fig.update_xaxes(title_text="key (attended to)", tickmode="array",
                         tickvals=list(range(len(LOOKUP_WORDS))), ticktext=list(LOOKUP_WORDS))
        fig.update_yaxes(title_text="weight", range=[0, 1.1])
        style(fig, "", height=320)
        fig.update_layout(width=560)
        return go.FigureWidget(fig)

    # -- one change ------------------------------------------------------------------------------
    def _compute(self, values):
        return lookup_state(values["query_angle"], values["temperature"])

    def _draw(self, state):
        query, weights, output = state["query"].numpy(), state["weights"].numpy(), state["output"].numpy()
        t = self.controls["temperature"].value
        send_update(self.figures["space"], cache=self._sent["space"], traces={
            self._query_trace: {"x": np.array([0.0, query[0]]), "y": np.array([0.0, query[1]])},
            self._values_trace: {"marker.size": 8 + 40 * weights},
            self._output_trace: {"x": output[:1].copy(), "y": output[1:].copy()},
        }, layout={"title.text": f"Query at {state['query_angle']:.0f}°, temperature {t:.3g}"})
        send_update(self.figures["weights"], cache=self._sent["weights"], traces={
            0: {"y": weights, "text": [f"{value:.2f}" for value in weights]},
        }, layout={"title.text": f"Weight on each key (softmax of key · query / {t:.3g})"})

    def _describe(self, state):
        m = state["metrics"]
        t = self.controls["temperature"].value
        if m["max_weight"] > 0.95:
            verdict = (f"Nearly an exact lookup: {m['max_weight']:.3f} of the weight is on "
                       f"'{m['best_word']}', and the answer sits almost on its value.")
        elif m["distance_to_average"] < 0.1:
            verdict = "Nearly the plain average: every value gets about the same weight."
        else:
            verdict = f"A blend, leaning towards '{m['best_word']}'."
        rows = [["entropy (nats)", m["entropy"]], ["max_weight", m["max_weight"]],
                ["answer to best value", m["distance_to_best"]],
                ["answer to average", m["distance_to_average"]]]
        return (note(f"temperature {t:.3g}<br>{verdict}") + metrics_table(["", "now"], rows)
                + note("<small>Lower the temperature: one key takes all the weight. "
                       "Raise it: the answer drifts to the plain average (open circle).</small>"))


def lookup_explorer(query_angle=30.0, temperature=1.0) -> LookupExplorer:
    """Five words with 2-D keys and values; move the query (angle or word) and the temperature.

    See :func:`attnviz.explore.lookup_state` for the numbers. As the temperature goes to 0 the
    answer becomes the best key's value (an exact lookup); as it grows, the plain average.
    """
    return LookupExplorer(query_angle=query_angle, temperature=temperature)
