"""The explorers' one front-end: panels (numpy arrays + words) painted on a canvas by ``canvas.js``.

A :class:`Panel` is everything one picture shows, computed here so tests can read it without a
browser: the values, the masked / NaN / leak layers of a heatmap, labels, axis titles, the
title, and ``description`` (the text alternative a screen reader reads). :class:`Canvas` is
the anywidget that sends a list of panels to the browser in one message: heatmap arrays as
binary buffers (float32 values, bfloat16 for big heatmaps, uint8 flags), the rest as a few hundred
bytes of JSON.

Panel kinds and what ``values`` holds:

* ``heatmap``: ``(n_q, n_k)``; row i is query i (drawn at the top for i = 0), column j key j.
  ``masked``, ``nan``, ``leak``: bool ``(n_q, n_k)``. A masked cell is drawn grey, a NaN cell
  pink (and says "NaN"), a leak (masked, yet weight > 0) keeps its colour and gets a red ×.
* ``bars``: ``(n_series, n_bars)``, one bar per label and series.
* ``histogram``: ``(n_series, n_bins)`` counts over the bin ``edges`` (``n_bins + 1``).
* ``points``: no array; ``options["shapes"]`` lists lines and markers in data coordinates.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import pathlib
from dataclasses import dataclass, field

import anywidget
import numpy as np
import traitlets

from ._save import file_stem

__all__ = ["Panel", "Canvas", "heatmap_panel", "bars_panel", "histogram_panel", "points_panel",
           "KEY_TITLE", "QUERY_TITLE", "LEGEND"]

KEY_TITLE = "key (attended to)"
QUERY_TITLE = "query (asking)"
TEXT_UP_TO = 12          # write each cell's value inside heatmaps up to this many positions
# Heatmaps with more cells than this (over 32 x 32: cells a few pixels wide, no values written) travel
# as bfloat16, half of float32's bytes; their hover and numbers table show 3 significant digits.
BFLOAT16_ABOVE = 32 * 32
# heatmap settings a scene leaves out when a panel has them (keeps each update small); the canvas
# sends them to the browser once (`Canvas.defaults`), which fills them back in before painting
HEATMAP_DEFAULTS = {"x_title": KEY_TITLE, "y_title": QUERY_TITLE, "value_name": "weight", "scale": "weights",
                    "masked_hover": "masked: may not attend", "small": False, "bar": True, "text": False,
                    "vmin": 0.0, "vmax": 1.0}
LEGEND = {               # what the grey, pink and red-cross cells mean, in words
    "masked": "grey: masked (may not attend)",
    "nan": "pink: NaN weight",
    "leak": "red frame and ×: masked, yet weight > 0 (leak)",
}


@dataclass
class Panel:
    """One picture of an explorer; ``to_scene()`` is what travels to the browser."""

    name: str
    kind: str
    title: str
    values: np.ndarray
    description: str = ""
    masked: np.ndarray | None = None
    nan: np.ndarray | None = None
    leak: np.ndarray | None = None
    x_labels: list | None = None
    y_labels: list | None = None
    x_title: str = ""
    y_title: str = ""
    options: dict = field(default_factory=dict)

    def to_scene(self) -> dict:
        spec = {"kind": self.kind, "title": self.title, "description": self.description,
                "x_labels": self.x_labels, "y_labels": self.y_labels,
                "x_title": self.x_title, "y_title": self.y_title, **self.options}
        defaults = HEATMAP_DEFAULTS if self.kind == "heatmap" else {}
        spec = {key: value for key, value in spec.items()       # absent means the front-end's default
                if value is not None and not (isinstance(value, str) and value == "")
                and not (key in defaults and value == defaults[key] and type(value) is type(defaults[key]))}
        counts = self.kind == "histogram" and self.values.size and self.values.max() < 2 ** 16
        if counts:                              # whole counts: two bytes each
            spec["values"] = np.ascontiguousarray(self.values, dtype=np.uint16).tobytes()
            spec["dtype"] = "uint16"
        elif self.kind == "heatmap" and self.values.size > BFLOAT16_ABOVE:
            spec["values"], spec["dtype"] = bfloat16_bytes(self.values), "bfloat16"
        else:
            with np.errstate(over="ignore"):   # a float64 fill beyond float32's range is sent as -inf
                spec["values"] = np.ascontiguousarray(self.values, dtype=np.float32).tobytes()
        if self.kind == "heatmap":
            flags = self.masked * 1 + self.nan * 2 + self.leak * 4
            if flags.any():                     # absent: no masked, NaN or leaking cell
                spec["flags"] = np.ascontiguousarray(flags, dtype=np.uint8).tobytes()
            spec["n_q"], spec["n_k"] = (int(size) for size in self.values.shape)
        if "edges" in spec:                     # equal bins (histogram_panel): the first and last edge
            edges = np.asarray(spec.pop("edges"), dtype=np.float64)
            spec["edge_range"] = [_short(edges[0]), _short(edges[-1])]
        if "marks" in spec:
            spec["marks"] = [{**mark, "x": _short(mark["x"])} for mark in spec["marks"]]
        return spec

    def legend(self) -> list[str]:
        """Which special cells this panel shows: a subset of ``masked``, ``nan``, ``leak``."""
        if self.kind != "heatmap":
            return []
        return [kind for kind in LEGEND if getattr(self, kind).any()]


def map_bytes(value, on_bytes):
    """``value`` (a scene: dicts and lists) rebuilt, each ``bytes`` leaf replaced by ``on_bytes(leaf)``."""
    if isinstance(value, bytes):
        return on_bytes(value)
    if isinstance(value, dict):
        return {key: map_bytes(v, on_bytes) for key, v in value.items()}
    if isinstance(value, list):
        return [map_bytes(v, on_bytes) for v in value]
    return value


def _short(x) -> float:
    """A position on an axis, to 7 significant digits (float32's), not float64's 17 in the JSON."""
    return float(f"{float(x):.7g}")


def bfloat16_bytes(values) -> bytes:
    """``values`` as bfloat16 (float32's range and about 3 significant digits), rounded to nearest."""
    with np.errstate(over="ignore"):
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = np.where(finite, bits + 0x7FFF + ((bits >> 16) & 1), bits)   # inf and NaN stay as they are
    return (rounded >> 16).astype("<u2").tobytes()


def _cell_size(n: int, room: int = 300) -> int:
    return int(min(44, max(3, room // max(n, 1))))


def heatmap_panel(name, values, mask=None, *, title="", scale="weights", query_labels=None,
                  key_labels=None, value_name="weight", vmin=None, vmax=None, masked_text=None,
                  masked_hover="masked: may not attend", small=False, pick=None, room=300,
                  what="attention weights", colour_bar=True) -> Panel:
    """A heatmap of ``values`` ``(n_q, n_k)``; ``mask`` broadcasts to it (bool, True = may attend).

    ``scale``: ``"weights"`` (fixed 0-1 viridis), ``"scores"`` (diverging, centred at 0, bound
    by the largest finite allowed value unless ``vmin``/``vmax`` are given) or ``"mask"``
    (blue: may attend, grey: blocked). ``masked_text`` is written into masked cells of small
    matrices (e.g. the fill value). ``pick`` (JSON) makes the panel clickable: a click sends it.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"values has shape {values.shape}; a heatmap needs (queries, keys).")
    n_q, n_k = values.shape
    nan = np.isnan(values)
    blocked = np.zeros(values.shape, bool) if mask is None else ~np.broadcast_to(np.asarray(mask, bool),
                                                                                 values.shape)
    # a leak: weight on a blocked key of a row that has an allowed one. A row with none has nowhere
    # else to put its weight: its weights are drawn as they are (with finfo.min, a uniform blend
    # over the blocked keys, which 04's text promises and a reader could not see in grey cells)
    live_row = (~blocked).any(axis=1, keepdims=True)
    leak = blocked & ~nan & (values != 0) & live_row if scale == "weights" else np.zeros(values.shape, bool)
    masked = blocked & ~nan & ~leak & (live_row if scale == "weights" else True)
    if scale == "scores" and (vmin is None or vmax is None):
        allowed = values[~blocked & np.isfinite(values)]
        bound = float(np.abs(allowed).max()) if allowed.size else 1.0
        vmin, vmax = -(bound or 1.0), bound or 1.0
    elif vmin is None or vmax is None:
        vmin, vmax = 0.0, 1.0
    for labels, n, side in ((query_labels, n_q, "query_labels"), (key_labels, n_k, "key_labels")):
        if labels is not None and len(labels) != n:
            raise ValueError(f"{side} has {len(labels)} labels but the matrix has {n} along that side.")
    cell = _cell_size(max(n_q, n_k), room)
    description = _describe_heatmap(title, what, values, masked, nan, leak, query_labels, key_labels, scale)
    return Panel(
        name=name, kind="heatmap", title=title, values=values, description=description,
        masked=masked, nan=nan, leak=leak,
        x_labels=None if key_labels is None else [str(label) for label in key_labels],
        y_labels=None if query_labels is None else [str(label) for label in query_labels],
        x_title="" if small else KEY_TITLE, y_title="" if small else QUERY_TITLE,
        options={"scale": scale, "vmin": float(vmin), "vmax": float(vmax), "value_name": value_name,
                 "cell": cell, "small": bool(small), "pick": pick,
                 "text": max(n_q, n_k) <= TEXT_UP_TO and not small and cell >= 18 and scale != "mask",
                 "bar": bool(colour_bar),
                 "masked_text": masked_text or "", "masked_hover": masked_hover})


def _describe_heatmap(title, what, values, masked, nan, leak, query_labels, key_labels, scale) -> str:
    n_q, n_k = values.shape
    words = [f"{title or what}: a heatmap of {what}, {n_q} queries (rows) by {n_k} keys (columns)."]
    shown = np.where(masked | nan, -np.inf, values)
    if scale == "weights" and np.isfinite(shown).any():
        i, j = np.unravel_index(int(np.argmax(shown)), shown.shape)
        query = f"query {i}" + (f" '{query_labels[i]}'" if query_labels is not None else "")
        key = f"key {j}" + (f" '{key_labels[j]}'" if key_labels is not None else "")
        words.append(f"Largest weight {values[i, j]:.3g}, from {query} to {key}.")
    for layer, text in ((masked, "masked"), (nan, "NaN"), (leak, "leaking weight past the mask")):
        if layer.any():
            words.append(f"{int(layer.sum())} cells {text}.")
    return " ".join(words)


def _table(header, rows) -> dict:
    return {"header": [str(h) for h in header], "rows": [[str(c) for c in row] for row in rows]}


def bars_panel(name, labels, series: dict, *, title="", x_title="", y_title="", ymax=None, text=None,
               hover=None, width=420, height=220, description="") -> Panel:
    """Grouped bars: ``series`` maps a name to ``(values, colour)``, one value per label."""
    labels = [str(label) for label in labels]
    values = np.array([np.asarray(v, dtype=np.float64) for v, _ in series.values()]).reshape(len(series), -1)
    if values.shape[1] != len(labels):
        raise ValueError(f"each series needs {len(labels)} values, one per label; got {values.shape[1]}.")
    return Panel(name=name, kind="bars", title=title, values=values, x_labels=labels,
                 x_title=x_title, y_title=y_title,
                 description=description or f"{title}: bars, " + "; ".join(
                     f"{label} {', '.join(f'{values[s, i]:.3g}' for s in range(len(series)))}"
                     for i, label in enumerate(labels)),
                 options={"series": [{"name": n, "colour": c} for n, (_, c) in series.items()],
                          "ymax": ymax, "text": text, "hover": hover, "width": width, "height": height})


def histogram_panel(name, samples: dict, *, bins=60, low=None, high=None, marks=(), title="",
                    x_title="", y_title="", width=420, height=220) -> Panel:
    """Counts of each series' samples over shared bins; ``samples`` maps a name to ``(array, colour)``."""
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a, _ in samples.values()]
    low = min(float(a.min()) for a in arrays) if low is None else low
    high = max(float(a.max()) for a in arrays) if high is None else high
    edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
    counts = np.array([np.histogram(a, bins=edges)[0] for a in arrays], dtype=np.float64)
    peak = [f"{n}: {a.size} values from {a.min():.3g} to {a.max():.3g}" for n, a in zip(samples, arrays,
                                                                                     strict=True)]
    return Panel(name=name, kind="histogram", title=title, values=counts, x_title=x_title, y_title=y_title,
                 description=f"{title}: histogram. " + "; ".join(peak) + ".",
                 options={"series": [{"name": n, "colour": c} for n, (_, c) in samples.items()],
                          "edges": edges, "marks": list(marks), "width": width, "height": height})


def points_panel(name, shapes: list, *, x_range, y_range, title="", x_title="", y_title="",
                 width=300, height=300, description="", table=None) -> Panel:
    """Lines (``{"type": "line", "x": [...], "y": [...], "colour"}``) and markers
    (``{"type": "marker", "x", "y", "r", "shape": "dot" | "ring" | "star", "colour", "label",
    "hover"}``) in data coordinates."""
    return Panel(name=name, kind="points", title=title, values=np.zeros(0), description=description,
                 x_title=x_title, y_title=y_title,
                 options={"shapes": shapes, "x_range": list(x_range), "y_range": list(y_range),
                          "width": width, "height": height, "table": table or _table([], [])})


HERE = pathlib.Path(__file__).parent
# The front-end travels gzipped (about a third of its text); the loader unpacks it in the browser.
FRONT_END_TEXT = (HERE / "canvas.js").read_bytes()
FRONT_END = gzip.compress(FRONT_END_TEXT, compresslevel=9, mtime=0)
FRONT_END_ID = hashlib.sha256(FRONT_END_TEXT).hexdigest()[:16]


class Canvas(anywidget.AnyWidget):
    """The browser side of an explorer: ``scene`` (this update's panels) and ``fixed`` (panels
    that never change, e.g. the head grid, sent once). A click on a pickable panel calls the
    ``on_pick`` callback with its ``pick`` value; a linked slider moved in the browser calls
    ``on_move(name, value)`` at once, ahead of the slider's own message.

    ``links`` names the sliders the browser may step ahead on (control name -> model id and the
    attribute the browser changes) and ``ahead`` holds the prepared next pictures
    (see :mod:`._ahead`): ``{"seq": scene seq, "entries": [{"control", "value", "scene"}]}``; the
    scene's ``at`` says what the controls hold for it (``{control: browser value}``)."""

    # anywidget loads loader.js, which unpacks front_end: canvas.js, built from the modules in js/ by
    # esbuild (`make canvas`; tests/js/bundle.test.js holds it to them), gzipped
    _esm = HERE / "loader.js"
    _css = HERE / "canvas.css"
    front_end = traitlets.Bytes(FRONT_END).tag(sync=True)
    front_end_id = traitlets.Unicode(FRONT_END_ID).tag(sync=True)
    defaults = traitlets.Dict({"heatmap": HEATMAP_DEFAULTS}).tag(sync=True)
    scene = traitlets.Dict().tag(sync=True)
    fixed = traitlets.Dict().tag(sync=True)
    links = traitlets.Dict().tag(sync=True)
    ahead = traitlets.Dict().tag(sync=True)

    def __init__(self, explorer: str, on_pick=None, on_move=None, **kwargs):
        super().__init__(**kwargs)
        self.explorer = explorer
        self._on_pick = on_pick
        self._on_move = on_move
        self._fixed_panels: dict[str, Panel] = {}
        self.seq = 0                    # which scene this is; a look-ahead names the scene it extends
        self.on_msg(self._message)

    def _message(self, _widget, content, _buffers):
        if not isinstance(content, dict):
            return
        if self._on_pick is not None and "pick" in content:
            self._on_pick(content["pick"])
        if self._on_move is not None and isinstance(content.get("move"), str) and "value" in content:
            self._on_move(content["move"], content["value"])

    def set_fixed(self, panels: dict[str, Panel]) -> None:
        """Send panels that never change (sent once, not with every update)."""
        self._fixed_panels = dict(panels)
        self.fixed = {name: panel.to_scene() for name, panel in panels.items()}

    def show(self, sections: list[dict], panels: dict[str, Panel], selected: str | None = None,
             at: dict | None = None, settings: dict | None = None) -> None:
        """Send ``panels`` laid out in ``sections`` (``{"title", "panels": [names], "grid": columns}``),
        one message; each section's legend (grey / pink / red cross) is worked out here. ``at`` is
        what the browser's models of the linked controls hold for this picture; ``settings`` what
        the picture was computed for (it names a saved picture)."""
        scene = self.compose(sections, panels, selected, settings)
        if at:
            scene["at"] = at
        if scene == {key: value for key, value in self.scene.items() if key != "seq"}:
            return                              # the same picture: nothing to send
        self.seq += 1
        self.scene = {**scene, "seq": self.seq}

    def show_ahead(self, entries: list[dict]) -> None:
        """Send the prepared next pictures for the current scene (``[]`` clears them)."""
        self.ahead = {"seq": self.seq, "entries": entries}

    def compose(self, sections: list[dict], panels: dict[str, Panel], selected: str | None = None,
                settings: dict | None = None) -> dict:
        """The scene ``show`` would send, without sending it."""
        everything = {**self._fixed_panels, **panels}
        laid_out = []
        for section in sections:
            kinds = {kind for name in section["panels"] for kind in everything[name].legend()}
            legend = [{"kind": kind, "text": LEGEND[kind]} for kind in LEGEND if kind in kinds]
            laid_out.append({**section, "legend": legend + list(section.get("legend", []))})
        scene = {"explorer": self.explorer, "sections": laid_out, "selected": selected,
                 "panels": {name: panel.to_scene() for name, panel in panels.items()}}
        if settings is not None:        # what a saved picture is called (js/save.js adds panel and format)
            scene["file"] = file_stem(self.explorer, settings)
        return scene

    def payload_bytes(self, trait: str = "scene") -> int:
        """What one update of ``trait`` sends: its JSON plus its binary buffers, in bytes."""
        buffers = []
        text = json.dumps(map_bytes(getattr(self, trait), lambda b: buffers.append(len(b))),
                          ensure_ascii=False)
        return len(text.encode()) + sum(buffers)
