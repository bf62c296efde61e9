"""The look-ahead (attnviz/widgets/_ahead.py): the prepared pictures are exactly the kernel's own.

For every slider an explorer links, the scene prepared one step either side, merged onto the
current scene by the browser's own code (attnviz/widgets/js/scene.js, run with node), must be the
picture the kernel sends once that control really takes that value (all but the text alternative,
which follows with the kernel's update). And nothing is prepared where it would cost too much.
"""

import asyncio
import base64
import json
import shutil
import subprocess
import time
from pathlib import Path

import ipywidgets as w
import numpy as np
import pytest
import torch

from attnviz.widgets import (
    _ahead,
    _sliders,
    head_explorer,
    lookup_explorer,
    mask_explorer,
    saturation_explorer,
)
from attnviz.widgets.canvas import map_bytes

MERGE_STEPS = Path(__file__).parent / "js" / "merge_steps.js"


@pytest.fixture(autouse=True)
def _a_busy_machine_is_not_too_slow(monkeypatch):
    """Steps are prepared only for explorers whose one computation takes under ``_ahead.SECONDS``
    (10 ms). On a loaded 2-core machine an n = 8 computation can take longer, and then these tests
    would find nothing prepared; the limit itself is tested on its own below (``seconds = 1.0``).
    Likewise the tests below hold a key by changing a slider every 5 to 20 ms; on a loaded machine
    two of those changes can land further apart than ``_ahead.BURST_SECONDS`` (150 ms), and the held
    key would not be a burst."""
    monkeypatch.setattr(_ahead, "SECONDS", 0.5)
    monkeypatch.setattr(_ahead, "BURST_SECONDS", 2.0)


