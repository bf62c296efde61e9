"""Drive JupyterLab in a real browser: start a private server, open a notebook, run it, inspect it.

Used by tests/test_browser.py, benchmarks/browser_latency.py and benchmarks/browser_bytes.py. Nothing
here touches the user's Jupyter setup or the repository: the server serves a temporary copy of the
notebooks, and its config, data, runtime, settings and workspace folders all live in a temporary
directory. It serves JupyterLab 4 or (``app="notebook"``) Jupyter Notebook 7.

The browser is Chromium from the system's packages (``/usr/bin/chromium``) driven by Playwright's
Python package; no browser is ever downloaded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path(os.environ.get("ATTNVIZ_CHROMIUM", "/usr/bin/chromium"))
# The last flag: no host but this machine resolves, so a page that reaches for the internet fails at
# once (the tests list what it tried, by watching its requests: outside_requests below) rather than
# waiting on a lookup. (Routing every request through Playwright instead turns Chromium's cache off
# and costs a round trip to Python per request.)
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]
REPO = Path(__file__).resolve().parent.parent

# Lab settings for a test run: no news or update checks (no network), no autosave (the served copy
# is throwaway anyway). Everything else stays at JupyterLab's defaults, as a learner has it.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False,
    },
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


def browser_missing_reason() -> str | None:
    """Why the browser test cannot run here, or None when it can."""
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (install it with `apt-get install chromium`)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright's Python package is not installed (see requirements.txt)"
    return None


def skip_or_fail(reason: str | None, what: str = "browser test") -> None:
    """Skip the test that cannot run here, saying why; where ATTNVIZ_REQUIRE_BROWSER=1 (CI sets it),
    fail instead, so that a missing browser cannot pass unseen. Nothing happens when ``reason`` is None."""
    if reason:
        import pytest

        if os.environ.get("ATTNVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the {what} is required here (ATTNVIZ_REQUIRE_BROWSER=1) but {reason}")
        pytest.skip(f"{what} skipped: {reason}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabServer:
    """A JupyterLab server on 127.0.0.1 with a token, serving a copy of ``notebook_dir``."""

    def __init__(self, notebook_dir: Path, port: int | None = None, extra_files: list[Path] = (),
                 python: str | None = None, user_settings: bool = True, app: str = "lab"):
        if app not in ("lab", "notebook"):
            raise ValueError(f"app must be 'lab' (JupyterLab 4) or 'notebook' (Notebook 7), got {app!r}")
        self.app = app
        self.python = python or sys.executable
        self.user_settings = user_settings
        self.tmp = Path(tempfile.mkdtemp(prefix="attnviz-lab-"))
        self.root = self.tmp / "root"
        shutil.copytree(notebook_dir, self.root / "notebooks",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        for path in extra_files:
            shutil.copy(path, self.root / "notebooks" / Path(path).name)
        self.port = port or free_port()
        self.token = uuid.uuid4().hex
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = self.tmp / "server.log"
        self.proc: subprocess.Popen | None = None

    def env(self) -> dict:
        env = dict(os.environ)
        for name, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                          ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                          ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")]:
            env[name] = str(self.tmp / sub)
            (self.tmp / sub).mkdir(exist_ok=True)
        env.pop("JUPYTER_CONFIG_PATH", None)
        env.pop("JUPYTER_PATH", None)
        env["JUPYTER_PLATFORM_DIRS"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def start(self, timeout: float = 120.0) -> LabServer:
        settings = self.tmp / "settings"
        # (Notebook 7 has no news or autosave plugins: settings for them break its page)
        for rel, values in LAB_SETTINGS.items() if self.user_settings and self.app == "lab" else ():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        cmd = [self.python, "-m", "jupyterlab" if self.app == "lab" else "notebook", "--no-browser",
               f"--port={self.port}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.token={self.token}",
               "--ServerApp.port_retries=0", f"--ServerApp.root_dir={self.root}",
               "--ServerApp.open_browser=False"]
        cmd += (["--LabApp.expose_app_in_browser=True", "--LabApp.news_url="] if self.app == "lab"
                else ["--JupyterNotebookApp.expose_app_in_browser=True"])
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self.log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(cmd, env=self.env(), stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=self.root, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_text()}")
            try:
                self.api("GET", "/api/status")
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer on port {self.port} in {timeout:.0f} s:\n"
                           f"{self.log_text()}")

    def log_text(self, tail: int = 4000) -> str:
        try:
            return self.log_path.read_text()[-tail:]
        except OSError:
            return ""

    def api(self, method: str, path: str):
        request = urllib.request.Request(f"{self.base}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def forget_theme(self) -> None:
        """JupyterLab's own theme for the next page: the theme a page switches to is the server's
        setting (a test that failed while in JupyterLab Dark would leave the next page dark)."""
        (self.tmp / "settings" / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
         ).unlink(missing_ok=True)

    def shutdown_kernels(self) -> None:
        """Stop every running session's kernel (frees memory between notebooks)."""
        try:
            for session in self.api("GET", "/api/sessions"):
                self.api("DELETE", f"/api/sessions/{session['id']}")
        except (urllib.error.URLError, OSError):
            pass

    def notebook_url(self, name: str) -> str:
        """A fresh workspace each time, so no earlier tab or layout comes back."""
        if self.app == "notebook":        # Notebook 7: one notebook per page, no workspaces
            return f"{self.base}/notebooks/notebooks/{name}?token={self.token}"
        workspace = f"test-{uuid.uuid4().hex[:10]}"
        return f"{self.base}/lab/workspaces/{workspace}/tree/notebooks/{name}?reset&token={self.token}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.shutdown_kernels()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextmanager
