"""Every notebook, run in JupyterLab in a real browser: no cell errors, every widget and figure drawn.

A test of the Python side cannot see a blank figure or "Error displaying widget"; this one looks at
the page. It starts a private JupyterLab (127.0.0.1, a token, a free port, temporary config and a
fresh workspace), opens each notebook in headless Chromium from the system's packages, runs all
cells, waits for the kernel to go idle and then checks every cell's outputs in the page, and that
JupyterLab's Log Console stayed empty (kernel tracebacks from widget messages land there, not in a
cell). Then it moves every control of every explorer once (sliders with the keyboard) and checks
that each one repainted its explorer (the root's data-attnviz-paint counter went up) or, for a
rejected setting, said why in words; the Log Console must still be empty. Known cells of the mask
explorer are checked by their painted pixels. The explorers also run in Jupyter Notebook 7.
Screenshots per notebook, light and dark, go to screenshots/ (ignored by git; `make screenshots`
copies them to docs/screenshots/ for the README).

Without /usr/bin/chromium the tests skip with the reason, unless ATTNVIZ_REQUIRE_BROWSER=1 (CI sets
it), in which case they fail.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from _lab import (
    REPO,
    NotebookPage,
    browser_missing_reason,
    cell_colour,
    chromium,
    colour_distance,
    describe_failures,
    explorers,
    lab_server,
    log_entries,
    log_text,
    move_every_control,
    press_slider_key,
    weight_cell_failures,
)

NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SCREENSHOTS = REPO / "screenshots"
SELF_CHECK = "zz_browser_self_check.ipynb"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    reason = browser_missing_reason()
    if reason:
        if os.environ.get("ATTNVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test is required here (ATTNVIZ_REQUIRE_BROWSER=1) but {reason}")
        pytest.skip(f"browser test skipped: {reason}")
    with chromium() as launched:
        yield launched


VIRIDIS_1, MASKED_GREY, NAN_PINK = "#fde725", "#c8c8c8", "#ff66cc"


def _self_check_notebook(path: Path) -> Path:
    """A notebook with one of each thing the browser test must catch, next to a working explorer."""
    code = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Browser self-check"),
        code("import ipywidgets as widgets\nimport plotly.graph_objects as go\n\n"
             "from attnviz.widgets import mask_explorer, saturation_explorer\n\n"
             "mask_explorer(mask='causal')"),
        code("unwired = widgets.IntSlider(description='unwired')   # planted: repaints nothing\n"
             "widgets.VBox([unwired, saturation_explorer().widget])"),
        code("raises = widgets.IntSlider(description='raises')\n"
             "raises.observe(lambda change: 1 / 0, names='value')   # planted: a Log Console traceback\n"
             "raises"),
        code("go.Figure(go.Bar(x=['a', 'b'], y=[1, 2]))"),
        code("from IPython.display import display\n\n"
             "display({'application/vnd.jupyter.widget-view+json':"
             " {'model_id': 'f' * 32, 'version_major': 2, 'version_minor': 0}}, raw=True)"),
        code("raise ValueError('a planted failure')"),
        code("print('never runs')"),
    ]
    nbformat.write(nb, path)
    return path


BURST = "zz_browser_burst.ipynb"


def _burst_notebook(path: Path) -> Path:
    """Two explorers on the same settings whose temperature sliders the kernel links: the first paints
    a burst of presses from prepared pictures, the twin only ever paints the kernel's own."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        "import traitlets\n\nfrom attnviz.widgets import saturation_explorer\n\n"
        "fast, twin = saturation_explorer(n=8, d_k=64), saturation_explorer(n=8, d_k=64)\n"
        "twin.step_ahead = False\n"
        "traitlets.link((fast.controls['temperature'], 'value'), (twin.controls['temperature'], 'value'))\n"
        "fast"), nbformat.v4.new_code_cell("twin")]
    nbformat.write(nb, path)
    return path


def _all_explorers_notebook(path: Path) -> Path:
    """Every explorer once, on small inputs (for Jupyter Notebook 7)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (
        "import torch\n\nfrom attnviz.widgets import (head_explorer, kv_cache_explorer, lookup_explorer,"
        " mask_explorer,\n                             saturation_explorer)\n\nmask_explorer(mask='causal')",
        "saturation_explorer()", "lookup_explorer()",
        "head_explorer(torch.rand(2, 2, 4, 4, generator=torch.Generator().manual_seed(0)).softmax(-1))",
        "kv_cache_explorer()")]
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def lab(browser, tmp_path_factory):
    folder = tmp_path_factory.mktemp("selfcheck")
    extra = [_self_check_notebook(folder / SELF_CHECK), _burst_notebook(folder / BURST)]
    with lab_server(REPO / "notebooks", extra_files=extra) as server:
        yield server


@pytest.fixture
def notebook_page(lab, browser):
    pages = []

    def open_page(name):
        page = NotebookPage(lab, browser, name).open()
        pages.append(page)
        return page

    yield open_page
    for page in pages:
        page.close()
    lab.shutdown_kernels()


def _screenshot(page: NotebookPage, name: str) -> Path:
    page.hide_side_panels()
    for selector in ("[data-attnviz-paint]", ".jupyter-widgets", ".js-plotly-plot", ".jp-Cell"):
        if page.scroll_to(selector):
            break
    return page.screenshot(SCREENSHOTS / name)


def _set_theme(page: NotebookPage, theme: str) -> None:
    """Switch JupyterLab's theme; wait until the page and every explorer repainted in it."""
    light = "true" if theme == "JupyterLab Light" else "false"
    before = [e["paints"] for e in explorers(page)]
    page.page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
    page.page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{light}'", timeout=30_000)
    if before:
        page.page.wait_for_function(
            "(before) => Array.from(document.querySelectorAll('[data-attnviz-root]'))"
            ".every((root, i) => Number(root.dataset.attnvizPaint) > before[i])", arg=before, timeout=30_000)
    page.page.wait_for_timeout(500)


