"""Static pictures of every explorer at the settings the lessons show, for when one does not render.

    .venv/bin/python tools/make_fallbacks.py [--port PORT] [--out docs/fallback]

Each picture is the explorer itself, drawn by JupyterLab in headless Chromium from a fresh kernel at
one setting (the explorer's own numbers, from ``attnviz.explore``), cut out of the page. The
settings are the ones docs/teaching.md and the lesson pages in docs/lessons/ walk through, listed
in SETTINGS below with the caption each picture gets. The script writes one PNG per setting and
``index.md``, a page that shows them in order with their captions; teachers print it or open it
when the projector's browser cannot draw widgets (no kernel, widgets blocked, a hub that is down).
``texts.json`` holds each picture's text as the page showed it: tests/test_teaching_kit.py checks it
against what the explorers write today, so a renamed label says the pictures need making again.

It serves a temporary folder of generated notebooks (one per explorer, nothing in notebooks/ is
touched) from a private JupyterLab on 127.0.0.1 (tests/_lab.py), light theme, in a 1200 x 2200
window (tall, so the largest explorer fits whole).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from _lab import (  # noqa: E402  (tests/ is not a package)
    LabServer,
    NotebookPage,
    browser_missing_reason,
    chromium,
    describe_failures,
)

HEADS_SETUP = """
import attnviz
from attnviz.toys import heads as heads_toy
from attnviz.widgets import head_explorer

example = heads_toy.train_heads(2, seed=0)     # notebook 05's 2-head model of seed 0
tokens = [f"{i}:{t}" for i, t in enumerate(example.example_tokens.tolist())]
example_mask = attnviz.causal_mask(len(tokens))
"""

INDUCTION_SETUP = """
import torch

import attnviz
from attnviz.toys import induction
from attnviz.widgets import head_explorer

torch.set_num_threads(1)
run = induction.train_induction(0)             # notebook 07's model of seed 0, trained as 07 trains it
example = run.eval_tokens[:1]                  # 07's held-out sequence (period 12)
with torch.no_grad():
    example_weights = run.model.attention_weights(example)[:, 0]     # (n_layers, n_heads, n, n)
