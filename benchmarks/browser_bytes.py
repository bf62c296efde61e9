"""Bytes the browser receives over the kernel websocket: per notebook (Run All), per explorer, per update.

    .venv/bin/python benchmarks/browser_bytes.py [--notebooks 01 03] [--skip-course]

Counts every websocket frame the page receives (Playwright's page.on("websocket")), in JupyterLab
in headless Chromium with the course's own server (tests/_lab.py). That is what a remote server
(Binder, a classroom JupyterHub) must send to each learner.

* per notebook: from Run All until the kernel is idle and every widget drew; the total is the
  whole course;
* per explorer, first display: a one-cell notebook showing that explorer, minus the same notebook
  showing ``None`` (the kernel's own status and reply messages);
* per update: one d_k keypress on the saturation explorer at n = 8 (and 128), from the keypress until
  the explorer repainted and the kernel went idle (median of 9).

Targets (issue 13): the course <= 3 MB; an explorer's first display <= 200 kB; an update at n = 8
<= 10 kB. Needs /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _lab import (  # noqa: E402
    REPO,
    NotebookPage,
    WebsocketBytes,
    browser_missing_reason,
    chromium,
    describe_failures,
    explorer_state,
    explorers,
    find_slider,
    lab_server,
    move_slider_and_wait,
    press_slider_key,
    wait_repaint,
)

EXPLORERS = {
    "saturation_explorer()": "from attnviz.widgets import saturation_explorer\nsaturation_explorer()",
    "saturation_explorer(n=128)": ("from attnviz.widgets import saturation_explorer\n"
                                   "saturation_explorer(n=128)"),
    "lookup_explorer()": "from attnviz.widgets import lookup_explorer\nlookup_explorer()",
    "mask_explorer()": "from attnviz.widgets import mask_explorer\nmask_explorer()",
    "head_explorer(2 x 4 heads, 16 tokens)": (
        "import torch\nfrom attnviz.widgets import head_explorer\n"
        "head_explorer(torch.rand(2, 4, 16, 16, generator=torch.Generator().manual_seed(0)).softmax(-1))"),
    "kv_cache_explorer()": "from attnviz.widgets import kv_cache_explorer\nkv_cache_explorer()",
}
COURSE_LIMIT, EXPLORER_LIMIT, UPDATE_LIMIT = 3e6, 200e3, 10e3


def _write(folder: Path, name: str, sources: list[str]) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, folder / name)
    return name


def run_all_bytes(server, browser, name: str) -> tuple[int, list[str]]:
    """Bytes received from Run All to idle, and any failure the page showed."""
    page = NotebookPage(server, browser, name)
    counter = WebsocketBytes(page)
    try:
        page.open()
        page.page.wait_for_timeout(500)
        counter.reset()                       # opening the notebook is not part of Run All
        progress = page.run_all(timeout=400)
        failures = describe_failures(name, progress, page.inspect())
        page.page.wait_for_timeout(1000)      # late widget messages
        return counter.reset(), failures
    finally:
        page.close()
        server.shutdown_kernels()


def update_bytes(server, browser, name: str, presses: int = 9) -> list[int]:
    page = NotebookPage(server, browser, name)
    counter = WebsocketBytes(page)
    try:
        page.open()
        page.run_all()
        page.inspect()
        found = explorers(page)
        sizes = []
        for press in range(presses + 1):
            find_slider(page, "d_k")
            page.page.wait_for_timeout(400)
            counter.reset()
            if found:
                before = explorer_state(page, found[0]["index"])
                press_slider_key(page, "d_k", "ArrowRight" if press % 2 == 0 else "ArrowLeft")
                repainted = wait_repaint(page, found[0]["index"], before) is not None
            else:      # an older explorer drawn by plotly (no data-attnviz-paint): watch its images
                repainted = move_slider_and_wait(page, "d_k")["changed"]
            if not repainted:
                raise RuntimeError(f"{name}: the explorer did not repaint after a d_k keypress")
            page.page.wait_for_timeout(400)    # the kernel's idle status and any trailing message
            if press:                          # the first press is a warm-up
                sizes.append(counter.reset())
        return sizes
    finally:
        page.close()
        server.shutdown_kernels()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", default=None,
                        help="prefixes, e.g. 01 03 (default: all)")
    parser.add_argument("--skip-course", action="store_true", help="only the explorers and updates")
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the course checkout whose notebooks to run")
    parser.add_argument("--python", default=None, help="the Python that runs the server (and kernel)")
    args = parser.parse_args(argv)
    reason = browser_missing_reason()
    if reason:
        print(f"cannot run: {reason}")
        return 2
    notebooks = sorted((args.repo / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.notebooks:
        notebooks = [p for p in notebooks if p.name[:2] in args.notebooks]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for path in notebooks:
            (folder / path.name).write_bytes(path.read_bytes())
        names = {label: _write(folder, f"bytes_{i}.ipynb", [source])
                 for i, (label, source) in enumerate(EXPLORERS.items())}
        baseline = _write(folder, "bytes_none.ipynb", ["None"])
        updates = {n: _write(folder, f"bytes_update_{n}.ipynb",
                             [f"from attnviz.widgets import saturation_explorer\nsaturation_explorer(n={n})"])
                   for n in (8, 128)}
        with lab_server(folder, python=args.python) as server, chromium() as browser:
            course = {} if args.skip_course else {
                p.name: run_all_bytes(server, browser, p.name) for p in notebooks}
            empty, _ = run_all_bytes(server, browser, baseline)
            first = {label: run_all_bytes(server, browser, name) for label, name in names.items()}
            per_update = {n: update_bytes(server, browser, name) for n, name in updates.items()}

    if course:
        print("Run All: bytes received over the kernel websocket")
        print(f"{'notebook':<40} {'received':>12}  problems")
        print("-" * 70)
        for name, (size, failures) in course.items():
            print(f"{name:<40} {size / 1e6:>9.2f} MB  {len(failures) or ''}")
        total = sum(size for size, _ in course.values())
        print(f"{'whole course':<40} {total / 1e6:>9.2f} MB  target <= {COURSE_LIMIT / 1e6:.0f} MB: "
              f"{'met' if total <= COURSE_LIMIT else 'MISSED'}")
        print()
    print(f"First display of one explorer (a one-cell notebook, minus {empty / 1e3:.1f} kB "
          "for a cell showing None)")
    print(f"{'explorer':<40} {'received':>12}  target <= {EXPLORER_LIMIT / 1e3:.0f} kB")
    print("-" * 70)
    for label, (size, failures) in first.items():
        size -= empty
        verdict = "met" if size <= EXPLORER_LIMIT else "MISSED"
        print(f"{label:<40} {size / 1e3:>9.1f} kB  {verdict}{'  (page problems!)' if failures else ''}")
    print()
    print("One d_k keypress on the saturation explorer: bytes until repainted and idle (median of 9)")
    print(f"{'positions n':<40} {'received':>12}  target <= {UPDATE_LIMIT / 1e3:.0f} kB at n = 8")
    print("-" * 70)
    for n, sizes in per_update.items():
        median = statistics.median(sizes)
        verdict = ("met" if median <= UPDATE_LIMIT else "MISSED") if n == 8 else ""
        print(f"{n:<40} {median / 1e3:>9.1f} kB  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
