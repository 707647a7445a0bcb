"""The harness of the dashboard's browser tests: a real ``ishiki run`` subprocess, Debian's Chromium driven by
Playwright, and the fake model server the host calls, in this process.

- **The host** is the venv's own ``ishiki`` script (``Path(sys.executable).parent / "ishiki"``) running a config
  directory written under a temporary directory (:func:`write_host_config`): HTTP on ``127.0.0.1:0``, the
  dashboard with :data:`TOKEN`, one profile on the ``web`` channel with ``web:admin`` among its owners, and a
  ``models.yaml`` pointing at :class:`FakeOpenAIServer`. Its log (stderr, with stdout folded in) is read by a
  thread as it comes (:class:`HostProcess`): the port is taken from the ``HTTP: listening on`` line, then
  ``/readyz`` is polled until it answers 200, both within :data:`START_TIMEOUT` (``timed out`` and the log
  otherwise). One host serves a test module; at its end it gets SIGTERM and must exit 0 within
  :data:`STOP_TIMEOUT`. A failed test's report carries the host's log (``pytest_runtest_makereport``).
- **The browser** is ``/usr/bin/chromium`` (Debian's ``chromium`` package), launched by Playwright with
  ``executable_path`` and :data:`CHROMIUM_ARGS` on a fresh user data directory per test: Playwright's own
  browser builds are never downloaded. Every wait is one of Playwright's auto-waiting expectations.
- **Missing Chromium fails** the tests rather than skipping them: ``.ci/run`` installs ``chromium`` and
  ``chromium-driver`` with apt when ``/usr/bin/chromium`` is missing, so CI always has it, and a developer
  machine without it is told the same command (``make test`` there fails until it is installed).

``tools/screenshot_dashboard.py`` loads this module by its path to reuse the harness for the picture in
``docs/dashboard.md``; tests write only under their ``tmp_path``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from ishiki_host.testing import FakeOpenAIServer, Reply

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
MISSING_CHROMIUM = (
    f"{CHROMIUM} is missing: the dashboard's browser tests drive Debian's Chromium (Playwright never downloads a "
    "browser here). `.ci/run` installs it; on this machine run: "
    "apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver"
)
ISHIKI = Path(sys.executable).parent / "ishiki"
TOKEN = "browser-test-token-0123456789"
PROFILE = "ana"
WEB_ACCOUNT = "dashboard"
USER = "admin"
"""The dashboard's user (its default ``plugins.dashboard.user``): the web chat speaks as ``web:admin``."""
OWNER = f"web:{USER}"
REPLY = "Hello from the fake model"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
EXPECT_TIMEOUT_MS = 20_000
"""Playwright's default for expectations and actions: generous, because a loaded machine is slow, not wrong."""
LISTENING = re.compile(r"HTTP: listening on (http://\S+)")


class HostFailed(Exception):
    """The host subprocess did not start, stop or behave in time; the message carries its log."""


