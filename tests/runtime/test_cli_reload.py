"""``ishiki run --reload``: a real supervisor process restarts the host when a plugin's Python file changes."""

from __future__ import annotations

import fcntl
import os
import signal
from collections.abc import Callable
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.cli._lifeline import GONE, LIFELINE_ENV, open_lifeline, watch_lifeline
from ishiki_host.cli.reloader import editable_folder, watched_paths
from ishiki_host.eventloop import backend_options, uvloop_installed
from ishiki_host.testing import FakeOpenAIServer, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

REPO = Path(__file__).resolve().parents[2]
UP = "channel console is up"
CAP = 10.0  # the most a lifeline test may take: each waits on an event, this only stops a hang


@pytest.fixture(params=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Both loops ``ishiki run`` runs the host on (each watches the pipe through its own reader)."""
    if request.param == "uvloop" and not uvloop_installed():
        pytest.skip("uvloop is not installed")
    return ("asyncio", backend_options(request.param))


@pytest.mark.slow
def test_a_changed_plugin_file_restarts_the_host_in_a_fresh_process(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    host = "reload_interval_seconds: 0\nshutdown_grace_seconds: 1\n"
    files = {"plugins/weather/weather.py": "ANSWER = 1\n"}
    root = write_config(
        tmp_path / "bot", profiles={"ana": profile_yaml("console:local: ['*']")}, models=models_yaml(fake_openai),
        host=host, files=files,
    )  # fmt: skip
    # Only the plugins folder: the checkout's packages/ may change while the test runs (another edit, a build).
    running = start_ishiki("run", str(root), "--reload", "--reload-dir", str(root / "plugins"))
    running.wait_stderr("ishiki run --reload: watching ")
    running.wait_stderr(UP, 60)
    fake_openai.tool_call("send_message", {"messages": ["first"]})
    running.send("one\n")
    assert running.line() == "first"
    first_pid = (root / "data" / "ishiki.pid").read_text(encoding="utf-8").split()[0]

    (root / "plugins" / "weather" / "weather.py").write_text("ANSWER = 2\n", encoding="utf-8")
    err = running.wait_stderr(UP, 60, count=2)
    restarts = [line for line in err.splitlines() if "restarting the host" in line]
    changed = root.resolve() / "plugins" / "weather" / "weather.py"
    assert restarts == [f"ishiki run --reload: {changed} changed; restarting the host"]
    assert "stopping: SIGTERM" in err  # the old host stopped cleanly, not killed
    fake_openai.tool_call("send_message", {"messages": ["second"]})
    running.send("two\n")  # the same stdin, now read by the new host
    assert running.line() == "second"
    assert (root / "data" / "ishiki.pid").read_text(encoding="utf-8").split()[0] != first_pid

    running.signal(signal.SIGTERM)  # passed on to the host; the supervisor exits with its status
    # finish() closes stdin: only once the host has taken the signal, or the end of input could stop it first.
    running.wait_stderr("stopping: SIGTERM", 60, count=2)
    code, out, err = running.finish()
    assert (code, out) == (0, ""), err
    assert err.count("stopping: SIGTERM") == 2
    assert not (root / "data" / "ishiki.pid").exists()


@pytest.mark.slow
def test_a_host_whose_supervisor_is_killed_stops_on_its_own(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    host = "reload_interval_seconds: 0\nshutdown_grace_seconds: 1\n"
    root = write_config(
        tmp_path / "bot", profiles={"ana": profile_yaml("console:local: ['*']")}, models=models_yaml(fake_openai),
        host=host, files={"plugins/weather.py": "ANSWER = 1\n"},
    )  # fmt: skip
    running = start_ishiki("run", str(root), "--reload-dir", str(root / "plugins"))
    running.wait_stderr(UP, 60)
    fake_openai.tool_call("send_message", {"messages": ["hi"]})
    running.send("hello\n")  # the console still reads the shared stdin and writes the shared stdout
    assert running.line() == "hi"

    running.signal(signal.SIGKILL)  # no chance to stop the host: only the lifeline tells it
    assert running.process.wait(timeout=10) == -signal.SIGKILL
    running.wait_stderr("stopping: the --reload supervisor is gone", 60)  # stdin stays open until then
    # stderr ends once every process holding it has exited: the orphaned host is gone (the cap is communicate's).
    _, out, err = running.finish()
    assert out == "", err
    assert "stopping: end of console input" not in err
    assert not (root / "data" / "ishiki.pid").exists()  # removed by the host's own clean stop
    with (root / "data" / "ishiki.lock").open("rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the data dir is free for the next host


@pytest.mark.slow
def test_the_end_of_piped_input_ends_the_supervisor_too(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(
        tmp_path / "bot", profiles={"ana": profile_yaml("console:local: ['*']")}, models=models_yaml(fake_openai)
    )
    fake_openai.tool_call("send_message", {"messages": ["bye"]})
    code, out, err = start_ishiki("run", str(root), "--reload").finish(input="hello\n")
    assert (code, out) == (0, "bye\n"), err


def test_a_host_that_fails_to_start_is_tried_again_at_the_next_change(
    start_ishiki: StartIshiki, tmp_path: Path
) -> None:
    root = tmp_path / "bot"
    (root / "profiles").mkdir(parents=True)
    (root / "plugins").mkdir()
    (root / "ishiki.yaml").write_text("reload_interval_seconds: 0\n", encoding="utf-8")
    failed = "ishiki run --reload: the host exited with status 1; it starts again at the next change"
    running = start_ishiki("run", str(root), "--reload-dir", str(root / "plugins"))  # --reload-dir implies it
    running.wait_stderr("ishiki run --reload: watching ")
    running.wait_stderr(failed, 60)
    running.signal(signal.SIGHUP)  # no host to pass it to: nothing happens
    (root / "plugins" / "fix.py").write_text("FIXED = False\n", encoding="utf-8")
    err = running.wait_stderr(failed, 60, count=2)
    assert err.count("no profile is ready") == 2
    running.signal(signal.SIGTERM)
    code, _, err = running.finish()
    assert code == 0, err


def test_reload_on_a_dir_that_is_no_config_dir_says_so(start_ishiki: StartIshiki, tmp_path: Path) -> None:
    code, _, err = start_ishiki("run", str(tmp_path), "--reload").finish(input="")
    assert code == 2
    assert err.startswith(f"ishiki run: {tmp_path} is not a config directory")
    (tmp_path / "ishiki.yaml").write_text("", encoding="utf-8")
    code, _, err = start_ishiki("run", str(tmp_path), "--reload", "--reload-dir", str(tmp_path / "x")).finish(input="")
    assert (code, err) == (2, f"ishiki run: --reload-dir {tmp_path / 'x'}: no such folder\n")


def write_dist(site: Path, name: str, *, group: str, direct_url: str | None) -> None:
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{group}]\nx = x:X\n", encoding="utf-8")
    if direct_url is not None:
        (info / "direct_url.json").write_text(direct_url, encoding="utf-8")


def test_watched_folders_are_the_plugins_folder_packages_and_editable_plugins(tmp_path: Path) -> None:
    config, site, work = tmp_path / "bot", tmp_path / "site", tmp_path / "work"
    (config / "plugins").mkdir(parents=True)
    for name in ("ishiki-ext-weather", "other-lib", "ishiki-host", "ishiki-ext-wheel"):
        (work / name).mkdir(parents=True)
    editable = '{"url": "file://%s", "dir_info": {"editable": true}}'
    write_dist(site, "ishiki-ext-weather", group="ishiki.ext", direct_url=editable % (work / "ishiki-ext-weather"))
    write_dist(site, "other-lib", group="console_scripts", direct_url=editable % (work / "other-lib"))
    write_dist(site, "ishiki-host", group="ishiki.ext", direct_url=editable % (work / "ishiki-host"))
    write_dist(site, "ishiki-ext-wheel", group="ishiki.ext", direct_url='{"url": "file:///x.whl", "archive_info": {}}')
    write_dist(site, "ishiki-ext-inside", group="ishiki.ext", direct_url=editable % (config / "plugins" / "inside"))
    (config / "plugins" / "inside").mkdir()

    paths = watched_paths(config, distributions(path=[str(site)]))

    assert paths == sorted([(config / "plugins").resolve(), REPO / "packages", (work / "ishiki-ext-weather").resolve()])


@pytest.mark.parametrize(
    ("text", "folder"),
    [
        ('{"url": "file:///src/my%20plugin", "dir_info": {"editable": true}}', Path("/src/my plugin")),
        ('{"url": "file:///src/p", "dir_info": {}}', None),
        ('{"url": "https://example.org/p.whl", "dir_info": {"editable": true}}', None),
        ("not json", None),
        (None, None),
    ],
)
def test_editable_folder_reads_pep_610(text: str | None, folder: Path | None) -> None:
    assert editable_folder(text) == folder


@pytest.mark.anyio
async def test_the_lifeline_stops_the_host_when_its_last_write_end_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = open_lifeline()
    monkeypatch.setenv(LIFELINE_ENV, str(read_end))
    reasons: list[str] = []
    stopped = anyio.Event()

    def request_stop(reason: str) -> None:
        reasons.append(reason)
        stopped.set()

    with anyio.fail_after(CAP):
        async with anyio.create_task_group() as tg:
            await tg.start(watch_lifeline, request_stop)
            assert LIFELINE_ENV not in os.environ  # no process the host starts inherits the variable
            os.write(write_end, b"x")  # not the end: the host goes on
            os.close(write_end)
            await stopped.wait()
    assert reasons == [GONE]
    with pytest.raises(OSError):
        os.fstat(read_end)  # closed by the watcher


@pytest.mark.anyio
async def test_without_a_lifeline_the_host_watches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LIFELINE_ENV, raising=False)
    with anyio.fail_after(CAP):
        await watch_lifeline(lambda reason: pytest.fail(f"stopped: {reason}"))


@pytest.mark.anyio
async def test_a_lifeline_variable_that_names_no_pipe_is_logged_and_ignored(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    with (tmp_path / "file").open("wb") as file:
        for value in ("three", str(file.fileno())):
            monkeypatch.setenv(LIFELINE_ENV, value)
            with anyio.fail_after(CAP):
                await watch_lifeline(lambda reason: pytest.fail(f"stopped: {reason}"))
            assert f"{LIFELINE_ENV}={value!r} names no inherited pipe" in caplog.text
