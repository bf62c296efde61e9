"""Node takes the course's JavaScript as ES modules, and nothing else under the checkout.

The ES-module type is declared in attnviz/widgets/, tests/js/ and tools/ (each has a package.json
that says so), not in the root package.json: there it would also reach .venv, which lies inside the
checkout, and node would load JupyterLab's bundled yarn as an ES module, which fails. Every
JupyterLab started from .venv (`make lab`, the browser tests) then printed a page of minified
JavaScript ("Fail to get yarn configuration") before its own log.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_es_module_type_is_declared_where_the_course_keeps_its_javascript():
    assert "type" not in json.loads((ROOT / "package.json").read_text())
    for folder in ("attnviz/widgets", "tests/js", "tools"):
        assert json.loads((ROOT / folder / "package.json").read_text())["type"] == "module", folder


def test_jupyterlabs_yarn_runs_from_an_environment_inside_the_checkout():
    from jupyterlab.commands import YARN_PATH

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not Path(YARN_PATH).resolve().is_relative_to(ROOT):
        pytest.skip(f"JupyterLab is installed outside the checkout ({YARN_PATH})")
    done = subprocess.run(["node", YARN_PATH, "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"node could not run JupyterLab's yarn:\n{done.stderr[-1500:]}"
