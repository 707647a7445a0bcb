"""The README's examples are real: its mcp.json loads cleanly and its profile block passes the schema."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

from ishiki_ext_mcp import MCPExtension, load_mcp_config

README = Path(__file__).resolve().parent.parent / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def test_the_mcp_json_example_loads(tmp_path: Path) -> None:
    (example,) = blocks("json")
    (tmp_path / "mcp.json").write_text(example, encoding="utf-8")
    config = load_mcp_config(tmp_path, environ={"GITHUB_TOKEN": "t"})
    assert (config.errors, dict(config.failed), config.warnings) == ((), {}, ())
    assert [spec.name for spec in config.servers] == ["files", "github"]
    assert config.disabled == ("legacy",)
    assert dict(config.servers[1].headers) == {"Authorization": "Bearer t"}


def test_the_profile_example_passes_the_extension_schema() -> None:
    (example,) = blocks("yaml")
    block = yaml.safe_load(example)["extends"]["mcp"]
    assert block["enable"] is True
    assert Draft202012Validator(dict(MCPExtension.config_schema)).is_valid(block["config"])