class HostProcess:
    """``ishiki run ROOT`` in a subprocess, its output read line by line by a thread (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lines: list[str] = []
        self.url = ""
        self._changed = threading.Condition()
        self._ended = False
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [str(ISHIKI), "run", str(root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
        )
        self._reader = threading.Thread(target=self._read, name="ishiki-run-log", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    @property
    def log(self) -> str:
        """Everything the host has written so far."""
        with self._changed:
            return "\n".join(self.lines)

    def failed(self, what: str) -> HostFailed:
        """A ``HostFailed`` saying ``what``, with the exit status (if any) and the host's log."""
        if self._ended:  # its output ended: the exit is at hand
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
        status = self.proc.poll()
        exited = "still running" if status is None else f"exit status {status}"
        return HostFailed(f"{what} ({exited}); the host's log:\n{self.log}")

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        """The first log line matching ``pattern``, waiting up to ``timeout`` s for it ("timed out" after)."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self.lines[seen:]:
                    if match := pattern.search(line):
                        return match
                seen = len(self.lines)
                remaining = deadline - time.monotonic()
                if self._ended:
                    raise self.failed(f"the host ended before logging {pattern.pattern!r}")
                if remaining <= 0:
                    raise self.failed(f"timed out after {timeout:.0f} s waiting for {pattern.pattern!r}")
                self._changed.wait(remaining)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> str:
        """Wait for the listening line, then for ``/readyz`` to answer 200; returns the base URL."""
        deadline = time.monotonic() + timeout
        self.url = self.wait_for(LISTENING, timeout).group(1)
        last = "no answer"
        with httpx.Client(base_url=self.url, timeout=5) as client:
            while time.monotonic() < deadline:
                try:
                    response = client.get("/readyz")
                except httpx.TransportError as exc:
                    last = repr(exc)
                else:
                    if response.status_code == 200:
                        return self.url
                    last = f"{response.status_code} {response.text[:500]}"
                self._wait_for_output(min(0.1, max(0.0, deadline - time.monotonic())))
        raise self.failed(f"timed out after {timeout:.0f} s waiting for /readyz to answer 200 (last: {last})")

    def _wait_for_output(self, timeout: float) -> None:
        """Between two polls: return at the host's next log line, or after ``timeout`` s (a bounded poll)."""
        with self._changed:
            if self._ended:
                raise self.failed("the host ended while starting")
            self._changed.wait(timeout)

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, then wait up to ``timeout`` s for the exit (killed and ``HostFailed`` after); its status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise self.failed(f"timed out: the host did not exit within {timeout:.0f} s of SIGTERM") from None
        self._reader.join(timeout)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return status


def write_host_config(root: Path, model_url: str, *, token: str = TOKEN) -> Path:
    """A config directory for the browser tests under ``root`` (see the module docstring); returns it."""
    (root / "profiles" / PROFILE).mkdir(parents=True, exist_ok=True)
    host = {
        "log_level": "info",
        "reload_interval_seconds": 0,
        "shutdown_grace_seconds": 2,
        "timezone": "UTC",
        "http": {"listen": "127.0.0.1:0"},
        "plugins": {"dashboard": {"token": token}},
        "channels": {"web": {"accounts": [{"id": WEB_ACCOUNT}]}},
    }
    models = {
        "providers": {
            "fake": {
                "api": "openai-completions",
                "base_url": model_url,
                "models": [{"id": "fake-model", "context_window": 32768, "tool_call": True}],
            }
        },
        "groups": {"default": {"models": ["fake:fake-model"]}},
    }
    profile = {
        "model": "default",
        "channels": {f"web:{WEB_ACCOUNT}": ["*"]},
        "trust": {"owners": [OWNER]},
        "session": {"summarizer": "off"},
    }
    # JSON is YAML: the files are written with json.dumps so no quoting can go wrong.
    (root / "ishiki.yaml").write_text(json.dumps(host, indent=2) + "\n", "utf-8")
    (root / "models.yaml").write_text(json.dumps(models, indent=2) + "\n", "utf-8")
    (root / "profiles" / PROFILE / "profile.yml").write_text(json.dumps(profile, indent=2) + "\n", "utf-8")
    (root / "profiles" / PROFILE / "persona.md").write_text(f"You are {PROFILE}, a test persona.\n", "utf-8")
    return root


def tool_names(body: Any) -> list[str]:
    """The names of the tools a chat-completions request body offered the model."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return sorted(t["function"]["name"] for t in tools or () if isinstance(t, dict) and "function" in t)


def launch_chromium(playwright: Playwright, user_data_dir: Path, base_url: str) -> BrowserContext:
    """Debian's Chromium on a fresh ``user_data_dir`` (a persistent context: it has exactly that profile)."""
    if not CHROMIUM.exists():
        pytest.fail(MISSING_CHROMIUM, pytrace=False)
    context = playwright.chromium.launch_persistent_context(
        str(user_data_dir),
        executable_path=str(CHROMIUM),
        args=list(CHROMIUM_ARGS),
        headless=True,
        base_url=base_url,
        viewport={"width": 1280, "height": 800},
    )
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    return context


