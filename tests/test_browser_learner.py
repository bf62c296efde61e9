"""The learner's edition in a real browser, in JupyterLab and in Notebook 7, as a learner meets it.

For each notebook with exercises: opened in JupyterLab, it is not marked modified (its
language_info is the kernel's); Run All shows no error; no cell shows solution code (code cells
hold only the stubs; a solution in a markdown cell sits inside a *closed* ``<details>``, checked on
the rendered page); each check cell shows the friendly "not written yet" verdict. Then a learner
writes into two exercises the way one would in the editor (click, select all, type): a correct
``my_attention`` in 02, reruns the cells and reads the pass verdict; a ``my_causal_mask`` with the
triangle the wrong way up in 04, and reads the bug the checker names. Clicking *Show one solution*
opens the solution. Screenshots of the three verdicts, light and dark, go to screenshots/.

Skipped like tests/test_browser.py without Chromium, unless ATTNVIZ_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import contextlib
import json
import sys

import pytest
from _lab import (
    REPO,
    NotebookPage,
    describe_failures,
    lab_server,
    log_entries,
)

sys.path.insert(0, str(REPO / "tools"))

import make_student  # noqa: E402
from test_learner_edition import EXERCISES, solution_lines  # noqa: E402

SCREENSHOTS = REPO / "screenshots"
pytestmark = pytest.mark.browser

CORRECT_02 = '''def my_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights'''

BUGGY_04 = '''def my_causal_mask(n):
    return torch.ones(n, n, dtype=torch.bool).triu()'''

# What each cell shows: a code cell its source; a markdown cell its rendered text outside closed
# <details> blocks (and whether any <details> is open). Each cell is scrolled into view first, since
# JupyterLab lays out offscreen cells lazily.
_JS_SHOWN = r"""async () => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const shown = [];
  for (const [index, cell] of notebook.widgets.entries()) {
    if (cell.model.type === 'code') {
      shown.push({index, kind: 'code', text: cell.model.sharedModel.getSource(), open: 0});
      continue;
    }
    cell.node.scrollIntoView({block: 'center'});
    await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    const rendered = cell.node.querySelector('.jp-RenderedMarkdown');
    if (!rendered) { shown.push({index, kind: 'markdown', text: null, open: 0}); continue; }
    const copy = rendered.cloneNode(true);
    for (const details of copy.querySelectorAll('details')) {
      for (const child of Array.from(details.childNodes)) {
        if (child.nodeName !== 'SUMMARY') child.remove();
      }
    }
    shown.push({index, kind: 'markdown', text: copy.textContent,
                open: rendered.querySelectorAll('details[open]').length,
                details: rendered.querySelectorAll('details').length});
  }
  return shown;
}"""

# What the learner sees under a cell. JupyterLab skips laying out cells far off screen (CSS
# content-visibility: auto), and innerText of a skipped cell is empty: scroll it into view first.
_JS_OUTPUT_TEXT = r"""async (index) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[index];
  cell.node.scrollIntoView({block: 'center'});
  await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  return cell.outputArea.node.innerText;
}"""

# Whether JupyterLab marks the notebook modified once the kernel's info (its language_info) is in.
_JS_DIRTY_ONCE_CONNECTED = r"""async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.sessionContext.session.kernel.info;
  await new Promise(resolve => setTimeout(resolve, 1000));
  return panel.context.model.dirty;
}"""


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("learner") / "student"
    make_student.make_student(REPO / "notebooks", out)
    return out


def _cell_index(page: NotebookPage, needle: str, kind: str = "code") -> int:
    return page.page.evaluate("""([needle, kind]) => window.jupyterapp.shell.currentWidget.content.widgets
      .findIndex(c => c.model.type === kind && c.model.sharedModel.getSource().includes(needle))""",
                              [needle, kind])


def _mark_cell(page: NotebookPage, index: int) -> str:
    """Scroll cell `index` into view and mark it; returns a selector for it."""
    page.page.evaluate("""(index) => {
      const notebook = window.jupyterapp.shell.currentWidget.content;
      for (const el of notebook.node.querySelectorAll('[data-attnviz-cell]')) {
        el.removeAttribute('data-attnviz-cell');
      }
      const node = notebook.widgets[index].node;
      node.scrollIntoView({block: 'center'});
      node.setAttribute('data-attnviz-cell', 'marked');
    }""", index)
    page.page.wait_for_timeout(300)
    return '[data-attnviz-cell="marked"]'


def _write_and_run(page: NotebookPage, needle: str, code: str) -> None:
    """Click into the exercise cell, select all, type the code, run it (Shift+Enter)."""
    index = _cell_index(page, needle)
    assert index >= 0, needle
    editor = page.page.locator(f"{_mark_cell(page, index)} .cm-content")
    editor.scroll_into_view_if_needed()
    editor.click()
    page.page.keyboard.press("Control+a")
    page.page.keyboard.insert_text(code)
    page.page.keyboard.press("Shift+Enter")       # runs the exercise cell, moves to its check cell


def _run_cell(page: NotebookPage, index: int, timeout: float = 60.0) -> str:
    page.page.evaluate("""(index) => {
      const panel = window.jupyterapp.shell.currentWidget;
      panel.content.activeCellIndex = index;
      panel.content.mode = 'command';
    }""", index)
    before = page.page.evaluate("(i) => window.jupyterapp.shell.currentWidget.content.widgets[i]"
                                ".model.executionCount", index)
    page.page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")
    page.page.wait_for_function("""([i, before]) => {
      const panel = window.jupyterapp.shell.currentWidget;
      const cell = panel.content.widgets[i];
      const kernel = panel.sessionContext.session.kernel;
      return cell.model.executionCount !== before && cell.model.executionCount !== null
        && kernel.status === 'idle';
    }""", arg=[index, before], timeout=timeout * 1000)
    return page.page.evaluate(_JS_OUTPUT_TEXT, index)


def _theme_screenshots(page: NotebookPage, server, index: int, name: str) -> None:
    if server.app != "lab":
        _mark_cell(page, index)
        page.screenshot(SCREENSHOTS / f"learner_{name}_notebook7.png")
        return
    page.hide_side_panels()
    page.page.evaluate("(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node"
                       ".scrollIntoView({block: 'center'})", index)
    page.screenshot(SCREENSHOTS / f"learner_{name}.png")
    for theme, suffix in (("JupyterLab Dark", "_dark"), ("JupyterLab Light", None)):
        light = "true" if theme == "JupyterLab Light" else "false"
        page.page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', "
                           f"{{theme: '{theme}'}})")
        page.page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{light}'", timeout=30_000)
        page.page.wait_for_timeout(400)
        if suffix:
            page.page.evaluate("(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node"
                               ".scrollIntoView({block: 'center'})", index)
            page.screenshot(SCREENSHOTS / f"learner_{name}{suffix}.png")


# Notebook 7 runs the two notebooks the learner writes into; JupyterLab runs every exercise notebook.
CASES = [("lab", p) for p in EXERCISES] + [("notebook", p) for p in EXERCISES if p.name[:2] in ("02", "04")]


@pytest.fixture(scope="module")
def servers(edition, browser):
    """servers(app): JupyterLab's or Notebook 7's server, started when a test first needs it (make test
    hands these tests to its workers one by one: most workers run only JupyterLab's)."""
    with contextlib.ExitStack() as stack:
        started = {}

        def server(app):
            if app not in started:
                started[app] = stack.enter_context(lab_server(edition, app=app))
            return started[app]

        yield server


@pytest.fixture
def notebook_page(servers, browser, lab_page):
    """JupyterLab's notebooks one after another in one page (tests/_lab.py OnePage); Notebook 7 shows
    one notebook per page."""
    opened = []

    def open_page(app, name):
        if app == "lab":
            return lab_page.open(servers(app), browser, name)
        opened.append(NotebookPage(servers(app), browser, name).open())
        return opened[-1]

    yield open_page
    for page in opened:
        page.close()


@pytest.mark.parametrize("app, path", CASES, ids=[f"{'JupyterLab' if a == 'lab' else 'Notebook 7'}-{p.stem}"
                                                  for a, p in CASES])
def test_the_learners_edition_in_the_browser(servers, notebook_page, app, path):
    server = servers(app)
    page = notebook_page(app, path.name)
    try:
        if app == "lab":    # only opened, not yet run: not marked modified (no "save your changes?")
            assert page.page.evaluate(_JS_DIRTY_ONCE_CONNECTED) is False, \
                f"{path.name} shows as modified once its kernel connected: is its language_info the kernel's?"
        progress = page.run_all()
        failures = describe_failures(path.name, progress, page.inspect())
        failures += [f"{path.name}: the page raised {e}" for e in page.page_errors
                     if "reading 'schema'" not in e]       # Notebook 7.6.5's own error on load
        shown = page.page.evaluate(_JS_SHOWN)
        for cell in shown:
            if cell["kind"] == "markdown" and cell["text"] is None:
                failures.append(f"{path.name}, cell {cell['index']}: markdown not rendered")
            if cell["open"]:
                failures.append(f"{path.name}, cell {cell['index']}: a <details> block is open")
        for block in solution_lines(json.loads(path.read_text())):
            for cell in shown:
                lines = {line.strip() for line in (cell["text"] or "").split("\n")}
                seen = [line for line in block if line in lines]
                if len(seen) >= len(block) / 2:
                    failures.append(f"{path.name}, cell {cell['index']} shows a solution: {seen}")
        checks = [c["index"] for c in shown if c["kind"] == "code"
                  and make_student.calls_check(c["text"]) and "### BEGIN" not in c["text"]]
        assert checks, path.name
        for index in checks:
            verdict = page.page.evaluate(_JS_OUTPUT_TEXT, index)
            if "not written yet" not in verdict or "Traceback" in verdict:
                failures.append(f"{path.name}, cell {index}: the check shows {verdict[:200]!r}")
        assert sum(c.get("details", 0) for c in shown) >= len(checks)   # the solutions, collapsed
        assert not failures, "\n".join(failures)
        if path.name.startswith("02_"):
            _theme_screenshots(page, server, checks[0], "not_written_yet")
            _write_and_run(page, "def my_attention", CORRECT_02)
            check = _cell_index(page, "check_attention(my_attention)")
            verdict = _run_cell(page, check)
            assert "✓ check_attention: correct" in verdict, verdict
            shown_solution = _mark_cell(page, check + 1)
            page.page.locator(f"{shown_solution} summary").click()
            opened = page.page.locator(shown_solution).inner_text()
            assert "torch.softmax(scores, dim=-1)" in opened, opened     # one click opens the solution
            _theme_screenshots(page, server, check, "passed")
        if path.name.startswith("04_"):
            _write_and_run(page, "def my_causal_mask", BUGGY_04)
            check = _cell_index(page, "check_causal_mask(my_causal_mask)")
            verdict = _run_cell(page, check)
            assert "causal_future_visible" in verdict and "Fix" in verdict, verdict
            _theme_screenshots(page, server, check, "named_bug")
        if app == "lab":
            assert log_entries(page) == 0
    finally:
        server.shutdown_kernels()