def _sweep_failures(name: str, moves: list[dict], keyboard: bool = True) -> list[str]:
    """A control that neither repainted its explorer nor said why, or a slider deaf to the keyboard."""
    failures = []
    for move in moves:
        where = f"{name}, cell {move['cell']}, {move['explorer']} explorer, control {move['control']!r}"
        if move["outcome"] is None:
            failures.append(f"{where}: {move['did']} and the explorer did not repaint within 30 s "
                            f"(data-attnviz-paint did not change) nor show a problem")
        elif move["outcome"] == "problem shown" and move.get("put_back") != "problem cleared":
            failures.append(f"{where}: {move['did']} showed {move.get('problem')!r}; putting it back "
                            f"did not clear it ({move.get('put_back')})")
        if keyboard and move.get("keyboard_ignored"):
            failures.append(f"{where}: the slider ignored the arrow key")
    return failures


def _log_failures(name: str, page: NotebookPage, when: str) -> list[str]:
    count = log_entries(page)
    if not count:
        return []
    entries = log_text(page)
    return [f"{name}: {count} entries in the Log Console {when}:\n  "
            + "\n  ".join(entry[:300] for entry in entries[:3])]


def test_the_browser_check_catches_what_it_should(notebook_page):
    """The checks below can fail: a planted error, a broken widget, a dead control and a traceback."""
    page = notebook_page(SELF_CHECK)
    progress = page.run_all()
    report = page.inspect(settle=15)
    failures = describe_failures(SELF_CHECK, progress, report)
    assert any("cell 6" in line and "ValueError: a planted failure" in line for line in failures), failures
    assert any("cell 5" in line and "Error displaying widget" in line for line in failures), failures
    assert any("cells [7]" in line and "not run" in line for line in failures), failures
    assert len(failures) == 3, failures                  # nothing else flagged: the figures all drew
    assert sum(cell["plots"] for cell in report["cells"]) == 1
    assert log_entries(page) == 0

    # known cells, by their pixels: causal row 0 puts all its weight on key 0, key 1 is masked
    found = explorers(page)
    assert [e["explorer"] for e in found] == ["mask", "saturation"], found
    assert colour_distance(cell_colour(page, 0, "weights/0", 0, 0), VIRIDIS_1) <= 3
    assert colour_distance(cell_colour(page, 0, "weights/0", 0, 1), MASKED_GREY) <= 3
    assert cell_colour(page, 0, "no such panel", 0, 0) is None
    # a weight strictly between 0 and 1 (causal row 1 shares its weight over keys 0 and 1)
    assert weight_cell_failures(page, SELF_CHECK, 1, 0) == []

    moves = move_every_control(page, timeout=5)
    dead = [m["control"] for m in moves if m["outcome"] is None]
    assert dead == ["unwired"], moves                       # only the planted unwired control
    assert len(_sweep_failures(SELF_CHECK, moves)) == 1
    assert {m["explorer"] for m in moves if m["outcome"] == "repainted"} == {"mask", "saturation"}
    assert log_entries(page) == 0                         # the explorers logged nothing

    slider = page.page.locator(".widget-slider", has_text="raises").locator('[role="slider"]')
    slider.focus()
    page.page.keyboard.press("ArrowRight")
    page.page.wait_for_function("() => document.querySelector('.jp-LogConsoleStatusItem [title]')",
                                timeout=15_000)
    assert log_entries(page) >= 1
    assert any("ZeroDivisionError" in line for line in _log_failures(SELF_CHECK, page, "(planted)"))
    assert page.external_requests == []
    _screenshot(page, "_self_check.png")


_JS_PICTURE = """(index) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const canvas = root && root.querySelector('canvas[data-attnviz-panel="scaled"]');
  const title = root && root.querySelector('.attnviz-section-title');
  return canvas && {pixels: canvas.toDataURL(), title: title && title.textContent,
                    paints: Number(root.dataset.attnvizPaint)};
}"""


