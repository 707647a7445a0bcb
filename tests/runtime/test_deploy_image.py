"""The image's runtime contract, with a real host (no Docker here): the health check (``deploy/healthcheck.py``,
the Dockerfile's ``HEALTHCHECK``) and the layout (the config dir read only, the data in ``ISHIKI_DATA_DIR``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.testing import FakeOpenAIServer, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "healthcheck.py"


def health(root: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run the check as Docker does; its status and output."""
    environ = {k: v for k, v in os.environ.items() if k != "LISTEN_ADDRESS"} | (env or {})
    command = [sys.executable, str(SCRIPT), str(root)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env=environ)
    return done.returncode, done.stdout + done.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def config(tmp_path: Path, fake_openai: FakeOpenAIServer, http: str) -> Path:
    return write_config(
        tmp_path / "bot",
        profiles={"ana": profile_yaml("console:local: ['*']")},
        models=models_yaml(fake_openai),
        host=f"reload_interval_seconds: 0\n{http}",
    )


@pytest.mark.parametrize("http", ["", "http: {listen: '127.0.0.1:0'}\n"], ids=["http off", "port 0"])
def test_a_host_without_a_known_port_is_healthy_without_asking(
    fake_openai: FakeOpenAIServer, tmp_path: Path, http: str
) -> None:
    root = config(tmp_path, fake_openai, http)
    assert health(root) == (0, f"ok: {root}/ishiki.yaml serves no HTTP (http.listen unset or port 0): nothing to ask\n")


@pytest.mark.slow
@pytest.mark.parametrize("address", ["127.0.0.1", "0.0.0.0"])
def test_healthz_of_a_running_host_is_asked_on_loopback(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path, address: str
) -> None:
    port = free_port()
    root = config(tmp_path, fake_openai, f"http: {{listen: '${{LISTEN_ADDRESS}}:{port}'}}\n")
    url = f"http://127.0.0.1:{port}/healthz"
    code, out = health(root)  # ${LISTEN_ADDRESS} is unset here: the host would serve no HTTP either
    assert code == 0, out
    env = {"LISTEN_ADDRESS": address}
    running = start_ishiki("run", str(root), env=env)
    running.wait_stderr("HTTP: listening on")
    assert health(root, env) == (0, f"ok: {url} answered 'ok'\n")
    running.signal(signal.SIGTERM)
    code, _, err = running.finish()
    assert code == 0, err
    code, out = health(root, env)
    assert (code, out.startswith(f"unhealthy: {url}: ")) == (1, True), out


@pytest.mark.slow
def test_the_image_layout_keeps_the_config_dir_untouched_and_the_data_in_the_data_volume(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    """``/config`` holds the config, ``ISHIKI_DATA_DIR`` (``/data`` in the image) everything the host writes."""
    root = config(tmp_path, fake_openai, "data_dir: ${ISHIKI_DATA_DIR:-data}\n")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    data = tmp_path / "volume"
    fake_openai.tool_call("send_message", {"messages": ["hello from the container"]})
    running = start_ishiki("run", str(root), env={"ISHIKI_DATA_DIR": str(data)})
    running.send("hi\n")
    assert running.line() == "hello from the container"
    running.signal(signal.SIGTERM)
    code, _, err = running.finish()
    assert code == 0, err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert (data / "memory.db").is_file()
    assert list((data / "runtimes").rglob("facts.jsonl"))
