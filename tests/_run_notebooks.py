"""Run notebooks top to bottom in fresh kernels; print one line per notebook; exit 1 if any failed.

    python tests/_run_notebooks.py notebooks/*.ipynb [--json] [--save DIR]

Needs only nbclient and nbformat (both come with JupyterLab), so it also runs inside the Binder
environment that tests/test_binder.py builds. It never writes a notebook back; with --save, each
executed notebook (its outputs included) is written to DIR under its own name. For each notebook
it reports the wall time, the kernel's CPU time (user + system, from /proc) and its peak resident
memory (VmHWM from /proc, the kernel process's high-water mark, so no sampling is needed), and, on
failure, the cell and the error. It also says which `attnviz` the
kernel imported, so a test can check that it came from the environment and not from the checkout.
Each kernel talks to it over IPC sockets in a temporary folder, not over TCP ports another process
could take before the kernel binds them (tests/test_nbgrader.py says why).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError


def _peak_rss_mb(pid: int | None) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, TypeError):
        pass
    return None


def _cpu_seconds(pid: int | None) -> float | None:
    """CPU time (user + system) of the process and of its children that have been waited for."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))   # utime, stime, cutime, cstime
        return round(ticks / os.sysconf("SC_CLK_TCK"), 1)
    except (OSError, ValueError, TypeError, IndexError):
        return None


def run(path: Path, timeout: int = 300, save: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="attnviz-kernel-") as sockets:
        return _run(path, timeout, save, AsyncKernelManager(kernel_name="python3", transport="ipc",
                                                            ip=str(Path(sockets) / "kernel")))


def _run(path: Path, timeout: int, save: Path | None, km: AsyncKernelManager) -> dict:
    nb = nbformat.read(path, as_version=4)
    own = len(nb.cells)
    client = NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    result = {"notebook": path.name, "ok": True, "error": None, "cell": None, "seconds": None,
              "peak_mb": None, "cpu_seconds": None, "attnviz": None}
    start = time.monotonic()
    with client.setup_kernel(cleanup_kc=True):    # the kernel stops at the end (km is ours)
        try:
            for index, cell in enumerate(nb.cells):
                if cell.cell_type == "code":
                    result["cell"] = index
                    client.execute_cell(cell, index)
            result["cell"] = None
            probe = nbformat.v4.new_code_cell("import attnviz; print(attnviz.__file__)")
            nb.cells.append(probe)
            client.execute_cell(probe, len(nb.cells) - 1)
            result["attnviz"] = "".join(o.get("text", "") for o in probe.outputs).strip()
        except CellExecutionError as error:
            result.update(ok=False, error=f"{error.ename}: {error.evalue}")
        except (CellTimeoutError, DeadKernelError) as error:
            result.update(ok=False, error=f"{type(error).__name__}: {str(error)[:300]}")
        result["seconds"] = round(time.monotonic() - start, 1)
        process = getattr(client.km.provisioner, "process", None)
        result["peak_mb"] = _peak_rss_mb(getattr(process, "pid", None))
        result["cpu_seconds"] = _cpu_seconds(getattr(process, "pid", None))
    if save is not None:
        del nb.cells[own:]          # the probe is not the notebook's
        nbformat.write(nb, save / path.name)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true", help="print one JSON object per notebook")
    parser.add_argument("--timeout", type=int, default=300, help="seconds allowed per cell")
    parser.add_argument("--save", type=Path, help="write each executed notebook to this folder")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.notebooks:
        result = run(path, args.timeout, args.save)
        failed += not result["ok"]
        if args.json:
            print(json.dumps(result), flush=True)
        else:
            where = "" if result["ok"] else f"  cell {result['cell']}: {result['error']}"
            cpu, peak = result["cpu_seconds"] or float("nan"), result["peak_mb"] or float("nan")
            print(f"{'ok  ' if result['ok'] else 'FAIL'} {result['notebook']:<40} {result['seconds']:>6.1f} s"
                  f"  CPU {cpu:5.1f} s  peak {peak:7.0f} MB{where}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