def lab_server(notebook_dir: Path, port: int | None = None, extra_files: list[Path] = (),
               app: str = "lab", python: str | None = None):
    server = LabServer(notebook_dir, port, extra_files, app=app, python=python).start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def chromium():
    """A headless Chromium from the system's packages, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


# --- in the page -------------------------------------------------------------------------------
# These run inside JupyterLab (started with expose_app_in_browser, so `window.jupyterapp` exists).

# The notebook in front (or the one at `path`, when given) shows its kernel, idle and ready.
_JS_KERNEL_READY = """(path) => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  if (!panel || !panel.sessionContext || !panel.content || !panel.content.widgets) return false;
  if (path && (!panel.context || panel.context.path !== path)) return false;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return !!kernel && kernel.status === 'idle' && panel.sessionContext.isReady;
}"""

# Until the page's own session and kernel managers list nothing running (up to 10 s), then a moment
# for the requests of the kernels that went to be rejected.
_JS_KERNELS_GONE = """async () => {
  const manager = window.jupyterapp.serviceManager;
  for (let i = 0; i < 40; i++) {
    await manager.sessions.refreshRunning();
    await manager.kernels.refreshRunning();
    if (Array.from(manager.sessions.running()).length === 0
        && Array.from(manager.kernels.running()).length === 0) break;
    await new Promise((done) => setTimeout(done, 250));
  }
  await new Promise((done) => setTimeout(done, 250));
}"""

# File > Open's command for a notebook; then its tab is made the one in front (the current widget)
# and the Launcher JupyterLab put in the emptied main area is closed.
_JS_OPEN = """async (path) => {
  const app = window.jupyterapp;
  const shell = app.shell;
  // a page that has just come up (a hub's, after the login) can answer before its plugins have all
  // started: 'docmanager:open' is then "not registered" (seen once, 2026-12-07, six hub tests)
  await app.restored;
  for (let i = 0; i < 600 && !app.commands.hasCommand('docmanager:open'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const widget = await app.commands.execute('docmanager:open', {path});
  await widget.revealed;
  shell.activateById(widget.id);
  for (const other of Array.from(shell.widgets('main'))) {
    if (other.content && other.content.hasClass && other.content.hasClass('jp-Launcher')) other.dispose();
  }
  return null;
}"""

# Whether the tab in front is the notebook at `path`; if not, its tab is activated again (a tab
# becomes the current widget when it takes the focus, which it can miss while the page settles).
_JS_CURRENT_IS = """(path) => {
  const shell = window.jupyterapp.shell;
  const panel = shell.currentWidget;
  if (panel && panel.context && panel.context.path === path) return true;
  const tab = Array.from(shell.widgets('main')).find((w) => w.context && w.context.path === path);
  if (tab) shell.activateById(tab.id);
  return false;
}"""

# Closes, without asking to save, the main area's tab of the document at `path`, or with no path
# every tab (notebooks, the Log Console). A notebook's kernel keeps running, as in JupyterLab.
JS_CLOSE_TABS = """(path) => {
  for (const widget of Array.from(window.jupyterapp.shell.widgets('main'))) {
    if (path && !(widget.context && widget.context.path === path)) continue;
    if (widget.context) widget.context.model.dirty = false;
    widget.dispose();
  }
}"""


def open_tab(page, path: str, timeout: float = 120.0) -> None:
    """Open the notebook at ``path`` (from the server's root) in the JupyterLab already in ``page``, as
    a click in the file browser does, and wait until its tab is the one in front."""
    page.bring_to_front()     # JupyterLab makes a tab current when it takes the focus
    page.evaluate(_JS_OPEN, path)
    page.wait_for_function(_JS_CURRENT_IS, arg=path, timeout=timeout * 1000, polling=100)


_JS_STUCK = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  const context = panel && panel.sessionContext;
  const kernel = context && context.session && context.session.kernel;
  const dialogs = [...document.querySelectorAll('.jp-Dialog')].map((d) => d.innerText.trim());
  return {app: !!app, tab: panel ? panel.title.label : null, session: !!(context && context.session),
          kernel: kernel ? kernel.status : null, connection: kernel ? kernel.connectionStatus : null,
          ready: context ? context.isReady : null, dialogs: dialogs.map((t) => t.slice(0, 300))};
}"""


def stuck_state(page, name: str) -> str:
    """What a page that never became ready showed, for a timeout's message: the tab, its kernel and
    any dialog, and a screenshot in the temporary folder named after ``name``."""
    try:
        state = str(page.evaluate(_JS_STUCK))
    except Exception as error:  # noqa: BLE001 (a page that is gone says so)
        state = f"the page could not be read ({type(error).__name__})"
    picture = Path(tempfile.gettempdir()) / f"attnviz-stuck-{re.sub(r'[^A-Za-z0-9]+', '_', name)}.png"
    try:
        page.screenshot(path=str(picture))
        state += f"; screenshot {picture}"
    except Exception:  # noqa: BLE001, S110 (the state above is what matters)
        pass
    return state


_JS_PROGRESS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = panel.content.widgets
    .map((cell, index) => ({cell, index}))
    .filter(({cell}) => cell.model.type === 'code' && cell.model.sharedModel.getSource().trim());
  const running = cells.filter(({cell}) => cell.model.executionState === 'running').map(({index}) => index);
  const unrun = cells.filter(({cell}) => cell.model.executionCount === null).map(({index}) => index);
  const failed = cells.filter(({cell}) => {
    for (let i = 0; i < cell.model.outputs.length; i++) {
      if (cell.model.outputs.get(i).type === 'error') return true;
    }
    return false;
  }).map(({index}) => index);
  return {kernel: kernel ? kernel.status : 'none', running, unrun, failed, total: cells.length};
}"""

_JS_INSPECT = r"""async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  const report = {cells: [], problems: []};
  // where an element is, for a failure's message: in the document, and in view
  const view = panel.content.node.getBoundingClientRect();
  const where = (el) => {
    const box = el.getBoundingClientRect();
    const seen = box.bottom > view.top && box.top < view.bottom;
    return `${el.isConnected ? 'in the document' : 'not in the document'}, ` +
      `${seen ? 'in view' : Math.round(box.top - view.top) + ' px from the view\'s top'}`;
  };
  const widgetMime = 'application/vnd.jupyter.widget-view+json';
  const plotlyMime = 'application/vnd.plotly.v1+json';
  for (const [index, cell] of panel.content.widgets.entries()) {
    if (cell.model.type !== 'code') continue;
    const source = cell.model.sharedModel.getSource();
    const entry = {index, source: source.slice(0, 300), count: cell.model.executionCount,
                   errors: [], problems: [], widgets: 0, plots: 0, quizzes: 0};
    const area = cell.outputArea;
    for (let i = 0; i < area.model.length; i++) {
      const output = area.model.get(i).toJSON();
      if (output.output_type === 'error') {
        entry.errors.push(`${output.ename}: ${output.evalue}`);
      }
      const child = area.widgets[i];
      if (!child) { entry.problems.push(`output ${i} has no element in the page`); continue; }
      const node = child.node;
      const text = node.textContent || '';
      const bad = text.match(/Error displaying widget[^\n]*/i) || text.match(/Javascript Error[^\n]*/i)
        || text.match(/Failed to (load|render) (model|view)[^\n]*/i);
      if (bad) entry.problems.push(`output ${i} shows "${bad[0].slice(0, 200)}"`);
      const data = output.data || {};
      if (widgetMime in data) {
        entry.widgets += 1;
        const box = node.getBoundingClientRect();
        const loading = text.match(/Loading widget[^\n]*/i);
        if (loading) {
          entry.problems.push(`widget in output ${i} never loaded (shows "${loading[0].slice(0, 80)}")`);
        } else if (!node.querySelector('.jupyter-widgets, .js-plotly-plot') || box.height < 2) {
          entry.problems.push(`widget in output ${i} rendered nothing (${Math.round(box.height)} px tall)`);
        }
      }
      if (plotlyMime in data) {
        entry.plots += 1;
        if (!node.querySelector('.js-plotly-plot .main-svg')) {
          entry.problems.push(`plotly figure in output ${i} was not drawn`);
        }
      }
      for (const quiz of node.querySelectorAll('[data-numquestions]')) {   // jupyterquiz
        if (quiz.querySelector('.Quiz')) entry.quizzes += 1;
        else entry.problems.push(`quiz in output ${i} was not drawn (no questions in it; ${where(quiz)})`);
      }
      for (const plot of node.querySelectorAll('.js-plotly-plot')) {
        const svg = plot.querySelector('.main-svg');
        const width = svg ? svg.getBoundingClientRect().width : 0;
        if (width < 10) {
          const container = plot.querySelector('.plot-container');
          const shown = container ? getComputedStyle(container).display : 'no .plot-container';
          const drawn = svg ? `${Math.round(width)} px wide, width="${svg.getAttribute('width')}"` : 'none';
          entry.problems.push(`a plotly plot in output ${i} has no drawn .main-svg (${drawn}; its ` +
            `container ${shown}, the plot ${plot.offsetWidth} px wide; ${where(plot)})`);
        }
      }
    }
    if (/show_quiz\(/.test(source) && cell.model.executionCount !== null && !entry.quizzes
        && !entry.errors.length) {
      entry.problems.push('show_quiz(...) ran but no quiz was drawn');
    }
    report.cells.push(entry);
  }
  return report;
}"""


def outside_requests(context, base: str) -> list[str]:
    """The list, filled as they happen, of the addresses pages in ``context`` ask for that are neither
    under ``base`` nor data: or blob: (nothing may need the internet at run time; CHROMIUM_ARGS make
    such requests fail)."""
    outside: list[str] = []

    def watch(request) -> None:
        if not request.url.startswith((base, "data:", "blob:")):
            outside.append(request.url)

    context.on("request", watch)
    return outside


class NotebookTimeout(AssertionError):
    pass


class NotebookPage:
    """A notebook open in JupyterLab (or Notebook 7) in its own browser context and a fresh workspace;
    open_next opens the next notebook in the same JupyterLab page."""

    def __init__(self, server: LabServer, browser, name: str, viewport=(1280, 800), zoom: float = 1):
        self.server, self.name = server, name
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                           device_scale_factor=zoom)
        self.page = self.context.new_page()
        self.page_errors: list[str] = []
        self.console_errors: list[str] = []
        self.external_requests = outside_requests(self.context, server.base)
        self.page.on("pageerror", lambda error: self.page_errors.append(str(error)))
        self.page.on("console", lambda msg: msg.type == "error" and self.console_errors.append(msg.text))

    def open(self, timeout: float = 180.0) -> NotebookPage:
        # 180 s, not 90: with make test's four workers on two cores, the page and the kernel of 08
        # once took over 90 s to come up while the Binder build, the hub and nbgrader ran beside it
        self.page.goto(self.server.notebook_url(self.name), timeout=timeout * 1000)
        try:
            self.page.wait_for_function(_JS_KERNEL_READY, timeout=timeout * 1000, polling=250)
        except Exception as error:
            seen = stuck_state(self.page, self.name)
            raise NotebookTimeout(f"{self.name}: JupyterLab did not show the notebook with an idle kernel "
                                  f"within {timeout:.0f} s ({error}); the page showed {seen}") from None
        return self

    def open_next(self, name: str, timeout: float = 180.0) -> NotebookPage:
        """Open ``name`` in this same JupyterLab page, as a learner opens the next notebook: the open
        tabs close (their unsaved changes dropped, their kernels shut down), then File > Open's
        command opens it. What the checks read per notebook (the page's errors, its console's errors,
        the addresses it asked for outside the server) starts empty again; the Log Console counts per
        notebook already. About 4 s of Chromium's CPU less than a fresh page (JupyterLab's bundles are
        not loaded and run again). JupyterLab only: Notebook 7 shows one notebook per page."""
        if self.server.app != "lab":
            raise ValueError(f"open_next opens a notebook in JupyterLab's page; {self.server.app!r} shows "
                             "one notebook per page: open a NotebookPage for each")
        self.page.evaluate(JS_CLOSE_TABS, None)
        self.server.shutdown_kernels()
        # the page learns of it a moment later, and rejects the shut kernels' pending requests then
        # ("Canceled future for create_subshell_request": seen once, counted against the next
        # notebook, 00, which opens no comm): what is counted starts once the page sees none running
        self.page.evaluate(_JS_KERNELS_GONE)
        self.name = name
        self.page_errors.clear()
        self.console_errors.clear()
        self.external_requests.clear()
        path = f"notebooks/{name}"
        try:
            open_tab(self.page, path, timeout)
            self.page.wait_for_function(_JS_KERNEL_READY, arg=path, timeout=timeout * 1000, polling=250)
        except Exception as error:
            seen = stuck_state(self.page, self.name)
            raise NotebookTimeout(f"{self.name}: JupyterLab did not show the notebook with an idle kernel "
                                  f"within {timeout:.0f} s of opening it from the page of the notebook "
                                  f"before ({error}); the page showed {seen}") from None
        return self

    def progress(self) -> dict:
        return self.page.evaluate(_JS_PROGRESS)

    def run_all(self, timeout: float = 180.0) -> dict:
        """Run All (the Run menu's command) and wait until the kernel is idle and no cell is running."""
        self.start_run_all()
        return self.wait_run_all(timeout)

    def start_run_all(self) -> None:
        """Run All from the Run menu's command, without waiting (so that several pages run together)."""
        self.page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

    def wait_run_all(self, timeout: float = 180.0) -> dict:
        """Wait until the kernel is idle and no cell is running; the last progress, with its seconds."""
        start = time.monotonic()
        calm, last = 0, None
        while True:
            last = self.progress()
            started = last["total"] == 0 or len(last["unrun"]) < last["total"] or last["running"]
            finished = (not last["running"] and last["kernel"] in ("idle", "dead", "unknown")
                        and (not last["unrun"] or last["failed"] or last["kernel"] != "idle"))
            calm = calm + 1 if (started and finished) else 0
            if calm >= 3:   # three quiet polls in a row: really done
                break
            if time.monotonic() - start > timeout:
                raise NotebookTimeout(
                    f"{self.name}: still running after {timeout:.0f} s (kernel {last['kernel']}, "
                    f"running cells {last['running']}, not yet run {last['unrun']})")
            time.sleep(0.25)
        last["seconds"] = time.monotonic() - start
        return last

    def inspect(self, settle: float = 60.0) -> dict:
        """Errors and rendering problems per cell; waits up to `settle` s for widgets to draw.

        It returns as soon as everything is drawn, so the wait costs only a failure's time. 60 s, not
        20: in a fresh clone's make test on a machine twice as slow as most (2026-12-06), the last
        figure and the quiz of notebook 06 were not drawn 20 s after its kernel went idle, in one run
        of six (not seen again, alone or beside four busy loops). A figure or quiz still undrawn says
        how it stands (its size, in the document or not, in view or not)."""
        deadline = time.monotonic() + settle
        while True:
            report = self.page.evaluate(_JS_INSPECT)
            problems = report["problems"] + [p for cell in report["cells"] for p in cell["problems"]]
            # an error shown in the page is final; a widget still loading or a figure not yet drawn
            # may only be slow, so give those until the deadline
            pending = [p for p in problems if " shows " not in p]
            if not pending or time.monotonic() > deadline:
                return report
            time.sleep(0.5)

    def hide_side_panels(self) -> None:
        self.page.evaluate("""() => {
          const shell = window.jupyterapp.shell;
          if (!shell.leftCollapsed) shell.collapseLeft();
          if (!shell.rightCollapsed) shell.collapseRight();
        }""")
        self.page.wait_for_timeout(300)

    def scroll_to(self, selector: str) -> bool:
        """Scroll the cell holding the first match of `selector` to the top of the view.

        Offscreen cells are laid out lazily (JupyterLab's default windowing), so heights change as
        the view moves: scroll again until the cell stays put.
        """
        found = False
        for _ in range(6):
            top = self.page.evaluate("""(selector) => {
              const el = window.jupyterapp.shell.currentWidget.content.node.querySelector(selector);
              if (!el) return null;
              const cell = el.closest('.jp-Cell') || el;
              cell.scrollIntoView({block: 'start'});
              return cell.getBoundingClientRect().top;
            }""", selector)
            if top is None:
                return found
            found = True
            self.page.wait_for_timeout(250)
            after = self.page.evaluate("""(selector) => {
              const el = window.jupyterapp.shell.currentWidget.content.node.querySelector(selector);
              return (el.closest('.jp-Cell') || el).getBoundingClientRect().top;
            }""", selector)
            if abs(after - top) < 2:
                break
        return found

    def screenshot(self, path: Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.wait_for_timeout(400)
        self.page.screenshot(path=str(path))
        return path

    def close(self) -> None:
        self.context.close()


class OnePage:
    """The one JupyterLab page a worker opens its notebooks in, one after another, as a learner does
    (NotebookPage.open_next): loading JupyterLab's page again for each costs about 4 s of Chromium's
    CPU. After a test failed (``session``: pytest's, which counts them) the next notebook gets a fresh
    page, in JupyterLab's own theme (drop())."""

    def __init__(self, session=None):
        self.page: NotebookPage | None = None
        self.session = session
        self.failed = self._failures()

    def _failures(self) -> int:
        return self.session.testsfailed if self.session is not None else 0

    def open(self, server: LabServer, browser, name: str) -> NotebookPage:
        if self._failures() > self.failed:
            self.failed = self._failures()
            self.drop()
        if self.page is None:
            self.page = NotebookPage(server, browser, name).open()
            return self.page
        return self.page.open_next(name)

    def drop(self) -> None:
        if self.page is not None:
            self.page.close()
            self.page.server.forget_theme()
            self.page = None


def describe_failures(name: str, progress: dict, report: dict) -> list[str]:
    """Plain-words failure lines naming the notebook and the cell."""
    lines = []
    for cell in report["cells"]:
        source = cell["source"].strip()
        where = f"{name}, cell {cell['index']} ({source.splitlines()[0][:70] if source else 'empty'})"
        for error in cell["errors"]:
            lines.append(f"{where}: raised {error}")
        for problem in cell["problems"]:
            lines.append(f"{where}: {problem}")
    for problem in report["problems"]:
        lines.append(f"{name}: {problem}")
    failed, unrun = progress.get("failed", []), progress.get("unrun", [])
    after = [index for index in unrun if failed and index > min(failed)]
    if after:
        lines.append(f"{name}, cells {after}: not run (Run All stops at the first error, cell {min(failed)})")
    for index in sorted(set(unrun) - set(after)):
        lines.append(f"{name}, cell {index}: never ran (kernel {progress.get('kernel')})")
    return lines


# --- sliders and heatmaps ------------------------------------------------------------------------

_JS_MARK_SLIDER = r"""(label) => {
  const notebook = window.jupyterapp.shell.currentWidget.content.node;
  for (const slider of notebook.querySelectorAll('.widget-slider')) {
    const name = slider.querySelector('.widget-label');
    if (!name || name.textContent.trim().replace(/:$/, '') !== label) continue;
    const handle = slider.querySelector('[role="slider"]');
    const root = slider.closest('.jp-OutputArea-output');
    if (!handle || !root) continue;
    notebook.querySelectorAll('[data-attnviz-test]').forEach(el => el.removeAttribute('data-attnviz-test'));
    handle.setAttribute('data-attnviz-test', 'handle');
    root.setAttribute('data-attnviz-test', 'root');
    return {value: handle.getAttribute('aria-valuetext') || handle.getAttribute('aria-valuenow'),
            now: handle.getAttribute('aria-valuenow'), max: handle.getAttribute('aria-valuemax'),
            heatmaps: root.querySelectorAll('.hm image').length};
  }
  return null;
}"""

# What the page shows of the heatmaps next to the marked slider: the painted images and titles.
_JS_HEATMAP_SIGNATURE = r"""() => {
  const root = document.querySelector('[data-attnviz-test="root"]');
  if (!root) return null;
  const images = Array.from(root.querySelectorAll('.hm image')).map(img => img.getAttribute('href') || '');
  const titles = Array.from(root.querySelectorAll('.gtitle, .annotation-text')).map(t => t.textContent);
  // the canvas explorers (attnviz/widgets/canvas.js) count their repaints on their root element
  const paints = Array.from(root.querySelectorAll('[data-attnviz-paint]')).map(e => e.dataset.attnvizPaint);
  return images.join('|') + '#' + titles.join('|') + '#' + paints.join('|');
}"""

# Timestamps a keypress (capture phase, before the slider sees it) and the first animation frame
# after the heatmaps' images change: the frame that paints the new weights.
_JS_ARM_LATENCY = r"""() => {
  const root = document.querySelector('[data-attnviz-test="root"]');
  const signature = () => Array.from(root.querySelectorAll('.hm image'))
    .map(img => img.getAttribute('href') || '').join('|');
  const before = signature();
  window.__attnviz = {t0: null, t1: null};
  const onKey = () => { if (window.__attnviz.t0 === null) window.__attnviz.t0 = performance.now(); };
  document.addEventListener('keydown', onKey, {capture: true, once: true});
  const observer = new MutationObserver(() => {
    if (signature() === before) return;
    observer.disconnect();
    requestAnimationFrame(() => { window.__attnviz.t1 = performance.now(); });
  });
  observer.observe(root, {subtree: true, childList: true, attributes: true, attributeFilter: ['href']});
}"""


def find_slider(page: NotebookPage, label: str) -> dict | None:
    """Mark the first slider labelled `label` and its output; None when the notebook has none."""
    return page.page.evaluate(_JS_MARK_SLIDER, label)


def heatmap_signature(page: NotebookPage) -> str | None:
    return page.page.evaluate(_JS_HEATMAP_SIGNATURE)


def press_slider_key(page: NotebookPage, label: str, key: str | None = None) -> str:
    """Focus the slider's handle and press `key` (default: right, or left at the top end)."""
    info = find_slider(page, label)
    if key is None:
        key = "ArrowLeft" if info and info["now"] == info["max"] else "ArrowRight"
    handle = page.page.locator('[data-attnviz-test="handle"]')
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.page.keyboard.press(key)
    return key


def move_slider_and_wait(page: NotebookPage, label: str, timeout: float = 15.0) -> dict:
    """Press an arrow key on the slider `label`; report whether its heatmaps repainted in time."""
    info = find_slider(page, label)
    if info is None:
        return {"found": False, "changed": False}
    before = heatmap_signature(page)
    key = press_slider_key(page, label)
    changed = True
    try:
        page.page.wait_for_function(
            f"(before) => ({_JS_HEATMAP_SIGNATURE})() !== before", arg=before,
            timeout=timeout * 1000, polling=100)
    except Exception:
        changed = False
    after_info = find_slider(page, label)
    return {"found": True, "changed": changed, "key": key, "value_before": info["value"],
            "value_after": after_info["value"] if after_info else None, "heatmaps": info["heatmaps"]}


def keypress_to_repaint_ms(page: NotebookPage, label: str, key: str | None = None,
                           timeout: float = 15.0) -> float:
    """Milliseconds from a real keypress on slider `label` to the frame painting the changed heatmap."""
    if find_slider(page, label) is None:
        raise LookupError(f"no slider labelled {label!r} on the page")
    page.page.evaluate(_JS_ARM_LATENCY)
    press_slider_key(page, label, key)
    page.page.wait_for_function("() => window.__attnviz && window.__attnviz.t1 !== null",
                                timeout=timeout * 1000, polling="raf")
    times = page.page.evaluate("() => window.__attnviz")
    return times["t1"] - times["t0"]


# --- the Log Console ---------------------------------------------------------------------------
# Kernel output that belongs to no cell (a traceback from a widget's message handler, a warning a
# control change printed) goes to JupyterLab's Log Console, not to the notebook. Its status-bar item
# (shown once the notebook's log has entries) says "N log entries for <notebook>" in its title.

_JS_LOG_ENTRIES = r"""() => {
  const item = document.querySelector('.jp-LogConsoleStatusItem [title]');
  if (!document.querySelector('.jp-StatusBar-Widget, #jp-main-statusbar')) return null;  // no status bar
  if (!item) return 0;
  const match = item.getAttribute('title').match(/(\d+) log entries/);
  return match ? Number(match[1]) : 0;
}"""

_JS_LOG_TEXT = r"""() => Array.from(document.querySelectorAll('.jp-LogConsolePanel .jp-OutputArea-output'))
  .map(node => node.textContent.trim().slice(0, 400))"""


def log_entries(page: NotebookPage) -> int | None:
    """How many entries the notebook's Log Console holds (None: this app shows no status bar)."""
    return page.page.evaluate(_JS_LOG_ENTRIES)


def log_text(page: NotebookPage) -> list[str]:
    """The Log Console's entries as text (opens the console in the bottom panel to read them)."""
    page.page.evaluate("window.jupyterapp.commands.execute('logconsole:open', {insertMode: 'split-bottom'})")
    page.page.wait_for_timeout(800)
    return page.page.evaluate(_JS_LOG_TEXT)


# --- explorers: their controls, their repaints, their pixels -------------------------------------
# An explorer's root element carries data-attnviz-paint (incremented after each repaint); its panel
# canvases carry data-attnviz-panel and, for heatmaps, data-x0 / data-y0 / data-cell (CSS pixels).

_JS_EXPLORERS = r"""() => {
  const notebook = window.jupyterapp.shell.currentWidget.content.node;
  const found = [];
  notebook.querySelectorAll('[data-attnviz-paint]').forEach((root, r) => {
    const area = root.closest('.jp-OutputArea-output') || root.parentElement;
    const cell = Array.from(notebook.querySelectorAll('.jp-Cell')).findIndex(c => c.contains(root));
    root.setAttribute('data-attnviz-root', String(r));
    const controls = [];
    const add = (el, kind, label) => {
      const id = `${r}-${controls.length}`;
      el.setAttribute('data-attnviz-control', id);
      controls.push({id, kind, label});
    };
    const label = (el) => ((el.querySelector('.widget-label') || {}).textContent || '').trim();
    area.querySelectorAll('.widget-slider').forEach(el => add(el, 'slider', label(el)));
    area.querySelectorAll('.widget-dropdown').forEach(el => add(el, 'dropdown', label(el)));
    area.querySelectorAll('.widget-toggle-buttons').forEach(el => add(el, 'toggle', label(el)));
    area.querySelectorAll('.widget-text').forEach(el => {
      if (el.querySelector('input')) add(el, 'text', label(el));
    });
    area.querySelectorAll('.widget-checkbox').forEach(el => add(el, 'checkbox', label(el)));
    root.querySelectorAll('canvas[role="button"]').forEach(el => add(el, 'pick', el.dataset.attnvizPanel));
    const panels = Array.from(root.querySelectorAll('canvas[data-attnviz-panel]'))
      .map(c => c.dataset.attnvizPanel);
    found.push({index: r, cell, explorer: root.dataset.attnvizExplorer || '',
                paints: Number(root.dataset.attnvizPaint), panels, controls});
  });
  return found;
}"""

_JS_EXPLORER_STATE = r"""(index) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  if (!root) return null;
  const area = root.closest('.jp-OutputArea-output') || root.parentElement;
  const problem = Array.from(area.querySelectorAll('.attnviz-problem'))
    .filter(el => el.getClientRects().length).map(el => el.textContent.trim()).join(' ');
  return {paints: Number(root.dataset.attnvizPaint), problem};
}"""

_JS_WAIT_REPAINT = r"""([index, before]) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  if (!root) return false;
  const area = root.closest('.jp-OutputArea-output') || root.parentElement;
  const problem = Array.from(area.querySelectorAll('.attnviz-problem'))
    .filter(el => el.getClientRects().length).map(el => el.textContent.trim()).join(' ');
  if (Number(root.dataset.attnvizPaint) > before.paints) return 'repainted';
  if (problem !== before.problem) return problem ? 'problem shown' : 'problem cleared';
  return false;
}"""

# The colour painted in heatmap cell (query i, key j), read 25% across and 15% down the cell (the
# spot canvas.js promises is clear of the value written in the middle and of a leak's red frame).
_JS_CELL_COLOUR = r"""([index, panel, i, j]) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const canvas = root && root.querySelector(`canvas[data-attnviz-panel="${panel}"]`);
  if (!canvas || !canvas.dataset.cell) return null;
  const cell = Number(canvas.dataset.cell), scale = canvas.width / canvas.getBoundingClientRect().width;
  const x = (Number(canvas.dataset.x0) + (j + 0.25) * cell) * scale;
  const y = (Number(canvas.dataset.y0) + (i + 0.15) * cell) * scale;
  const [r, g, b] = canvas.getContext('2d').getImageData(Math.round(x), Math.round(y), 1, 1).data;
  return '#' + [r, g, b].map(v => v.toString(16).padStart(2, '0')).join('');
}"""


def explorers(page: NotebookPage) -> list[dict]:
    """Every explorer on the page: its cell, paint count, panel names and controls (marked for use)."""
    return page.page.evaluate(_JS_EXPLORERS)


def explorer_state(page: NotebookPage, index: int) -> dict | None:
    return page.page.evaluate(_JS_EXPLORER_STATE, index)


def cell_colour(page: NotebookPage, index: int, panel: str, i: int, j: int) -> str | None:
    """'#rrggbb' painted in heatmap ``panel`` of explorer ``index`` at query ``i``, key ``j``."""
    return page.page.evaluate(_JS_CELL_COLOUR, [index, panel, i, j])


def colour_distance(a: str, b: str) -> int:
    """Largest channel difference between two '#rrggbb' colours."""
    return max(abs(int(a[k:k + 2], 16) - int(b[k:k + 2], 16)) for k in (1, 3, 5))


def _keys_on(page: NotebookPage, target, keys: list[str], read: str | None = None) -> bool:
    """Focus ``target`` and press ``keys``: True if what ``read`` (JS, ``el => ...``) reads of it then
    changed within 3 s (always True without ``read``)."""
    element = target.element_handle()        # this element, even once the locator finds another
    element.scroll_into_view_if_needed()
    element.focus()
    before = element.evaluate(read) if read else None
    for key in keys:
        page.page.keyboard.press(key)
    if not read:
        return True
    try:
        page.page.wait_for_function(f"([el, before]) => ({read})(el) !== before",
                                    arg=[element, before], timeout=3000, polling=50)
        return True
    except Exception:  # noqa: BLE001 - the keys did nothing to it: the caller says so
        return False


def _operate(page: NotebookPage, control: dict, undo: dict | None = None) -> dict:
    """Move ``control`` once with the keys its role promises (or put it back as ``undo`` says); return
    how to undo that, and ``keyboard_ignored`` if the control did not take the keys. Keyboard only:
    arrows on a slider's handle or a dropdown, Space on a toggle button or checkbox, an arrow then
    Enter in a number box, Enter on a pickable panel."""
    where = page.page.locator(f'[data-attnviz-control="{control["id"]}"]')
    kind = control["kind"]
    back = {"ArrowRight": "ArrowLeft", "ArrowLeft": "ArrowRight",
            "ArrowDown": "ArrowUp", "ArrowUp": "ArrowDown"}
    if kind == "slider":
        handle = where.locator('[role="slider"]').first
        now, top = handle.get_attribute("aria-valuenow"), handle.get_attribute("aria-valuemax")
        if top == handle.get_attribute("aria-valuemin"):
            return {"did": "nothing (its only value)", "fixed": True}
        key = undo["key"] if undo else ("ArrowLeft" if now == top else "ArrowRight")
        # (a log slider's aria-valuenow is its exponent to one decimal: 1.00 and 1.02 are both 0.0)
        read = "el => el.getAttribute('aria-valuenow') + ' ' + el.getAttribute('aria-valuetext')"
        taken = _keys_on(page, handle, [key], read)
        done = {"key": back[key], "did": f"pressed {key}"}
    elif kind == "dropdown":
        select = where.locator("select")
        last = select.evaluate("el => el.selectedIndex === el.options.length - 1")
        key = undo["key"] if undo else ("ArrowUp" if last else "ArrowDown")
        taken = _keys_on(page, select, [key], "el => el.value")
        done = {"key": back[key], "did": f"pressed {key} (now {select.input_value()!r})"}
    elif kind == "toggle":
        active = where.locator("button.mod-active").first.inner_text()
        target = (where.locator("button", has_text=undo["text"]).first if undo
                  else where.locator("button:not(.mod-active)").first)
        name = target.inner_text()
        taken = _keys_on(page, target, ["Space"], "el => el.classList.contains('mod-active')")
        done = {"text": active, "did": f"pressed Space on {name!r}"}
    elif kind == "text":
        box = where.locator("input")
        at_top = box.evaluate("el => el.max !== '' && Number(el.value) >= Number(el.max)")
        key = undo["key"] if undo else ("ArrowDown" if at_top else "ArrowUp")
        taken = _keys_on(page, box, [key, "Enter"], "el => el.value")
        done = {"key": back[key], "did": f"pressed {key} and Enter"}
    elif kind == "checkbox":
        taken = _keys_on(page, where.locator("input"), ["Space"], "el => el.checked")
        done = {"did": "pressed Space on the checkbox"}
    elif kind == "pick":
        taken = _keys_on(page, where, ["Enter"])
        done = {"did": "pressed Enter on the panel", "no_undo": True}
    else:
        raise ValueError(f"unknown control kind {kind!r}")
    if not taken:
        done.update(keyboard_ignored=True, no_undo=True, did=done["did"] + " (ignored)")
    return done


def wait_repaint(page: NotebookPage, index: int, before: dict, timeout: float = 30.0) -> str | None:
    """Wait until explorer ``index`` repainted (paint counter went up) or changed its problem text."""
    try:
        handle = page.page.wait_for_function(_JS_WAIT_REPAINT, arg=[index, before], timeout=timeout * 1000,
                                             polling=50)
        return handle.json_value()
    except Exception:  # noqa: BLE001 - a timeout is the answer "did not repaint"
        return None


def move_every_control(page: NotebookPage, timeout: float = 30.0) -> list[dict]:
    """Move each control of each explorer once, with the keyboard alone; record whether its explorer
    repainted (or said why not), and whether the control ignored the keys (``keyboard_ignored``).

    A control whose setting is rejected shows a problem instead of repainting; it is then put
    back (so the next control starts from working settings), which must clear the problem. A
    slider with a single value (e.g. "layer" for a one-layer model) has nothing to move: "fixed".
    """
    results = []
    for explorer in explorers(page):
        index = explorer["index"]
        for control in explorer["controls"]:
            before = explorer_state(page, index)
            undo = _operate(page, control)
            waits = not (undo.get("fixed") or undo.get("keyboard_ignored"))
            outcome = wait_repaint(page, index, before, timeout) if waits else (
                "fixed" if undo.get("fixed") else None)
            entry = {"explorer": explorer["explorer"], "cell": explorer["cell"], "control": control["label"],
                     "kind": control["kind"], "did": undo["did"], "outcome": outcome,
                     "keyboard_ignored": bool(undo.get("keyboard_ignored"))}
            if outcome == "problem shown" and not undo.get("no_undo"):
                entry["problem"] = explorer_state(page, index)["problem"]
                again = explorer_state(page, index)
                _operate(page, control, undo)
                entry["put_back"] = wait_repaint(page, index, again, timeout)
            results.append(entry)
    return results


# --- bytes over the kernel websocket -------------------------------------------------------------

class WebsocketBytes:
    """Counts the bytes the page receives over its websockets (the kernel channels), from now on."""

    def __init__(self, page: NotebookPage):
        self.received = 0
        self.frames = 0
        page.page.on("websocket", self._watch)

    def _watch(self, socket) -> None:
        socket.on("framereceived", self._frame)

    def _frame(self, payload) -> None:
        self.frames += 1
        self.received += len(payload.encode("utf-8") if isinstance(payload, str) else payload)

    def reset(self) -> int:
        got, self.received, self.frames = self.received, 0, 0
        return got


VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70",
           "#7ad151", "#bddf26", "#fde725"]      # matplotlib's viridis at 0, 0.1, ..., 1


def viridis(value: float) -> str:
    """The course's weight colour for ``value`` in [0, 1]: linear between viridis's 11 stops."""
    x = min(1.0, max(0.0, value)) * (len(VIRIDIS) - 1)
    i = min(len(VIRIDIS) - 2, int(x))
    low, high = (tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)) for c in VIRIDIS[i:i + 2])
    return "#" + "".join(f"{round(a + (x - i) * (b - a)):02x}" for a, b in zip(low, high, strict=True))


