"""The saturation explorer: drag d_k or the temperature and watch the softmax harden.

Scaled and unscaled attention are drawn side by side for the *same* queries and keys, so
the only difference a learner sees is the division by √d_k.
"""

from __future__ import annotations

import math

import ipywidgets as w

from .._validate import typed_whole_number
from ..explore import MASKS, saturation_state, saturation_states
from ._base import Explorer, heading, metrics_table, note
from .canvas import bars_panel, heatmap_panel, histogram_panel

__all__ = ["saturation_explorer", "SaturationExplorer", "saturation_verdict", "VERDICT_THRESHOLDS"]

SEED_MAX = 10**6                                 # the seed box takes 0 .. SEED_MAX
D_K_OPTIONS = [2**p for p in range(13)]          # 1 .. 4096
TEMPERATURE_RANGE = (0.05, 20.0)                 # the slider spans 10**-1.3 .. 10**1.3, 1.0 on its grid
SCALED_COLOUR, UNSCALED_COLOUR, RAW_COLOUR = "#3b75af", "#e4572e", "#999999"
# the verdict reads the numbers: mean largest weight per query, entropy against a flat row's
VERDICT_THRESHOLDS = {"saturated": 0.9, "saturating": 0.6, "flat": 0.95}


def _side(scaled: bool) -> str:
    return "scaled" if scaled else "unscaled"


def saturation_verdict(metrics: dict) -> str:
    """One sentence that follows the numbers (thresholds in :data:`VERDICT_THRESHOLDS`)."""
    top, grad = metrics["max_weight"], metrics["grad_norm"]
    if top >= VERDICT_THRESHOLDS["saturated"]:
        return (f"Saturated: the largest weight averages {top:.2f}, nearly one-hot rows, and the "
                f"softmax passes almost no gradient back (grad_norm {grad:.2g}).")
    if top >= VERDICT_THRESHOLDS["saturating"]:
        return (f"Saturating: the largest weight averages {top:.2f}, so most rows are close to "
                f"one-hot, and the gradient is shrinking (grad_norm {grad:.2g}).")
    if metrics["entropy"] >= VERDICT_THRESHOLDS["flat"] * metrics["uniform_entropy"]:
        return "Nearly flat: every allowed key gets about the same weight, a plain average."
    return (f"Soft: a blend of several keys (largest weight {top:.2f} on average), and the "
            f"gradient flows (grad_norm {grad:.2g}).")


