"""The first static figure in a notebook: seconds for its cell, plotly's own display path vs ours.

    .venv/bin/python benchmarks/first_figure.py [--repeats 3]

Each row is a fresh ipykernel (through nbclient, as nbval and JupyterLab run cells) that imports
the figure builders, builds a line chart and displays it as the cell's last expression; the time
is the wall time of that one display cell, and its kernel CPU time. "plotly's display path" shows
the same figure as a plain ``go.Figure`` (``plotly.io.show``, which imports nbformat and jsonschema
to validate it: their import compiles rfc3987's grammars with lark); "attnviz.figures.Figure" is
what the builders return (the same ``application/vnd.plotly.v1+json`` bundle, no validation
import). The modules each path imported are listed. Target: under 0.3 s for ours.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import nbformat
from nbclient import NotebookClient

TARGET_S = 0.3
SETUP = ("import resource, sys\n"
         "from attnviz.figures import line_chart\n"
         "fig = line_chart([1, 2, 4, 8], {'a': [1, 2, 3, 4], 'b': [2, 3, 4, 5]},"
         " x_title='n', y_title='y', log_x=True, title='first figure')\n"
         "before = set(sys.modules)\n"
         "def cpu():\n"
         "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
         "    return usage.ru_utime + usage.ru_stime\n"
         "start = cpu()")
SHOW = {"plotly's display path (go.Figure)": "import plotly.graph_objects as go\ngo.Figure(fig)",
        "attnviz.figures.Figure": "fig"}
REPORT = ("import json\nprint(json.dumps({'cpu': cpu() - start, 'new': sorted(m for m in set(sys.modules)"
          " - before if m.split('.')[0] in ('nbformat', 'jsonschema', 'lark', 'plotly'))}))")


def one_run(show: str) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (SETUP, show, REPORT)]
    client = NotebookClient(nb, timeout=120, kernel_name="python3")
    with client.setup_kernel():
        client.execute_cell(nb.cells[0], 0)
        start = time.perf_counter()
        client.execute_cell(nb.cells[1], 1)
        wall = time.perf_counter() - start
        client.execute_cell(nb.cells[2], 2)
    shown = nb.cells[1].outputs[0]["data"] if nb.cells[1].outputs else {}
    report = json.loads(next(o["text"] for o in nb.cells[2].outputs if o.get("name") == "stdout"))
    return {"wall": wall, "cpu": report["cpu"], "mimes": sorted(shown),
            "bytes": len(json.dumps(shown)), "new": report["new"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = {name: [] for name in SHOW}
    for _ in range(args.repeats):            # interleaved, so both see the same machine load
        for name, show in SHOW.items():
            rows[name].append(one_run(show))
    print(f"First figure in a fresh kernel: the display cell (median of {args.repeats} kernels)")
    print(f"{'display path':<36} {'wall (s)':>9} {'CPU (s)':>8} {'output':>9}  "
          "mime types; modules it imported")
    print("-" * 110)
    for name, runs in rows.items():
        wall = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        new = runs[0]["new"]
        heavy = [m for m in new if m.split(".")[0] in ("nbformat", "jsonschema", "lark")]
        imported = (f"{len(heavy)} nbformat/jsonschema/lark modules" if heavy else "no nbformat/jsonschema")
        print(f"{name:<36} {wall:>9.3f} {cpu:>8.3f} {runs[0]['bytes'] / 1024:>7.1f}kB  "
              f"{', '.join(runs[0]['mimes'])}; {imported}")
    ours = statistics.median(r["wall"] for r in rows["attnviz.figures.Figure"])
    print(f"target: ours under {TARGET_S} s: {'met' if ours < TARGET_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
