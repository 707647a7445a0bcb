"""Monorepo: the host and every package under ``packages/`` build as their own sdist and wheel, offline.

Each project is copied without its build leftovers and built with ``python -m build --no-isolation`` (the sdist,
then the wheel from the sdist, as a release would). The wheel must carry every file of the import package
(modules, ``py.typed``, prompts, scaffold templates), declare the project's entry points, and depend on a range
of ``ishiki-host`` that this host satisfies. In development the packages are editable installs made by ``make``.
"""

from __future__ import annotations

import configparser
import email
import importlib.metadata
import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from ishiki_host._version import __version__

REPO = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p for p in (REPO / "packages").iterdir() if (p / "pyproject.toml").is_file())
LEFTOVERS = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", ".ruff_cache", ".mypy_cache")


def project(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return data


def import_package(root: Path) -> Path:
    (package,) = [p for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    return package


def build(root: Path, tmp_path: Path) -> Path:
    """Build ``root`` from a clean copy; returns the wheel."""
    source = tmp_path / root.name
    shutil.copytree(root, source, ignore=LEFTOVERS)
    out = tmp_path / "dist"
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    assert len(list(out.glob("*.tar.gz"))) == 1
    return wheel


def source_files(package: Path) -> set[str]:
    skipped = {"__pycache__"}
    return {
        p.relative_to(package.parent).as_posix()
        for p in package.rglob("*")
        if p.is_file() and not skipped & set(p.relative_to(package.parent).parts)
    }


def check_wheel(root: Path, wheel: Path) -> list[str]:
    """Assert the wheel carries the package and its entry points; returns its metadata headers."""
    meta = project(root)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (info,) = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        metadata = email.message_from_bytes(archive.read(f"{info}/METADATA"))
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.optionxform = str  # type: ignore[assignment,method-assign]  # keep names' case
        entry_points.read_string(archive.read(f"{info}/entry_points.txt").decode())
    missing = source_files(import_package(root)) - names
    assert not missing, f"{wheel.name} lacks {sorted(missing)}"
    declared = {group: dict(eps) for group, eps in meta.get("entry-points", {}).items()}
    if "scripts" in meta:
        declared["console_scripts"] = dict(meta["scripts"])
    built = {group: dict(entry_points[group].items()) for group in entry_points.sections()}
    assert built == declared
    assert metadata["Name"] == meta["name"]
    return list(metadata.get_all("Requires-Dist") or [])


@pytest.mark.slow
@pytest.mark.parametrize("root", PACKAGES, ids=[p.name for p in PACKAGES])
def test_each_package_builds_its_own_wheel(root: Path, tmp_path: Path) -> None:
    requires = check_wheel(root, build(root, tmp_path))
    (host,) = [Requirement(r) for r in requires if Requirement(r).name == "ishiki-host"]
    assert host.specifier.contains(__version__), f"{root.name}: {host} excludes this host ({__version__})"
    assert any(s.operator == "<" for s in host.specifier), f"{root.name}: {host} has no upper bound"


@pytest.mark.slow
def test_the_host_builds_a_wheel_with_its_data_and_scaffold_templates(tmp_path: Path) -> None:
    host = tmp_path / "stage" / "ishiki-host"
    host.mkdir(parents=True)
    shutil.copytree(REPO / "ishiki_host", host / "ishiki_host", ignore=LEFTOVERS)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, host / name)
    requires = check_wheel(host, build(host, tmp_path))
    assert any(r.startswith("pluggy") for r in requires)


def test_the_packages_are_editable_installs_of_this_checkout() -> None:
    for root in PACKAGES:
        dist = importlib.metadata.distribution(str(project(root)["name"]))
        url = json.loads(dist.read_text("direct_url.json") or "{}")
        assert url.get("dir_info", {}).get("editable") is True, f"{root.name}: run `make setup`"
        assert Path(url["url"].removeprefix("file://")).resolve() == root.resolve()