def test_a_burst_of_presses_ends_on_the_kernels_own_picture(notebook_page):
    """Twelve quick presses, then the explorer that painted them from prepared pictures shows exactly
    what its twin shows, which only ever paints the kernel's pictures (and each press moved it on)."""
    page = notebook_page(BURST)
    progress = page.run_all()
    failures = describe_failures(BURST, progress, page.inspect())
    assert not failures, failures
    found = explorers(page)
    assert [e["explorer"] for e in found] == ["saturation", "saturation"], found
    fast, twin = (e["index"] for e in found)
    start = page.page.evaluate(_JS_PICTURE, fast)
    for key in ("ArrowRight", "ArrowLeft"):
        press_slider_key(page, "temperature", key)     # marks the first temperature slider: fast's
        for _ in range(11):
            page.page.keyboard.press(key)
        settled, last = 0, None
        for _ in range(150):                           # until neither repaints for a second
            now = [page.page.evaluate(_JS_PICTURE, i) for i in (fast, twin)]
            settled = settled + 1 if now == last else 0
            last = now
            if settled >= 10:
                break
            page.page.wait_for_timeout(100)
        shown, kernels = last
        assert shown["title"] == kernels["title"], (key, shown["title"], kernels["title"])
        assert shown["pixels"] == kernels["pixels"], f"after 12 x {key} the pictures differ"
    assert shown["title"] == start["title"] and shown["paints"] >= start["paints"] + 2
    assert log_entries(page) == 0 and page.page_errors == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_in_browser(notebook_page, path):
    page = notebook_page(path.name)
    progress = page.run_all()
    report = page.inspect()
    failures = describe_failures(path.name, progress, report)
    failures += [f"{path.name}: the page raised {error}" for error in page.page_errors]
    failures += [f"{path.name}: the page tried to reach {url} (nothing may need the internet)"
                 for url in page.external_requests]
    failures += _log_failures(path.name, page, "after Run All")
    found = explorers(page)
    failures += [f"{path.name}, cell {e['cell']}: the {e['explorer']} explorer never painted"
                 for e in found if e["paints"] < 1]
    if path.name.startswith("04_") and not failures:
        # the explorer is back at padding, -inf, float32: sequence 2 is all padding, so its rows are
        # NaN (pink); sequence 1 has two pads, so key 4 is masked (grey)
        index = next(e["index"] for e in found if e["explorer"] == "mask")
        for panel, i, j, want in (("weights/2", 0, 0, NAN_PINK), ("weights/1", 0, 4, MASKED_GREY)):
            got = cell_colour(page, index, panel, i, j)
            if got is None or colour_distance(got, want) > 3:
                failures.append(f"{path.name}: mask explorer's {panel} cell ({i}, {j}) is painted {got}, "
                                f"not {want}")

    shot = _screenshot(page, f"{path.stem}.png")
    if not failures:
        _set_theme(page, "JupyterLab Dark")
        _screenshot(page, f"{path.stem}_dark.png")
        if found:                                   # the explorers in the high-contrast theme, too
            _set_theme(page, "JupyterLab Dark High Contrast")
            _screenshot(page, f"{path.stem}_high_contrast.png")
        _set_theme(page, "JupyterLab Light")
        failures += weight_cell_failures(page, path.name)
        moves = move_every_control(page)
        failures += _sweep_failures(path.name, moves)
        failures += _log_failures(path.name, page, "after every explorer control was moved")
        failures += describe_failures(path.name, progress, page.inspect(settle=5))
        failures += [f"{path.name}: the page raised {error}" for error in page.page_errors]
    if failures and page.console_errors:
        failures.append("browser console errors:\n  " + "\n  ".join(e[:300] for e in page.console_errors[:5]))
    assert not failures, "\n".join(failures) + f"\n(screenshot: {shot})"


@pytest.fixture(scope="module")
def notebook7(browser, tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebook7")
    _all_explorers_notebook(folder / "explorers.ipynb")
    with lab_server(folder, app="notebook") as server:
        yield server


def test_explorers_in_jupyter_notebook_7(notebook7, browser):
    """Every explorer draws and answers every control in Notebook 7 too (sliders by mouse: see below)."""
    page = NotebookPage(notebook7, browser, "explorers.ipynb").open()
    # Notebook 7.6.5's own page raises this on load, even for a notebook holding only `1`
    own = "Cannot read properties of undefined (reading 'schema')"
    try:
        progress = page.run_all()
        failures = describe_failures("Notebook 7", progress, page.inspect())
        found = explorers(page)
        assert sorted(e["explorer"] for e in found) == ["head", "kv_cache", "lookup", "mask", "saturation"]
        assert all(e["paints"] >= 1 for e in found), found
        assert colour_distance(cell_colour(page, 0, "weights/0", 0, 0), VIRIDIS_1) <= 3
        assert colour_distance(cell_colour(page, 0, "weights/0", 0, 1), MASKED_GREY) <= 3
        page.screenshot(SCREENSHOTS / "_notebook7.png")
        # Notebook 7 (7.6.5) swallows arrow keys before an ipywidgets slider sees them (its keydown
        # handler calls preventDefault in the capture phase), so sliders are moved with the mouse here
        failures += _sweep_failures("Notebook 7", move_every_control(page), keyboard=False)
        failures += [f"Notebook 7: the page raised {error}" for error in page.page_errors if error != own]
        assert not failures, "\n".join(failures)
    finally:
        page.close()
        notebook7.shutdown_kernels()
