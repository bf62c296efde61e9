"""Every notebook, run in JupyterLab in a real browser: no cell errors, every widget and figure drawn.

A test of the Python side cannot see a blank figure or "Error displaying widget"; this one looks at
the page. It starts a private JupyterLab (127.0.0.1, a token, a free port, temporary config and a
fresh workspace), opens each notebook in headless Chromium from the system's packages, runs all
cells, waits for the kernel to go idle and then checks every cell's outputs in the page. On the
saturation explorer it moves the d_k slider with the keyboard and checks that the heatmap repainted.
A screenshot per notebook goes to screenshots/ (ignored by git; `make screenshots` copies them to
docs/screenshots/ for the README).

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
    chromium,
    describe_failures,
    find_slider,
    lab_server,
    move_slider_and_wait,
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


def _self_check_notebook(path: Path) -> Path:
    """A notebook with one of each thing the browser test must catch, and a working slider."""
    code = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Browser self-check"),
        code("import ipywidgets as widgets\nimport numpy as np\nimport plotly.graph_objects as go\n\n"
             "figure = go.FigureWidget(go.Heatmap(z=np.eye(4), zmin=0, zmax=1))\n"
             "slider = widgets.IntSlider(value=1, min=1, max=8, description='d_k')\n"
             "slider.observe(lambda change: setattr(figure.data[0], 'z', np.eye(4) * change['new'] / 8),"
             " names='value')\n"
             "widgets.VBox([slider, figure])"),
        code("frozen = go.FigureWidget(go.Heatmap(z=np.eye(3)))\n"
             "widgets.VBox([widgets.IntSlider(value=1, min=1, max=8, description='unwired'), frozen])"),
        code("go.Figure(go.Bar(x=['a', 'b'], y=[1, 2]))"),
        code("from IPython.display import display\n\n"
             "display({'application/vnd.jupyter.widget-view+json':"
             " {'model_id': 'f' * 32, 'version_major': 2, 'version_minor': 0}}, raw=True)"),
        code("raise ValueError('a planted failure')"),
        code("print('never runs')"),
    ]
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def lab(browser, tmp_path_factory):
    extra = _self_check_notebook(tmp_path_factory.mktemp("selfcheck") / SELF_CHECK)
    with lab_server(REPO / "notebooks", extra_files=[extra]) as server:
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
    for selector in ('[data-attnviz-test="root"]', ".jupyter-widgets", ".js-plotly-plot", ".jp-Cell"):
        if page.scroll_to(selector):
            break
    return page.screenshot(SCREENSHOTS / name)


def test_the_browser_check_catches_what_it_should(notebook_page):
    """The checks below can fail: a planted error, a missing widget and an unwired slider are caught."""
    page = notebook_page(SELF_CHECK)
    progress = page.run_all()
    report = page.inspect(settle=15)
    failures = describe_failures(SELF_CHECK, progress, report)
    assert any("cell 5" in line and "ValueError: a planted failure" in line for line in failures), failures
    assert any("cell 4" in line and "Error displaying widget" in line for line in failures), failures
    assert any("cells [6]" in line and "not run" in line for line in failures), failures
    assert len(failures) == 3, failures                  # nothing else flagged: the figures all drew
    assert report["figure_widgets"] == 2
    assert sum(cell["plots"] for cell in report["cells"]) == 1

    moved = move_slider_and_wait(page, "d_k")
    assert moved["found"] and moved["changed"], moved
    assert moved["value_before"] != moved["value_after"], moved
    unwired = move_slider_and_wait(page, "unwired", timeout=3)
    assert unwired["found"] and not unwired["changed"], unwired
    assert find_slider(page, "no such slider") is None
    assert page.external_requests == []
    _screenshot(page, "_self_check.png")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_in_browser(notebook_page, path):
    page = notebook_page(path.name)
    progress = page.run_all()
    report = page.inspect()
    failures = describe_failures(path.name, progress, report)
    failures += [f"{path.name}: the page raised {error}" for error in page.page_errors]
    failures += [f"{path.name}: the page tried to reach {url} (nothing may need the internet)"
                 for url in page.external_requests]

    slider = find_slider(page, "d_k")
    if path.name.startswith("03_") and slider is None:
        failures.append(f"{path.name}: no slider labelled 'd_k' (the saturation explorer) on the page")
    if slider is not None and not failures:
        moved = move_slider_and_wait(page, "d_k")
        if not moved["changed"]:
            failures.append(f"{path.name}: pressing {moved['key']} on the d_k slider "
                            f"(at {moved['value_before']}) did not repaint the heatmap within 15 s "
                            f"(slider now {moved['value_after']})")
        failures += describe_failures(path.name, progress, page.inspect(settle=5))

    shot = _screenshot(page, f"{path.stem}.png")
    if failures and page.console_errors:
        failures.append("browser console errors:\n  " + "\n  ".join(e[:300] for e in page.console_errors[:5]))
    assert not failures, "\n".join(failures) + f"\n(screenshot: {shot})"
