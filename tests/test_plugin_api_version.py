"""A plugin declaring a plugin-API major the host does not speak is refused, through real entry points.

The test distribution registers ``ishiki.engine.context.future`` (``api_version = "2.0"``); the real ``ishiki``
command lists it as failed and keeps a profile that uses it waiting, with the reason, while the other
services load.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from ishiki_host.plugins.base import PLUGIN_API_VERSION
from ishiki_host.plugins.validate import compatible_api

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]
WriteConfig = Callable[..., Path]

REFUSAL = (
    "ishiki.engine.context.future (ishiki-test-plugins 0.3.1): FutureContext declares plugin API '2.0'; "
    f"this host speaks {PLUGIN_API_VERSION} (install a version of the plugin made for it)"
)
"""The message, as ``docs/plugins/versioning.md`` shows it."""


def test_only_the_hosts_major_is_compatible() -> None:
    assert PLUGIN_API_VERSION == "1.0"
    assert [compatible_api(v) for v in ("1.0", "1.7", "1", "2.0", "0.9", "x.1", 1.0, None)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
    ]


def test_ishiki_plugins_reports_the_incompatible_plugin(run_ishiki: RunIshiki) -> None:
    done = run_ishiki("plugins", "--json", plugins=True)
    assert done.returncode == 1
    services = {s["service"]: s for s in json.loads(done.stdout)["services"]}
    future = services["ishiki.engine.context.future"]
    assert (future["status"], future["distribution"]) == ("error", "ishiki-test-plugins")
    assert future["error"] == "FutureContext declares plugin API '2.0'; this host speaks 1.0 " + (
        "(install a version of the plugin made for it)"
    )
    assert services["ishiki.engine.context.testctx"]["status"] == "ok"


def test_a_profile_using_it_waits_with_the_reason(
    run_ishiki: RunIshiki, write_config: WriteConfig, echo_models: str
) -> None:
    profile = "model: default\ncontext:\n  engine: future\n"
    root = write_config({"models.yaml": echo_models, "profiles/p/profile.yml": profile, "profiles/p/persona.md": "Hi"})
    done = run_ishiki("check", str(root), plugins=True)
    assert done.returncode == 1
    assert "p  waiting  missing ishiki.engine.context.future" in done.stdout
    assert f"profiles/p/profile.yml:3: context.engine: {REFUSAL}" in done.stdout
    report = json.loads(run_ishiki("check", str(root), "--json", plugins=True).stdout)
    (error,) = report["profiles"][0]["errors"]
    assert error["message"] == REFUSAL


def test_the_versioning_doc_shows_the_real_message(repo_root: Path) -> None:
    assert REFUSAL in (repo_root / "docs" / "plugins" / "versioning.md").read_text(encoding="utf-8")
