"""JupyterLab as `make lab` gives it to learners: Binder's defaults, and nbgrader's extensions off.

    python tools/learner_settings.py

Run by `make` with .venv's Python once it has installed the requirements. It copies
binder/overrides.json (no news pop-up, no update check) into the environment's JupyterLab settings,
and, where nbgrader is installed (it is, for teachers: `make nbgrader`), switches its JupyterLab
extension (disabled and locked) and its four server extensions off at the environment's level, with
the functions `jupyter labextension disable` and `lock --level=sys_prefix` and `jupyter server
extension disable --sys-prefix` call, in one process instead of five. The README's teacher section
says how to switch them on again.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBGRADER_SERVER = [f"nbgrader.server_extensions.{name}"
                   for name in ("formgrader", "validate_assignment", "assignment_list", "course_list")]


def main() -> int:
    settings = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "binder" / "overrides.json", settings / "overrides.json")
    if importlib.util.find_spec("nbgrader") is None:
        return 0
    from jupyter_server.extension.serverextension import toggle_server_extension_python
    from jupyterlab.commands import YARN_DEFAULT_REGISTRY, AppOptions, disable_extension, lock_extension

    # A registry given up front: otherwise JupyterLab asks its bundled yarn for one (a node process;
    # nothing is downloaded either way)
    options = AppOptions(registry=YARN_DEFAULT_REGISTRY)
    disable_extension("@jupyter/nbgrader", app_options=options, level="sys_prefix")
    lock_extension("@jupyter/nbgrader", app_options=options, level="sys_prefix")   # locked, as the CLI did
    for name in NBGRADER_SERVER:
        toggle_server_extension_python(name, enabled=False, sys_prefix=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
