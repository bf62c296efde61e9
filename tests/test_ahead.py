"""One step ahead (attnviz/widgets/_ahead.py): the prepared pictures are exactly the kernel's own.

For every slider an explorer links, the scene prepared one step either side, merged onto the
current scene the way canvas.js merges it, must equal the scene the kernel sends once that
control really takes that value (all but the text alternative, which follows with the kernel's
update). And nothing is prepared where it would cost too much.
"""

import asyncio

import ipywidgets as w
import numpy as np
import pytest
import torch

from attnviz.widgets import _ahead, head_explorer, lookup_explorer, saturation_explorer


def _merge(base: dict, delta: dict) -> dict:
    """canvas.js's merge(): the scene plus a delta, None meaning "removed"."""
    panels = dict(base["panels"])
    for name, spec in delta["panels"].items():
        merged = {**panels.get(name, {}), **spec}
        panels[name] = {key: value for key, value in merged.items() if value is not None}
    out = {**base, "panels": panels}
    if "selected" in delta:
        out["selected"] = delta["selected"]
    if "sections" in delta:
        out["sections"] = [base["sections"][i] if section is None else section
                           for i, section in enumerate(delta["sections"])]
    return out


def _without(scene: dict, key: str = "description") -> dict:
    return {**{k: v for k, v in scene.items() if k != "seq"},
            "panels": {name: {k: v for k, v in spec.items() if k != key}
                       for name, spec in scene["panels"].items()}}


def _set_browser_value(control, attr, value):
    """What the browser's one arrow key does to the control's model (then synced to the kernel)."""
    setattr(control, attr, value)


def _head_weights():
    torch.manual_seed(0)
    return torch.softmax(torch.randn(2, 3, 5, 5), dim=-1)


def _picked(ex):
    """The lookup explorer with a word picked (a step of the angle slider then clears the word)."""
    ex.controls["word"].value = list(ex.controls["word"].options)[-1]
    ex._flush()
    return ex


EXPLORERS = {
    "saturation": lambda: saturation_explorer(n=8, d_k=64),
    "saturation_masked": lambda: saturation_explorer(n=8, d_k=16, mask="causal+padding"),
    "lookup": lookup_explorer,
    "lookup_word": lambda: _picked(lookup_explorer()),
    "head": lambda: head_explorer(_head_weights()),
}
# (the mask and KV-cache explorers have no sliders: dropdowns, toggles and number boxes only)


@pytest.mark.parametrize("which", sorted(EXPLORERS))
def test_every_prepared_step_is_the_kernels_own_picture(which):
    ex = EXPLORERS[which]()
    assert ex.canvas.links, f"{which}: no slider linked for look-ahead"
    assert set(ex.canvas.links) == set(ex.controls)         # every control watched: any change counts
    checked = 0
    for name, link in ex.canvas.links.items():
        if not link["step"]:
            continue
        control = ex.controls[name]
        assert link["id"] == control.model_id
        start = getattr(control, link["attr"])
        ex._on_change(type("Change", (), {"owner": control})())     # as if the learner moved it last
        ex._flush()
        sent = ex.look_ahead()
        entries = ex.canvas.ahead["entries"]
        assert sent == len(entries) and ex.canvas.ahead["seq"] == ex.canvas.scene["seq"]
        base = ex.canvas.scene
        for entry in entries:
            assert entry["control"] == name
            prepared = _merge(base, _ahead.unpacked(entry["scene"]))
            _set_browser_value(control, link["attr"], entry["value"])
            ex._flush()
            assert _without(ex.canvas.scene) == _without(prepared), f"{which}: {name} -> {entry['value']}"
            checked += 1
            _set_browser_value(control, link["attr"], start)
            ex._flush()
    assert checked >= 1, f"{which}: nothing prepared"


def test_saturation_prepares_both_neighbours_of_the_slider_moved_last():
    ex = saturation_explorer(n=8, d_k=64)
    assert {name for name, link in ex.canvas.links.items() if link["step"]} == {"d_k", "temperature"}
    assert ex.canvas.links["mask"] == {"id": ex.controls["mask"].model_id, "attr": "index", "step": False}
    assert ex.canvas.links["d_k"]["attr"] == "index" and ex.canvas.links["temperature"]["attr"] == "value"
    assert ex.look_ahead() == 2                                     # nothing moved yet: the first slider
    assert [e["value"] for e in ex.canvas.ahead["entries"]] == [5, 7]   # d_k 32 and 128, by index
    ex.controls["temperature"].value = 2.0
    assert ex.look_ahead() == 2
    values = sorted(e["value"] for e in ex.canvas.ahead["entries"])
    assert values == pytest.approx([10 ** (np.log10(2.0) - 0.01), 10 ** (np.log10(2.0) + 0.01)], abs=0.03)
    assert all(e["control"] == "temperature" for e in ex.canvas.ahead["entries"])
    # one look-ahead is small: the two deltas together stay under the budget
    assert ex.canvas.payload_bytes("ahead") < _ahead.BYTES