_JS_TABLE_CELL = r"""([index, panel, i, j]) => {
  const root = document.querySelector(`[data-attnviz-root="${index}"]`);
  const canvas = root && root.querySelector(`canvas[data-attnviz-panel="${panel}"]`);
  const table = canvas && canvas.closest('.attnviz-panel').querySelector('.attnviz-table');
  const row = table && table.rows[i + 1];
  return row && row.cells[j + 1] ? row.cells[j + 1].textContent.trim() : null;
}"""


def table_value(page: NotebookPage, index: int, panel: str, i: int, j: int,
                timeout: float = 15.0) -> str | None:
    """What the panel's "numbers" table says for cell (i, j) (opens the table by its button)."""
    root = page.page.locator(f'[data-attnviz-root="{index}"]')
    box = root.locator(f'canvas[data-attnviz-panel="{panel}"]').locator("xpath=ancestor::figure[1]")
    button = box.locator("button.attnviz-numbers")
    if button.get_attribute("aria-expanded") != "true":
        button.click()
    try:
        page.page.wait_for_function(f"(args) => ({_JS_TABLE_CELL})(args) !== null", arg=[index, panel, i, j],
                                    timeout=timeout * 1000)
    except Exception:  # noqa: BLE001 - no table: say so with None
        return None
    return page.page.evaluate(_JS_TABLE_CELL, [index, panel, i, j])