tokens = [f"{i}:{t}" for i, t in enumerate(example[0].tolist())]
example_mask = attnviz.causal_mask(example.shape[1])
"""

# explorer -> (notebook it belongs to, setup code, [(file stem, code whose last line is the explorer,
#              caption)]). The captions say what to point at; the picture shows the numbers.
SETTINGS = {
    "lookup": ("01_soft_lookup", "from attnviz.widgets import lookup_explorer", [
        ("lookup_1_start", "lookup_explorer(query_angle=30, temperature=1)",
         "Where it opens: query at 30°, temperature 1. Every word gets some weight; the blended point "
         "sits among the values."),
        ("lookup_2_cold", "lookup_explorer(query_angle=30, temperature=0.01)",
         "Temperature 0.01 (its lowest): one word takes all the weight, like a dict lookup."),
        ("lookup_3_hot", "lookup_explorer(query_angle=30, temperature=100)",
         "Temperature 100 (its highest): even weights, the blend at the plain average of the values."),
        ("lookup_4_cat_dog", "lookup_explorer(query_angle=40, temperature=0.5)",
         "Query at 40°, halfway between cat and dog, temperature 0.5 (the slider's nearest step shows "
         "0.501): the two share the weight."),
    ]),
    "saturation": ("03_why_sqrt_dk", "from attnviz.widgets import saturation_explorer", [
        ("saturation_1_start", "saturation_explorer(d_k=64, scaled=False)",
         "Where it opens: d_k = 64, metrics for the unscaled side."),
        ("saturation_2_dk1", "saturation_explorer(d_k=1, scaled=False)",
         "d_k = 1: both sides blend."),
        ("saturation_3_dk4096", "saturation_explorer(d_k=4096, scaled=False)",
         "d_k = 4096, unscaled: nearly one bright cell per row, and a fraction of the scaled side's "
         "gradient (grad_norm)."),
        ("saturation_4_scaled", "saturation_explorer(d_k=4096, scaled=True)",
         "d_k = 4096, metrics for the scaled side: still a blend, the gradient intact."),
        ("saturation_5_cold", "saturation_explorer(d_k=4096, scaled=True, temperature=0.05)",
         "d_k = 4096, scaled, temperature 0.05 (its lowest; the slider shows 0.0501): the scaled side "
         "sharpens too."),
        ("saturation_6_hot", "saturation_explorer(d_k=64, scaled=True, temperature=20)",
         "d_k back at 64 (as the notebook's step 4 says), scaled, temperature 20 (its highest): the "
         "scaled rows flatten to an even spread."),
    ]),
    "mask": ("04_masking", "from attnviz.widgets import mask_explorer", [
        ("mask_1_padding_inf", 'mask_explorer(mask="padding", fill="-inf", dtype="float32")',
         "Where it opens: padding mask, fill -inf. The empty third sequence's rows are NaN (pink)."),
        ("mask_2_finfo_min", 'mask_explorer(mask="padding", fill="finfo.min", dtype="float32")',
         "Fill finfo.min: no NaN; the empty sequence's rows come out finite, 0.20 on each of its five "
         "blocked keys (a uniform blend)."),
        ("mask_3_float16_error", 'mask_explorer(mask="padding", fill="-1e9", dtype="float16")',
         "Fill -1e9 in float16: PyTorch refuses, and the explorer says so in words."),
        ("mask_4_bfloat16", 'mask_explorer(mask="padding", fill="-1e9", dtype="bfloat16")',
         "Fill -1e9 in bfloat16: it fits (bfloat16 has float32's range)."),
        ("mask_5_causal_zero", 'mask_explorer(mask="causal", fill="0", dtype="float32")',
         "Causal mask filled with 0: weight leaks onto the future (read leaked_weight)."),
    ]),
    "heads": ("05_multi_head", HEADS_SETUP, [
        ("heads_1_head0", "head_explorer(example.example_weights, tokens=tokens, mask=example_mask)",
         "Notebook 05's trained 2-head model (seed 0), head 0 enlarged: point at the bright first column, "
         "every query's weight on the first token (the head that owns 'first')."),
        ("heads_2_head1", "view = head_explorer(example.example_weights, tokens=tokens, mask=example_mask)\n"
                          "view.controls['head'].value = 1\nview",
         "The same model, head 1 enlarged: point at the bright diagonal just below the main one, each "
         "query's weight on the token before it (the head that owns 'previous')."),
    ]),
    "kv_cache": ("06_cost_and_fused", "from attnviz.widgets import kv_cache_explorer", [
        ("kv_1_start", "kv_cache_explorer()",
         "Where it opens: 32 layers, 32 query heads, 8 KV heads, d_head 128, 4096 tokens, float16."),
        ("kv_2_mha", "kv_cache_explorer(n_kv_heads=32)",
         "32 KV heads: full multi-head attention, LLaMA-2 7B's own setting."),
        ("kv_3_mqa", "kv_cache_explorer(n_kv_heads=1)",
         "1 KV head: multi-query attention."),
        ("kv_4_bad",
         "calculator = kv_cache_explorer()\ncalculator.controls['n_kv_heads'].value = 5\ncalculator",
         "5 KV heads do not divide 32 query heads: the explorer explains why, in words."),
    ]),
    "induction_heads": ("07_tiny_gpt", INDUCTION_SETUP, [
        ("induction_1_previous", "head_explorer(example_weights, tokens=tokens, mask=example_mask)",
         "Notebook 07's trained model (seed 0) on a sequence of period 12, layer 0 head 0 enlarged: the "
         "previous-token head. Point at the sub-diagonal through the first 12 queries: each looks at "
         "the position just before it (queries 1 to 11)."),
        ("induction_2_induction", "view = head_explorer(example_weights, tokens=tokens, mask=example_mask)\n"
                                  "view.controls['layer'].value = 1\nview",
         "The same model, layer 1 head 0 enlarged: an induction head. Point at the bright first column "
         "(queries whose token has not occurred yet rest on position 0), then at the stripe from query "
         "12 on, 11 positions back: query 12:2 looks at 1:18, the token that followed the earlier 2."),
    ]),
}


def _notebook(setup: str, pictures) -> dict:
    def cell(source):
        return {"cell_type": "code", "execution_count": None, "id": f"c{len(cells)}", "metadata": {},
                "outputs": [], "source": textwrap.dedent(source).strip()}
    cells = []
    cells.append(cell(setup))
    for _, code, _ in pictures:
        cells.append(cell(code))
    kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}


_JS_PAINTED = """(count) => {
  const roots = document.querySelectorAll('[data-attnviz-paint]');
  return roots.length === count && Array.from(roots).every(r => Number(r.dataset.attnvizPaint) >= 1);
}"""


def shoot(page: NotebookPage, count: int, stems: list[str], out: Path) -> dict[Path, str]:
    """Each explorer's picture, written to ``out``: {path: the text the picture shows}."""
    page.page.wait_for_function(_JS_PAINTED, arg=count, timeout=120_000, polling=500)
    page.hide_side_panels()
    paths = {}
    for index, stem in enumerate(stems):
        root = page.page.locator("[data-attnviz-paint]").nth(index)
        area = root.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')][1]")
        area.scroll_into_view_if_needed()
        page.page.wait_for_timeout(600)
        path = out / f"{stem}.png"
        area.screenshot(path=str(path))
        paths[path] = " ".join(area.inner_text().split())
    return paths