def login(page: Page, token: str = TOKEN) -> None:
    """Sign in on ``/dashboard/login`` with ``token`` and wait for the overview."""
    from playwright.sync_api import expect

    page.goto("/dashboard/login")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/dashboard/?$"))


class Screenshots:
    """Saves a full-page screenshot of each page visited under ``directory`` (a test's ``tmp_path``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.taken: list[Path] = []

    def take(self, page: Page, name: str) -> Path:
        """``<directory>/<name>.png``; returns its path."""
        path = self.directory / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        self.taken.append(path)
        return path


# -- fixtures -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAIServer]:
    """The fake OpenAI-compatible server the host calls; it answers :data:`REPLY` and records every request."""
    with FakeOpenAIServer() as server:
        server.default = Reply(REPLY)
        yield server


@pytest.fixture(scope="module")
def dashboard_host(tmp_path_factory: pytest.TempPathFactory, model_server: FakeOpenAIServer) -> Iterator[HostProcess]:
    """A running ``ishiki run`` on a fresh config directory; SIGTERM at the end of the module, exit 0 required."""
    root = write_host_config(tmp_path_factory.mktemp("host") / "bot", model_server.base_url)
    host = HostProcess(root)
    failure = None
    try:
        host.wait_ready()
    except HostFailed as exc:
        failure = str(exc)
    if failure is not None:
        host.stop()
        pytest.fail(failure, pytrace=False)
    yield host
    status = host.stop()
    if status != 0:
        pytest.fail(f"the host exited {status} after SIGTERM; its log:\n{host.log}", pytrace=False)


@pytest.fixture(scope="module")
def playwright_driver() -> Iterator[Playwright]:
    """Playwright's driver (sync API), for one module: while it runs, its event loop counts as the thread's
    running loop, so it must stop before the async tests of other modules. The Chromium check comes first."""
    if not CHROMIUM.exists():
        pytest.fail(MISSING_CHROMIUM, pytrace=False)
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture
def browser_context(
    playwright_driver: Playwright, dashboard_host: HostProcess, tmp_path: Path
) -> Iterator[BrowserContext]:
    """A fresh Chromium (its own user data directory) whose relative URLs go to the host."""
    context = launch_chromium(playwright_driver, tmp_path / "chromium-profile", dashboard_host.url)
    yield context
    context.close()


@pytest.fixture
def page(browser_context: BrowserContext) -> Page:
    """The browser's first tab."""
    return browser_context.pages[0] if browser_context.pages else browser_context.new_page()


@pytest.fixture
def signed_in(page: Page) -> Page:
    """``page`` after signing in with :data:`TOKEN`, on the overview."""
    login(page)
    return page


@pytest.fixture
def screenshots(tmp_path: Path) -> Screenshots:
    """Screenshots under the test's ``tmp_path``."""
    return Screenshots(tmp_path / "screenshots")


@dataclass
class Harness:
    """What a browser test knows of its setup: the host, the fake model, the token, profile and reply."""

    host: HostProcess
    model: FakeOpenAIServer
    token: str = TOKEN
    profile: str = PROFILE
    reply: str = REPLY
    owner: str = OWNER
    user: str = USER
    web_account: str = WEB_ACCOUNT

    def offered_tools(self, containing: str) -> list[str]:
        """The tool names of the last model request whose body holds ``containing`` (a turn's own words: a
        beat firing meanwhile makes requests of its own)."""
        needle = json.dumps(containing)[1:-1]
        for request in reversed(self.model.requests):
            if needle in request.body.decode("utf-8", "replace"):
                return tool_names(request.json)
        raise AssertionError(f"no model request held {containing!r}")


@pytest.fixture
def harness(dashboard_host: HostProcess, model_server: FakeOpenAIServer) -> Harness:
    """The test's :class:`Harness`."""
    return Harness(dashboard_host, model_server)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report carries the host's log."""
    report = yield
    host = getattr(item, "funcargs", {}).get("dashboard_host")
    if report.failed and isinstance(host, HostProcess):
        report.sections.append(("the host's log (ishiki run)", host.log))
    return report
