"""A real JupyterHub for a test: real accounts, a proxy, per-user servers, nbgrader's exchange.

Used by tests/test_hub.py and benchmarks/hub_sizing.py. Everything lives in one temporary folder
(the hub's database, cookie secret and config, every account's home, the exchange) and is removed
at the end, with the accounts; every server listens on 127.0.0.1 on a port chosen at run time.

* Accounts: real Unix users (``useradd``, so this needs root), one per person, as on a school's
  own hub with JupyterHub's default spawner. Each person's server, kernels and terminals run as
  that user, so nbgrader's exchange is tested with the file permissions it really relies on
  (students write into the teacher's inbound folder without reading each other's submissions).
* The shared environment: every user runs the course's ``.venv`` packages (one installation,
  readable by everyone, as a hub administrator installs them). ``.venv``'s own interpreter sits
  under root's home here, which other users cannot enter, so ``shared_environment`` makes a small
  virtual environment from the system's Python of the same version whose ``.pth`` file adds
  ``.venv``'s site-packages; its ``share`` (JupyterLab and the widgets' front-ends) is ``.venv``'s.
* The hub: ``jupyterhub`` (pinned in requirements.txt) with configurable-http-proxy from
  ``node_modules`` (pinned in package.json), JupyterHub's ``SharedPasswordAuthenticator`` (its
  dummy authenticator: one password for every allowed user) and its ``LocalProcessSpawner``.
* A terminal in a person's JupyterLab (``Terminal``): the commands a teacher or a student types
  (``nbgrader fetch_assignment ...``) run there, through JupyterLab's own terminal service.
* ``Sampler``: every few tenths of a second, the memory and CPU time of every process of the
  test's accounts and of the hub's own processes.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from _lab import JS_CLOSE_TABS, REPO, NotebookPage, free_port, open_tab

CHP = REPO / "node_modules" / ".bin" / "configurable-http-proxy"
COMMENT = "attnviz hub test"          # the accounts' GECOS field says who made them (and the pid)


def missing_reason() -> str | None:
    """Why a real hub cannot run on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "real accounts per student need root (useradd); this test runs as an ordinary user"
    for tool in ("useradd", "userdel", "git", "node"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    if not CHP.exists():
        return f"no configurable-http-proxy at {CHP.relative_to(REPO)} (run `npm ci`)"
    try:
        import jupyterhub  # noqa: F401
        import nbgitpuller  # noqa: F401
        import psutil  # noqa: F401
    except ImportError as error:
        return f"{error.name} is not installed (see requirements.txt; `make .venv/.installed`)"
    if _python_for_everyone() is None:
        return (f"no Python {sys.version_info.major}.{sys.version_info.minor} that other users can run "
                "(the students' servers need one; /usr/bin/python3 is the usual one)")
    return None


# --- accounts --------------------------------------------------------------------------------------

@dataclass
class Account:
    role: str          # "teacher", or what the student will hand in: "right", "buggy", "untouched"
    name: str
    uid: int
    gid: int
    home: Path


def _run(command, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, **kwargs)
    if done.returncode:
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({done.returncode}): "
                           f"{(done.stderr or done.stdout).strip()[-800:]}")
    return done


def add_account(role: str, name: str, homes: Path, path_line: str) -> Account:
    """A Unix user with a home under ``homes`` whose login shells find the shared environment."""
    _run(["useradd", "--create-home", "--home-dir", str(homes / name), "--shell", "/bin/bash",
          "--comment", f"{COMMENT} pid={os.getpid()}", name])
    entry = pwd.getpwnam(name)
    home = Path(entry.pw_dir)
    # JupyterLab's terminals are login shells, and Debian's /etc/profile resets PATH: the
    # account's own ~/.profile puts the course's environment first, as a hub administrator would
    with open(home / ".profile", "a", encoding="utf-8") as profile:
        profile.write(f"\n# the course's environment (the hub test)\n{path_line}\n")
    return Account(role, name, entry.pw_uid, entry.pw_gid, home)


