"""A third-party plugin the way an operator gets it: a wheel, pip-installed into an environment beside the host.

A freshly scaffolded extension is built into a wheel (offline: ``--no-isolation``) and installed with pip into a
throwaway venv that sees the host's environment through a ``.pth`` file (the host and its dependencies, as a
``pip install ishiki-host`` would have put them). Then the real ``ishiki`` of that venv lists the plugin and
makes a profile that names it ready, while the host's own environment, where the wheel is not installed, says
which entry point is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.scaffold import write_plugin

pytestmark = pytest.mark.slow

PROFILE = "model: default\nextends:\n  hello:\n    config:\n      greeting: Hi\n"


def run(*command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    return subprocess.run(command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=300, check=False)


def checked(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a venv holding the wheel of ``ishiki new plugin extension hello``, beside the host."""
    root = tmp_path_factory.mktemp("wheel")
    package = write_plugin("extension", "hello", root / "src")
    built = run(
        sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(root / "dist"), str(package)
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (root / "dist").glob("ishiki_ext_hello-0.1.0-py3-none-any.whl")
    venv = root / "venv"
    assert run(sys.executable, "-m", "venv", "--without-pip", str(venv)).returncode == 0
    python = venv / "bin" / "python"
    purelib = run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    host_site = sysconfig.get_paths()["purelib"]
    Path(purelib, "ishiki_host_beside.pth").write_text(f"import site; site.addsitedir({host_site!r})\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check", "--no-input"]
    installed = run(*pip, "install", "--no-deps", "--no-index", str(wheel))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return python


@pytest.fixture
def config_dir(tmp_path: Path, plugin_venv: Path) -> Path:
    """``ishiki init``'s directory plus a profile that enables the plugin."""
    root = tmp_path / "bot"
    assert checked(run(str(plugin_venv), "-m", "ishiki_host", "init", str(root))).returncode == 0
    (root / "profiles" / "greeter").mkdir()
    (root / "profiles" / "greeter" / "profile.yml").write_text(PROFILE)
    (root / "profiles" / "greeter" / "persona.md").write_text("You greet people.\n")
    return root


def check(python: Path | str, root: Path) -> tuple[int, dict[str, Any]]:
    done = checked(run(str(python), "-m", "ishiki_host", "check", str(root), "--json"))
    return done.returncode, json.loads(done.stdout)


def test_ishiki_plugins_lists_the_installed_wheel(plugin_venv: Path) -> None:
    done = checked(run(str(plugin_venv), "-m", "ishiki_host", "plugins", "--json"))
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
    location = run(str(plugin_venv), "-c", "import ishiki_ext_hello; print(ishiki_ext_hello.__file__)").stdout
    assert location.startswith(str(plugin_venv.parent.parent)), location  # the wheel's copy, not a source tree


def test_a_profile_that_names_it_is_ready(plugin_venv: Path, config_dir: Path) -> None:
    code, report = check(plugin_venv, config_dir)
    assert code == 0, report
    assert {p["id"]: p["state"] for p in report["profiles"]} == {"assistant": "ready", "greeter": "ready"}


def test_its_config_schema_is_enforced(plugin_venv: Path, config_dir: Path) -> None:
    profile = config_dir / "profiles" / "greeter" / "profile.yml"
    profile.write_text(PROFILE.replace("greeting:", "greting:"))
    done = checked(run(str(plugin_venv), "-m", "ishiki_host", "check", str(config_dir)))
    assert done.returncode == 1
    assert "extends.hello.config.greting: unknown key 'greting'; did you mean 'greeting'?" in done.stdout


def test_without_the_wheel_check_names_the_missing_entry_point(config_dir: Path) -> None:
    ishiki = Path(sys.executable).parent / "ishiki"  # the host's own environment: the wheel is not there
    code, report = check(sys.executable, config_dir)
    assert code == 1
    (greeter,) = [p for p in report["profiles"] if p["id"] == "greeter"]
    assert (greeter["state"], greeter["missing"]) == ("waiting", ["ishiki.ext.hello"])
    text = checked(run(str(ishiki), "check", str(config_dir))).stdout
    assert "greeter  waiting  missing ishiki.ext.hello" in text
    assert (
        "extends.hello: needs ishiki.ext.hello, which is not installed (no entry point 'hello' in group 'ishiki.ext')"
        in text
    )
