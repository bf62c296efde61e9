"""Peak kernel memory and CPU time of each notebook run top to bottom in a fresh kernel.

    .venv/bin/python benchmarks/notebook_memory.py [notebooks/NN_x.ipynb ...]

Each notebook runs in its own fresh kernel (via tests/_run_notebooks.py, in a subprocess). The
number is the kernel process's peak resident set size, its VmHWM high-water mark from /proc read
just before the kernel shuts down, so a short spike between samples cannot be missed. The CPU time
is the kernel's user + system time from /proc (with any child processes it waited for), which a
busy machine inflates less than the wall time beside it. mybinder.org's usage guidelines guarantee
a user at least 1 GB and allow at most 2 GB for the whole session, so every notebook must stay well
under 1 GB. Exits 1 if one does not, or if a notebook fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIMIT_MB = 1024


def main(argv: list[str]) -> int:
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    notebooks = [Path(a) for a in argv] or sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    print(f"Peak kernel memory per notebook (fresh kernel, top to bottom); limit {LIMIT_MB} MB", flush=True)
    print(f"{'notebook':<40} {'peak RSS (MB)':>13} {'CPU (s)':>8} {'wall (s)':>8}  under 1 GB")
    print("-" * 84)
    status = 0
    for path in notebooks:
        runner = REPO / "tests" / "_run_notebooks.py"
        done = subprocess.run([sys.executable, str(runner), "--json", str(path)],
                              capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines:
            print(f"{path.name:<40} {'?':>13} {'?':>8} {'?':>8}  runner failed: {done.stderr.strip()[-200:]}")
            status = 1
            continue
        result = json.loads(lines[-1])
        peak = result["peak_mb"]
        ok = peak is not None and peak < LIMIT_MB
        note = "yes" if ok else "NO"
        if not result["ok"]:
            note += f" (notebook FAILED at cell {result['cell']}: {result['error'][:60]})"
        status |= (not ok) or (not result["ok"])
        peak_text = f"{peak:.0f}" if peak is not None else "?"
        cpu_text = f"{result['cpu_seconds']:.1f}" if result.get("cpu_seconds") is not None else "?"
        print(f"{path.name:<40} {peak_text:>13} {cpu_text:>8} {result['seconds']:>8.1f}  {note}", flush=True)
    return int(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
