"""The saturation explorer: drag d_k or the temperature and watch the softmax harden.

Scaled and unscaled attention are drawn side by side for the *same* queries and keys, so
the only difference a learner sees is the division by √d_k.
"""

from __future__ import annotations

import math

import ipywidgets as w
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..explore import MASKS, saturation_state, saturation_states
from ._base import Explorer, metrics_table, note
from .figures import add_heatmap, add_heatmap_legend, heatmap_changes, send_update, style

__all__ = ["saturation_explorer", "SaturationExplorer"]

D_K_OPTIONS = [2**p for p in range(13)]          # 1 .. 4096
TEMPERATURE_RANGE = (0.05, 20.0)                 # the slider spans 10**-1.3 .. 10**1.3, 1.0 on its grid
SCALED_COLOUR, UNSCALED_COLOUR = "#3b528b", "#e4572e"
BIN_HOVER = "score %{x}<br>%{y} (query, key) pairs<extra></extra>"


def _bold(text: str, bold: bool) -> str:
    return f"<b>{text} (metrics)</b>" if bold else text


def _side(scaled: bool) -> str:
    return "scaled" if scaled else "unscaled"


class SaturationExplorer(Explorer):
    """Controls ``d_k``, ``temperature``, ``scaled``, ``mask``, ``seed``; figures ``weights``
    (scaled | unscaled heatmaps), ``scores`` (histogram of raw scores with ±√d_k marked, and of
    the selected softmax input), ``row`` (the last query's weights, scaled and unscaled).

    ``metrics`` holds ``entropy``, ``max_weight``, ``grad_norm``, ``score_std`` (and
    ``uniform_entropy``, ``raw_score_std``) for the setting ``scaled`` selects;
    ``metrics_by_setting`` holds both sides, ``{'scaled': {...}, 'unscaled': {...}}``.
    """

    title = "Softmax saturation"

    def __init__(self, n=8, d_k=64, temperature=1.0, scaled=True, mask="none", seed=0):
        super().__init__()
        # Check the starting settings with the same function the controls feed.
        saturation_state(d_k, temperature, scaled, mask, seed, n)
        if d_k not in D_K_OPTIONS:
            raise ValueError(f"d_k must be a power of two from 1 to 4096 for this explorer, got {d_k}.")
        low, high = TEMPERATURE_RANGE
        if not low <= temperature <= high:
            raise ValueError(f"temperature must be between {low:.3g} and {high:.3g} here, got {temperature}.")
        self.n = n
        self.metrics_by_setting = {}
        wide = {"description_width": "90px"}
        self.controls = {
            "d_k": w.SelectionSlider(options=D_K_OPTIONS, value=d_k, description="d_k",
                                     style=wide, layout=w.Layout(width="330px")),
            "temperature": w.FloatLogSlider(value=temperature, base=10, min=-1.3, max=1.3, step=0.01,
                                            readout_format=".3g",
                                            description="temperature", style=wide,
                                            layout=w.Layout(width="330px")),
            "scaled": w.ToggleButtons(options=[("scaled (÷√d_k)", True), ("unscaled", False)],
                                      value=scaled, description="metrics for", style=wide),
            "mask": w.Dropdown(options=list(MASKS), value=mask, description="mask", style=wide,
                               layout=w.Layout(width="260px")),
            "seed": w.BoundedIntText(value=seed, min=0, max=10**6, description="seed", style=wide,
                                     layout=w.Layout(width="200px")),
        }
        first = saturation_state(d_k, temperature, True, mask, seed, n)
        self.figures = {
            "weights": self._weights_figure(first),
            "scores": self._scores_figure(),
            "row": self._row_figure(),
        }
        self._sent = {name: {} for name in self.figures}
        self._build_layout()
        self._watch()
        self.update()

    # -- figures ---------------------------------------------------------------------------------
    def _weights_figure(self, state):
        fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                            subplot_titles=("scaled: softmax(q·k / √d_k)", "unscaled: softmax(q·k)"))
        self._panel = {}
        for col, side in ((1, "scaled"), (2, "unscaled")):
            self._panel[side] = add_heatmap(fig, state["weights"], mask=state["mask"], row=1, col=col,
                                            showscale=(col == 2))
        self._legend = add_heatmap_legend(fig)
        style(fig, "", height=430)
        fig.update_layout(width=640, margin={"t": 90, "r": 20, "l": 60})
        return go.FigureWidget(fig)

    def _scores_figure(self):
        fig = go.Figure()
        fig.add_trace(go.Histogram(x=[], name="raw scores q·k", marker_color="#999999", opacity=0.65,
                                   nbinsx=60, bingroup="scores", hovertemplate=BIN_HOVER))
        fig.add_trace(go.Histogram(x=[], name="softmax input", marker_color=SCALED_COLOUR, opacity=0.65,
                                   nbinsx=60, bingroup="scores", hovertemplate=BIN_HOVER))
        for _ in range(2):
            fig.add_shape(type="line", x0=0, x1=0, y0=0, y1=1, yref="paper",
                          line={"color": "#222222", "dash": "dash", "width": 1.5})
        fig.add_annotation(x=0, y=1.0, yref="paper", text="", showarrow=False, yanchor="bottom")
        fig.update_layout(barmode="overlay")
        fig.update_xaxes(title_text="score")
        fig.update_yaxes(title_text="how many (query, key) pairs")
        style(fig, "", height=380)
        fig.update_layout(width=470, margin={"r": 10})
        return go.FigureWidget(fig)

    def _row_figure(self):
        fig = go.Figure()
        for side, colour in (("scaled", SCALED_COLOUR), ("unscaled", UNSCALED_COLOUR)):
            fig.add_trace(go.Bar(x=list(range(self.n)), y=[0] * self.n, name=side, marker_color=colour,
                                 hovertemplate=f"{side}<br>key %{{x}}<br>weight %{{y:.6g}}<extra></extra>"))
        fig.update_layout(barmode="group")
        fig.update_xaxes(title_text="key (attended to)")
        fig.update_yaxes(title_text="weight", range=[0, 1.02])
        style(fig, "", height=380)
        fig.update_layout(width=470, margin={"r": 10})
        return go.FigureWidget(fig)

    def _build_layout(self):
        c = self.controls
        controls = w.HBox([w.VBox([c["d_k"], c["temperature"]]),
                           w.VBox([c["scaled"], w.HBox([c["mask"], c["seed"]])])],
                          layout=w.Layout(flex_flow="row wrap"))
        top = w.HBox([self.figures["weights"], self._text],
                     layout=w.Layout(flex_flow="row wrap", align_items="flex-start"))
        bottom = w.HBox([self.figures["scores"], self.figures["row"]],
                        layout=w.Layout(flex_flow="row wrap"))
        heading = w.HTML(f"<b style='font-size:15px'>{self.title}</b>: same queries and keys, "
                         "with and without the division by √d_k")
        self._widget = w.VBox([heading, controls, self._problem, top, bottom])

    # -- one change ------------------------------------------------------------------------------
    def _compute(self, values):
        args = dict(d_k=values["d_k"], temperature=values["temperature"], mask=values["mask"],
                    seed=values["seed"], n=self.n)
        pair = saturation_states(settings=(True, False), **args)      # one stack, the same vectors
        return {"scaled": pair[True], "unscaled": pair[False], "selected": bool(values["scaled"]), **args}

    def _draw(self, state):
        d_k, t = state["d_k"], state["temperature"]
        selected = _side(state["selected"])

        # weights: both heatmap panels, their subplot titles and the legend, one update
        traces, layers = {}, {}
        for side in ("scaled", "unscaled"):
            changes, layers[side] = heatmap_changes(self._panel[side], state[side]["weights"],
                                                    state[side]["mask"])
            traces.update(changes)
        traces[self._legend[0]] = {"showlegend": layers["scaled"]["any_masked"]}
        traces[self._legend[1]] = {"showlegend": False}      # no NaN and no leak here: -inf masking
        traces[self._legend[2]] = {"showlegend": False}
        titles = {"scaled": "scaled: softmax(q·k / √d_k)", "unscaled": "unscaled: softmax(q·k)"}
        send_update(self.figures["weights"], traces, cache=self._sent["weights"], layout={
            "title.text": f"Attention weights: d_k = {d_k}, temperature = {t:.3g}, mask = {state['mask']}",
            "annotations[0].text": _bold(titles["scaled"], selected == "scaled"),
            "annotations[1].text": _bold(titles["unscaled"], selected == "unscaled"),
        })

        # scores: raw q·k and the selected softmax input, ±√d_k marked
        chosen = state[selected]
        raw = chosen["raw_scores"].numpy().ravel()
        softmax_input = chosen["scores"].numpy().ravel()
        root = math.sqrt(d_k)
        low = min(float(raw.min()), float(softmax_input.min()), -root)
        high = max(float(raw.max()), float(softmax_input.max()), root)
        pad = 0.05 * (high - low or 1.0)
        divided = f", ÷ temperature {t:.3g}" if t != 1 else ""
        send_update(self.figures["scores"], cache=self._sent["scores"], traces={
            0: {"x": raw},
            1: {"x": softmax_input, "name": f"softmax input ({selected}{divided})",
                "marker.color": SCALED_COLOUR if selected == "scaled" else UNSCALED_COLOUR},
        }, layout={
            "shapes[0].x0": -root, "shapes[0].x1": -root, "shapes[1].x0": root, "shapes[1].x1": root,
            "annotations[0].x": root, "annotations[0].text": f"±√d_k = ±{root:.3g}",
            "xaxis.range": [low - pad, high + pad],
            "title.text": (f"Scores: raw q·k spread ≈ √d_k = {root:.3g}; "
                           f"softmax input std {chosen['metrics']['score_std']:.3g}"),
        })

        # row: the last query's weights, scaled and unscaled
        last = self.n - 1
        send_update(self.figures["row"], cache=self._sent["row"], traces={
            index: {"y": state[side]["weights"][last].numpy().copy()}
            for index, side in enumerate(("scaled", "unscaled"))
        }, layout={"title.text": f"Query {last} (the last): its weight on each key"})

    def _metrics(self, state):
        self.metrics_by_setting = {side: dict(state[side]["metrics"]) for side in ("scaled", "unscaled")}
        return dict(self.metrics_by_setting[_side(state["selected"])])

    def _describe(self, state):
        s, u = state["scaled"]["metrics"], state["unscaled"]["metrics"]
        rows = [
            ["entropy (nats)", s["entropy"], u["entropy"]],
            ["max_weight", s["max_weight"], u["max_weight"]],
            ["grad_norm", s["grad_norm"], u["grad_norm"]],
            ["score_std", s["score_std"], u["score_std"]],
        ]
        selected_column = 1 if state["selected"] else 2
        table = metrics_table(["mean over queries", "scaled", "unscaled"], rows, selected_column)
        chosen = state[_side(state["selected"])]["metrics"]
        if chosen["max_weight"] > 0.9:
            verdict = ("Saturated: each query puts nearly all its weight on one key, a hard pick, and "
                       "the softmax passes almost no gradient back.")
        elif chosen["entropy"] > 0.95 * chosen["uniform_entropy"]:
            verdict = "Nearly flat: every allowed key gets about the same weight, a plain average."
        else:
            verdict = "Soft: a blend of several keys, and the gradient flows."
        return note(
            f"<b>{_side(state['selected'])}</b>, d_k = {state['d_k']}, temperature = "
            f"{state['temperature']:.3g}<br>{verdict}") + table + note(
            f"<small>A flat row would have entropy {chosen['uniform_entropy']:.3g}; one-hot has 0. "
            "grad_norm is the size of the softmax's Jacobian: 0 when a row is one-hot.</small>")


def saturation_explorer(n=8, d_k=64, temperature=1.0, scaled=True, mask="none", seed=0) -> SaturationExplorer:
    """Sliders for ``d_k`` (1..4096), ``temperature`` (0.05..20, log), ``scaled``, ``mask``, ``seed``.

    ``n`` random queries and keys with ``d_k`` standard-normal features; the weights are shown
    scaled (÷√d_k) and unscaled side by side. ``.metrics`` describes the side ``scaled``
    selects: ``entropy``, ``max_weight``, ``grad_norm``, ``score_std`` (see
    :func:`attnviz.explore.saturation_state`). Leave the returned object as a cell's last
    expression to display it.
    """
    return SaturationExplorer(n=n, d_k=d_k, temperature=temperature, scaled=scaled, mask=mask, seed=seed)
