"""Slider keypress to heatmap repainted, in JupyterLab in headless Chromium (target: <= 33 ms at n = 8).

    .venv/bin/python benchmarks/browser_latency.py [--presses 25]

Opens `attnviz.widgets.saturation_explorer(n=...)` for n = 8 and n = 128 positions in a private
JupyterLab (tests/_lab.py), focuses the d_k slider and presses the arrow keys, alternating right and
left. Each time is measured inside the page: from the keydown event to the first animation frame
after the heatmaps' images changed (the frame that paints the new weights). So it covers the whole
round trip: slider -> kernel -> recomputation -> figure update -> plotly redraw. Two frames at 60 Hz
is 33 ms. Needs /usr/bin/chromium and Playwright's Python package.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _lab import (  # noqa: E402
    NotebookPage,
    browser_missing_reason,
    chromium,
    describe_failures,
    keypress_to_repaint_ms,
    lab_server,
)

TARGET_MS = 33.0


def _notebook(folder: Path, n: int) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        f"from attnviz.widgets import saturation_explorer\n\nsaturation_explorer(n={n}, d_k=64)")]
    path = folder / f"latency_n{n}.ipynb"
    nbformat.write(nb, path)
    return path


def measure(server, browser, name: str, presses: int, warmup: int = 3) -> list[float]:
    page = NotebookPage(server, browser, name).open()
    try:
        progress = page.run_all()
        failures = describe_failures(name, progress, page.inspect())
        if failures:
            raise RuntimeError("\n".join(failures))
        times = []
        for index in range(warmup + presses):
            key = "ArrowRight" if index % 2 == 0 else "ArrowLeft"
            elapsed = keypress_to_repaint_ms(page, "d_k", key)
            if index >= warmup:
                times.append(elapsed)
            time.sleep(0.15)   # let the kernel go idle, as between a learner's keypresses
        return times
    finally:
        page.close()
        server.shutdown_kernels()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=25)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 128])
    args = parser.parse_args(argv)
    reason = browser_missing_reason()
    if reason:
        print(f"cannot run: {reason}")
        return 2
    with tempfile.TemporaryDirectory() as folder:
        paths = [_notebook(Path(folder), n) for n in args.sizes]
        with lab_server(Path(folder)) as server, chromium() as browser:
            rows = [(n, measure(server, browser, path.name, args.presses))
                    for n, path in zip(args.sizes, paths, strict=True)]
    print(f"d_k slider keypress -> heatmap repainted (median of {args.presses} presses, after 3 warm-up)")
    print(f"{'positions n':>11} {'median (ms)':>12} {'p90 (ms)':>9} {'min (ms)':>9} {'max (ms)':>9}  "
          f"target <= {TARGET_MS:.0f} ms at n = 8")
    print("-" * 80)
    for n, times in rows:
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        verdict = ("met" if median <= TARGET_MS else "MISSED") if n == 8 else ""
        print(f"{n:>11} {median:>12.1f} {p90:>9.1f} {min(times):>9.1f} {max(times):>9.1f}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