def index_page(out: Path) -> str:
    lines = ["# Explorer fallbacks: what each explorer shows at the settings the lessons use", "",
             "Made by `tools/make_fallbacks.py` (screenshots of the explorers themselves, drawn in "
             "JupyterLab in headless Chromium from a fresh kernel). Use them when an explorer does not "
             "render in class; each caption says what to point at. The numbers in each picture are the "
             "explorer's own.", ""]
    for name, (notebook, _, pictures) in SETTINGS.items():
        lines += [f"## {name} explorer", "", f"In notebook {notebook[:2]}, `{notebook}.ipynb`.", ""]
        for stem, code, caption in pictures:
            setting = code.splitlines()[-1] if "\n" not in code else code.replace("\n", "; ")
            lines += [f"**{caption}** (`{setting}`)", "", f"![{caption}]({stem}.png)", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "fallback")
    parser.add_argument("--only", nargs="*", default=None, help="explorer names, e.g. mask kv_cache")
    args = parser.parse_args(argv)
    reason = browser_missing_reason()
    if reason:
        print(f"cannot take the pictures: {reason}")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="attnviz-fallback-"))
    for name, (_, setup, pictures) in SETTINGS.items():
        (work / f"fallback_{name}.ipynb").write_text(json.dumps(_notebook(setup, pictures), indent=1))
    server = LabServer(work, port=args.port)
    settings = server.tmp / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"windowingMode": "none"}))   # draw every cell, on screen or not
    server.start()
    failures = []
    texts_path = args.out / "texts.json"
    texts = json.loads(texts_path.read_text()) if texts_path.exists() else {}
    try:
        with chromium() as browser:
            for name, (_, _, pictures) in SETTINGS.items():
                if args.only and name not in args.only:
                    continue
                page = NotebookPage(server, browser, f"fallback_{name}.ipynb", viewport=(1200, 2200)).open()
                progress = page.run_all(timeout=300)
                problems = describe_failures(name, progress, page.inspect())
                if problems:
                    failures += problems
                else:
                    shot = shoot(page, len(pictures), [stem for stem, _, _ in pictures], args.out)
                    for path, text in shot.items():
                        texts[path.stem] = text
                        size = path.stat().st_size // 1024
                        print(f"wrote {path.relative_to(REPO)} ({size} KiB)", flush=True)
                page.close()
                server.shutdown_kernels()
    finally:
        server.stop()
    (args.out / "index.md").write_text(index_page(args.out))
    texts_path.write_text(json.dumps(dict(sorted(texts.items())), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {(args.out / 'index.md').relative_to(REPO)}")
    if failures:
        print("\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
