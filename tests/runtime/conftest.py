"""Fixtures of the runtime tests: the host test distribution, and a real ``ishiki run`` in a subprocess."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

HOST_DIST = Path(__file__).resolve().parent.parent / "host_fixtures"


@pytest.fixture(scope="session")
def host_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runtime test distribution (test engines and the lifecycle extension) installed in its own directory."""
    source = tmp_path_factory.mktemp("host-src") / "dist"
    shutil.copytree(HOST_DIST, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path_factory.mktemp("host-site")
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    command += ["--disable-pip-version-check", "--no-input", "--target", str(target), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return target


class Running:
    """An ``ishiki`` subprocess with pipes; ``line()`` reads stdout without ever blocking past a deadline."""

    def __init__(self, process: subprocess.Popen[bytes]):
        self.process = process
        self.out = b""
        self.err = b""

    def line(self, timeout: float = 20.0) -> str:
        """The next line of stdout (``TimeoutError`` when none comes in time)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.out:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError(f"no output line within {timeout} s; stderr so far: {self._stderr()}")
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError(f"stdout closed; stderr: {self._stderr()}")
            self.out += chunk
        line, _, self.out = self.out.partition(b"\n")
        return line.decode()

    def wait_stderr(self, text: str, timeout: float = 20.0, *, count: int = 1) -> str:
        """Read stderr until ``text`` appears ``count`` times (``TimeoutError`` when it does not in time); returns
        what was read."""
        assert self.process.stderr is not None
        deadline = time.monotonic() + timeout
        while self.err.decode(errors="replace").count(text) < count:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stderr], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError(f"{text!r} not {count} times on stderr within {timeout} s: {self.err.decode()}")
            chunk = os.read(self.process.stderr.fileno(), 65536)
            if not chunk:
                raise EOFError(f"stderr closed before {text!r}: {self.err.decode()}")
            self.err += chunk
        return self.err.decode(errors="replace")

    def send(self, text: str) -> None:
        """Write ``text`` to stdin."""
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()

    def signal(self, signum: int) -> None:
        """Send ``signum``."""
        self.process.send_signal(signum)

    def finish(self, input: str | None = None, timeout: float = 60.0) -> tuple[int, str, str]:
        """Write ``input`` (then close stdin) and wait for the exit; ``(code, rest of stdout, stderr)``."""
        out, err = self.process.communicate(input.encode() if input is not None else None, timeout=timeout)
        return self.process.returncode, (self.out + out).decode(), (self.err + err).decode()

    def _stderr(self) -> str:
        assert self.process.stderr is not None
        ready, _, _ = select.select([self.process.stderr], [], [], 0)
        if ready:
            self.err += os.read(self.process.stderr.fileno(), 65536)
        return self.err.decode()


StartIshiki = Callable[..., Running]


@pytest.fixture
def start_ishiki(ishiki_bin: Path, host_site: Path) -> Iterator[StartIshiki]:
    """Start ``ishiki <args>`` with the runtime test distribution on its path; killed at the end if still up."""
    started: list[Running] = []

    def start(*args: str, env: Mapping[str, str] | None = None) -> Running:
        environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL")}
        environ["PYTHONPATH"] = str(host_site)
        environ.update(env or {})
        process = subprocess.Popen(
            [str(ishiki_bin), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ
        )
        running = Running(process)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.process.poll() is None:
            running.process.send_signal(signal.SIGKILL)
            running.process.communicate(timeout=10)
        for stream in (running.process.stdin, running.process.stdout, running.process.stderr):
            if stream is not None:
                stream.close()


IshikiStatus = Callable[[Path], dict[str, Any]]


@pytest.fixture
def ishiki_status(ishiki_bin: Path) -> IshikiStatus:
    """``ishiki status DIR --json`` of the host running on ``DIR``, as data (the command must succeed)."""

    def status(root: Path) -> dict[str, Any]:
        done = subprocess.run(
            [str(ishiki_bin), "status", str(root), "--json"], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    return status