WEIGHT_PANELS = ("scaled", "unscaled", "weights/0", "weights/1", "weights/2", "selected")


def weight_cell_failures(page: NotebookPage, name: str, i: int = 0, j: int = 0) -> list[str]:
    """Each explorer's weight heatmaps, cell (i, j): the pixel has the colour its number says."""
    failures = []
    for explorer in explorers(page):
        for panel in (p for p in explorer["panels"] if p in WEIGHT_PANELS):
            text = table_value(page, explorer["index"], panel, i, j)
            painted = cell_colour(page, explorer["index"], panel, i, j)
            if text is None or painted is None:
                failures.append(f"{name}: {explorer['explorer']} explorer, panel {panel}: no numbers table "
                                f"or no cell ({i}, {j}) to read")
                continue
            want = {"masked": "#c8c8c8", "NaN": "#ff66cc"}.get(text) or viridis(float(text))
            if colour_distance(painted, want) > 4:
                failures.append(f"{name}: {explorer['explorer']} explorer, panel {panel}, cell ({i}, {j}) "
                                f"says {text} but is painted {painted}, not {want}")
            page.page.locator(f'[data-attnviz-root="{explorer["index"]}"]').locator(
                f'canvas[data-attnviz-panel="{panel}"]').locator("xpath=ancestor::figure[1]").locator(
                "button.attnviz-numbers").click()                      # close the table again
    return failures
