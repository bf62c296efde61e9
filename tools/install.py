"""Install requirements into a virtual environment with uv, from the places pip is set to look.

    python tools/install.py .venv/bin/python -r requirements.txt
    python tools/install.py .venv/bin/python --no-deps -e .

`make` creates .venv with pip in it and runs this script for both installs. uv (pinned in the
Makefile, installed into .venv by pip) installs the same pinned packages as `pip install` would, in
a fraction of pip's time: pip downloads and unpacks one package at a time, then compiles every
module to bytecode in one process; uv does both in parallel. uv does not read pip's configuration,
so this script hands it pip's own: the index URLs, find-links and constraint files that
`pip config list` reports (pip.conf files and PIP_* variables alike), and pip's certificate file.
Like pip, uv then takes the best match from any of those indexes (--index-strategy
unsafe-best-match). Where uv cannot be installed, the script falls back to pip.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

OPTIONS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
           "find-links": "--find-links", "constraint": "--constraint"}


def pip_settings(python: str) -> dict[str, list[str]]:
    """pip's effective settings, as `pip config list` prints them: {"find-links": [...], ...}."""
    done = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True)
    settings: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        name = key.rsplit(".", 1)[-1]
        words = shlex.split(value)
        settings.setdefault(name, [])
        settings[name] += [w for word in words for w in word.split()]
    return settings


def uv_command(python: str, settings: dict[str, list[str]], args: list[str]) -> list[str]:
    command = [python, "-m", "uv", "pip", "install", "--python", python, "--compile-bytecode",
               "--index-strategy", "unsafe-best-match"]
    for name, flag in OPTIONS.items():
        for value in dict.fromkeys(settings.get(name, [])):
            command += [flag, value]
    return command + args


NEEDED = (3, 11)   # the pinned numpy, ipykernel and nbgrader need Python 3.11 or newer


def too_old(python: str) -> str | None:
    """Words for the learner when ``python`` is older than the pinned packages need, else None."""
    done = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                          text=True)
    found = tuple(int(part) for part in done.stdout.split()[:2]) if done.returncode == 0 else None
    if found is None or found >= NEEDED:
        return None
    return (f"tools/install.py: this course needs Python {NEEDED[0]}.{NEEDED[1]} or newer (its pinned numpy, "
            f"ipykernel and nbgrader do), and .venv was made with Python {found[0]}.{found[1]}. Install a "
            f"newer Python, delete .venv, and run make again with it first on your PATH (or make "
            f"PYTHON=python3.11).")


def main(argv: list[str]) -> int:
    python, args = argv[0], argv[1:]
    message = too_old(python)
    if message:
        print(message, file=sys.stderr)
        return 1
    settings = pip_settings(python)
    env = dict(os.environ)
    if settings.get("cert"):
        env.setdefault("SSL_CERT_FILE", settings["cert"][-1])
    has_uv = subprocess.run([python, "-m", "uv", "--version"], capture_output=True).returncode == 0
    if has_uv:
        return subprocess.run(uv_command(python, settings, ["-q", *args]), env=env).returncode
    print("tools/install.py: uv is not installed; installing with pip instead", file=sys.stderr)
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    return subprocess.run([*pip, *args]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