def remove_account(name: str) -> str | None:
    """Delete the user and its home; a message when that failed."""
    done = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True, timeout=60)
    if done.returncode not in (0, 12):          # 12: the home or mail spool was already gone
        return f"userdel {name}: {done.stderr.strip()}"
    return None


def remove_stale_accounts() -> list[str]:
    """What an earlier run of this test left behind when it was killed (its process is gone).

    Its accounts (marked in their comment field with the pid that made them) and their processes,
    its hub's process group (the pid file in its folder) and the folder itself are removed.
    """
    import psutil

    removed = []
    for entry in pwd.getpwall():
        match = re.fullmatch(rf"{COMMENT} pid=(\d+)", entry.pw_gecos)
        if not match or psutil.pid_exists(int(match.group(1))):
            continue
        folder = Path(entry.pw_dir).parent.parent
        if folder.name.startswith("attnviz-hub-"):
            try:
                hub = psutil.Process(int((folder / "hub" / "jupyterhub.pid").read_text().strip()))
                if "jupyterhub" in " ".join(hub.cmdline()) and str(folder) in " ".join(hub.cmdline()):
                    os.killpg(hub.pid, 9)
            except (OSError, ValueError, psutil.Error):
                pass
        _kill_processes_of({entry.pw_uid})
        if remove_account(entry.pw_name) is None:
            removed.append(entry.pw_name)
        if folder.name.startswith("attnviz-hub-"):
            shutil.rmtree(folder, ignore_errors=True)
    return removed


def _kill_processes_of(uids: set[int], timeout: float = 10.0) -> list[str]:
    """Terminate, then kill, every process owned by ``uids`` (the test's own accounts); the command
    lines of those that outlived the hub. One already exiting when the hub stopped has not: a zombie
    (ended, not yet reaped; its command line reads empty) or one that ends within a second."""
    import psutil

    def is_running(process) -> bool:
        try:
            return process.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
        except psutil.NoSuchProcess:
            return False

    mine = [p for p in psutil.process_iter(["uids", "cmdline"])
            if p.info["uids"] and p.info["uids"].real in uids and is_running(p)]
    _, mine = psutil.wait_procs(mine, timeout=1.0)
    mine = [p for p in mine if is_running(p)]
    names = [" ".join(p.info["cmdline"] or [])[:120] for p in mine]
    for process in mine:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(mine, timeout=timeout)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)
    return names


# --- the environment every user runs ------------------------------------------------------------

def _reachable(path: Path) -> bool:
    """Can a user other than root read ``path`` (every folder above it lets others in)?"""
    path = Path(os.path.realpath(path))
    return all(p.stat().st_mode & stat.S_IXOTH for p in [*path.parents] if p != path) and bool(
        path.stat().st_mode & stat.S_IROTH)


