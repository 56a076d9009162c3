"""A JupyterLab server and a page on it, for the widget tests in a real browser.

``LabServer`` runs ``python -m jupyterlab`` (this interpreter, so the notebook kernel is
this venv's python: jupyter_client swaps a kernelspec's ``python`` for the server's own
``sys.executable``) on a free port in a temporary root, with its own config, settings
and workspaces, so nothing from the machine's Jupyter setup leaks in. ``Lab`` drives a
Playwright page on it: write a notebook, open it, run every cell, wait for the widget.

Everything waits on a condition (a selector, a kernel status) with generous timeouts,
never on a sleep: the machine has 2 cores and other tests run beside these.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Sequence

import nbformat

#: Debian's chromium (installed by `make setup`); Playwright's own download needs a
#: network this machine does not have.
CHROMIUM = "/usr/bin/chromium"
#: Generous on a loaded 2-core machine: a kernel start plus `import powercontext`.
STARTUP_S = 90
RUN_MS = 180_000

#: Lab settings for the tests. Windowing "none" keeps every cell in the DOM (the default
#: windowing leaves off-screen cells unrendered, so selectors would miss them); no news
#: or update toasts over the page.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True,
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """``jupyter lab --no-browser`` in ``base``; ``start()`` fails (never skips) when the
    server does not answer within STARTUP_S seconds."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.proc: subprocess.Popen | None = None
        self.log = base / "jupyter.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "LabServer":
        self.root.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        for name, folder in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                             ("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                             ("IPYTHONDIR", "ipython")):
            (self.base / folder).mkdir(exist_ok=True)
            env[name] = str(self.base / folder)
        for name, value in SETTINGS.items():
            path = self.base / "settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        args = [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
            "--ServerApp.port_retries=0", "--allow-root", f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}", "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
        with open(self.log, "wb") as log:
            # its own session, so that teardown can reach the kernels it started too; --allow-root:
            # CI containers run as root, and the server refuses to by default
            self.proc = subprocess.Popen(args, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)  # polling a port that is not open yet: there is no event to wait on
        self.stop()
        raise RuntimeError(f"jupyter lab did not answer within {STARTUP_S} s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc is None:
            return
        pgid = self.proc.pid  # start_new_session: the server leads its own process group
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the server shuts its kernels down on SIGTERM
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        try:
            os.killpg(pgid, signal.SIGKILL)  # a kernel that outlived its server
        except ProcessLookupError:
            pass
        self.proc = None

    def notebook(self, name: str, cells: Sequence[str]) -> Path:
        """Write ``name`` (in the server's root) with one code cell per source, on the python3 kernel."""
        nb = nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell(source) for source in cells],
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        )
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
        return path


#: True once the current notebook's cells have all run: every code cell has an execution
#: count, none is queued ("[*]") and the kernel is idle.
_ALL_RUN = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return false;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  if (!kernel || kernel.status !== 'idle') return false;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  return cells.length > 0 && cells.every(c => c.model.executionCount !== null
      && !/\\*/.test(c.node.querySelector('.jp-InputPrompt').textContent));
}"""

#: Every error output of the current notebook, as "ename: evalue".
_ERRORS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const found = [];
  panel.content.widgets.forEach((c, i) => {
    if (c.model.type !== 'code') return;
    for (const out of c.model.outputs.toJSON())
      if (out.output_type === 'error') found.push(`cell ${i}: ${out.ename}: ${out.evalue}`);
  });
  return found;
}"""


class Lab:
    """A Playwright page on a LabServer, working in a folder of its own under the server's
    root (``folder``): its notebooks, and the files their kernels write by relative path
    (``%pcmem open inspector.db``), never meet another test's — the server is per session."""

    def __init__(self, server: LabServer, page: Any, folder: str) -> None:
        self.server, self.page, self.folder = server, page, folder
        self.dir = server.root / folder
        self.dir.mkdir(parents=True, exist_ok=True)

    def notebook(self, name: str, cells: Sequence[str]) -> Path:
        """Write the notebook ``name`` in this Lab's folder (``LabServer.notebook``)."""
        return self.server.notebook(f"{self.folder}/{name}", cells)

    def open(self, name: str) -> None:
        """Open this Lab's notebook ``name`` in a fresh workspace; waits until its kernel is ready."""
        self.page.goto(f"{self.server.url}/lab/tree/{self.folder}/{name}?reset&token={self.server.token}",
                       timeout=RUN_MS, wait_until="domcontentloaded")
        self.wait_ready(name)

    def wait_ready(self, name: str) -> None:
        name = f"{self.folder}/{name}"
        self.page.wait_for_function(
            "name => { const app = window.jupyterapp; const w = app && app.shell.currentWidget;"
            " return !!(w && w.context && w.context.path === name && w.sessionContext); }",
            arg=name, timeout=RUN_MS)
        self.page.evaluate("""async () => {
            const w = window.jupyterapp.shell.currentWidget;
            await w.context.ready; await w.sessionContext.ready; }""")
        self.page.wait_for_function(
            "() => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel;"
            " return !!k && k.status === 'idle'; }", timeout=RUN_MS)

    def save(self) -> None:
        """Save the current notebook: a reload of a page with unsaved changes would stop at
        the browser's "leave this page?" question."""
        self.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        self.page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty",
                                    timeout=RUN_MS)

    def reload(self, name: str) -> None:
        """Reload the page (the kernel keeps running) and wait for the notebook again."""
        self.page.reload(timeout=RUN_MS, wait_until="domcontentloaded")
        self.wait_ready(name)

    def run_all(self) -> None:
        """Run every cell and wait until all ran; an error output fails with its message."""
        self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.wait_all_run()

    def wait_all_run(self) -> None:
        self.page.wait_for_function(_ALL_RUN, timeout=RUN_MS)
        errors = self.page.evaluate(_ERRORS)
        assert not errors, "a notebook cell failed:\n" + "\n".join(errors)

    def output(self, cell: int):
        """The Locator of code cell ``cell``'s rendered outputs (0-based among all cells)."""
        return self.page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea-output")

    def widget(self, cell: int, selector: str = ".widget-vbox"):
        """The widget view rendered in cell ``cell``'s output, once it is there."""
        found = self.output(cell).locator(selector).first
        found.wait_for(state="visible", timeout=RUN_MS)
        return found