class SaturationExplorer(Explorer):
    """Controls ``d_k``, ``temperature``, ``scaled``, ``mask``, ``seed``; panels ``scaled`` and
    ``unscaled`` (weight heatmaps), ``scores`` (histogram of raw scores with ±√d_k marked, and
    of the selected softmax input), ``row`` (the last query's weights, scaled and unscaled).

    ``metrics`` holds ``entropy``, ``max_weight``, ``grad_norm``, ``score_std`` (and
    ``uniform_entropy``, ``raw_score_std``) for the setting ``scaled`` selects;
    ``metrics_by_setting`` holds both sides, ``{'scaled': {...}, 'unscaled': {...}}``.
    """

    title = "Softmax saturation"
    kind = "saturation"

    def __init__(self, n=8, d_k=64, temperature=1.0, scaled=True, mask="none", seed=0):
        super().__init__()
        # Check the starting settings with the same function the controls feed.
        saturation_state(d_k, temperature, scaled, mask, seed, n)
        typed_whole_number(seed, "seed", 0, SEED_MAX)
        if d_k not in D_K_OPTIONS:
            raise ValueError(f"d_k must be a power of two from 1 to 4096 for this explorer, got {d_k}.")
        low, high = TEMPERATURE_RANGE
        if not low <= temperature <= high:
            raise ValueError(f"temperature must be between {low:.3g} and {high:.3g} here, got {temperature}.")
        self.n = n
        wide = {"description_width": "90px"}
        self.controls = {
            # a log slider over the powers of two: its readout takes a typed d_k (snapped to the
            # nearest power of two); a SelectionSlider's readout can be typed into and ignores it
            "d_k": w.FloatLogSlider(value=d_k, base=2, min=0, max=math.log2(D_K_OPTIONS[-1]), step=1,
                                    readout_format=".0f", description="d_k", style=wide,
                                    layout=w.Layout(width="330px")),
            "temperature": w.FloatLogSlider(value=temperature, base=10, min=-1.3, max=1.3, step=0.01,
                                            readout_format=".3g",
                                            description="temperature", style=wide,
                                            layout=w.Layout(width="330px")),
            "scaled": w.ToggleButtons(options=[("scaled (÷√d_k)", True), ("unscaled", False)],
                                      value=scaled, description="metrics for", style=wide),
            "mask": w.Dropdown(options=list(MASKS), value=mask, description="mask", style=wide,
                               layout=w.Layout(width="260px")),
            "seed": w.FloatText(value=seed, description="seed", style=wide, layout=w.Layout(width="200px")),
        }
        c = self.controls
        controls = w.HBox([w.VBox([c["d_k"], c["temperature"]]),
                           w.VBox([c["scaled"], w.HBox([c["mask"], c["seed"]],
                                                       layout=w.Layout(flex_flow="row wrap"))])],
                          layout=w.Layout(flex_flow="row wrap"))
        self._widget = self._box(controls, heading(
            self.title, "same queries and keys, with and without the division by √d_k"))
        self._watch()
        self.update()

    @property
    def metrics_by_setting(self) -> dict:
        self._flush()
        state = self._state
        if state is None:
            return {}
        return {side: dict(state[side]["metrics"]) for side in ("scaled", "unscaled")}

    # -- one change ------------------------------------------------------------------------------
    def _compute(self, values):
        seed = typed_whole_number(values["seed"], "seed", 0, SEED_MAX)    # typed: 2.5 is said, not read as 25
        args = dict(d_k=int(round(values["d_k"])), temperature=values["temperature"], mask=values["mask"],
                    seed=seed, n=self.n)
        pair = saturation_states(settings=(True, False), **args)      # one stack, the same vectors
        return {"scaled": pair[True], "unscaled": pair[False], "selected": bool(values["scaled"]), **args}

    def _layout(self, state):
        d_k, t = state["d_k"], state["temperature"]
        selected = _side(state["selected"])
        titles = {"scaled": "scaled: softmax(q·k / √d_k)", "unscaled": "unscaled: softmax(q·k)"}
        panels = {}
        for side in ("scaled", "unscaled"):
            mark = " ◀ metrics" if side == selected else ""
            panels[side] = heatmap_panel(side, state[side]["weights"].numpy(), state[side]["mask"],
                                         title=titles[side] + mark, room=260,
                                         what=f"{side} attention weights")
        chosen = state[selected]
        raw = chosen["raw_scores"].numpy().ravel()
        softmax_input = chosen["scores"].numpy().ravel()
        root = math.sqrt(d_k)
        low = min(float(raw.min()), float(softmax_input.min()), -root)
        high = max(float(raw.max()), float(softmax_input.max()), root)
        pad = 0.05 * (high - low or 1.0)
        divided = f", ÷ temperature {t:.3g}" if t != 1 else ""
        panels["scores"] = histogram_panel(
            "scores", {"raw scores q·k": (raw, RAW_COLOUR),
                       f"softmax input ({selected}{divided})":
                           (softmax_input, SCALED_COLOUR if selected == "scaled" else UNSCALED_COLOUR)},
            low=low - pad, high=high + pad,
            marks=[{"x": -root, "label": ""}, {"x": root, "label": f"±√d_k = ±{root:.3g}"}],
            title=(f"Scores: raw q·k spread ≈ √d_k = {root:.3g}; softmax input std "
                   f"{chosen['metrics']['score_std']:.3g}"),
            x_title="score", y_title="(query, key) pairs", width=340)
        # unscaled at temperature 1 feeds the softmax the raw scores: their bars hide the grey ones
        same = selected == "unscaled" and t == 1
        raw_text = "raw scores q·k (the same as unscaled: under its bars)" if same else "raw scores q·k"
        last = self.n - 1
        panels["row"] = bars_panel(
            "row", [str(j) for j in range(self.n)],
            {"scaled": (state["scaled"]["weights"][last].numpy(), SCALED_COLOUR),
             "unscaled": (state["unscaled"]["weights"][last].numpy(), UNSCALED_COLOUR)},
            title=f"Query {last} (the last): its weight on each key", x_title="key (attended to)",
            y_title="weight", ymax=1.0, width=340)
        sections = [
            {"title": f"Attention weights: d_k = {d_k}, temperature = {t:.3g}, mask = {state['mask']}",
             "panels": ["scaled", "unscaled"]},
            {"title": "", "panels": ["scores", "row"],
             "legend": [{"kind": "series", "colour": RAW_COLOUR, "text": raw_text},
                        {"kind": "series", "colour": SCALED_COLOUR, "text": "scaled"},
                        {"kind": "series", "colour": UNSCALED_COLOUR, "text": "unscaled"}]},
        ]
        return sections, panels

    def _metrics(self, state):
        return dict(state[_side(state["selected"])]["metrics"])

    def _describe(self, state):
        s, u = state["scaled"]["metrics"], state["unscaled"]["metrics"]
        rows = [
            ["entropy (nats)", s["entropy"], u["entropy"]],
            ["max_weight", s["max_weight"], u["max_weight"]],
            ["grad_norm", s["grad_norm"], u["grad_norm"]],
            ["softmax input std", s["score_std"], u["score_std"]],
        ]
        selected_column = 1 if state["selected"] else 2
        table = metrics_table(["mean over queries", "scaled", "unscaled"], rows, selected_column)
        chosen = state[_side(state["selected"])]["metrics"]
        th = VERDICT_THRESHOLDS
        return note(
            f"<b>{_side(state['selected'])}</b>, d_k = {state['d_k']}, temperature = "
            f"{state['temperature']:.3g}<br>{saturation_verdict(chosen)}") + table, note(
            f"<small>A flat row would have entropy {chosen['uniform_entropy']:.3g}; one-hot has 0. "
            "grad_norm is the size of the softmax's Jacobian: 0 when a row is one-hot. The softmax "
            "input is the scores after the division (if any) and the temperature. "
            f"The verdict: saturated when max_weight ≥ {th['saturated']}, saturating when ≥ "
            f"{th['saturating']}, nearly flat when the entropy is ≥ {th['flat']:.0%} of a flat row's, "
            "soft otherwise.</small>")


def saturation_explorer(n=8, d_k=64, temperature=1.0, scaled=True, mask="none", seed=0) -> SaturationExplorer:
    """Sliders for ``d_k`` (1..4096), ``temperature`` (0.05..20, log), ``scaled``, ``mask``, ``seed``.

    ``n`` random queries and keys with ``d_k`` standard-normal features; the weights are shown
    scaled (÷√d_k) and unscaled side by side. ``.metrics`` describes the side ``scaled``
    selects: ``entropy``, ``max_weight``, ``grad_norm``, ``score_std`` (see
    :func:`attnviz.explore.saturation_state`). Leave the returned object as a cell's last
    expression to display it.
    """
    return SaturationExplorer(n=n, d_k=d_k, temperature=temperature, scaled=scaled, mask=mask, seed=seed)
