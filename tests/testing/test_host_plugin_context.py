"""``FakeHostPluginContext``: the host as a host plugin's unit tests give it, without a whole Host."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from ishiki_host import HostPluginContext, HostServices, HttpRequest, HttpResponse, ProfileStatus, RuntimeKey
from ishiki_host.core.clock import FakeClock
from ishiki_host.errors import ConfigError, IngressError
from ishiki_host.testing import FakeHostPluginContext, MakeHost, profile_yaml, serve_http

pytestmark = pytest.mark.anyio


async def hello(request: HttpRequest) -> HttpResponse:
    return HttpResponse(200, f"hello from {request.path}")


def test_it_is_a_host_plugin_context_with_test_defaults(tmp_path: Path) -> None:
    ctx: HostPluginContext = FakeHostPluginContext(tmp_path, name="board")  # mypy checks the Protocol here
    assert ctx.name == "board"
    assert isinstance(ctx.clock, FakeClock)
    assert ctx.logger is logging.getLogger("ishiki_host.hostplugin.board")
    assert isinstance(ctx.services, HostServices)
    assert not ctx.services.can_spawn
    assert not (tmp_path / "state").exists()  # created on first access, as the host's is
    assert ctx.state_dir == tmp_path / "state"
    assert ctx.state_dir.is_dir()


async def test_the_mount_is_name_on_the_server_given_and_is_given_back(tmp_path: Path) -> None:
    async with serve_http() as ingress:
        ctx = FakeHostPluginContext(tmp_path, name="board", http=ingress)
        async with ctx.http_mount() as mount:
            mount.route("/status", hello, methods=("GET",))
            assert mount.prefix == "/board"
            assert mount.local_url == f"{ingress.base_url}/board"
            async with httpx.AsyncClient() as client:
                answer = await client.get(f"{mount.local_url}/status")
            held = ingress.status()["mounts"]
        assert ingress.status()["mounts"] == []
    assert (answer.status_code, answer.text) == (200, "hello from /status")
    assert held == ["/board"]


async def test_without_a_server_entering_the_mount_fails_as_a_host_without_http_listen(tmp_path: Path) -> None:
    ctx = FakeHostPluginContext(tmp_path, name="board")
    with pytest.raises(IngressError, match=r"serves no HTTP: set http\.listen") as refused:
        async with ctx.http_mount():
            pass
    assert refused.value.fatal


def test_a_name_whose_path_is_the_hosts_own_is_refused_as_the_host_refuses_it(tmp_path: Path) -> None:
    with pytest.raises(IngressError, match="cannot serve /metrics: the host serves that path itself"):
        FakeHostPluginContext(tmp_path, name="metrics").http_mount()


def test_profiles_are_settable_and_sorted_by_id(tmp_path: Path) -> None:
    ana = ProfileStatus("ana", "ready", runtimes=(RuntimeKey("ana"),))
    bo = ProfileStatus("bo", "waiting", missing=("memory",))
    ctx = FakeHostPluginContext(tmp_path, profiles=(bo, ana))
    assert ctx.profiles() == (ana, bo)
    ctx.profile_statuses = (bo,)
    assert ctx.profiles() == (bo,)


async def test_the_made_report_follows_the_profiles_and_the_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    broken = ConfigError("not a model", file="profiles/cy/profile.yml", line=3, path="model")
    ctx = FakeHostPluginContext(tmp_path, name="board", clock=clock)
    ctx.profile_statuses = (ProfileStatus("ana", "ready", runtimes=(RuntimeKey("ana"),)),)
    await clock.advance(2.5)
    report = ctx.status()
    assert report["host"]["phase"] == "running"
    assert report["host"]["uptimeSeconds"] == 2.5
    assert report["profiles"] == {"ana": {"state": "ready", "missing": [], "runtimes": 1, "errors": []}}
    assert report["routes"] == {"ana": ["ana/main"]}
    assert report["plugins"] == {"board": {"state": "running", "restarts": 0, "errors": 0, "error": None}}
    assert report["http"]["state"] == "off"
    assert report["ready"] == {"ready": True, "problems": []}
    ctx.profile_statuses = (ProfileStatus("cy", "invalid", errors=(broken,)),)
    report = ctx.status()
    assert report["profiles"]["cy"]["errors"] == [broken.describe()]
    assert report["ready"] == {"ready": False, "problems": ["no profile is active"]}


def test_a_report_set_is_answered_as_a_fresh_copy_each_time(tmp_path: Path) -> None:
    ctx = FakeHostPluginContext(tmp_path, report={"host": {"phase": "stopping"}})
    first = ctx.status()
    first["host"]["phase"] = "changed by the plugin"
    assert ctx.status() == {"host": {"phase": "stopping"}}
    ctx.report = {"host": {"phase": "running"}}
    assert ctx.status()["host"]["phase"] == "running"


def test_reload_requests_are_counted(tmp_path: Path) -> None:
    ctx = FakeHostPluginContext(tmp_path)
    ctx.request_reload()
    ctx.request_reload()
    assert ctx.reloads == 2


async def test_the_made_report_has_the_shape_of_a_real_hosts(make_host: MakeHost, tmp_path: Path) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        real = th.host.report()
    made = FakeHostPluginContext(tmp_path, profiles=(ProfileStatus("ana", "ready"),)).status()
    assert set(made) == set(real)
    assert set(made["host"]) == set(real["host"])
    assert set(made["profiles"]["ana"]) == set(real["profiles"]["ana"])
    assert set(made["ready"]) == set(real["ready"])
    assert set(made["http"]) == set(real["http"])
