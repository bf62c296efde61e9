"""Run a few lines in a fresh Python process and see what it imported: for the tests that hold a layer
to its imports ("importing attnviz loads no widget library") or that need a kernel nobody has used yet.

Seven tests each started Python and imported torch for this, 1.5-2 s apiece. Here one process per test
worker imports torch once, then forks a child for each question; the child runs the lines in a fresh
`__main__` and answers with the names in its `sys.modules`. Loading torch first hides no import from
these tests: they ask which modules are *absent*, and every module they ask about imports torch itself.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import threading

TIMEOUT = 120      # seconds for one question; the slowest (two checkers in a child) takes about 2 s

_SERVER = r"""
import json, os, sys, traceback
import torch  # noqa: F401   once, here; each child below starts with it
print("ready", flush=True)
for line in sys.stdin:
    code = json.loads(line)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)               # what the lines print must not reach the answers' pipe
        try:
            exec(compile(code, "<fresh python>", "exec"), {"__name__": "__main__"})
            error = None
        except BaseException:
            error = traceback.format_exc()
        with os.fdopen(write, "w") as out:
            json.dump({"modules": sorted(sys.modules), "error": error}, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    print(text or json.dumps({"modules": [], "error": "the child died without an answer"}), flush=True)
"""

_server: subprocess.Popen | None = None


def _start() -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    atexit.register(process.kill)
    if _read_line(process) != "ready":
        raise RuntimeError("tests/_fresh.py: the fresh Python process did not start")
    return process


def _read_line(process: subprocess.Popen) -> str:
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(TIMEOUT)
    if not lines:
        process.kill()
        raise TimeoutError(f"tests/_fresh.py: no answer in {TIMEOUT} s")
    return lines[0].strip()


def modules_after(code: str) -> set[str]:
    """The names in a fresh process's `sys.modules` once `code` has run there; an AssertionError with
    the child's traceback if `code` raised."""
    global _server
    if _server is None or _server.poll() is not None:
        _server = _start()
    _server.stdin.write(json.dumps(code) + "\n")
    _server.stdin.flush()
    answer = json.loads(_read_line(_server))
    if answer["error"]:
        raise AssertionError("in a fresh Python process:\n" + answer["error"])
    return set(answer["modules"])


def top_level(modules: set[str]) -> set[str]:
    """The packages among module names: {"plotly"} for {"plotly.io", "plotly"}."""
    return {name.split(".")[0] for name in modules}
