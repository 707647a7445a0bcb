"""``plugins`` of ``ishiki.yaml``: each host plugin's block checked by its own schema (file:line errors), an
unknown or uninstalled name with a hint, and the real entry points of the test distribution: listed by
``ishiki plugins``, checked by ``ishiki check``, one served by a real Host while a broken one never stops it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from ishiki_host import HostPlugin, HostPluginContext, PluginConfig
from ishiki_host.config.host import load_host_config
from ishiki_host.plugins.discovery import PluginRegistry
from ishiki_host.testing import MakeHost, host_yaml, profile_yaml
from ishiki_host.testing.registry import registry_with

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]
WriteConfig = Callable[..., Path]


class Panel(HostPlugin):
    """A host plugin with a schema; never run here."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"title": {"type": "string", "default": "Ishiki"}, "port": {"type": "integer"}},
    }

    def create(self, ctx: HostPluginContext, config: PluginConfig) -> Any:
        raise AssertionError("not run by these tests")


REGISTRY = registry_with({"ishiki.host.panel": Panel}, base=PluginRegistry([]))


def load(tmp_path: Path, text: str) -> tuple[Any, list[Any]]:
    (tmp_path / "ishiki.yaml").write_text(text, encoding="utf-8")
    return load_host_config(tmp_path, {}, catalog=REGISTRY)


def test_a_plugin_block_gets_its_schema_defaults_and_nothing_written_means_defaults(tmp_path: Path) -> None:
    host, errors = load(tmp_path, "plugins:\n  panel: {port: 9}\n")
    assert (errors, host.plugins) == ([], {"panel": {"title": "Ishiki", "port": 9}})
    host, errors = load(tmp_path, "plugins:\n  panel:\n")
    assert (errors, host.plugins) == ([], {"panel": {"title": "Ishiki"}})
    host, _ = load(tmp_path, "log_level: info\n")
    assert host.plugins == {}  # a host plugin runs only when ishiki.yaml names it


@pytest.mark.parametrize(
    ("text", "path", "line", "message"),
    [
        ("plugins:\n  panel: {port: nine}\n", "plugins.panel.port", 2, "expected an integer, got string ('nine')"),
        ("plugins:\n  panel:\n    titel: x\n", "plugins.panel.titel", 3, "did you mean 'title'"),
        (
            "plugins:\n  panle: {}\n",
            "plugins.panle",
            2,
            "no host plugin 'panle' is installed or it failed to load; did you mean 'panel'? (see ishiki plugins)",
        ),
        ("plugins:\n  dashboard: {}\n", "plugins.dashboard", 2, "no host plugin 'dashboard' is installed"),
        ("plugins: [panel]\n", "plugins", 1, "expected"),
    ],
)
def test_a_bad_plugin_block_names_file_line_and_key_and_the_plugin_does_not_run(
    tmp_path: Path, text: str, path: str, line: int, message: str
) -> None:
    host, errors = load(tmp_path, text)
    assert [(e.path, e.line, e.file) for e in errors] == [(path, line, str(tmp_path / "ishiki.yaml"))], errors
    assert message in errors[0].message
    assert host.plugins == {}


def test_ishiki_plugins_lists_the_host_group_with_its_load_errors(run_ishiki: RunIshiki) -> None:
    done = run_ishiki("plugins", "--json", plugins=True)
    services = {s["service"]: s for s in json.loads(done.stdout)["services"]}
    assert services["ishiki.host.hello"]["status"] == "ok"
    assert services["ishiki.host.hello"]["group"] == "ishiki.host"
    broken = services["ishiki.host.brokenhost"]
    assert (broken["status"], broken["error"]) == ("error", "RuntimeError: ishiki-test-plugins: broken on purpose")


def test_ishiki_check_validates_the_plugin_blocks(
    run_ishiki: RunIshiki, write_config: WriteConfig, echo_models: str
) -> None:
    files = {
        "models.yaml": echo_models,
        "profiles/p/profile.yml": "model: default\nchannels:\n  console:local: ['*']\n",
        "profiles/p/persona.md": "You are a test persona.\n",
    }
    good = write_config({**files, "ishiki.yaml": "plugins:\n  hello: {greeting: hey}\n"})
    assert run_ishiki("check", str(good), plugins=True).returncode == 0
    bad = write_config({**files, "ishiki.yaml": "plugins:\n  hello: {greeting: 3}\n  helo: {}\n"})
    done = run_ishiki("check", str(bad), "--json", plugins=True)
    errors = json.loads(done.stdout)["host"]["errors"]
    assert done.returncode == 1
    assert [(e["path"], e["line"]) for e in errors] == [("plugins.hello.greeting", 2), ("plugins.helo", 3)]
    assert "did you mean 'hello'?" in errors[1]["message"]


@pytest.mark.anyio
async def test_a_real_entry_point_serves_while_a_broken_one_never_stops_the_host(
    make_host: MakeHost, plugin_registry: PluginRegistry
) -> None:
    host = host_yaml(extra="http: {listen: '127.0.0.1:0'}\nplugins:\n  hello: {greeting: hey}\n  brokenhost: {}\n")
    async with make_host(profiles={"ana": profile_yaml()}, host=host) as th:
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"{th.host.http.base_url}/hello/")
        errors = [e.path for e in th.host.config.host_errors]
        status = th.host.status()["plugins"]
    assert answer.json() == {"greeting": "hey", "profiles": ["ana"]}
    assert errors == ["plugins.brokenhost"]  # reported as ishiki check would, the host runs on
    assert status == {"hello": {"state": "running", "restarts": 0, "errors": 0, "error": None}}