def _node_merge_mismatches(cases: list[tuple[str, dict, dict, dict]]) -> list[str]:
    """The labels of the cases ``(label, base, step, expected)`` where the browser's merge of ``step``
    onto ``base`` does not draw ``expected`` (tests/js/merge_steps.js, with node)."""
    node = shutil.which("node")
    assert node, "node is needed to run the front-end's merge (the Makefile's setup installs the JS tools)"
    encoded = [{"label": label, "base": base, "step": step, "expected": expected}
               for label, base, step, expected in cases]
    text = json.dumps(map_bytes(encoded, lambda leaf: {"$bytes": base64.b64encode(leaf).decode()}),
                      allow_nan=False)
    done = subprocess.run([node, str(MERGE_STEPS)], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


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
    cases = []
    for name, link in ex.canvas.links.items():
        if not link["step"]:
            continue
        control = ex.controls[name]
        assert link["id"] == control.model_id
        start = getattr(control, link["attr"])
        ex._on_change(type("Change", (), {"owner": control})())     # as if the learner moved it last
        ex._flush()
        ex.update()                 # a warm computation: a cold first one can be too slow to step ahead
        sent = ex.look_ahead()
        entries = ex.canvas.ahead["entries"]
        assert sent == len(entries) and ex.canvas.ahead["seq"] == ex.canvas.scene["seq"]
        base = ex.canvas.scene
        for entry in entries:
            assert entry["control"] == name
            _set_browser_value(control, link["attr"], entry["value"])
            ex._flush()
            cases.append((f"{which}: {name} -> {entry['value']}", base, entry["scene"], ex.canvas.scene))
            _set_browser_value(control, link["attr"], start)
            ex._flush()
    assert cases, f"{which}: nothing prepared"
    assert _node_merge_mismatches(cases) == []


def test_saturation_prepares_both_neighbours_of_the_slider_moved_last():
    ex = saturation_explorer(n=8, d_k=64)
    assert {name for name, link in ex.canvas.links.items() if link["step"]} == {"d_k", "temperature"}
    assert ex.canvas.links["mask"] == {"id": ex.controls["mask"].model_id, "attr": "index", "step": False,
                                      "move": False}
    assert ex.canvas.links["d_k"]["attr"] == "value" and ex.canvas.links["temperature"]["attr"] == "value"
    assert ex.look_ahead() == 2                                     # nothing moved yet: the first slider
    assert [e["value"] for e in ex.canvas.ahead["entries"]] == [128, 32]   # a power of two either side
    ex.controls["d_k"].value = 32                                   # moved down: the one below first
    assert ex.look_ahead() == 2
    assert [e["value"] for e in ex.canvas.ahead["entries"]] == [16, 64]
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
    ex.ahead.seconds = 1.0                                          # as if one computation were slow
    assert ex.look_ahead() == 0 and ex.canvas.ahead["entries"] == []   # the old steps are cleared
    off = saturation_explorer(n=8, d_k=64)
    off.step_ahead = False                                          # the benchmark's comparison row
    assert off.look_ahead() == 0 and not off.canvas.ahead.get("entries")


def test_a_step_at_the_end_of_a_slider_has_one_neighbour():
    assert _sliders.neighbours(w.SelectionSlider(options=[1, 2, 4], value=1)) == ("index", [(1, 2)])
    pairs = w.SelectionSlider(options=[("a", 10), ("b", 20)], value=20)
    assert _sliders.neighbours(pairs) == ("index", [(0, 10)])
    assert _sliders.neighbours(w.IntSlider(value=3, min=0, max=3)) == ("value", [(2, 2)])
    log = w.FloatLogSlider(value=10 ** 1.3, base=10, min=-1.3, max=1.3, step=0.01)
    attr, steps = _sliders.neighbours(log)
    assert attr == "value" and len(steps) == 1 and steps[0][0] == pytest.approx(10 ** 1.29)
    assert _sliders.neighbours(w.Dropdown(options=["a", "b"])) is None
    assert _sliders.neighbours(w.IntText(3)) is None
    assert _sliders.browser_attribute(w.Dropdown(options=["a", "b"])) == "index"
    assert _sliders.browser_attribute(w.IntText(3)) == "value"


def test_the_log_slider_steps_on_its_grid():
    # a value between grid points: the browser's slider snaps to the grid, so do the steps
    attr, steps = _sliders.neighbours(w.FloatLogSlider(value=0.7, base=10, min=-1.3, max=1.3, step=0.01))
    grid = -1.3 + round((np.log10(0.7) + 1.3) / 0.01) * 0.01
    assert [s for s, _ in steps] == pytest.approx([10 ** (grid - 0.01), 10 ** (grid + 0.01)])


def test_a_delta_names_what_changed_and_what_went():
    base = {"panels": {"a": {"title": "x", "values": b"1", "flags": b"\x01"}},
            "sections": [1], "selected": None}
    new = {"panels": {"a": {"title": "x", "values": b"2"}}, "sections": [1], "selected": "a"}
    d = _ahead.scene_delta(base, new)
    assert d == {"panels": {"a": {"values": b"2", "flags": None}}, "selected": "a"}
    two = _ahead.scene_delta({**base, "sections": [1, 2]}, {**new, "sections": [1, 3]})
    assert two["sections"] == [None, 3]
    wrong = {**new, "panels": {"a": {"title": "x", "values": b"3"}}}
    assert _node_merge_mismatches([
        ("one panel", base, _ahead.packed(d), new),
        ("two sections", {**base, "sections": [1, 2]}, _ahead.packed(two), {**new, "sections": [1, 3]}),
        ("not merged", base, d, new),                          # the browser takes unpacked deltas too
        ("wrong", base, _ahead.packed(d), wrong),              # and the check can fail
    ]) == ["wrong"]


def test_the_linked_sliders_are_not_echoed_and_other_widgets_are():
    ex = saturation_explorer(n=8, d_k=64)
    assert ex.controls["d_k"].trait_metadata("value", "echo_update") is False
    assert ex.controls["temperature"].trait_metadata("value", "echo_update") is False
    assert w.SelectionSlider(options=[1, 2]).trait_metadata("index", "echo_update") is None   # untouched
    ex.controls["temperature"].value = 1e9                        # still validated: clamped to the top
    assert ex.controls["temperature"].value == pytest.approx(10 ** 1.3)
    assert isinstance(ex.controls["d_k"], w.FloatLogSlider)       # its readout takes a typed d_k


def test_a_step_travels_as_one_buffer_and_unpacks_to_its_delta():
    delta = {"panels": {"a": {"values": b"12345", "flags": b"\x01\x02"}, "b": {"title": "t"}},
             "sections": [None]}
    packed = _ahead.packed(delta)
    assert packed["panels"]["a"]["values"] == {"at": 0, "len": 5}
    assert packed["panels"]["a"]["flags"] == {"at": 8, "len": 2}          # offsets kept to multiples of 4
    assert _ahead.binary_bytes(packed) == len(packed["blob"]) == 12
    assert packed["blob"] == b"12345\0\0\0" + b"\x01\x02\0\0"
    assert packed["panels"]["b"] == {"title": "t"} and packed["sections"] == [None]


def test_in_a_kernel_the_steps_come_a_frame_after_a_single_change():
    async def drive():
        ex = saturation_explorer(n=8, d_k=64)
        await asyncio.sleep(0.1)                    # the first picture's own steps have gone
        sent, shown = [], {}
        ex.canvas.observe(lambda change: sent.append((change["new"]["seq"], time.monotonic())), names="ahead")
        ex.canvas.observe(lambda change: shown.update({change["new"]["seq"]: time.monotonic()}),
                          names="scene")
        ex.controls["temperature"].value = 2.0
        await asyncio.sleep(0.2)
        assert [seq for seq, _when in sent] == [ex.canvas.scene["seq"]]   # once, for the newest picture
        (seq, when), = sent
        # not with the picture (one press is no burst): at least a frame after it
        assert when - shown[seq] >= _ahead.AHEAD_AFTER_SECONDS * 0.99 and ex.ahead.burst_update == -1
        assert len(ex.canvas.ahead["entries"]) == 2
        assert {e["control"] for e in ex.canvas.ahead["entries"]} == {"temperature"}
    asyncio.run(drive())


def test_a_held_key_brings_the_next_steps_with_each_picture():
    async def drive():
        ex = saturation_explorer(n=8, d_k=64)
        slider = ex.controls["temperature"]
        sent = []                                   # (ahead, the scene it extends) as they were sent
        ex.canvas.observe(lambda change: sent.append((change["new"], ex.canvas.scene)), names="ahead")
        for k in range(1, 9):                       # a held key: a change every 5 ms, upwards
            slider.value = 10 ** (0.01 * k)
            await asyncio.sleep(0.005)
        now = ex.state["temperature"]               # (brings the explorer up to date first)
        assert now == pytest.approx(10 ** 0.08)
        assert sent, "nothing prepared during the burst"
        assert all(ahead["seq"] == scene["seq"] for ahead, scene in sent)   # each with its own picture
        values = [e["value"] for ahead, _scene in sent for e in ahead["entries"]]
        assert len(values) == len(set(values))      # a step the browser has is not sent again
        wanted = [10 ** (0.01 * (8 + k)) for k in range(1, _ahead.BURST_STEPS + 1)]
        assert all(any(v == pytest.approx(w, rel=1e-9) for v in values) for w in wanted)
        first = [e["value"] for e in sent[0][0]["entries"]]
        here = sent[0][1]["at"]["temperature"]
        assert first[0] > here > first[1] and first[2:] == sorted(first[2:])   # the way it moves first
        count = len(sent)
        await asyncio.sleep(0.1)
        assert len(sent) == count                   # and nothing more once it stops: the browser has them
        # every prepared step is the kernel's own picture of that value
        cases = []
        for ahead, base in sent[-2:]:
            for entry in ahead["entries"]:
                slider.value = entry["value"]
                ex._flush()
                cases.append((f"temperature {entry['value']}", base, entry["scene"], ex.canvas.scene))
        assert cases and _node_merge_mismatches(cases) == []
    asyncio.run(drive())


def test_a_burst_that_turns_round_prepares_the_other_way():
    async def drive():
        ex = saturation_explorer(n=8, d_k=64)
        d_k = ex.controls["d_k"]
        sent = []
        ex.canvas.observe(lambda change: sent.append({**change["new"], "at": ex.canvas.scene["at"]}),
                          names="ahead")
        for value in (32, 16, 8):
            d_k.value = value
            await asyncio.sleep(0.02)
        assert sent
        first = sent[0]
        at = first["at"]["d_k"]
        assert [e["value"] for e in first["entries"]][:2] == [at / 2, at * 2]   # downwards first, one back
    asyncio.run(drive())


def test_the_steps_are_sent_again_once_another_control_changed_them():
    async def burst(ex, start):
        for k in range(start, start + 4):
            ex.controls["temperature"].value = 10 ** (0.01 * k)
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)

    async def drive():
        ex = saturation_explorer(n=8, d_k=64)
        values = []
        ex.canvas.observe(lambda change: values.extend(e["value"] for e in change["new"]["entries"]),
                          names="ahead")
        await burst(ex, 1)
        before = len(values)
        ex.controls["mask"].value = list(ex.controls["mask"].options)[-1]    # other pictures now
        await asyncio.sleep(0.05)
        await burst(ex, 1)                                                   # the same values again
        again = values[before:]
        assert again and any(v == pytest.approx(10 ** 0.03) for v in again)
    asyncio.run(drive())


