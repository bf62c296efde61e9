"""What the back row sees: the learner's edition projected at 150% in JupyterLab's Presentation Mode.

    .venv/bin/python tools/projecting_screenshots.py [--port PORT] [--out docs/screenshots]

Builds the learner's edition (tools/make_student.py, into a temporary folder: solutions replaced by
stubs), serves it from a private JupyterLab on 127.0.0.1 (tests/_lab.py) and opens it in headless
Chromium as a 1920 x 1080 projector at 150% browser zoom would show it: a 1280 x 720 CSS-pixel
window drawn at 1.5 device pixels per CSS pixel. It runs each notebook, switches on
View > Appearance > Presentation Mode, hides the side panels, scrolls to the cell in SHOTS and
writes ``projecting_<name>.png``. docs/teaching.md shows them; look at them before a class to judge
whether the back row can read a heatmap's labels.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tools"))

from _lab import LabServer, NotebookPage, browser_missing_reason, chromium, describe_failures  # noqa: E402
from make_student import make_student  # noqa: E402

ZOOM = 1.5                         # browser zoom 150%
PROJECTOR = (1920, 1080)           # device pixels
# (file name, notebook, CSS selector or text of the cell to scroll to the top, what it shows)
SHOTS = [
    ("projecting_02_exercise", "02_scaled_dot_product_attention.ipynb", "text=def my_attention",
     "notebook 02's exercise in the learner's edition: the stub, not the solution, and the check's verdict"),
    ("projecting_03_explorer", "03_why_sqrt_dk.ipynb", "[data-attnviz-paint]",
     "notebook 03's saturation explorer"),
]


class ProjectedPage(NotebookPage):
    """A notebook page drawn at ZOOM device pixels per CSS pixel (what browser zoom does)."""

    def __init__(self, server, browser, name):
        width, height = (round(side / ZOOM) for side in PROJECTOR)
        super().__init__(server, browser, name, viewport=(width, height), zoom=ZOOM)


def shoot(page: ProjectedPage, target: str, path: Path) -> Path:
    page.page.evaluate("window.jupyterapp.commands.execute('application:toggle-presentation-mode')")
    page.hide_side_panels()
    locator = page.page.locator(target).first
    locator.wait_for(timeout=60_000)
    handle = locator.element_handle()
    for _ in range(8):    # cells are laid out lazily, so heights change as the view moves: until it stays
        top = page.page.evaluate(_JS_SCROLL, handle)
        page.page.wait_for_timeout(400)
        if abs(page.page.evaluate(_JS_TOP, handle) - top) < 2:
            break
    page.page.wait_for_timeout(1000)
    return page.screenshot(path)


# the explorer's own output (or the code cell holding the text) to the top of the notebook's view
_JS_SCROLL = """(el) => {
  const box = el.closest('.jp-OutputArea-output') || el.closest('.jp-Cell') || el;
  box.scrollIntoView({block: 'start'});
  return box.getBoundingClientRect().top;
}"""
_JS_TOP = """(el) => {
  const box = el.closest('.jp-OutputArea-output') || el.closest('.jp-Cell') || el;
  return box.getBoundingClientRect().top;
}"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    args = parser.parse_args(argv)
    reason = browser_missing_reason()
    if reason:
        print(f"cannot take the screenshots: {reason}")
        return 1
    student = Path(tempfile.mkdtemp(prefix="attnviz-student-")) / "student"
    make_student(REPO / "notebooks", student)
    failures = []
    server = LabServer(student, port=args.port).start()
    try:
        with chromium() as browser:
            for stem, notebook, target, what in SHOTS:
                page = ProjectedPage(server, browser, notebook).open()
                progress = page.run_all(timeout=300)
                failures += [line for line in describe_failures(notebook, progress, page.inspect())
                             if "NotImplementedError" not in line and "not run" not in line]
                path = shoot(page, target, args.out / f"{stem}.png")
                print(f"wrote {path}: {what}", flush=True)
                page.close()
                server.shutdown_kernels()
    finally:
        server.stop()
    if failures:
        print("\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
