"""Binder: the environment in binder/ is what repo2docker builds, and it is a tested environment.

* binder/requirements.txt pins exactly what the root requirements.txt pins, minus the test tools
  (so the two cannot drift), with torch's CPU build from PyTorch's CPU index.
* `repo2docker --no-build` (no Docker needed) renders a build from binder/ with Python 3.11 that
  installs binder/requirements.txt and runs binder/postBuild.
* A fresh virtual environment built from binder/requirements.txt (less the index line: only the
  registries reachable here can be used) installs, passes `pip check`, switches JupyterLab's news
  off and builds the learner's edition (student/, what the Binder badge opens) through
  binder/postBuild, and runs every notebook of that edition, as an unprivileged user from a
  read-only copy of the course (as on a JupyterHub); nothing is written into that copy.
* That one run of the learner's edition is also where each of its notebooks is checked as a learner
  finds it, unattempted: no error, "not written yet" under every check, and every number an answer
  to a Check-yourself question quotes printed by the notebook (tests/_edition.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from _edition import unattempted_run_problems

REPO = Path(__file__).resolve().parent.parent
BINDER = REPO / "binder"
TEST_ONLY = {"pytest", "pytest-xdist", "nbval", "hypothesis", "ruff", "playwright", "jupyter-repo2docker",
             "nbgrader",                    # the teacher's grading tool, not for learners on Binder
             "jupyterhub", "nbgitpuller"}   # tests/test_hub.py's hub; Binder runs its own
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-") or line == ".":
            continue
        name, sep, version = line.partition("==")
        assert sep, f"{path.relative_to(REPO)}: '{line}' is not pinned with =="
        pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def _copy_course(dest: Path) -> Path:
    """Copy the course as a fresh clone would have it (tracked and new, not ignored, files)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                                capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = None
    if listed is None:
        shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", "*.egg-info", "build", "screenshots", ".ipynb_checkpoints"))
        return dest
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()}


def test_binder_pins_match_the_root_requirements():
    root, binder = _pins(REPO / "requirements.txt"), _pins(BINDER / "requirements.txt")
    expected = {name: version for name, version in root.items() if name not in TEST_ONLY}
    # torch is the CPU build on Binder: same version, "+cpu" local label
    assert binder.get("torch") == expected["torch"] + "+cpu", binder.get("torch")
    binder["torch"] = expected["torch"]
    assert binder == expected, (
        "binder/requirements.txt and requirements.txt disagree; only in binder: "
        f"{sorted(set(binder.items()) - set(expected.items()))}, only in root: "
        f"{sorted(set(expected.items()) - set(binder.items()))}")
    lines = [line.strip() for line in (BINDER / "requirements.txt").read_text().splitlines()]
    assert f"--extra-index-url {CPU_INDEX}" in lines, "torch must come from PyTorch's CPU wheel index"
    assert "." in lines, "attnviz must be installed from the repository ('.')"
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    assert os.access(BINDER / "postBuild", os.X_OK), "binder/postBuild must be executable"


def test_repo2docker_renders_a_build_from_binder(tmp_path):
    repo2docker = Path(sys.executable).parent / "repo2docker"
    assert repo2docker.exists(), "jupyter-repo2docker is missing from .venv (see requirements.txt)"
    course = _copy_course(tmp_path / "course")
    before = _snapshot(course)
    done = subprocess.run([str(repo2docker), "--no-build", "--debug", "--user-id", "1000",
                           "--user-name", "jovyan", str(course)],
                          capture_output=True, text=True, timeout=120)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "Building conda environment for python=3.11" in log, log[:2000]
    assert re.search(r"environment-2epy-2d3-2e11-2dlinux", log), "the Python 3.11 environment lock file"
    install = '${KERNEL_PYTHON_PREFIX}/bin/pip install --no-cache-dir -r "binder/requirements.txt"'
    assert install in log
    assert '-r "requirements.txt"' not in log, "repo2docker must ignore the root requirements.txt"
    # '.' in binder/requirements.txt: the install runs after the whole repository is copied in
    assert log.index("COPY --chown=1000:1000 src/ ${REPO_DIR}/") < log.index(install)
    assert "RUN ./binder/postBuild" in log
    assert _snapshot(course) == before, "rendering the build wrote into the repository"


