"""End to end: the real entry point, a profile on disk, the model gateway and the loopback OpenAI server.

The extension is found through its installed entry point, its block of ``profile.yml`` is validated and filled
by the profile loader, and a turn whose model (the fake server, over HTTP) calls the workspace tools runs on
a runtime harness. The ``ishiki`` command lists the service and checks profiles that use it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ishiki_ext_workspace import WorkspaceExtension

from ishiki_host.config.profile import load_profile
from ishiki_host.testing import Gateway, ModelsConfig, RuntimeHarness, ScriptedCall, discover

ISHIKI = Path(sys.executable).parent / "ishiki"


def _write_profile(config_dir: Path, docs: Path) -> Path:
    directory = config_dir / "profiles" / "scribe"
    directory.mkdir(parents=True)
    (directory / "persona.md").write_text("You are Scribe, who keeps notes.\n")
    (directory / "profile.yml").write_text(
        "model: fake:fake-model\n"
        "extends:\n"
        "  workspace:\n"
        "    config:\n"
        f"      mounts: [{{name: docs, path: {json.dumps(str(docs))}}}]\n"
        "      max_results: 50\n"
    )
    return directory


def _ishiki(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(ISHIKI), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.anyio
async def test_a_turn_of_a_profile_uses_the_workspace_over_http(fake_openai, model_apis, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "style.md").write_text("Notes are bullet lists.\n")
    registry = discover()
    load = load_profile(_write_profile(tmp_path / "config", docs), "profiles/scribe", registry)
    assert load.profile is not None, load.errors
    use = load.profile.extension("workspace")
    assert use is not None
    extension = registry.plugin(use.service)()
    assert isinstance(extension, WorkspaceExtension)

    fake_openai.reply(
        "Writing it down.",
        tool_calls=[
            ScriptedCall("read_file", {"path": "workspace://docs/style.md"}),
            ScriptedCall("write_file", {"path": "notes/today.md", "content": "- buy milk\n- call Ada\n"}),
            ScriptedCall("write_file", {"path": "workspace://docs/style.md", "content": "defaced"}),
        ],
    )
    fake_openai.reply("", tool_calls=[ScriptedCall("search_files", {"pattern": "(?i)ada"})])
    fake_openai.reply("Noted: buy milk, call Ada.")
    models = ModelsConfig(providers={"fake": fake_openai.provider("fake", ["fake-model"])})
    async with (
        Gateway(models, model_apis) as gateway,
        RuntimeHarness(tmp_path / "home", model=gateway.model("fake:fake-model"), profile=load.profile) as rt,
    ):
        await rt.mount_extension(extension.create(rt.context, use.config))
        outcome = await rt.say("Remember: buy milk, call Ada.")
    assert outcome.status == "done"

    workspace = tmp_path / "home" / "workspace"
    assert (workspace / "notes" / "today.md").read_text() == "- buy milk\n- call Ada\n"
    assert (docs / "style.md").read_text() == "Notes are bullet lists.\n"
    first, second, third = (request.json for request in fake_openai.requests)
    system = first["messages"][0]["content"]
    assert system.startswith("You are Scribe")
    assert "## Workspace files" in system
    assert "workspace://docs/ (read-only)" in system
    offered = [tool["function"]["name"] for tool in first["tools"]]
    assert offered == ["list_files", "read_file", "write_file", "edit_file", "search_files", "delete_file"]
    results = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert "Notes are bullet lists." in results[0]
    assert results[1] == "wrote notes/today.md: 22 bytes (new file)"
    assert "mount 'docs' is read-only" in results[2]
    found = [m["content"] for m in third["messages"] if m["role"] == "tool"][-1]
    assert "notes/today.md:2: - call Ada" in found


def test_the_installed_entry_point_is_listed_by_the_cli() -> None:
    done = _ishiki("plugins", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    services = {s["service"]: s for s in json.loads(done.stdout)["services"]}
    workspace = services["ishiki.ext.workspace"]
    assert workspace["status"] == "ok", workspace["error"]
    assert workspace["distribution"] == "ishiki-ext-workspace"
    assert workspace["target"] == "ishiki_ext_workspace:WorkspaceExtension"


def test_ishiki_check_validates_a_profile_that_uses_the_workspace(tmp_path: Path) -> None:
    config = tmp_path / "bot"
    models = "providers:\n  demo:\n    api: scripted\n    rules: [{reply: hi}]\n    models: [{id: demo}]\n"
    (config / "profiles" / "ok").mkdir(parents=True)
    (config / "models.yaml").write_text(models)
    (config / "profiles" / "ok" / "persona.md").write_text("Hi.\n")
    (config / "profiles" / "ok" / "profile.yml").write_text(
        "model: demo:demo\nchannels: {console:local: ['*']}\nextends:\n  workspace:\n    config: {shell: true}\n"
    )
    ready = _ishiki("check", str(config), "--json")
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert json.loads(ready.stdout)["profiles"][0]["state"] == "ready"

    (config / "profiles" / "ok" / "profile.yml").write_text(
        "model: demo:demo\nchannels: {console:local: ['*']}\nextends:\n  workspace:\n    config: {shel: true}\n"
    )
    broken = _ishiki("check", str(config))
    assert broken.returncode == 1
    assert "Traceback" not in broken.stderr
    assert "extends.workspace.config.shel: unknown key 'shel'; did you mean 'shell'?" in broken.stdout
