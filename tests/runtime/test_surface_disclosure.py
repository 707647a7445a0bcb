"""The disclosure stages in the surface pipeline: always last, composable with filtering stages, skippable; the
profile's codemode keys are the sandbox's limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import pytest

from ishiki_host import Tool
from ishiki_host.config.profile_types import CodemodeConfig, Profile, ToolsearchConfig
from ishiki_host.config.schemas import load_schema
from ishiki_host.core.tools import ToolContext
from ishiki_host.core.turns import Turn
from ishiki_host.runtime.codemode import limits_of
from ishiki_host.runtime.surface import SurfaceContext
from ishiki_host.testing import RuntimeHarness
from ishiki_host.testing.models import ScriptedModel, reply, tool_call
from ishiki_host.tools.codemode import LIMIT_KEYS, Limits

pytestmark = pytest.mark.anyio


async def noop(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "ok"


def tools(*names: str) -> list[Tool]:
    return [Tool(name, f"The {name} tool.", noop) for name in names]


def profile(tmp_path: Path, **changes: Any) -> Profile:
    base = Profile(id="ana", directory=tmp_path, file=tmp_path / "profile.yml", persona="You are Ana.", model="m")
    return replace(base, **changes)


async def without_mail(found: list[Tool], context: SurfaceContext) -> list[Tool]:
    """A filtering stage added by a plugin: the ``mail`` tool is off."""
    return [tool for tool in found if tool.name != "mail"]


async def test_a_stage_added_later_runs_before_the_disclosure_stages(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("codemode", {"code": "return await tools.mail({});"})), "done"])
    both = profile(tmp_path, codemode=CodemodeConfig(), toolsearch=ToolsearchConfig(resident=("mail", "dice")))
    async with RuntimeHarness(tmp_path, model=model, profile=both, extra_tools=tools("mail", "dice")) as rt:
        rt._surface.add("no-mail", without_mail)
        assert rt._surface.names == (
            "extra", "kernel", "extensions", "switches", "wait", "no-mail", "toolsearch", "codemode"
        )  # fmt: skip
        await rt.say("mail Bob")
        context = SurfaceContext(rt._tools_source, Turn(9, "interactive"), "owner")
        every = await rt._surface.assemble(context, disclose=False)
        answer = next(e.data for e in rt.log.iter_forward() if e.data.get("role") == "tool")
    described = {spec.name: spec.description for spec in model.requests[0].tools}["codemode"]
    assert "tools.dice(input" in described
    assert "tools.mail" not in described
    assert answer["parts"][0]["text"].startswith("the program failed (thrown): TypeError: not a function")
    assert [tool.name for tool in every] == ["dice"]


async def test_tools_hidden_in_programs_must_still_have_unique_names(tmp_path: Path) -> None:
    model = ScriptedModel(["never asked"])
    async with RuntimeHarness(
        tmp_path,
        model=model,
        profile=profile(tmp_path, codemode=CodemodeConfig()),
        extra_tools=tools("read"),
        kernel_tools=True,
    ) as rt:
        outcome = await rt.say("hi")
    assert (outcome.status, outcome.reason) == ("failed", "ToolConflictError")
    assert "two tools are named 'read' (from the extra stage and the kernel stage)" in str(outcome.error)


async def test_without_codemode_or_toolsearch_the_surface_is_the_default_one(tmp_path: Path) -> None:
    async with RuntimeHarness(tmp_path, model=ScriptedModel(["hi"]), profile=profile(tmp_path)) as rt:
        assert rt._disclosure is None
        assert rt._surface.names == ("extra", "kernel", "extensions", "switches", "wait")


def test_the_profiles_codemode_keys_are_the_sandboxs_limits() -> None:
    schema = load_schema("profile")["properties"]["codemode"]["properties"]
    assert set(schema) == {"enable", "direct", *LIMIT_KEYS}
    defaults = {key: schema[key]["default"] for key in LIMIT_KEYS}
    assert Limits.from_mapping(defaults) == Limits()
    assert limits_of(CodemodeConfig()) == Limits()
    assert {f.name for f in fields(Limits)} <= set(asdict(CodemodeConfig()))
    tuned = CodemodeConfig(timeout_ms=5, max_log_bytes=7)
    assert (limits_of(tuned).timeout_ms, limits_of(tuned).max_log_bytes) == (5, 7)
