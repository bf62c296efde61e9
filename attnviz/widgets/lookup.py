"""The soft dictionary lookup: move a query among five keys and watch the values blend."""

from __future__ import annotations

import ipywidgets as w
import numpy as np

from ..explore import KEY_ANGLES_DEG, LOOKUP_WORDS, lookup_state
from ._base import Explorer, heading, metrics_table, note
from .canvas import bars_panel, points_panel

__all__ = ["lookup_explorer", "LookupExplorer", "lookup_verdict"]

ANY_ANGLE = "(use the angle slider)"
KEY_COLOUR, QUERY_COLOUR, VALUE_COLOUR, OUTPUT_COLOUR = "#3b75af", "#e4572e", "#21918c", "#e4002b"
TIE = 1e-9           # two weights closer than this are a tie


def lookup_verdict(metrics: dict, weights) -> str:
    """The lookup in words: an exact lookup, the plain average, a tie, or a blend leaning one way."""
    weights = np.asarray(weights, dtype=np.float64)
    order = np.argsort(-weights, kind="stable")
    first, second = order[0], order[1]
    if metrics["max_weight"] > 0.95:
        return (f"Nearly an exact lookup: {metrics['max_weight']:.3f} of the weight is on "
                f"'{LOOKUP_WORDS[first]}', and the answer sits almost on its value.")
    if metrics["distance_to_average"] < 0.1:
        return "Nearly the plain average: every value gets about the same weight."
    if weights[first] - weights[second] < TIE:
        return (f"A tie: '{LOOKUP_WORDS[first]}' and '{LOOKUP_WORDS[second]}' get the same weight "
                f"({weights[first]:.3f} each), so the answer is pulled equally towards their two values.")
    return f"A blend, leaning towards '{LOOKUP_WORDS[first]}' ({weights[first]:.3f} of the weight)."


