"""Servers that crash, hang, never start or are misconfigured: error results, restarts, status lines, no orphans.

Back-off and call deadlines run on the fake clock; the tests move it (``advance``) once the waits exist
(``wait_for_sleepers``), so nothing here sleeps. During a turn the agent's own tool deadline is a sleeper too.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from ishiki_host import FakeClock, HostServices
from ishiki_host.testing import ScriptedModel, reply, tool_call

from ishiki_ext_mcp import MCPManager
from ishiki_ext_mcp.testing import DEADLINE, ConfigDir, RuntimeFactory, demo, until

pytestmark = pytest.mark.anyio

Children = Callable[[], set[int]]


def last_tool_result(rt: Any) -> tuple[str, bool]:
    data = [e.data for e in rt.log.iter_forward() if e.data.get("role") == "tool"][-1]
    return "".join(p.get("text", "") for p in data["parts"]), bool(data.get("isError") or data.get("is_error"))


async def turn(rt: Any, text: str) -> Any:
    with anyio.fail_after(DEADLINE):
        return await rt.say(text)


async def test_a_crash_mid_call_is_an_error_result_then_the_server_restarts(
    cfg: ConfigDir, open_runtime: RuntimeFactory, fake_clock: FakeClock, children: Children
) -> None:
    cfg.write({"demo": demo()})
    before = children()
    model = ScriptedModel(
        [
            reply("", tool_call("demo__crash")),
            reply("it crashed"),
            reply("", tool_call("demo__add", {"a": 20, "b": 22})),
            reply("42"),
        ]
    )
    async with open_runtime(model=model) as (rt, instance):
        runner = instance.runners["demo"]
        first_pid = runner.info.pid
        outcome = await turn(rt, "crash it")
        assert outcome.status == "done"
        text, _ = last_tool_result(rt)
        assert text == (
            "MCP server 'demo' closed the connection during the call of crash (it exited or crashed); "
            "it is being restarted"
        )
        await until(runner, lambda r: r.next_attempt is not None)
        assert instance.ishiki_status() == [
            "mcp demo: restarting: the server process exited with code 3; next attempt in 1 s"
        ]
        assert first_pid not in children()
        assert [t.name for t in instance.ishiki_tools()][:2] == ["demo__add", "demo__echo"]  # kept while restarting
        await fake_clock.wait_for_sleepers(1)
        await fake_clock.advance(1.0)
        await until(runner, lambda r: r.state == "ready")
        assert runner.info.pid != first_pid
        assert runner.starts == 2
        assert children() - before == {runner.info.pid}
        await turn(rt, "add")
        assert last_tool_result(rt)[0] == "42"
        assert instance.ishiki_status()[0].endswith(", restarted 1x)")
    assert children() == before


async def test_back_off_grows_while_the_server_keeps_dying(
    cfg: ConfigDir, open_runtime: RuntimeFactory, fake_clock: FakeClock
) -> None:
    cfg.write({"demo": demo()})
    async with open_runtime() as (_rt, instance):
        runner = instance.runners["demo"]
        delays = []
        for attempt in range(3):
            tool = next(t for t in instance.ishiki_tools() if t.name == "demo__crash")
            with pytest.raises(Exception, match="closed the connection"):
                await tool.handler({}, None)  # type: ignore[arg-type]
            await until(runner, lambda r: r.next_attempt is not None)
            delays.append(runner.next_attempt - fake_clock.now())  # type: ignore[operator]
            await fake_clock.wait_for_sleepers(1)
            await fake_clock.advance(delays[-1])
            await until(runner, lambda r, n=attempt: r.state == "ready" and r.starts == n + 2)
        assert delays == [1.0, 2.0, 4.0]
        await fake_clock.advance(60.0)  # a minute of uptime: the next death starts from 1 s again
        tool = next(t for t in instance.ishiki_tools() if t.name == "demo__crash")
        with pytest.raises(Exception, match="closed the connection"):
            await tool.handler({}, None)  # type: ignore[arg-type]
        await until(runner, lambda r: r.next_attempt is not None)
        assert runner.next_attempt - fake_clock.now() == 1.0  # type: ignore[operator]


async def test_a_call_that_never_answers_times_out_and_the_healthy_server_is_kept(
    cfg: ConfigDir, open_runtime: RuntimeFactory, fake_clock: FakeClock
) -> None:
    cfg.write({"demo": demo(timeout_ms=500)})
    model = ScriptedModel(
        [reply("", tool_call("demo__hang")), reply("too slow"), reply("", tool_call("demo__echo", {"text": "ok"})), "."]
    )
    async with open_runtime(model=model) as (rt, instance):
        runner = instance.runners["demo"]
        pid = runner.info.pid
        async with anyio.create_task_group() as tg:
            tg.start_soon(turn, rt, "hang")
            await fake_clock.wait_for_sleepers(2)  # the agent's tool deadline and the call's timeout_ms
            await fake_clock.advance(0.5)
        assert last_tool_result(rt)[0] == (
            "MCP server 'demo' did not answer the call of hang within 0.5 s (timeout_ms); the call was cancelled"
        )
        await until(runner, lambda r: r.checks == 1)  # the health check after a timeout got its answer
        assert (runner.state, runner.info.pid) == ("ready", pid)
        await turn(rt, "echo")
        assert last_tool_result(rt)[0] == "ok"


async def test_a_hung_server_is_killed_and_restarted(
    cfg: ConfigDir, open_runtime: RuntimeFactory, fake_clock: FakeClock, children: Children
) -> None:
    cfg.write({"demo": demo(timeout_ms=500)})
    before = children()
    async with open_runtime() as (_rt, instance):
        runner = instance.runners["demo"]
        pid = runner.info.pid
        freeze = next(t for t in instance.ishiki_tools() if t.name == "demo__freeze")
        async with anyio.create_task_group() as tg:

            async def call_freeze() -> None:
                with pytest.raises(Exception, match=r"did not answer the call of freeze within 0\.5 s"):
                    await freeze.handler({}, None)  # type: ignore[arg-type]

            tg.start_soon(call_freeze)
            await fake_clock.wait_for_sleepers(1)
            await fake_clock.advance(0.5)
        await fake_clock.wait_for_sleepers(1)  # the health check's deadline
        await fake_clock.advance(0.5)
        await until(runner, lambda r: r.next_attempt is not None)
        assert runner.error == "stopped answering (a health check got no answer within 0.5 s); killed"
        assert pid not in children()
        await fake_clock.wait_for_sleepers(1)
        await fake_clock.advance(1.0)
        await until(runner, lambda r: r.state == "ready")
        assert runner.info.pid != pid
    assert children() == before


async def test_a_server_that_cannot_start_leaves_its_tools_absent_and_the_persona_working(
    cfg: ConfigDir, open_runtime: RuntimeFactory, children: Children, caplog: pytest.LogCaptureFixture
) -> None:
    cfg.write({"broken": {"command": "/nonexistent/ishiki-mcp-server"}, "demo": demo()})
    before = children()
    caplog.set_level(logging.WARNING, logger="ishiki.ext.mcp")
    async with open_runtime(model=ScriptedModel(["Hello!"])) as (rt, instance):
        assert instance.runners["broken"].state == "failed"
        names = [t.name for t in instance.ishiki_tools()]
        assert "demo__add" in names
        assert not any(name.startswith("broken__") for name in names)
        status = instance.ishiki_status()
        assert status[0] == (
            "mcp broken: failed: failed to start: cannot start '/nonexistent/ishiki-mcp-server': "
            "No such file or directory; next attempt in 1 s"
        )
        assert status[1].startswith("mcp demo: ready")
        outcome = await turn(rt, "hi")
        assert (outcome.status, outcome.result.text if outcome.result else None) == ("done", "Hello!")
        assert len(children() - before) == 1
    assert "MCP server broken: failed to start: cannot start '/nonexistent/ishiki-mcp-server'" in caplog.text
    assert children() == before


async def test_a_server_that_exits_at_once_is_reported_with_its_exit_code_and_stderr(
    cfg: ConfigDir, open_runtime: RuntimeFactory
) -> None:
    script = "import sys; sys.stderr.write('boom: no token given\\n'); sys.exit(2)"
    cfg.write({"quitter": {"command": sys.executable, "args": ["-c", script]}})
    async with open_runtime() as (_rt, instance):
        status = instance.ishiki_status()
    assert status == [
        "mcp quitter: failed: failed to start: the connection closed before the server answered "
        "(exited with code 2; stderr: boom: no token given); next attempt in 1 s"
    ]


async def test_a_server_that_does_not_answer_at_start_times_out(
    cfg: ConfigDir, open_runtime: RuntimeFactory, fake_clock: FakeClock, children: Children
) -> None:
    script = "import time; time.sleep(600)"
    cfg.write({"mute": {"command": sys.executable, "args": ["-c", script], "startup_timeout_ms": 1000}})
    before = children()
    opened = anyio.Event()
    close = anyio.Event()
    status: list[str] = []
    services = HostServices()

    async def hold_runtime() -> None:
        async with open_runtime(services=services) as (_rt, instance):
            status.extend(instance.ishiki_status())
            opened.set()
            await close.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_runtime)
        await fake_clock.wait_for_sleepers(1)  # attach waits for the first attempt, which waits for an answer
        (runner,) = MCPManager.of(services).runners
        await until(runner, lambda r: r.info.pid is not None)
        assert runner.info.pid in children()
        await fake_clock.advance(1.0)
        with anyio.fail_after(DEADLINE):
            await opened.wait()
        assert children() == before  # the mute process was killed
        close.set()
    assert status == [
        "mcp mute: failed: failed to start: no answer within startup_timeout_ms (1000 ms) (killed by SIGTERM); "
        "next attempt in 1 s"
    ]


async def test_a_missing_variable_fails_that_server_only(
    cfg: ConfigDir, open_runtime: RuntimeFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("ISHIKI_TEST_MISSING", raising=False)
    monkeypatch.setenv("ISHIKI_TEST_SECRET", "s3cret")
    cfg.write(
        {
            "needs": demo(env={"DEMO_SECRET": "${ISHIKI_TEST_MISSING}"}),
            "fine": demo(env={"DEMO_SECRET": "${ISHIKI_TEST_SECRET}"}),
        }
    )
    async with open_runtime() as (_rt, instance):
        assert list(instance.runners) == ["fine"]
        whoami = next(t for t in instance.ishiki_tools() if t.name == "fine__whoami")
        assert "secret=s3cret" in (await whoami.handler({}, None)).content  # type: ignore[arg-type]
        status = instance.ishiki_status()
    message = (
        "mcp.json:10: mcpServers.needs.env.DEMO_SECRET: environment variable ISHIKI_TEST_MISSING is not set "
        "(write ${ISHIKI_TEST_MISSING:-default} to give a default)"
    )
    assert status[1] == f"mcp needs: not started: {message}"
    assert f"mcp: server needs not started: {message}" in caplog.text


async def test_log_lines_on_stdout_are_reported_once_and_the_server_works(
    cfg: ConfigDir, open_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    cfg.write({"noisy": demo("--noisy")})
    caplog.set_level(logging.DEBUG, logger="ishiki.ext.mcp")
    async with open_runtime() as (_rt, instance):
        add = next(t for t in instance.ishiki_tools() if t.name == "noisy__add")
        assert (await add.handler({"a": 1, "b": 2}, None)).content == "3"  # type: ignore[arg-type]
    noise = [r for r in caplog.records if "sent something that is not MCP" in r.getMessage()]
    assert [r.levelno for r in noise] == [logging.WARNING, logging.DEBUG]


async def test_cwd_is_relative_to_the_mcp_json_and_must_exist(cfg: ConfigDir, open_runtime: RuntimeFactory) -> None:
    (cfg.root / "work").mkdir()
    cfg.write({"here": demo(cwd="work"), "nowhere": demo(cwd="missing")})
    async with open_runtime() as (_rt, instance):
        whoami = next(t for t in instance.ishiki_tools() if t.name == "here__whoami")
        assert f"cwd={cfg.root / 'work'}" in (await whoami.handler({}, None)).content  # type: ignore[arg-type]
        status = instance.ishiki_status()
    assert status[1] == (
        f"mcp nowhere: failed: failed to start: the working directory {cfg.root / 'missing'} does not exist; "
        "next attempt in 1 s"
    )