def _python_for_everyone() -> str | None:
    """An interpreter of this Python's version that every user may run."""
    want = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/python{want}", shutil.which(f"python{want}"), "/usr/bin/python3"):
        if not candidate or not Path(candidate).exists():
            continue
        real = Path(os.path.realpath(candidate))
        if not all(p.stat().st_mode & stat.S_IXOTH for p in [real, *real.parents]):
            continue
        version = subprocess.run([str(real), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True).stdout.strip()
        if version == want:
            return str(real)
    return None


def shared_environment(dest: Path, nbgrader_config: str) -> Path:
    """A virtual environment in ``dest`` that runs ``.venv``'s packages for every user.

    When ``.venv`` or the checkout cannot be read by other users (a checkout under /root), its
    site-packages, share and the ``attnviz`` package are hard-linked (or copied) into ``dest``.
    ``nbgrader_config`` becomes the environment's nbgrader_config.py (course id, exchange).
    """
    site = Path(sysconfig.get_paths()["purelib"])
    share = Path(sys.prefix) / "share"
    python = _python_for_everyone()
    _run([python, "-m", "venv", "--without-pip", str(dest)])
    paths = []
    if not all(_reachable(p) for p in (site, share, REPO / "attnviz")):
        for source, target in ((site, dest / "venv-site"), (share, dest / "venv-share"),
                               (REPO / "attnviz", dest / "src" / "attnviz")):
            target.parent.mkdir(parents=True, exist_ok=True)
            if subprocess.run(["cp", "-al", str(source), str(target)], capture_output=True).returncode:
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(source, target, symlinks=True)
        site, share = dest / "venv-site", dest / "venv-share"
        paths.append(str(dest / "src"))            # found before .venv's editable-install finder
    own_site = Path(_run([str(dest / "bin" / "python"), "-c",
                          "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    lines = [*paths, f"import site; site.addsitedir({str(site)!r})"]
    (own_site / "attnviz_course_environment.pth").write_text("\n".join(lines) + "\n")
    (dest / "share").symlink_to(share)
    # etc/jupyter: .venv's (extensions on and off as `make` set them) plus nbgrader's config
    shutil.copytree(Path(sys.prefix) / "etc" / "jupyter", dest / "etc" / "jupyter", dirs_exist_ok=True)
    (dest / "etc" / "jupyter" / "nbgrader_config.py").write_text(nbgrader_config)
    # console scripts (jupyter, nbgrader, alembic, ...) with this environment's interpreter
    for script in Path(sys.executable).parent.iterdir():
        target = dest / "bin" / script.name
        if target.exists() or script.is_symlink() or not script.is_file():
            continue
        try:
            first, rest = script.read_text().split("\n", 1)
        except (UnicodeDecodeError, ValueError):
            continue
        if first.startswith("#!") and "python" in first:
            target.write_text(f"#!{dest / 'bin' / 'python'}\n{rest}")
            target.chmod(0o755)
    return dest


# --- the hub ---------------------------------------------------------------------------------------

HUB_CONFIG = """\
# JupyterHub for the course's hub test (written by tests/_hub.py)
c = get_config()  # noqa: F821

c.JupyterHub.bind_url = "http://127.0.0.1:{proxy_port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.db_url = "sqlite:///{db}"
c.JupyterHub.cookie_secret_file = {cookie!r}
c.JupyterHub.pid_file = {hub_pid!r}

# one password for every allowed user (DummyAuthenticator's password is deprecated since 5.3)
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = {password!r}
c.Authenticator.allowed_users = {users!r}

# each user's server runs as that Unix user, from the shared environment
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--LabApp.expose_app_in_browser=True"]   # the test reads the page's app
c.Spawner.environment = {environment!r}
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.LocalProcessSpawner.interrupt_timeout = 10
c.LocalProcessSpawner.term_timeout = 10
"""


class Hub:
    """JupyterHub on 127.0.0.1 with real accounts; ``close()`` removes everything it made."""

    def __init__(self, roles: list[str]):
        self.tmp = Path(tempfile.mkdtemp(prefix="attnviz-hub-"))
        self.tmp.chmod(0o755)
        self.tag = secrets.token_hex(2)
        self.password = secrets.token_urlsafe(12)
        self.accounts: dict[str, Account] = {}
        self.proc: subprocess.Popen | None = None
        self.helpers: list[subprocess.Popen] = []
        self.problems: list[str] = []
        self.roles = roles
        self.exchange = self.tmp / "exchange"
        self.env = self.tmp / "env"
        self.log_path = self.tmp / "hub" / "jupyterhub.log"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def prepare(self, course_id: str) -> Hub:
        """The exchange, the shared environment and one account per role."""
        remove_stale_accounts()
        self.exchange.mkdir()
        self.exchange.chmod(0o777)            # nbgrader's exchange: writable by everyone
        shared_environment(self.env, (
            "# nbgrader for everyone on this hub (the hub test)\nc = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {course_id!r}\nc.Exchange.root = {str(self.exchange)!r}\n"))
        homes = self.tmp / "home"
        homes.mkdir()
        homes.chmod(0o755)
        path_line = f'export PATH="{self.env / "bin"}:$PATH"'
        for role in self.roles:
            account = add_account(role, f"avz{self.tag}-{role}", homes, path_line)
            self.accounts[role] = account
        return self

    def start(self, timeout: float = 90.0) -> Hub:
        folder = self.tmp / "hub"
        folder.mkdir()
        folder.chmod(0o700)
        config = folder / "jupyterhub_config.py"
        config.write_text(HUB_CONFIG.format(
            proxy_port=self.port, hub_port=free_port(), api_port=free_port(), chp=str(CHP),
            proxy_pid=str(folder / "proxy.pid"), db=folder / "jupyterhub.sqlite",
            cookie=str(folder / "jupyterhub_cookie_secret"), hub_pid=str(folder / "jupyterhub.pid"),
            password=self.password, users={a.name for a in self.accounts.values()},
            python=str(self.env / "bin" / "python"),
            environment={"PATH": f"{self.env / 'bin'}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                         "PYTHONDONTWRITEBYTECODE": "1"}))
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
               "HOME": str(folder)}
        self.log = open(self.log_path, "w")  # noqa: SIM115 (closed in close)
        self.proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=folder,
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hub: jupyterhub exited with {self.proc.returncode}:\n{self.log_text()}")
            try:
                with urllib.request.urlopen(f"{self.base}/hub/api/", timeout=5) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
        raise RuntimeError(f"hub: no answer on {self.base}/hub/api/ in {timeout:.0f} s:\n{self.log_text()}")

    def log_text(self, tail: int = 4000) -> str:
        try:
            return self.log_path.read_text()[-tail:]
        except OSError:
            return ""

    def server_lines(self, user: str, last: int = 40) -> str:
        """The hub log's last lines about sessions and kernels (the single-user servers write theirs
        into it), warnings and errors, and ``user``'s requests to its server's sessions API: what a
        notebook that never got its kernel leaves behind."""
        keep = re.compile(r"[Kk]ernel|[Ss]ession|^\[[EWC] |Traceback|Error|"
                          + re.escape(f"/user/{user}/api/"))
        lines = [line for line in self.log_text(2_000_000).splitlines() if keep.search(line)]
        return f"the hub's log, {len(lines[-last:])} of {len(lines)} lines about kernels, sessions and " \
               f"errors:\n" + "\n".join(lines[-last:])

    def give(self, role: str, folders: list[Path], name: str) -> Path:
        """Copy ``folders`` into ``~/name`` of ``role``'s account, owned by that user."""
        account = self.accounts[role]
        dest = account.home / name
        for folder in folders:
            shutil.copytree(folder, dest / folder.name, ignore=shutil.ignore_patterns(
                "__pycache__", ".ipynb_checkpoints"))
        for path in [dest, *dest.rglob("*")]:
            os.chown(path, account.uid, account.gid, follow_symlinks=False)
        return dest

    def run_as(self, role: str, command: list[str], **kwargs) -> subprocess.Popen:
        """A helper process of the test run as ``role``'s user (stopped by ``close``)."""
        account = self.accounts[role]
        proc = subprocess.Popen(command, user=account.uid, group=account.gid, extra_groups=[],
                                cwd=account.home, env={"HOME": str(account.home), "PATH": "/usr/bin:/bin"},
                                start_new_session=True, **kwargs)
        self.helpers.append(proc)
        return proc

    def close(self) -> list[str]:
        """Stop the hub (it stops every server and the proxy), then anything left; remove all."""
        problems = []
        for proc in self.helpers:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                problems.append("jupyterhub did not stop in 60 s; killed its process group")
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 0)       # the proxy (same session) should be gone too
                problems.append("the proxy outlived the hub; killed its process group")
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
        uids = {a.uid for a in self.accounts.values()}
        left = _kill_processes_of(uids) if uids else []
        if left:
            problems.append(f"processes of the test's accounts outlived the hub: {left}")
        for account in self.accounts.values():
            message = remove_account(account.name)
            if message:
                problems.append(message)
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return problems


# --- in a person's browser ---------------------------------------------------------------------------

class HubNotebookPage(NotebookPage):
    """A notebook open in a logged-in person's browser context (the session's cookies are there)."""

    # (no server of its own; ``page`` and ``path``: a notebook opened in a page already open, in_lab)
    def __init__(self, context, url: str | None, name: str, page=None, path: str | None = None):
        self.context, self.url, self.name, self.path = context, url, name, path
        self.page = page or context.new_page()
        self.page_errors: list[str] = []
        self.console_errors: list[str] = []
        self.external_requests: list[str] = []
        self.page.on("pageerror", lambda error: self.page_errors.append(str(error)))
        self.page.on("console", lambda msg: msg.type == "error" and self.console_errors.append(msg.text))

    @classmethod
    def in_lab(cls, page, path: str, name: str) -> HubNotebookPage:
        """The notebook at ``path`` (from the person's home) opened in their JupyterLab page that is
        already open, as they open it from the file browser; close() closes its tab, not the page."""
        return cls(page.context, None, name, page=page, path=path)

    def goto(self, timeout: float = 120.0) -> HubNotebookPage:
        if self.path:
            open_tab(self.page, self.path, timeout)
        else:
            self.page.goto(self.url, timeout=timeout * 1000)
        return self

    def wait_ready(self, timeout: float = 180.0) -> HubNotebookPage:
        from _lab import _JS_KERNEL_READY, NotebookTimeout, stuck_state

        try:
            self.page.wait_for_function(_JS_KERNEL_READY, arg=self.path,
                                        timeout=timeout * 1000, polling=250)
        except Exception as error:
            raise NotebookTimeout(f"open notebook: {self.name}: JupyterLab did not show it with an idle "
                                  f"kernel within {timeout:.0f} s ({error}); the page showed "
                                  f"{stuck_state(self.page, 'hub ' + self.name)}") from None
        return self

    def open(self, timeout: float = 180.0) -> HubNotebookPage:
        return self.goto(timeout).wait_ready(timeout)

    def choose_kernel_again(self) -> bool:
        """If the notebook shows "No Kernel" (no session was made), choose Python 3 for it, as a student
        does from the kernel picker; whether it had to."""
        return self.page.evaluate("""async (path) => {
          const shell = window.jupyterapp.shell;
          const panel = Array.from(shell.widgets('main')).find((w) => w.context && w.context.path === path);
          if (!panel || panel.sessionContext.session) return false;
          await panel.sessionContext.changeKernel({name: 'python3'});
          return true;
        }""", self.path)

    def kernel_id(self) -> str:
        return self.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id")

    def close(self) -> None:
        if self.path:     # its tab closes; the kernel stays running, as in JupyterLab
            self.page.evaluate(JS_CLOSE_TABS, self.path)
        else:
            self.page.close()


def submit_login(page, hub: Hub, account: Account, path: str, timeout: float = 120.0) -> None:
    """Open ``path`` on the hub as a person would: the hub shows its login form; fill it in."""
    page.goto(f"{hub.base}{path}", timeout=timeout * 1000)
    try:
        page.wait_for_selector("#username_input", timeout=timeout * 1000)
    except Exception as error:
        raise AssertionError(f"login: no login form at {page.url} for {account.name} ({error})") from None
    page.fill("#username_input", account.name)
    page.fill("#password_input", hub.password)
    page.click("#login_submit")


def wait_for_lab(page, hub: Hub, account: Account, timeout: float = 180.0) -> None:
    """After the login form: click Launch if the hub asks, then wait until JupyterLab is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if page.evaluate("() => !!(window.jupyterapp && window.jupyterapp.shell)"):
                return
            start = page.locator("a#start")
            if start.count() and start.first.is_visible():          # "Launch server"
                start.first.click()
            if "/hub/login" in page.url and page.locator(".alert-danger").count():
                raise AssertionError(f"login: the hub refused {account.name}: "
                                     f"{page.locator('.alert-danger').first.inner_text()}")
        except AssertionError:
            raise
        except Exception:  # noqa: BLE001 - the page navigated mid-question (spawn, redirects): ask again
            pass
        page.wait_for_timeout(500)
    raise AssertionError(f"spawn: {account.name}'s JupyterLab did not open in {timeout:.0f} s "
                         f"(at {page.url}):\n{hub.log_text(3000)}")


_JS_TERMINAL_SEND = r"""async ([key, command]) => {
  const app = window.jupyterapp;
  const terminals = (window.__attnvizTerminals = window.__attnvizTerminals || {});
  if (!terminals[key]) {
    const connection = await app.serviceManager.terminals.startNew();
    const entry = {connection, out: ''};
    connection.messageReceived.connect((_, message) => {
      if (message.type === 'stdout') entry.out += message.content[0];
    });
    terminals[key] = entry;
    for (let i = 0; i < 600 && connection.connectionStatus !== 'connected'; i++) {
      await new Promise(resolve => setTimeout(resolve, 100));
    }
  }
  terminals[key].out = '';
  terminals[key].connection.send({type: 'stdin', content: [command + '\r']});
  return terminals[key].connection.connectionStatus;
}"""

_DONE = "__ATTNVIZ_DONE__"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """A terminal in a person's JupyterLab (a login shell as that user, in their home)."""

    def __init__(self, page, who: str):
        self.page, self.who, self.key = page, who, secrets.token_hex(4)

    def send(self, command: str, step: str) -> None:
        """Type ``command`` and Enter (without waiting for it; ``wait`` does)."""
        self.command, self.step = command, step
        sentinel = f'echo "{_DONE[:8]}""{_DONE[8:]}" $?'        # its own echo does not match
        status = self.page.evaluate(_JS_TERMINAL_SEND, [self.key, f"{command}; {sentinel}"])
        if status != "connected":
            raise AssertionError(f"{step}: {self.who}'s terminal did not connect ({status})")

    def wait(self, timeout: float = 300.0) -> str:
        """The output of the command sent last, once it finished; fails naming the step unless it exited 0."""
        deadline = time.monotonic() + timeout
        pattern = re.compile(rf"{_DONE} (\d+)")
        out = ""
        while time.monotonic() < deadline:
            out = self.page.evaluate("(key) => window.__attnvizTerminals[key].out", self.key)
            found = pattern.search(out)
            if found:
                text = _ANSI.sub("", out[:found.start()])
                if found.group(1) != "0":
                    raise AssertionError(f"{self.step}: `{self.command}` in {self.who}'s terminal exited "
                                         f"with {found.group(1)}:\n{text[-3000:]}")
                return text
            time.sleep(0.3)
        raise AssertionError(f"{self.step}: `{self.command}` in {self.who}'s terminal did not finish in "
                             f"{timeout:.0f} s:\n{_ANSI.sub('', out)[-3000:]}")

    def run(self, command: str, step: str, timeout: float = 300.0) -> str:
        """Type ``command``, wait for it to finish, and return what it printed."""
        self.send(command, step)
        return self.wait(timeout)


# --- measuring --------------------------------------------------------------------------------------

@dataclass
class ProcessRecord:
    pid: int
    owner: str               # an account's role, or "hub"
    kind: str                # "server", "kernel", "hub", "proxy" or "other"
    cmdline: str
    peak_rss: int = 0
    peak_tree_rss: int = 0   # the process and its children, summed, at one sample
    cpu: float = 0.0         # its own user + system seconds
    children_cpu: float = 0.0  # of the children it waited for (a kernel's forked checkers)
    hwm: int = 0             # VmHWM: the kernel's own exact peak RSS, from /proc


@dataclass
class Sampler:
    """Samples the accounts' and the hub's processes in a thread (``start``, ``stop``)."""

    hub: Hub
    interval: float = 0.25
    records: dict[int, ProcessRecord] = field(default_factory=dict)
    peak_total_rss: int = 0
    peak_total_pss: int = 0
    peak_students_pss: int = 0
    samples: int = 0

    def start(self) -> Sampler:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="attnviz-hub-sampler")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _owners(self):
        import psutil

        by_uid = {a.uid: role for role, a in self.hub.accounts.items()}
        hub_pids = set()
        if self.hub.proc is not None and self.hub.proc.poll() is None:
            try:
                root = psutil.Process(self.hub.proc.pid)
                hub_pids = {root.pid, *(c.pid for c in root.children(recursive=True))}
            except psutil.NoSuchProcess:
                pass
        return by_uid, hub_pids

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception:  # noqa: BLE001 - a process that vanished mid-sample; the next sample counts
                pass
            self._stop.wait(self.interval)

    def sample(self) -> None:
        import psutil

        by_uid, hub_pids = self._owners()
        total_rss = total_pss = students_pss = 0
        tree: dict[int, int] = {}
        seen = []
        for process in psutil.process_iter(["uids", "ppid", "cmdline"]):
            uid = process.info["uids"].real if process.info["uids"] else None
            if uid not in by_uid and process.pid not in hub_pids:
                continue
            try:
                with process.oneshot():
                    memory = process.memory_full_info()
                    times = process.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            cmdline = " ".join(process.info["cmdline"] or [])
            record = self.records.get(process.pid)
            if record is None or record.cmdline != cmdline[:2000]:
                owner = by_uid.get(uid, "hub")
                parent = self.records.get(process.info["ppid"])
                # a child forked by a server or a kernel (a terminal's shell, a checker) carries its
                # parent's command line until it execs: under load a sample can catch it so
                kind = ("other" if parent is not None and parent.cmdline == cmdline[:2000] else
                        "kernel" if "ipykernel_launcher" in cmdline else
                        "server" if "jupyterhub.singleuser" in cmdline else
                        "proxy" if "configurable-http-proxy" in cmdline else
                        "hub" if process.pid == getattr(self.hub.proc, "pid", None) else "other")
                record = self.records[process.pid] = ProcessRecord(process.pid, owner, kind, cmdline[:2000])
            record.peak_rss = max(record.peak_rss, memory.rss)
            record.cpu = times.user + times.system
            record.children_cpu = times.children_user + times.children_system
            if record.kind == "kernel":
                record.hwm = max(record.hwm, _vm_hwm(process.pid))
            total_rss += memory.rss
            total_pss += memory.pss
            if record.owner not in ("hub", "teacher"):
                students_pss += memory.pss
            seen.append((process.pid, process.info["ppid"], memory.rss))
        # each process's tree: itself and every sampled descendant, at this sample
        parents = {pid: ppid for pid, ppid, _ in seen}
        for pid, _, rss in seen:
            node = pid
            while node in parents:
                tree[node] = tree.get(node, 0) + rss
                node = parents[node]
        for pid, rss in tree.items():
            if pid in self.records:
                self.records[pid].peak_tree_rss = max(self.records[pid].peak_tree_rss, rss)
        self.peak_total_rss = max(self.peak_total_rss, total_rss)
        self.peak_total_pss = max(self.peak_total_pss, total_pss)
        self.peak_students_pss = max(self.peak_students_pss, students_pss)
        self.samples += 1

    def listening(self) -> list[dict]:
        """Every listening socket of the accounts' and the hub's processes: who, and on which address."""
        import psutil

        out = []
        for pid, record in list(self.records.items()):
            try:
                connections = psutil.Process(pid).net_connections(kind="inet")
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            out += [{"owner": record.owner, "kind": record.kind, "ip": c.laddr.ip, "port": c.laddr.port}
                    for c in connections if c.status == psutil.CONN_LISTEN]
        return out

    def kernel(self, role: str, kernel_id: str) -> ProcessRecord | None:
        for record in self.records.values():
            if record.owner == role and record.kind == "kernel" and kernel_id in record.cmdline:
                return record
        return None


def _vm_hwm(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def write_json(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path