def _python_311_for_everyone() -> str | None:
    """A Python 3.11 that an unprivileged user can run (a pyenv build under /root is not)."""
    candidates = [getattr(sys, "_base_executable", None), shutil.which("python3.11"), "/usr/bin/python3.11"]
    for candidate in filter(None, candidates):
        real = Path(os.path.realpath(candidate))
        if not real.exists():
            continue
        if os.geteuid() == 0 and not all(p.stat().st_mode & stat.S_IXOTH for p in [real, *real.parents]):
            continue
        version = subprocess.run([str(real), "-c", "import sys; print(sys.version_info[:2])"],
                                 capture_output=True, text=True).stdout.strip()
        if version == "(3, 11)":
            return str(real)
    return None


@pytest.fixture(scope="module")
def binder(tmp_path_factory):
    """The Binder environment built and every notebook of its learner's edition run in it, as an
    unprivileged user from a read-only copy: what each step found, and the executed notebooks."""
    python = _python_311_for_everyone()
    if python is None:
        pytest.fail("no Python 3.11 that an unprivileged user can run (binder/runtime.txt says 3.11)")
    work = Path(tempfile.mkdtemp(prefix="attnviz-binder-"))
    work.chmod(0o755)
    try:
        yield _build_and_run(python, work)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(work)], check=False)
        # rm rather than shutil.rmtree: the environment is 1.4 GB in some 50,000 files, and rm takes
        # seconds where rmtree took a minute beside the other tests
        if subprocess.run(["rm", "-rf", str(work)], check=False).returncode:
            shutil.rmtree(work, ignore_errors=True)


