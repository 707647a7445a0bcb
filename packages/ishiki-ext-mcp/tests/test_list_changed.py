"""``tools/list_changed`` refreshes the tools offered, in both protocol eras.

The 2026 protocol delivers the change on a ``subscriptions/listen`` stream; a handshake-era (``--legacy``)
server sends ``notifications/tools/list_changed`` on the session. The demo server's ``grow`` tool adds a tool
and announces it both ways.
"""

from __future__ import annotations

import anyio
import pytest
from ishiki_host.testing import ScriptedModel, reply, tool_call
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from ishiki_ext_mcp.testing import DEADLINE, ConfigDir, RuntimeFactory, demo, until

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_new_tool_is_offered_after_list_changed(cfg: ConfigDir, open_runtime: RuntimeFactory, era: str) -> None:
    cfg.write({"demo": demo("--legacy") if era == "legacy" else demo()})
    model = ScriptedModel(
        [
            reply("", tool_call("demo__grow", {"name": "sparkle"})),
            "grown",
            reply("", tool_call("demo__sparkle")),
            "used it",
        ]
    )
    async with open_runtime(model=model) as (rt, instance):
        runner = instance.runners["demo"]
        assert (runner.protocol_version in MODERN_PROTOCOL_VERSIONS) is (era == "modern")
        before = runner.listing
        with anyio.fail_after(DEADLINE):
            await rt.say("grow a tool")
        await until(runner, lambda r: r.listing is not before)
        assert "demo__sparkle" in [tool.name for tool in instance.ishiki_tools()]
        with anyio.fail_after(DEADLINE):
            await rt.say("use it")
        offered = [spec.name for spec in model.requests[-1].tools]
        assert "demo__sparkle" in offered
        results = [e.data for e in rt.log.iter_forward() if e.data.get("role") == "tool"]
        assert results[-1]["parts"][0]["text"] == "sparkle"
