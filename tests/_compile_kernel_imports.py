"""Write the bytecode of every module a course kernel imports, as a Binder build would have it.

    <venv>/bin/python tests/_compile_kernel_imports.py

Starts a kernel of this environment (jupyter_client's "python3"), imports what the course imports in
it (torch, plotly, the widgets, every module of attnviz) and compiles every module the kernel then
holds from this environment with py_compile, which writes the bytecode even where
PYTHONDONTWRITEBYTECODE is set. tests/test_binder.py runs it once, as root, before the notebooks run
as a user who cannot write into the environment: otherwise each of their kernels compiles all of it
again (about 3 s of CPU each here: 02 took 6.0 to 6.8 s without, 3.5 to 3.9 with), where Binder's
pip has compiled everything at build time.
"""

from __future__ import annotations

import sys

from jupyter_client.manager import start_new_kernel

IN_THE_KERNEL = """
import importlib, importlib.util, pkgutil, py_compile, sys
import anywidget, ipywidgets, jupyterquiz, plotly.graph_objects, plotly.io, torch
import attnviz
for found in pkgutil.walk_packages(attnviz.__path__, "attnviz."):
    importlib.import_module(found.name)
compiled = 0
for module in list(sys.modules.values()):
    source = getattr(module, "__file__", None) or ""
    if source.endswith(".py") and source.startswith(sys.prefix):
        py_compile.compile(source, cfile=importlib.util.cache_from_source(source), doraise=False, quiet=2)
        compiled += 1
print(compiled)
"""


def main() -> int:
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        printed = []
        reply = client.execute_interactive(
            IN_THE_KERNEL, timeout=600,
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
        if reply["content"]["status"] != "ok":
            print(f"the kernel raised {reply['content'].get('ename')}: {reply['content'].get('evalue')}",
                  file=sys.stderr)
            return 1
        print(f"compiled {''.join(printed).strip()} modules the kernel imported")
        return 0
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


if __name__ == "__main__":
    sys.exit(main())