# -- moves reported by the browser, ahead of the slider's own message -------------------------------
def _move(ex, name, value):
    """What canvas.js sends when it sees a linked slider move in the browser."""
    ex.canvas._message(ex.canvas, {"move": name, "value": value}, [])


def test_a_move_from_the_browser_is_computed_before_the_sliders_own_message():
    ex = saturation_explorer(n=8, d_k=64)
    d_k, start = ex.controls["d_k"], ex.computations
    _move(ex, "d_k", 128.0)                                       # the browser's slider is one step on
    assert ex.computations == start + 1 and ex.state["d_k"] == 128
    assert d_k.value == 64                                        # the kernel's slider has not heard yet
    title = ex.canvas.scene["sections"][0]["title"]
    d_k.value = 128                                               # the slider's message: same value
    assert ex.computations == start + 1 and ex.canvas.scene["sections"][0]["title"] == title
    d_k.value = 16                                                # a cell sets another value: computed
    assert ex.computations == start + 2 and ex.state["d_k"] == 16


def test_a_burst_of_moves_costs_at_most_two_computations_and_shows_the_last():
    ex = saturation_explorer(n=8, d_k=64)
    temperature, start = ex.controls["temperature"], ex.computations
    values = [10 ** (0.01 * k) for k in range(1, 13)]

    async def burst():
        for value in values:                                      # twelve presses, one message each
            _move(ex, "temperature", value)
        await asyncio.sleep(0.05)
        temperature.value = values[-1]                           # the slider's own (throttled) message
        await asyncio.sleep(0.05)
    asyncio.run(burst())
    assert ex.computations - start <= 2
    assert ex.state["temperature"] == pytest.approx(values[-1])
    assert ex.ahead.browser == {}                                      # the kernel's slider caught up


