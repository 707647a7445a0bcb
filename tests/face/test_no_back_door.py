"""Extensions get the contract and nothing more: tools, instructions and lifecycle are theirs; what a turn may
use (the tool surface, trust, plugin switches) is the host's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from ishiki_host import Extension, PluginConfig, RuntimeContext, Tool, ToolContext, hookimpl
from ishiki_host.errors import ToolConflictError
from ishiki_host.testing import RuntimeHarness, ScriptedModel, reply

REPO = Path(__file__).resolve().parents[2]

KERNEL = ["read", "send_message", "finish"]


async def _echo(args: object, ctx: ToolContext) -> str:
    return "ok"


class Meddler(Extension):
    """Tries what an extension must not be able to do, and records what happened."""

    def __init__(self, offers: Sequence[str] = ("weather",)) -> None:
        self.offers = offers
        self.seen: list[RuntimeContext] = []
        self.refusals: dict[str, str] = {}

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> Meddler:
        self.seen.append(ctx)
        return self

    @hookimpl
    def ishiki_attach(self, runtime: RuntimeContext) -> None:
        self.seen.append(runtime)
        for member in ("surface", "gate", "seed_pending", "turns", "extensions", "lifecycle"):
            try:
                getattr(runtime, member)
            except AttributeError as exc:
                self.refusals[member] = str(exc)

    @hookimpl
    def ishiki_tools(self, runtime: RuntimeContext) -> list[Tool]:
        return [Tool(name, f"{name} tool", _echo) for name in reversed(self.offers)]


@pytest.mark.anyio
async def test_an_extension_gets_the_context_not_the_runtime(tmp_path: Path) -> None:
    meddler = Meddler()
    async with RuntimeHarness(tmp_path, model=ScriptedModel([reply("hi")]), kernel_tools=True) as rt:
        await rt.mount(meddler)
    created, attached = meddler.seen
    assert created is attached is rt.context
    assert created is not rt
    assert isinstance(created, RuntimeContext)


@pytest.mark.anyio
async def test_members_the_runtime_no_longer_offers_name_their_replacement(tmp_path: Path) -> None:
    meddler = Meddler()
    async with RuntimeHarness(tmp_path, model=ScriptedModel([])) as rt:
        await rt.mount(meddler)
    assert set(meddler.refusals) == {"surface", "gate", "seed_pending", "turns", "extensions", "lifecycle"}
    assert "ishiki_tools" in meddler.refusals["surface"]
    assert "runtime.notice(text)" in meddler.refusals["gate"]
    assert "runtime.turn_state" in meddler.refusals["turns"]
    with pytest.raises(AttributeError, match="has no attribute 'nonsense'"):
        _ = rt.context.nonsense  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_extension_tools_come_after_the_kernels_in_the_hosts_order(tmp_path: Path) -> None:
    model = ScriptedModel([reply("hi")])
    async with RuntimeHarness(tmp_path, model=model, kernel_tools=True) as rt:
        await rt.mount(Meddler(offers=("alpha", "beta")))
        await rt.say("hello")
    (request,) = model.requests
    assert [spec.name for spec in request.tools] == [*KERNEL, "beta", "alpha", "wait"]


@pytest.mark.anyio
async def test_an_extension_cannot_replace_a_kernel_tool(tmp_path: Path) -> None:
    model = ScriptedModel([reply("hi")])
    async with RuntimeHarness(tmp_path, model=model, kernel_tools=True) as rt:
        await rt.mount(Meddler(offers=("send_message",)))
        outcome = await rt.say("hello")
    assert outcome.status == "failed"
    assert isinstance(outcome.error, ToolConflictError)
    assert "offers a tool named 'send_message', which an earlier stage already offers" in str(outcome.error)
    assert model.requests == []  # the turn failed before the model saw a surface the host did not make


@pytest.mark.slow
def test_mypy_flags_a_member_the_context_does_not_offer(tmp_path: Path) -> None:
    """Authors who type-check hear of a retired member from mypy, before any turn runs."""
    plugin = tmp_path / "old_plugin.py"
    plugin.write_text(
        "from ishiki_host import RuntimeContext\n\n\n"
        "async def hello(runtime: RuntimeContext) -> None:\n"
        '    await runtime.gate.notice("hi")\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(plugin)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(REPO)},  # an editable install hides the package from mypy
        timeout=600,  # a cap, not an expectation: mypy takes seconds
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert '"RuntimeContext" has no attribute "gate"' in done.stdout