class LookupExplorer(Explorer):
    """Controls ``query_angle`` (degrees), ``word`` (aim the query exactly at one word's key),
    ``temperature``; panels ``keys`` (keys and the query), ``values`` (values, sized by weight,
    and the blended answer) and ``weights`` (bars, one per word). ``metrics``: ``entropy``,
    ``max_weight``, ``best_word``, ``distance_to_best``, ``distance_to_average``.
    """

    title = "Attention as a soft dictionary lookup"
    kind = "lookup"
    named_by = ("query_angle", "temperature")     # the word only moves the angle: the angle names it

    def __init__(self, query_angle=30.0, temperature=1.0):
        super().__init__()
        lookup_state(query_angle, temperature)
        # the sliders' ranges: a value outside one would be clamped to its end without a word
        if not 0 <= query_angle <= 360:
            raise ValueError(f"query_angle must be between 0 and 360 degrees here, got {query_angle}.")
        if not 0.01 <= temperature <= 100:
            raise ValueError(f"temperature must be between 0.01 and 100 here, got {temperature}.")
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
        c = self.controls
        controls = w.HBox([w.VBox([c["query_angle"], c["temperature"]]), c["word"]],
                          layout=w.Layout(flex_flow="row wrap"))
        self._widget = self._box(controls, heading(
            self.title, "the query is compared with every key; the answer is a blend of every value"))
        # Picking a word moves the angle slider to that key; moving the slider clears the word.
        c["word"].observe(self._on_word, names="value")
        c["query_angle"].observe(self._on_angle, names="value")
        c["temperature"].observe(self._on_change, names="value")
        self._setting_angle = False
        self._link()
        self.update()

    def _on_word(self, change):
        if change["new"] == ANY_ANGLE:
            return
        angle = KEY_ANGLES_DEG[LOOKUP_WORDS.index(change["new"])]
        if self.controls["query_angle"].value == angle:
            self._on_change()
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
        self._on_change(change)

    # -- one change ------------------------------------------------------------------------------
    def _compute(self, values):
        state = lookup_state(values["query_angle"], values["temperature"])
        state["temperature"] = float(values["temperature"])
        return state

    def _layout(self, state):
        keys, values = state["keys"].numpy(), state["values"].numpy()
        query, weights, output = state["query"].numpy(), state["weights"].numpy(), state["output"].numpy()
        average = state["average"].numpy()
        t = state["temperature"]
        key_shapes = [{"type": "circle", "x": 0, "y": 0, "radius": 1, "colour": "fg", "width": 1,
                       "faint": True}]
        for word, (x, y) in zip(LOOKUP_WORDS, keys, strict=True):
            x, y = round(float(x), 4), round(float(y), 4)
            key_shapes.append({"type": "line", "x": [0, x], "y": [0, y], "colour": KEY_COLOUR})
            key_shapes.append({"type": "marker", "x": x, "y": y, "r": 5, "colour": KEY_COLOUR,
                               "label": word, "hover": f"key of '{word}'\n({x:.3f}, {y:.3f})"})
        query = query.round(4)
        key_shapes.append({"type": "line", "x": [0, float(query[0])], "y": [0, float(query[1])],
                           "colour": QUERY_COLOUR, "width": 4, "arrow": True})
        key_shapes.append({"type": "marker", "x": float(query[0]), "y": float(query[1]), "r": 3,
                           "colour": QUERY_COLOUR,
                           "hover": f"query ({query[0]:.3f}, {query[1]:.3f})"})
        value_shapes = []
        for word, (x, y), weight in zip(LOOKUP_WORDS, values, weights, strict=True):
            value_shapes.append({"type": "marker", "x": float(x), "y": float(y),
                                 "r": round(4 + 20 * float(weight), 2),
                                 "colour": VALUE_COLOUR, "label": word,
                                 "hover": f"value of '{word}' ({x:.3f}, {y:.3f})\nweight {weight:.6g}"})
        value_shapes.append({"type": "marker", "x": float(average[0]), "y": float(average[1]), "r": 8,
                             "colour": "fg", "shape": "ring",
                             "hover": f"plain average ({average[0]:.3f}, {average[1]:.3f})"})
        answer = output.round(4)
        value_shapes.append({"type": "marker", "x": float(answer[0]), "y": float(answer[1]), "r": 10,
                             "colour": OUTPUT_COLOUR, "shape": "star",
                             "hover": f"answer: Σ weight · value\n({output[0]:.3f}, {output[1]:.3f})"})
        table = {"header": ["word", "key", "value", "weight"],
                 "rows": [[word, f"({k[0]:.3f}, {k[1]:.3f})", f"({v[0]:.3f}, {v[1]:.3f})", f"{wt:.4f}"]
                          for word, k, v, wt in zip(LOOKUP_WORDS, keys, values, weights, strict=True)]
                 + [["answer", "", f"({output[0]:.3f}, {output[1]:.3f})", ""],
                    ["query", f"({query[0]:.3f}, {query[1]:.3f})", "", ""]]}
        panels = {
            "keys": points_panel(
                "keys", key_shapes, x_range=(-1.4, 1.4), y_range=(-1.4, 1.4), width=260, height=260,
                title="keys (what a word advertises) and the query", x_title="key feature 1",
                y_title="key feature 2", table=table,
                description=(f"Keys of {len(LOOKUP_WORDS)} words on the unit circle; the query points at "
                             f"{state['query_angle']:.0f} degrees.")),
            "values": points_panel(
                "values", value_shapes, x_range=(-0.5, 5.5), y_range=(-0.5, 4.5), width=300, height=250,
                title="values (what a word gives), sized by weight, and the answer ★",
                x_title="value feature 1", y_title="value feature 2", table=table,
                description=(f"Values of the words; the answer (a star) is at ({output[0]:.2f}, "
                             f"{output[1]:.2f}), the plain average (a ring) at ({average[0]:.2f}, "
                             f"{average[1]:.2f}).")),
            "weights": bars_panel(
                "weights", LOOKUP_WORDS, {"weight": (weights, KEY_COLOUR)},
                title=f"Weight on each key (softmax of key · query / {t:.3g})", x_title="key (attended to)",
                y_title="weight", ymax=1.1, text=[[f"{v:.2f}" for v in weights]], width=360, height=200),
        }
        legend = [{"kind": "series", "colour": KEY_COLOUR, "text": "keys"},
                  {"kind": "series", "colour": QUERY_COLOUR, "text": "query"},
                  {"kind": "series", "colour": VALUE_COLOUR, "text": "values (size = weight)"},
                  {"kind": "series", "colour": OUTPUT_COLOUR, "text": "★ answer: Σ weight · value"},
                  {"kind": "ring", "text": "plain average"}]
        sections = [{"title": f"Query at {state['query_angle']:.0f}°, temperature {t:.3g}",
                     "panels": ["keys", "values"], "legend": legend},
                    {"title": "", "panels": ["weights"]}]
        return sections, panels

    def _describe(self, state):
        m = state["metrics"]
        verdict = lookup_verdict(m, state["weights"].numpy())
        rows = [["entropy (nats)", m["entropy"]], ["largest weight", m["max_weight"]],
                ["distance: answer to best value", m["distance_to_best"]],
                ["distance: answer to average", m["distance_to_average"]]]
        return (note(f"temperature {state['temperature']:.3g}<br>{verdict}")
                + metrics_table(["", "at this setting"], rows)
                + note("<small>Lower the temperature: one key takes all the weight. "
                       "Raise it: the answer drifts to the plain average (open circle).</small>"))


def lookup_explorer(query_angle=30.0, temperature=1.0) -> LookupExplorer:
    """Five words with 2-D keys and values; move the query (angle or word) and the temperature.

    See :func:`attnviz.explore.lookup_state` for the numbers. As the temperature goes to 0 the
    answer becomes the best key's value (an exact lookup); as it grows, the plain average.
    """
    return LookupExplorer(query_angle=query_angle, temperature=temperature)
