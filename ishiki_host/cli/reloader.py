"""``ishiki run --reload DIR``: run the host in a child process and start a fresh one when plugin code changes.

Watched (``watched_paths``): ``DIR/plugins/`` (where plugin packages under development live beside a config,
e.g. written by ``ishiki new plugin KIND NAME --dir DIR/plugins`` and installed with ``pip install -e``), the
``packages/`` folder of the checkout the host runs from, and the project folder of every editable install that
provides an ``ishiki.*`` entry point. Only Python files count (watchfiles' ``PythonFilter``: ``.py``, ``.pyx``,
``.pyd``; ``__pycache__``, ``.git`` and venvs are skipped); ``--reload-dir PATH`` (repeatable) watches those
folders instead. Changes are debounced (watchfiles groups a burst for
up to ``DEBOUNCE_MS``), and the ones that come while the old host is still stopping join the same restart.

Why a fresh process per restart, not a restart inside this one: a plugin's modules stay in ``sys.modules`` once
imported, and re-importing them in place leaves old classes behind in every object that holds one; a new
interpreter loads exactly what is on disk. It also leaves the terminal to one owner at a time: the old host's
console restores the terminal as it exits, before the new one takes it.

The child gets this process's stdin, stdout and stderr, and the read end of a lifeline
(``ishiki_host.cli._lifeline``): should this process die without a chance to stop it (SIGKILL, the OOM killer), the
host sees the pipe's end and stops on its own, as on SIGTERM. It is stopped for a restart with SIGTERM (the clean
stop of ``ishiki run``; SIGKILL only when it outlives its shutdown grace plus ``KILL_MARGIN_SECONDS``). Each restart
prints one line on stderr naming the changed file. Signals: SIGTERM (and SIGINT when stdin is not the terminal this
process runs in the foreground of) are passed on to the child, and this process exits with the child's status once
it is gone; a Ctrl-C on the terminal reaches the child from the terminal itself, so it is not passed on a second
time (a second stop signal makes ``ishiki run`` exit at once). SIGHUP is passed on: the child reloads its config. A
host that exits 0 on its own (the end of piped input, Ctrl-D) ends the run; one that fails is started again at the
next change.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from ishiki_host.cli._lifeline import lifeline_env, open_lifeline

__all__ = [
    "DEBOUNCE_MS",
    "KILL_MARGIN_SECONDS",
    "PLUGINS_DIR",
    "Supervisor",
    "editable_folder",
    "passed_on_options",
    "supervise",
    "watched_paths",
]

PLUGINS_DIR = "plugins"
"""The folder of a config directory whose Python files ``--reload`` watches."""
DEBOUNCE_MS = 1600
"""The longest watchfiles groups a burst of changes for before one restart."""
KILL_MARGIN_SECONDS = 30.0
"""How long past its shutdown grace a stopping child may take before it is killed."""
_PREFIX = "ishiki run --reload:"
_STOPS = (signal.SIGINT, signal.SIGTERM)


def watched_paths(
    config_dir: Path, distributions: Iterable[importlib.metadata.Distribution] | None = None
) -> list[Path]:
    """The existing folders ``--reload`` watches for ``config_dir``, none inside another."""
    found = [config_dir / PLUGINS_DIR, _checkout_packages(), *_editable_plugin_projects(distributions)]
    folders = sorted({p.resolve() for p in found if p is not None and p.is_dir()})
    return [p for p in folders if not any(p != q and p.is_relative_to(q) for q in folders)]


def _checkout_packages() -> Path | None:
    """``packages/`` of the checkout whose ``ishiki_host`` this is, when it runs from one."""
    import ishiki_host

    root = Path(ishiki_host.__file__).resolve().parent.parent
    return root / "packages" if (root / "pyproject.toml").is_file() else None


def _editable_plugin_projects(distributions: Iterable[importlib.metadata.Distribution] | None) -> list[Path]:
    """The project folders of the editable installs (pip's ``direct_url.json``) that provide plugins; the host's
    own distribution is left out (its built-in services are no plugin under development, and its checkout holds
    the venv)."""
    from ishiki_host.plugins.discovery import BUILTIN_DISTRIBUTION

    projects = []
    for dist in importlib.metadata.distributions() if distributions is None else distributions:
        if _normalized(dist.metadata["Name"] or "") == BUILTIN_DISTRIBUTION:
            continue
        if not any(ep.group.startswith("ishiki.") for ep in dist.entry_points):
            continue
        folder = editable_folder(dist.read_text("direct_url.json"))
        if folder is not None:
            projects.append(folder)
    return projects


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def editable_folder(direct_url: str | None) -> Path | None:
    """The folder an editable install points at, from the text of its ``direct_url.json`` (PEP 610)."""
    if not direct_url:
        return None
    try:
        data = json.loads(direct_url)
    except ValueError:
        return None
    if not isinstance(data, dict) or not (data.get("dir_info") or {}).get("editable"):
        return None
    url = urlparse(str(data.get("url", "")))
    return Path(unquote(url.path)) if url.scheme == "file" else None


@dataclass(frozen=True, slots=True)
class _Event:
    """What the supervisor's loop reacts to: a change set, the watcher up, a child gone, a signal."""

    kind: str
    paths: tuple[str, ...] = ()
    child: subprocess.Popen[bytes] | None = None
    signum: int = 0


class Supervisor:
    """Runs ``command`` as a child, restarts it when a Python file under ``paths`` changes; ``run`` returns the
    exit status (see the module docstring)."""

    def __init__(self, command: Sequence[str], paths: Sequence[Path], *, stop_seconds: float) -> None:
        self._command = list(command)
        self._paths = list(paths)
        self._stop_seconds = stop_seconds
        self._events: queue.SimpleQueue[_Event] = queue.SimpleQueue()  # put() is safe in a signal handler
        self._halt = threading.Event()
        self._child: subprocess.Popen[bytes] | None = None
        self._restarting = False
        self._stopping = False
        self._lifeline = -1  # the read end each child inherits; the write end stays here, unwritten, until exit

    def run(self) -> int:
        """Supervise until the host stops for good; the exit status."""
        previous = {s: signal.signal(s, self._on_signal) for s in (*_STOPS, signal.SIGHUP)}
        watcher = threading.Thread(target=self._watch, name="ishiki-reload-watch", daemon=True)
        self._lifeline, write_end = open_lifeline()
        try:
            if self._paths:
                watcher.start()
            else:
                _say(f"nothing to watch (no {PLUGINS_DIR}/ in the config dir, no packages/, no editable plugin)")
            self._start()
            return self._loop()
        finally:
            self._halt.set()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            os.close(self._lifeline)
            os.close(write_end)

    def _loop(self) -> int:
        while True:
            event = self._events.get()
            if event.kind == "watching":
                _say("watching " + ", ".join(_shown(p) for p in self._paths))
            elif event.kind == "changed":
                self._changed(event.paths)
            elif event.kind == "signal":
                self._signalled(event.signum)
                if self._stopping and self._child is None:
                    return 0  # no host ran (it had failed): nothing to wait for
            elif event.kind == "exited" and event.child is not None and event.child is self._child:
                code = self._exited(event.child)
                if code is not None:
                    return code

    def _changed(self, paths: tuple[str, ...]) -> None:
        if self._stopping or self._restarting:
            return  # the host that starts next loads these too
        more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
        _say(f"{_shown(Path(paths[0]))} changed{more}; restarting the host")
        if self._child is None:
            self._start()
            return
        self._restarting = True
        self._terminate(self._child, signal.SIGTERM)

    def _signalled(self, signum: int) -> None:
        if signum == signal.SIGHUP:
            if self._child is not None:
                self._child.send_signal(signal.SIGHUP)
            return
        self._stopping = True
        if self._child is not None and not (signum == signal.SIGINT and _terminal_is_ours()):
            self._terminate(self._child, signum)

    def _exited(self, child: subprocess.Popen[bytes]) -> int | None:
        """After ``child`` ended: the status to exit with, or ``None`` to go on."""
        code = child.returncode if child.returncode >= 0 else 128 - child.returncode  # killed: 128 + signal
        self._child = None
        if self._stopping:
            return code
        if self._restarting:
            self._restarting = False
            self._start()
            return None
        if code == 0:
            return 0
        _say(f"the host exited with status {code}; it starts again at the next change")
        return None

    def _start(self) -> None:
        child = subprocess.Popen(self._command, pass_fds=(self._lifeline,), env=lifeline_env(self._lifeline))
        self._child = child
        threading.Thread(target=self._wait, args=(child,), name="ishiki-reload-wait", daemon=True).start()

    def _wait(self, child: subprocess.Popen[bytes]) -> None:
        child.wait()
        self._events.put(_Event("exited", child=child))

    def _terminate(self, child: subprocess.Popen[bytes], signum: int) -> None:
        """Send ``signum``; SIGKILL if ``child`` is still there after its grace (a cap for a host that hangs)."""
        child.send_signal(signum)
        timer = threading.Timer(self._stop_seconds, _kill_if_running, args=(child,))
        timer.daemon = True
        timer.start()

    def _on_signal(self, signum: int, frame: object) -> None:
        self._events.put(_Event("signal", signum=signum))

    def _watch(self) -> None:
        import watchfiles

        ready = False
        changes: set[tuple[watchfiles.Change, str]]
        # A timeout yields an empty set: the first one says the watches are in place (which a test waits for).
        for changes in watchfiles.watch(
            *self._paths,
            watch_filter=watchfiles.PythonFilter(),
            debounce=DEBOUNCE_MS,
            stop_event=self._halt,
            rust_timeout=1000,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            if changes:
                self._events.put(_Event("changed", paths=tuple(sorted(path for _, path in changes))))
            elif not ready:
                ready = True
                self._events.put(_Event("watching"))


def _kill_if_running(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        _say(f"the host (pid {child.pid}) did not stop in time; killing it")
        child.kill()


def _terminal_is_ours() -> bool:
    """Whether stdin is a terminal this process is in the foreground of: then a SIGINT came from Ctrl-C and the
    child, in the same process group, got it too."""
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _say(text: str) -> None:
    print(f"{_PREFIX} {text}", file=sys.stderr, flush=True)


def supervise(root: Path, passed_on: Sequence[str], folders: Sequence[str] | None = None) -> int:
    """``ishiki run --reload``: supervise ``ishiki run root *passed_on`` in child processes, watching ``folders``
    (``--reload-dir``) or else ``watched_paths(root)``; the exit status (2 when a folder does not exist)."""
    from ishiki_host.config.host import load_host_config

    missing = [f for f in folders or () if not Path(f).is_dir()]
    if missing:
        print(f"ishiki run: --reload-dir {missing[0]}: no such folder", file=sys.stderr)
        return 2
    paths = sorted({Path(f).resolve() for f in folders}) if folders else watched_paths(root)
    grace = load_host_config(root)[0].shutdown_grace_seconds
    command = [sys.executable, "-m", "ishiki_host", "run", str(root), *passed_on]
    return Supervisor(command, paths, stop_seconds=grace + KILL_MARGIN_SECONDS).run()


def passed_on_options(args: argparse.Namespace) -> list[str]:
    """The options of ``ishiki run`` besides ``--reload`` that each child gets again."""
    options: list[str] = []
    given = (
        ("--log-level", args.log_level),
        ("--log-format", args.log_format),
        ("--workers", getattr(args, "workers", None)),
    )
    for flag, value in given:
        if value is not None:
            options += [flag, str(value)]
    return options