@pytest.mark.parametrize("message", [
    {"move": "nothing", "value": 3}, {"move": "mask", "value": 1},      # unknown; not a slider
    {"move": "d_k", "value": 99}, {"move": "d_k", "value": -1}, {"move": "d_k", "value": True},
    {"move": "d_k", "value": 2.5}, {"move": "temperature", "value": "hot"},
    {"move": "temperature", "value": float("nan")}, {"move": "temperature", "value": 1e9},
    {"move": "d_k"}, {"move": 3, "value": 3}, ["move"],
])
def test_a_move_the_slider_cannot_make_changes_nothing(message):
    ex = saturation_explorer(n=8, d_k=64)
    start, scene = ex.computations, ex.canvas.scene
    ex.canvas._message(ex.canvas, message, [])
    assert ex.computations == start and ex.canvas.scene is scene and ex.ahead.browser == {}


def test_kernel_values_of_browser_values():
    assert _sliders.kernel_value(w.SelectionSlider(options=[("a", 10), ("b", 20)]), 1) == 20
    assert _sliders.kernel_value(w.SelectionSlider(options=[1, 2]), 2) is None
    assert _sliders.kernel_value(w.IntSlider(value=3, min=0, max=5), 5) == 5
    assert _sliders.kernel_value(w.IntSlider(value=3, min=0, max=5), 6) is None
    assert _sliders.kernel_value(w.IntSlider(value=3, min=0, max=5), 2.0) is None
    assert _sliders.kernel_value(w.FloatSlider(value=0.5, min=0, max=1), 0.25) == 0.25
    log = w.FloatLogSlider(value=1.0, base=10, min=-1, max=1)
    assert _sliders.kernel_value(log, 10.0) == 10.0 and _sliders.kernel_value(log, 0.01) is None
    powers = w.FloatLogSlider(value=64, base=2, min=0, max=12, step=1)     # 03's d_k: only its grid
    assert _sliders.kernel_value(powers, 128.0) == 128.0 and _sliders.kernel_value(powers, 99.0) is None
    assert _sliders.kernel_value(w.Dropdown(options=[1, 2]), 1) is None


def test_a_scene_says_what_the_browsers_controls_hold_for_it():
    ex = saturation_explorer(n=8, d_k=64)
    at = ex.canvas.scene["at"]
    assert at == {name: getattr(ex.controls[name], link["attr"]) for name, link in ex.canvas.links.items()}
    assert at["d_k"] == ex.controls["d_k"].value                  # the browser's value: d_k itself
    _move(ex, "d_k", at["d_k"] * 2)                               # before the slider's own message
    assert ex.canvas.scene["at"]["d_k"] == at["d_k"] * 2
    mask = ex.controls["mask"]
    mask.index = 1                                                # another control: in `at` too
    assert ex.canvas.scene["at"]["mask"] == 1
    no_sliders = mask_explorer()
    assert "at" not in no_sliders.canvas.scene                    # nothing linked, nothing to say


def test_a_moves_own_message_that_changes_more_than_the_move_is_computed():
    # the lookup explorer: moving the angle slider clears the word picked, when the slider's own
    # message reaches the kernel; that update is computed, so the scene says the word is gone
    ex = _picked(lookup_explorer())
    angle, word = ex.controls["query_angle"], ex.controls["word"]
    assert word.index != 0
    start = ex.computations
    _move(ex, "query_angle", angle.value + 1)
    assert ex.computations == start + 1 and ex.canvas.scene["at"]["word"] == word.index
    angle.value += 1                                              # the slider's own message
    assert word.index == 0 and ex.canvas.scene["at"]["word"] == 0
    assert ex.computations == start + 2
