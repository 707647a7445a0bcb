"""A third-party plugin the way an operator gets it: wheels, pip-installed into a fresh venv beside the host's.

The host is built into a wheel once per session (not an editable install), and ``ishiki new plugin KIND hello``
of every kind into a wheel of its own, with ``tools/check_wheels.py``, the check ``make wheels`` runs for
``packages/``. One throwaway venv gets all of them from pip, with their test extras; nothing of this checkout is
on its ``sys.path``. There each scaffold's generated tests pass, run from a copy of its project that holds no
code; the real ``ishiki`` of the venv lists the extension and makes a profile that names it ready, while the
host's own environment, where the wheel is not installed, says which entry point is missing.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ishiki_host.scaffold import KINDS, write_plugin

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PROFILE = "model: default\nextends:\n  hello:\n    config:\n      greeting: Hi\n"


def load_check_wheels() -> ModuleType:
    """``tools/check_wheels.py``, which builds, installs and stages for ``make wheels``."""
    spec = importlib.util.spec_from_file_location("check_wheels", REPO / "tools" / "check_wheels.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_wheels = load_check_wheels()


def run(*command: str | Path, venv: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``command`` in ``venv`` (first on PATH, run from there, no working directory on ``sys.path``) or here."""
    done: subprocess.CompletedProcess[str] = check_wheels.run(
        command, cwd=cwd or venv, env=check_wheels.environment(venv)
    )
    return done


def checked(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="session")
def host_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of the host, built once per session from a clean copy of its project."""
    wheel: Path = check_wheels.build_host(tmp_path_factory.mktemp("host-wheel"))
    return wheel


@pytest.fixture(scope="module")
def scaffolds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``ishiki new plugin KIND hello`` of every kind, by kind."""
    root = tmp_path_factory.mktemp("scaffolds")
    return {kind: write_plugin(kind, "hello", root) for kind in KINDS}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, host_wheel: Path, scaffolds: dict[str, Path]) -> Path:
    """A fresh venv holding the host's wheel and every scaffold's wheel with its ``test`` extra."""
    root = tmp_path_factory.mktemp("wheel")
    plugins = [check_wheels.with_test_extra(p, check_wheels.build(p, root)) for p in scaffolds.values()]
    check_wheels.fresh_venv(root / "venv", [host_wheel, *plugins], check_wheels.pins(root / "constraints.txt"))
    return root / "venv"


@pytest.fixture
def config_dir(tmp_path: Path, venv: Path) -> Path:
    """``ishiki init``'s directory plus a profile that enables the extension."""
    root = tmp_path / "bot"
    assert checked(run(venv / "bin" / "ishiki", "init", root, venv=venv)).returncode == 0
    (root / "profiles" / "greeter").mkdir()
    (root / "profiles" / "greeter" / "profile.yml").write_text(PROFILE)
    (root / "profiles" / "greeter" / "persona.md").write_text("You greet people.\n")
    return root


def check(root: Path, venv: Path | None = None) -> tuple[int, dict[str, Any]]:
    python = venv / "bin" / "python" if venv else sys.executable
    done = checked(run(python, "-m", "ishiki_host", "check", root, "--json", venv=venv))
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("kind", KINDS)
def test_the_generated_tests_pass_against_the_wheels(
    kind: str, scaffolds: dict[str, Path], venv: Path, tmp_path: Path
) -> None:
    project = scaffolds[kind]
    copy = tmp_path / project.name  # its tests, README and pyproject.toml (the pytest settings), not its code
    shutil.copytree(project, copy, ignore=check_wheels.without_code(project))
    assert not check_wheels.import_names(copy)
    done = run(venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", venv=venv, cwd=copy)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None, done.stdout
    assert int(passed.group(1)) >= 3, done.stdout
    assert "skipped" not in done.stdout


def test_ishiki_plugins_lists_the_installed_wheel(venv: Path) -> None:
    done = checked(run(venv / "bin" / "ishiki", "plugins", "--json", venv=venv))
    services = {s["service"]: s for s in json.loads(done.stdout)["services"]}
    assert services["ishiki.ext.hello"] == {
        "service": "ishiki.ext.hello",
        "group": "ishiki.ext",
        "name": "hello",
        "target": "ishiki_ext_hello:HelloExtension",
        "distribution": "ishiki-ext-hello",
        "version": "0.1.0",
        "status": "ok",
        "error": None,
    }
    code = "import ishiki_ext_hello, ishiki_host; print(ishiki_ext_hello.__file__); print(ishiki_host.__file__)"
    for location in checked(run(venv / "bin" / "python", "-c", code, venv=venv)).stdout.splitlines():
        assert Path(location).is_relative_to(venv), location  # the wheels' copies, not a source tree


def test_a_profile_that_names_it_is_ready(venv: Path, config_dir: Path) -> None:
    code, report = check(config_dir, venv)
    assert code == 0, report
    assert {p["id"]: p["state"] for p in report["profiles"]} == {"assistant": "ready", "greeter": "ready"}


def test_its_config_schema_is_enforced(venv: Path, config_dir: Path) -> None:
    profile = config_dir / "profiles" / "greeter" / "profile.yml"
    profile.write_text(PROFILE.replace("greeting:", "greting:"))
    done = checked(run(venv / "bin" / "ishiki", "check", config_dir, venv=venv))
    assert done.returncode == 1
    assert "extends.hello.config.greting: unknown key 'greting'; did you mean 'greeting'?" in done.stdout


def test_without_the_wheel_check_names_the_missing_entry_point(config_dir: Path) -> None:
    ishiki = Path(sys.executable).parent / "ishiki"  # the host's own environment: the wheel is not there
    code, report = check(config_dir)
    assert code == 1
    (greeter,) = [p for p in report["profiles"] if p["id"] == "greeter"]
    assert (greeter["state"], greeter["missing"]) == ("waiting", ["ishiki.ext.hello"])
    text = checked(run(ishiki, "check", config_dir)).stdout
    assert "greeter  waiting  missing ishiki.ext.hello" in text
    assert (
        "extends.hello: needs ishiki.ext.hello, which is not installed (no entry point 'hello' in group 'ishiki.ext')"
        in text
    )
