"""Servers start with the first runtime that uses them, are shared by a profile's runtimes, stop with the last.

Processes are counted from /proc (children of the test process), so "no orphan" means no process left.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from ishiki_host import HostServices

from ishiki_ext_mcp import MCPManager
from ishiki_ext_mcp.testing import ConfigDir, RuntimeFactory, demo

Children = Callable[[], set[int]]


async def call(instance: Any, name: str, arguments: dict[str, Any]) -> Any:
    tool = next(t for t in instance.ishiki_tools() if t.name == name)
    return await tool.handler(arguments, None)


@pytest.mark.anyio
async def test_runtimes_of_one_profile_share_one_server_process(
    cfg: ConfigDir, open_runtime: RuntimeFactory, children: Children
) -> None:
    cfg.write({"demo": demo()})
    before = children()
    services = HostServices()
    async with open_runtime("r1", services=services) as (_rt1, first):
        started = children() - before
        assert len(started) == 1
        async with open_runtime("r2", services=services) as (_rt2, second):
            assert children() - before == started
            assert first.runners["demo"] is second.runners["demo"]
            assert MCPManager.of(services).users(first.runners["demo"]) == 2
            pid = first.runners["demo"].info.pid
            assert {pid} == started
            assert (await call(first, "demo__add", {"a": 1, "b": 2})).content == "3"
            assert (await call(second, "demo__add", {"a": 2, "b": 2})).content == "4"
        # the first runtime still uses it: the process lives on
        assert children() - before == started
        assert (await call(first, "demo__echo", {"text": "still here"})).content == "still here"
    assert children() == before
    assert MCPManager.of(services).runners == ()


@pytest.mark.anyio
async def test_profiles_get_their_own_processes(
    cfg: ConfigDir, open_runtime: RuntimeFactory, children: Children
) -> None:
    cfg.write({"demo": demo()})
    before = children()
    services = HostServices()
    async with (
        open_runtime("a", profile="alice", services=services) as (_a, alice),
        open_runtime("b", profile="bob", services=services) as (_b, bob),
    ):
        assert alice.runners["demo"] is not bob.runners["demo"]
        assert len(children() - before) == 2
    assert children() == before


@pytest.mark.anyio
async def test_a_changed_spec_starts_a_new_process_for_new_runtimes(
    cfg: ConfigDir, open_runtime: RuntimeFactory, children: Children
) -> None:
    cfg.write({"demo": demo()})
    before = children()
    services = HostServices()
    async with open_runtime("r1", services=services) as (_rt1, old):
        cfg.write({"demo": demo(env={"DEMO_SECRET": "v2"})})
        async with open_runtime("r2", services=services) as (_rt2, new):
            assert old.runners["demo"] is not new.runners["demo"]
            assert "secret=v2" in (await call(new, "demo__whoami", {})).content
            assert "secret=None" in (await call(old, "demo__whoami", {})).content
            assert len(children() - before) == 2
    assert children() == before


@pytest.mark.anyio
async def test_the_manager_stops_every_server_when_the_host_exits(
    cfg: ConfigDir, open_runtime: RuntimeFactory, children: Children
) -> None:
    cfg.write({"one": demo(), "two": demo()})
    before = children()
    services = HostServices()
    async with open_runtime("r1", services=services) as (_rt, instance):
        assert len(children() - before) == 2
        await MCPManager.of(services).aclose()
        assert children() == before
        assert {runner.state for runner in instance.runners.values()} == {"stopped"}
        assert instance.ishiki_tools() == []  # a stopped server offers no tools
    assert children() == before


@pytest.mark.anyio
async def test_a_profile_local_mcp_json_replaces_the_shared_one(cfg: ConfigDir, open_runtime: RuntimeFactory) -> None:
    cfg.write({"shared": demo()})
    cfg.write({"own": demo()}, profile="special")
    async with open_runtime("r1", profile="special") as (_rt, special):
        assert list(special.runners) == ["own"]
        assert special.config.file == cfg.root / "profiles" / "special" / "mcp.json"
    async with open_runtime("r2", profile="plain") as (_rt, plain):
        assert list(plain.runners) == ["shared"]


@pytest.mark.anyio
async def test_servers_selects_and_an_unknown_name_is_reported(cfg: ConfigDir, open_runtime: RuntimeFactory) -> None:
    cfg.write({"alpha": demo(), "beta": demo()})
    async with open_runtime(servers=["beta", "alpah"]) as (_rt, instance):
        assert list(instance.runners) == ["beta"]
        status = instance.ishiki_status()
    assert status[0] == (
        "mcp: extends.mcp.config.servers: no server 'alpah' in mcp.json; did you mean 'alpha'? (servers: alpha, beta)"
    )
    assert re.fullmatch(r"mcp beta: ready, 8 tools, 1 resource \(pid \d+\)", status[1])


@pytest.mark.anyio
async def test_no_mcp_json_means_no_servers_and_a_status_line(cfg: ConfigDir, open_runtime: RuntimeFactory) -> None:
    async with open_runtime() as (_rt, instance):
        assert instance.ishiki_tools() == []
        assert instance.ishiki_instructions() is None
        assert instance.ishiki_status() == [f"mcp: no mcp.json in {cfg.root}"]


@pytest.mark.anyio
async def test_a_disabled_server_is_not_started(
    cfg: ConfigDir, open_runtime: RuntimeFactory, children: Children
) -> None:
    cfg.write({"off": demo(disabled=True)})
    before = children()
    async with open_runtime() as (_rt, instance):
        assert children() == before
        assert instance.ishiki_status() == [f"mcp off: disabled in {cfg.root / 'mcp.json'}"]


HOST_THAT_FORGETS = """
import sys
from pathlib import Path

import anyio
from ishiki_host import SystemClock

from ishiki_ext_mcp import MCPManager, load_mcp_config


async def main() -> None:
    root = Path(sys.argv[1])
    (spec,) = load_mcp_config(root).servers
    runner = MCPManager().acquire("p", spec, clock=SystemClock(), data_dir=root)
    await runner.first_attempt()
    print(runner.info.pid, flush=True)
    # the host's loop ends here without stopping its runtimes: the loop cancels the supervisor


anyio.run(main)
"""


def test_servers_end_with_the_event_loop_even_when_nobody_stopped_them(cfg: ConfigDir) -> None:
    cfg.write({"demo": demo()})
    done = subprocess.run(
        [sys.executable, "-c", HOST_THAT_FORGETS, str(cfg.root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.strip())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
