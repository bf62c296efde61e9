"""What a saved picture is called (attnviz/widgets/_save.py), and that every scene says it.

The browser adds the panel and the format (js/save.js, tested with node in tests/js/save.test.js);
the downloads themselves are read back in the browser test (tests/test_browser.py)."""

from __future__ import annotations

import pytest
import torch

from attnviz.widgets import (
    head_explorer,
    kv_cache_explorer,
    lookup_explorer,
    mask_explorer,
    saturation_explorer,
)
from attnviz.widgets._ahead import scene_delta
from attnviz.widgets._save import file_stem, named_settings, notebook_prefix


@pytest.mark.parametrize(("path", "prefix"), [
    ("/home/me/course/notebooks/03_why_sqrt_dk.ipynb", "03"),
    ("/srv/07_tiny_gpt.ipynb", "07"),
    ("/tmp/my experiments.ipynb", "my experiments"),
    ("", ""),
])
def test_the_notebook_is_named_by_its_number_or_its_name(monkeypatch, path, prefix):
    monkeypatch.setenv("JPY_SESSION_NAME", path)
    assert notebook_prefix() == prefix


def test_no_notebook_outside_jupyter(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert notebook_prefix() == ""
    assert file_stem("saturation", {"d_k": 512}) == "saturation_d_k-512"


def test_a_file_stem_says_the_explorer_and_each_setting_in_words_a_file_name_can_hold():
    settings = {"d_k": 512, "temperature": 1.0200000000000002, "scaled": False, "mask": "causal+padding",
                "word": "(use the angle slider)", "fill": "-inf"}
    assert file_stem("saturation", settings, prefix="03") == (
        "03_saturation_d_k-512_temperature-1.02_scaled-no_mask-causal+padding_word-use-the-angle-slider_fill--inf")
    assert file_stem("mask", {"dtype": "float16"}, prefix="my notebook") == "my-notebook_mask_dtype-float16"


EXPLORERS = {
    "saturation": saturation_explorer,
    "mask": mask_explorer,
    "lookup": lookup_explorer,
    "head": lambda: head_explorer(torch.rand(2, 2, 4, 4).softmax(-1), tokens=list("abcd")),
    "kv_cache": kv_cache_explorer,
}


@pytest.mark.parametrize("kind", sorted(EXPLORERS))
def test_every_scene_names_its_pictures_by_the_settings_it_was_computed_for(monkeypatch, kind):
    monkeypatch.setenv("JPY_SESSION_NAME", "/x/05_multi_head.ipynb")
    explorer = EXPLORERS[kind]()
    values = {name: control.value for name, control in explorer.controls.items()}
    assert explorer.canvas.scene["file"] == file_stem(kind, named_settings(explorer, values), prefix="05")
    assert explorer.canvas.scene["file"].startswith(f"05_{kind}")


def test_settings_at_their_defaults_are_left_out_of_the_name(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    explorer = saturation_explorer()
    assert explorer.canvas.scene["file"] == "saturation"            # every setting at its default
    explorer.controls["d_k"].value = 512
    explorer.controls["scaled"].value = False
    explorer._flush()
    assert explorer.canvas.scene["file"] == "saturation_d_k-512_scaled-no"
    explorer.controls["temperature"].value = 1.0000000000000002   # 1 in words: still the default
    explorer._flush()
    assert explorer.canvas.scene["file"] == "saturation_d_k-512_scaled-no"
    assert head_explorer(torch.rand(1, 2, 3, 3).softmax(-1)).canvas.scene["file"] == "head_layer-0_head-0"


def test_the_lookup_is_named_by_its_angle_not_the_word_that_moved_it(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    explorer = lookup_explorer()
    explorer.controls["word"].value = "dog"
    explorer._flush()
    angle = explorer.controls["query_angle"].value
    assert explorer.canvas.scene["file"] == f"lookup_query_angle-{angle:.4g}"


def test_a_prepared_step_leaves_the_name_to_the_kernels_own_scene():
    explorer = saturation_explorer(d_k=64)
    base = explorer.canvas.scene
    step = explorer._scene_of({**{n: c.value for n, c in explorer.controls.items()}, "d_k": 1024})
    assert "_d_k-1024" in step["file"] and "file" not in scene_delta(base, step)   # not sent with the step
    explorer.controls["d_k"].value = 1024
    explorer._flush()
    assert explorer.canvas.scene["file"] == step["file"]                          # the kernel's own brings it
