"""The packages ``ishiki new plugin`` writes are clean and their own tests pass once installed.

Each kind is scaffolded under the name its worked example in ``docs/plugins/`` uses, installed with pip into a
directory of its own (never into the venv), and its test suite run by a real pytest in a subprocess, with the
fixtures the host's pytest plugin provides. ruff and mypy (strict) check the output too, including a scaffold
under the longest name allowed, so a long name still gives formatted code.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ishiki_host.scaffold import KINDS, write_plugin

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "context": "recent",
    "wakeup": "chance",
    "toolcall": "sampling",
    "extension": "greeter",
    "channel": "chatroom",
    "provider": "jsonapi",
    "host": "board",
}
"""The name each kind's worked example uses (``docs/plugins/<kind>.md``)."""
LONGEST = "abcdefghij-klmnopq-rstuv"


def run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")} | env
    return subprocess.run(command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def scaffolds(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The example packages, one of each kind."""
    root = tmp_path_factory.mktemp("scaffolds")
    return [write_plugin(kind, name, root) for kind, name in EXAMPLES.items()]


def test_the_longest_name_is_the_longest_allowed() -> None:
    from ishiki_host.scaffold._names import MAX_NAME

    assert len(LONGEST) == MAX_NAME


def test_the_packages_pass_ruff_and_strict_mypy(scaffolds: list[Path], tmp_path: Path) -> None:
    long_names = [write_plugin(kind, LONGEST, tmp_path / "long") for kind in KINDS]
    packages = [*scaffolds, *long_names]
    ruff = str(Path(sys.executable).parent / "ruff")
    for package in packages:
        for command in ([ruff, "check", "--no-cache", "."], [ruff, "format", "--no-cache", "--check", "."]):
            done = run(command, package)
            assert done.returncode == 0, f"{package.name}: {' '.join(command[1:])}\n{done.stdout}{done.stderr}"
    mypy = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "mypy")]
    # The tests of packages under one name share a module name: the long-named ones are checked without them.
    for sources in ([*scaffolds], [p / p.name.replace("-", "_") for p in long_names]):
        done = run(
            [*mypy, *(str(f) for package in sources for f in sorted(package.rglob("*.py")))],
            tmp_path,
            MYPYPATH=str(REPO),
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_generated_suites_pass_once_installed(scaffolds: list[Path], tmp_path: Path) -> None:
    builds = tmp_path / "builds"  # pip builds in the source tree: keep the scaffolds pristine
    for package in scaffolds:
        shutil.copytree(package, builds / package.name)
    site = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    install += ["--disable-pip-version-check", "--no-input", "--target", str(site), *sorted(map(str, builds.iterdir()))]
    done = run(install, tmp_path)
    assert done.returncode == 0, done.stderr
    suites = [str(package / "tests") for package in scaffolds]
    pytest_command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error"]
    done = run([*pytest_command, "--import-mode=importlib", *suites], tmp_path, PYTHONPATH=str(site))
    assert done.returncode == 0, done.stdout + done.stderr
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None, done.stdout
    assert int(passed.group(1)) >= 3 * len(KINDS), done.stdout
    assert "skipped" not in done.stdout
