"""The real ``ishiki`` command sees the installed extension: ``plugins --json`` and ``check`` of its config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ISHIKI = Path(sys.executable).parent / "ishiki"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ISHIKI), *args], capture_output=True, text=True, timeout=120, check=False)


def test_plugins_lists_the_extension_as_loaded() -> None:
    done = run("plugins", "--json")
    services = {s["service"]: s for s in json.loads(done.stdout)["services"]}
    mcp = services["ishiki.ext.mcp"]
    assert (mcp["status"], mcp["distribution"], mcp["error"]) == ("ok", "ishiki-ext-mcp", None)
    assert mcp["target"] == "ishiki_ext_mcp.extension:MCPExtension"


def test_check_validates_the_extension_config(tmp_path: Path) -> None:
    root = tmp_path / "bot"
    assert run("init", str(root)).returncode == 0
    profile = root / "profiles" / "assistant" / "profile.yml"
    text = profile.read_text()
    profile.write_text(text.replace("extends: {}", "extends:\n  mcp: {enable: true, config: {servers: [demo]}}"))
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": {"command": "demo-server"}}}))
    good = run("check", str(root), "--json")
    assert json.loads(good.stdout)["ok"] is True, good.stdout
    profile.write_text(text.replace("extends: {}", "extends:\n  mcp: {enable: true, config: {sever: [demo]}}"))
    bad = run("check", str(root))
    assert bad.returncode != 0
    assert "extends.mcp.config.sever: unknown key 'sever'; did you mean 'servers'?" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr


def test_check_reads_mcp_json_through_the_extension(tmp_path: Path) -> None:
    root = tmp_path / "bot"
    assert run("init", str(root)).returncode == 0
    profile = root / "profiles" / "assistant" / "profile.yml"
    profile.write_text(profile.read_text().replace("extends: {}", "extends:\n  mcp: {enable: true}"))
    (root / "mcp.json").write_text('{"mcpServers": {"demo": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    done = run("check", str(root), "--json")
    report = json.loads(done.stdout)  # always JSON, even for a file nested 100,000 deep
    assert done.returncode == 1
    assert report["ok"] is False
    assert report["extensions"]["errors"] == [
        {"file": "mcp.json", "line": 1, "path": "", "message": "invalid JSON: nested deeper than 64 levels"}
    ]
    (root / "mcp.json").write_text('{"mcpServers": {"demo": {"command": "srv", "url": "http://x"}}}')
    text = run("check", str(root))
    assert "extensions: 1 error" in text.stdout
    assert "mcp.json:1: mcpServers.demo.url: 'url' does not apply to a stdio server" in text.stdout
    assert "Traceback" not in text.stdout + text.stderr
