"""Host plugins (group ``ishiki.host``) in a real Host: a route mounted at ``/<name>`` answers over real HTTP,
supervision (a fatal error reported once, a passing one restarted on the fake clock), reload (a changed block
restarts its plugin, a removed one stops it), ``request_reload``, and the order of the stop."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx
import pytest
from anyio.abc import TaskStatus

from ishiki_host import HostPlugin, HostPluginContext, HttpRequest, HttpResponse, PluginConfig
from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import HostPluginError, HostPluginUnavailable
from ishiki_host.testing import MakeHost, host_yaml, profile_yaml

pytestmark = pytest.mark.anyio

HANG = 10.0
HTTP = "http: {listen: '127.0.0.1:0'}\n"
PROFILES = {"ana": profile_yaml()}


class Page:
    """One life of a test plugin: ``GET /`` tells its greeting and what it sees of the host; ``POST /reload``
    asks for a reload. ``Dash.failures`` are raised, one per life, before it is ready."""

    def __init__(self, owner: type[Dash], ctx: HostPluginContext, config: PluginConfig) -> None:
        self.owner = owner
        self.ctx = ctx
        self.greeting = str(config["greeting"])

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        owner = self.owner
        owner.lives.append(self.greeting)
        if owner.failures:
            raise owner.failures.pop(0)
        try:
            async with self.ctx.http_mount() as mount:
                mount.route("/", self.page, methods=("GET",))
                mount.route("/reload", self.reload)
                task_status.started()
                owner.started.set()
                await anyio.sleep_forever()
        finally:
            owner.stops.append(owner.probe())

    async def page(self, request: HttpRequest) -> HttpResponse:
        profiles = [(p.id, p.state, len(p.runtimes)) for p in self.ctx.profiles()]
        body = {"greeting": self.greeting, "profiles": profiles, "phase": self.ctx.status()["host"]["phase"]}
        return HttpResponse(200, json.dumps(body), media_type="application/json")

    async def reload(self, request: HttpRequest) -> HttpResponse:
        self.ctx.request_reload()
        return HttpResponse(202, "reloading")


class Dash(HostPlugin):
    """A test host plugin; each test gets its own subclass (``plugin()``), so the class state is its own."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"greeting": {"type": "string", "default": "hi"}},
    }
    lives: ClassVar[list[str]]
    failures: ClassVar[list[Exception]]
    stops: ClassVar[list[str]]
    started: ClassVar[anyio.Event]
    probe: ClassVar[Callable[[], str]]

    def create(self, ctx: HostPluginContext, config: PluginConfig) -> Page:
        return Page(type(self), ctx, config)


def plugin(*failures: Exception) -> type[Dash]:
    """A fresh ``Dash`` subclass that fails its first lives with ``failures``."""
    return type(
        "Dash",
        (Dash,),
        {"lives": [], "failures": list(failures), "stops": [], "started": anyio.Event(), "probe": lambda: "?"},
    )


def host_file(plugins: str, http: str = HTTP) -> str:
    return host_yaml(extra=f"{http}plugins:\n{plugins}")


async def get(url: str) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(url)


async def test_a_host_plugin_serves_its_mount_over_real_http_and_stops_before_the_http_server(
    make_host: MakeHost, tmp_path: Path
) -> None:
    cls = plugin()
    host = host_file("  dash: {greeting: hello}\n")
    async with make_host(profiles=PROFILES, host=host, plugins={"ishiki.host.dash": cls}) as th:
        cls.probe = lambda: th.host.http.state
        answer = await get(f"{th.host.http.base_url}/dash/")
        status = th.host.status()
        report = th.host.report()
        supervisor = th.host.host_plugins.supervisor("dash")
        assert supervisor is not None
        state_dir = supervisor.context.state_dir
    assert answer.status_code == 200
    assert answer.json() == {"greeting": "hello", "profiles": [["ana", "ready", 0]], "phase": "running"}
    assert status["plugins"] == {"dash": {"state": "running", "restarts": 0, "errors": 0, "error": None}}
    assert report["plugins"] == status["plugins"]  # what ``ishiki status`` prints too
    assert "/dash" in status["http"]["mounts"]
    assert state_dir == th.root / "data" / "plugins" / "dash"
    assert state_dir.is_dir()
    assert cls.stops == ["running"]  # stopped while the HTTP server still ran: its mount was given back first


async def test_a_plugin_named_with_nothing_after_it_runs_with_its_defaults(make_host: MakeHost) -> None:
    cls = plugin()
    async with make_host(profiles=PROFILES, host=host_file("  dash:\n"), plugins={"ishiki.host.dash": cls}) as th:
        answer = await get(f"{th.host.http.base_url}/dash/")
    assert answer.json()["greeting"] == "hi"