def _build_and_run(python: str, work: Path) -> dict:
    course = _copy_course(work / "course")
    venv = work / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
    requirements = work / "requirements-reachable.txt"
    requirements.write_text("".join(
        line + "\n" for line in (course / "binder" / "requirements.txt").read_text().splitlines()
        if not line.startswith(("--extra-index-url", "--index-url"))))
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    # --no-compile: Binder's build writes every module's bytecode (47 s of CPU here, more than the
    # packages themselves); here only what the kernels import is compiled, once, below
    # (tests/_compile_kernel_imports.py). Which packages install, and how they run, is the same.
    done = subprocess.run([*pip, "install", "-q", "--no-compile", "-r", str(requirements)], cwd=course,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"installing binder/requirements.txt failed:\n{done.stderr[-3000:]}"
    done = subprocess.run([*pip, "check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"pip check in the Binder environment:\n{done.stdout}"
    torch_version = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
        capture_output=True, text=True, check=True).stdout.strip()
    assert torch_version.endswith("+cpu"), torch_version

    # binder/postBuild, as repo2docker runs it: from the repository's root, NB_PYTHON_PREFIX set
    subprocess.run(["./binder/postBuild"], cwd=course, check=True, capture_output=True, timeout=60,
                   env={**os.environ, "NB_PYTHON_PREFIX": str(venv)})
    overrides = json.loads((venv / "share/jupyter/lab/settings/overrides.json").read_text())
    _assert_lab_in_env_has_news_off(venv)
    learners = sorted(p.name for p in (course / "student").glob("[0-9][0-9]_*.ipynb"))

    # the bytecode of what a course kernel imports, written once as the build would have (the kernels
    # below run as a user who cannot write it, so without this each compiled it anew: about 3 s of CPU)
    subprocess.run([str(venv / "bin" / "python"), str(course / "tests" / "_compile_kernel_imports.py")],
                   cwd=work, check=True, timeout=600, capture_output=True,
                   env={**os.environ, "JUPYTER_RUNTIME_DIR": str(work / "runtime")})

    # every notebook, as an unprivileged user, from a read-only copy of the course
    for leftover in ("build", "attnviz.egg-info"):   # what `pip install .` leaves in a checkout
        shutil.rmtree(course / leftover, ignore_errors=True)
    home, executed = work / "home", work / "executed"
    home.mkdir()
    executed.mkdir()
    subprocess.run(["chmod", "-R", "a-w", str(course)], check=True)
    before = _snapshot(course)
    run_as = {}
    if os.geteuid() == 0:
        for folder in (home, executed):
            shutil.chown(folder, "nobody")
        run_as = {"user": "nobody", "group": "nogroup" if _group_exists("nogroup") else "nobody",
                  "extra_groups": []}
    env = {"HOME": str(home), "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1"}
    notebooks = sorted(str(p) for p in (course / "student").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks, "no notebooks in the copy"
    done = subprocess.run([str(venv / "bin" / "python"), str(course / "tests" / "_run_notebooks.py"),
                           "--json", "--save", str(executed), *notebooks], cwd=home, env=env,
                          capture_output=True, text=True, timeout=1800, **run_as)
    return {"venv": venv, "overrides": overrides, "learners": learners, "run_as": run_as,
            "returncode": done.returncode, "stderr": done.stderr, "notebooks": notebooks,
            "results": [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")],
            "executed": {p.name: nbformat.read(p, as_version=4) for p in executed.glob("*.ipynb")},
            "changed": _snapshot(course) != before}


def test_a_jupyter_server_builds_no_iri_parsers_when_it_starts():
    """requirements.txt pins jsonschema 4.24: from 4.25 on, importing it builds rfc3987-syntax's Earley
    parsers (1.5 s of CPU) in every Jupyter server, nbgrader command and notebook reader."""
    done = subprocess.run([sys.executable, "-c", "import sys, jupyter_events.validators, nbformat; "
                           "print(sorted(m for m in sys.modules if m.startswith(('lark', 'rfc3987'))))"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", f"a Jupyter server's start imports {done.stdout.strip()}"


@pytest.mark.slow
def test_fresh_binder_environment_runs_every_notebook_read_only_as_unprivileged_user(binder):
    notification = binder["overrides"]["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False
    assert binder["learners"] == sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")), (
        "binder/postBuild did not build the learner's edition in student/")
    results = binder["results"]
    report = "\n".join(
        f"  {r['notebook']}: " + ("ok" if r["ok"] else f"FAILED at cell {r['cell']}: {r['error']}")
        + f" ({r['seconds']} s)" for r in results)
    assert binder["returncode"] == 0 and len(results) == len(binder["notebooks"]), (
        f"notebooks in the Binder environment, as {binder['run_as'].get('user', 'this user')} from a "
        f"read-only copy:\n{report}\n{binder['stderr'][-2000:]}")
    for result in results:   # the kernel used the environment's attnviz, not the checkout's
        assert result["attnviz"].startswith(str(binder["venv"])), result
    assert not binder["changed"], "running the course wrote into the (read-only) checkout"


@pytest.mark.slow
@pytest.mark.parametrize("name", [p.name for p in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))],
                         ids=lambda name: name[:-6])
def test_the_learners_notebook_runs_unattempted_and_its_answers_quote_its_outputs(binder, name):
    """The learner's edition as Binder opens it, run once above: no error, "not written yet" under
    every check, and every number an answer quotes printed by the notebook (tests/_edition.py)."""
    assert name in binder["executed"], f"{name} was not run: {sorted(binder['executed'])}"
    problems = unattempted_run_problems(binder["executed"][name], name)
    assert not problems, "\n".join(problems)


def _group_exists(name: str) -> bool:
    import grp

    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _assert_lab_in_env_has_news_off(venv: Path) -> None:
    """JupyterLab in the Binder environment serves fetchNews = "false" as the default."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _lab import LabServer

    server = LabServer(REPO / "notebooks", python=str(venv / "bin" / "python"), user_settings=False)
    server.start(timeout=120)
    try:
        schema = server.api("GET", "/lab/api/settings/@jupyterlab/apputils-extension:notification")["schema"]
        assert schema["properties"]["fetchNews"]["default"] == "false", schema["properties"]["fetchNews"]
        assert schema["properties"]["checkForUpdates"]["default"] is False
    finally:
        server.stop()