def test_large_or_failing_settings_prepare_nothing():
    big = saturation_explorer(n=128, d_k=64)
    assert big.look_ahead() == 0 and not big.canvas.ahead.get("entries")
    ex = saturation_explorer(n=8, d_k=64)
    ex.look_ahead()
    ex._last_seconds = 1.0                                          # as if one computation were slow
    assert ex.look_ahead() == 0 and ex.canvas.ahead["entries"] == []   # the old steps are cleared
    off = saturation_explorer(n=8, d_k=64)
    off.step_ahead = False                                          # the benchmark's comparison row
    assert off.look_ahead() == 0 and not off.canvas.ahead.get("entries")


def test_a_step_at_the_end_of_a_slider_has_one_neighbour():
    assert _ahead.neighbours(w.SelectionSlider(options=[1, 2, 4], value=1)) == ("index", [(1, 2)])
    pairs = w.SelectionSlider(options=[("a", 10), ("b", 20)], value=20)
    assert _ahead.neighbours(pairs) == ("index", [(0, 10)])
    assert _ahead.neighbours(w.IntSlider(value=3, min=0, max=3)) == ("value", [(2, 2)])
    attr, steps = _ahead.neighbours(w.FloatLogSlider(value=10 ** 1.3, base=10, min=-1.3, max=1.3, step=0.01))
    assert attr == "value" and len(steps) == 1 and steps[0][0] == pytest.approx(10 ** 1.29)
    assert _ahead.neighbours(w.Dropdown(options=["a", "b"])) is None
    assert _ahead.neighbours(w.IntText(3)) is None


def test_the_log_slider_steps_on_its_grid():
    # a value between grid points: the browser's slider snaps to the grid, so do the steps
    attr, steps = _ahead.neighbours(w.FloatLogSlider(value=0.7, base=10, min=-1.3, max=1.3, step=0.01))
    grid = -1.3 + round((np.log10(0.7) + 1.3) / 0.01) * 0.01
    assert [s for s, _ in steps] == pytest.approx([10 ** (grid - 0.01), 10 ** (grid + 0.01)])


def test_a_delta_names_what_changed_and_what_went():
    base = {"panels": {"a": {"title": "x", "values": b"1", "flags": b"\x01"}},
            "sections": [1], "selected": None}
    new = {"panels": {"a": {"title": "x", "values": b"2"}}, "sections": [1], "selected": "a"}
    d = _ahead.scene_delta(base, new)
    assert d == {"panels": {"a": {"values": b"2", "flags": None}}, "selected": "a"}
    two = _ahead.scene_delta({**base, "sections": [1, 2]}, {**new, "sections": [1, 3]})
    assert two["sections"] == [None, 3] and _merge({**base, "sections": [1, 2]}, two)["sections"] == [1, 3]
    assert _merge(base, d) == {**new, "panels": {"a": {"title": "x", "values": b"2"}}}


def test_the_linked_sliders_are_not_echoed_and_other_widgets_are():
    ex = saturation_explorer(n=8, d_k=64)
    assert ex.controls["d_k"].trait_metadata("index", "echo_update") is False
    assert ex.controls["temperature"].trait_metadata("value", "echo_update") is False
    assert w.SelectionSlider(options=[1, 2]).trait_metadata("index", "echo_update") is None   # untouched
    ex.controls["temperature"].value = 1e9                        # still validated: clamped to the top
    assert ex.controls["temperature"].value == pytest.approx(10 ** 1.3)
    assert isinstance(ex.controls["d_k"], w.SelectionSlider)


def test_a_step_travels_as_one_buffer_and_unpacks_to_its_delta():
    delta = {"panels": {"a": {"values": b"12345", "flags": b"\x01\x02"}, "b": {"title": "t"}},
             "sections": [None]}
    packed = _ahead.packed(delta)
    assert packed["panels"]["a"]["values"] == {"at": 0, "len": 5}
    assert packed["panels"]["a"]["flags"] == {"at": 8, "len": 2}          # offsets kept to multiples of 4
    assert _ahead.binary_bytes(packed) == len(packed["blob"]) == 12
    assert _ahead.unpacked(packed) == delta


def test_in_a_kernel_the_steps_come_a_frame_after_the_last_change_only():
    async def drive():
        ex = saturation_explorer(n=8, d_k=64)
        sent = []
        ex.canvas.observe(lambda change: sent.append(change["new"]["seq"]), names="ahead")
        slider = ex.controls["temperature"]
        for step in range(6):                       # a held key: a change every 5 ms
            slider.value = 1.0 + 0.01 * (step + 1)
            await asyncio.sleep(0.005)
        assert sent == []                           # nothing prepared while the key is held
        await asyncio.sleep(0.1)
        assert sent == [ex.canvas.scene["seq"]]     # once, for the newest picture
        assert {e["control"] for e in ex.canvas.ahead["entries"]} == {"temperature"}
    asyncio.run(drive())
