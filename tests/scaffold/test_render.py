"""What ``ishiki new plugin`` writes, checked without installing it (the generated suites run elsewhere)."""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from ishiki_host._version import __version__
from ishiki_host.errors import ScaffoldError
from ishiki_host.plugins.base import PLUGIN_API_VERSION
from ishiki_host.scaffold import KINDS, host_requirement, plugin_names, render_plugin, write_plugin

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_package_has_its_files_and_its_entry_point(kind: str) -> None:
    names = plugin_names(kind, "sample")
    files = render_plugin(kind, "sample")
    module = f"{names.package}/{names.kind.module}.py"
    assert set(files) == {
        "README.md",
        "pyproject.toml",
        f"{names.package}/__init__.py",
        f"{names.package}/py.typed",
        module,
        "tests/test_sample.py",
    }
    project = tomllib.loads(files["pyproject.toml"])["project"]
    assert project["name"] == names.distribution
    assert project["entry-points"] == {names.kind.group: {"sample": names.target}}
    assert project["dependencies"][0] == host_requirement()
    assert f'api_version: ClassVar[str] = "{PLUGIN_API_VERSION}"' in files[module]
    assert f"class {names.class_name}({names.kind.base}):" in files[module]
    for path, text in files.items():
        if path.endswith(".py"):
            ast.parse(text, path)  # valid Python: the full proof is the generated suite that runs
        unfilled = re.findall(r"\$\{?\w+", text.replace("${VAR}", "").replace("${CHAT_TOKEN}", ""))
        assert not unfilled, f"{path}: placeholders left unfilled"


def test_the_host_requirement_spans_the_host_versions_of_this_major() -> None:
    assert host_requirement() == f"ishiki-host>={__version__},<{int(__version__.split('.')[0]) + 1}"
    assert host_requirement("0.1.0") == "ishiki-host>=0.1.0,<1"
    assert host_requirement("2.3.1") == "ishiki-host>=2.3.1,<3"


def test_the_readme_says_how_to_use_install_and_test_it() -> None:
    readme = render_plugin("channel", "matrix")["README.md"]
    assert "pip install ishiki-channel-matrix" in readme
    assert "  matrix:\n    accounts:" in readme
    assert "token: ${CHAT_TOKEN}" in readme
    assert "pip install -e '.[test]'" in readme


def test_a_non_empty_target_is_refused_and_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "ishiki-ext-weather"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="exists and is not empty"):
        write_plugin("extension", "weather", tmp_path)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]


def test_an_empty_target_is_used(tmp_path: Path) -> None:
    (tmp_path / "ishiki-ext-weather").mkdir()
    root = write_plugin("extension", "weather", tmp_path)
    assert (root / "pyproject.toml").is_file()
    assert (root / "ishiki_ext_weather" / "py.typed").is_file()


def test_the_command_writes_the_package(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    done = run_ishiki("new", "plugin", "wakeup", "moody", "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "ishiki.engine.wakeup.moody (ishiki_wakeup_moody:MoodyWakeupEngine)" in done.stdout
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(f"ishiki-wakeup-moody/{path}" for path in render_plugin("wakeup", "moody"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("extension", "My Ext"), "bad plugin name 'My Ext': use lower-case ASCII letters"),
        (("context", "standard"), "ishiki.engine.context.standard is a built-in service of ishiki-host"),
        (("channel", "console"), "ishiki.channel.console is a built-in service of ishiki-host"),
        (("extension", "taken"), "exists and is not empty"),
    ],
)
def test_the_command_refuses_with_a_clear_error(
    run_ishiki: RunIshiki, tmp_path: Path, args: tuple[str, str], message: str
) -> None:
    (tmp_path / "ishiki-ext-taken").mkdir()
    (tmp_path / "ishiki-ext-taken" / "x").write_text("")
    done = run_ishiki("new", "plugin", *args, "--dir", str(tmp_path))
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ishiki-ext-taken"]


def test_the_command_refuses_an_unknown_kind(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    done = run_ishiki("new", "plugin", "engine", "x", "--dir", str(tmp_path))
    assert done.returncode == 2
    assert "invalid choice: 'engine'" in done.stderr


def test_the_command_warns_when_another_distribution_has_the_name(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    done = run_ishiki("new", "plugin", "context", "narrative", "--dir", str(tmp_path))
    assert done.returncode == 0
    expected = "note: ishiki-engine-narrative already registers ishiki.engine.context.narrative; installed together"
    assert expected in done.stderr