@pytest.mark.parametrize(
    ("http", "failure", "error"),
    [
        (HTTP, HostPluginError("port 9000 is taken"), "HostPluginError: port 9000 is taken"),
        ("", None, "IngressError: cannot serve /dash: the host serves no HTTP: set http.listen in ishiki.yaml"),
    ],
)
async def test_a_fatal_error_is_reported_once_and_the_host_serves_on(
    make_host: MakeHost,
    fake_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    http: str,
    failure: Exception | None,
    error: str,
) -> None:
    cls = plugin(*([failure] if failure else []))
    caplog.set_level(logging.INFO)
    host = host_file("  dash: {}\n", http=http)
    async with make_host(profiles=PROFILES, host=host, plugins={"ishiki.host.dash": cls}, clock=fake_clock) as th:
        await anyio.wait_all_tasks_blocked()
        status = th.host.status()["plugins"]["dash"]
        assert th.channel().texts() == []  # the channels started all the same
    assert status["state"] == "failed"
    assert status["error"] is not None
    assert status["error"].startswith(error)
    assert len(cls.lives) == 1  # never restarted
    lines = [r for r in caplog.records if "host plugin dash" in r.getMessage() and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in lines] == [f"host plugin dash failed: {status['error']} (not restarted)"]
    assert lines[0].exc_info is None


@pytest.mark.parametrize(
    ("failure", "traceback"),
    [(HostPluginUnavailable("the database is busy"), False), (RuntimeError("oops"), True)],
)
async def test_a_passing_error_restarts_the_plugin_after_a_back_off_on_the_clock(
    make_host: MakeHost,
    fake_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    failure: Exception,
    traceback: bool,
) -> None:
    cls = plugin(failure)
    host = host_file("  dash: {}\n")
    async with make_host(profiles=PROFILES, host=host, plugins={"ishiki.host.dash": cls}, clock=fake_clock) as th:
        supervisor = th.host.host_plugins.supervisor("dash")
        assert supervisor is not None
        await anyio.wait_all_tasks_blocked()
        assert (supervisor.state, len(cls.lives)) == ("waiting", 1)
        await fake_clock.advance(1.0)  # the first back-off is 0.5-1 s
        with anyio.fail_after(HANG):
            await cls.started.wait()
        answer = await get(f"{th.host.http.base_url}/dash/")
        assert (supervisor.state, supervisor.restarts, supervisor.errors) == ("running", 1, 1)
    assert answer.status_code == 200
    down = [r for r in caplog.records if r.getMessage().startswith("host plugin dash is down")]
    assert [r.getMessage().split(";")[0] for r in down] == [
        f"host plugin dash is down ({type(failure).__name__}: {failure})"
    ]
    crashed = [r for r in caplog.records if r.getMessage() == "host plugin dash crashed"]
    assert bool(crashed) is traceback  # an error the plugin did not explain comes with its traceback


async def test_reload_restarts_a_changed_plugin_stops_a_removed_one_and_keeps_the_rest(make_host: MakeHost) -> None:
    dash, keep, gone = plugin(), plugin(), plugin()
    plugins = {"ishiki.host.dash": dash, "ishiki.host.keep": keep, "ishiki.host.gone": gone}
    host = host_file("  dash: {greeting: one}\n  keep: {}\n  gone: {}\n")
    async with make_host(profiles=PROFILES, host=host, plugins=plugins) as th:
        base = th.host.http.base_url
        (th.root / "ishiki.yaml").write_text(host_file("  dash: {greeting: two}\n  keep: {}\n"))
        await th.host.reload()
        answers = [await get(f"{base}/{name}/") for name in ("dash", "keep", "gone")]
        status = th.host.status()
    assert [a.status_code for a in answers] == [200, 200, 404]
    assert answers[0].json()["greeting"] == "two"
    assert dash.lives == ["one", "two"]
    assert keep.lives == ["hi"]  # unchanged: not restarted
    assert gone.stops == ["?"]
    assert sorted(status["plugins"]) == ["dash", "keep"]
    assert "/gone" not in status["http"]["mounts"]


async def test_request_reload_reloads_in_the_hosts_own_task(make_host: MakeHost) -> None:
    cls = plugin()
    host = host_file("  dash: {greeting: one}\n")
    async with make_host(profiles=PROFILES, host=host, plugins={"ishiki.host.dash": cls}) as th:
        cls.started = anyio.Event()  # set again by the next life
        (th.root / "ishiki.yaml").write_text(host_file("  dash: {greeting: two}\n"))
        async with httpx.AsyncClient() as client:
            asked = await client.post(f"{th.host.http.base_url}/dash/reload")
        with anyio.fail_after(HANG):
            await cls.started.wait()
        answer = await get(f"{th.host.http.base_url}/dash/")
    assert asked.status_code == 202  # answered by the life the reload then stopped
    assert cls.lives == ["one", "two"]
    assert answer.json()["greeting"] == "two"
