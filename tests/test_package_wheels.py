"""Monorepo: the host and every package under ``packages/`` build as their own sdist and wheel, offline.

Each project is copied without its build leftovers and built with ``python -m build --no-isolation`` (the sdist,
then the wheel from the sdist, as a release would). The wheel must carry every file of the import package
(modules, ``py.typed``, prompts, scaffold templates), declare the project's entry points, and depend on a range
of ``ishiki-host`` that this host satisfies. In development the packages are editable installs made by ``make``;
``make wheels`` (run by CI after ``make test``) installs these same wheels into fresh venvs and runs each package's
tests there, from a copy staged without the package's code (``tools/check_wheels.py``).
"""

from __future__ import annotations

import configparser
import email
import importlib.metadata
import importlib.util
import json
import os
import tomllib
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.requirements import Requirement

from ishiki_host._version import __version__

REPO = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p for p in (REPO / "packages").iterdir() if (p / "pyproject.toml").is_file())


def load_check_wheels() -> ModuleType:
    """``tools/check_wheels.py``: how ``make wheels`` builds, stages and installs."""
    spec = importlib.util.spec_from_file_location("check_wheels", REPO / "tools" / "check_wheels.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_wheels = load_check_wheels()


def project(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return data


def import_package(root: Path) -> Path:
    (package,) = [p for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    return package


def build(root: Path, tmp_path: Path) -> Path:
    """Build ``root`` from a clean copy, as ``make wheels`` does; returns the wheel."""
    wheel: Path = check_wheels.build(root, tmp_path)
    assert len(list(wheel.parent.glob("*.tar.gz"))) == 1
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
    host = check_wheels.stage_host(tmp_path / "stage" / "ishiki-host")
    requires = check_wheel(host, build(host, tmp_path))
    assert any(r.startswith("pluggy") for r in requires)


def test_the_packages_are_editable_installs_of_this_checkout() -> None:
    for root in PACKAGES:
        dist = importlib.metadata.distribution(str(project(root)["name"]))
        url = json.loads(dist.read_text("direct_url.json") or "{}")
        assert url.get("dir_info", {}).get("editable") is True, f"{root.name}: run `make setup`"
        assert Path(url["url"].removeprefix("file://")).resolve() == root.resolve()


def test_make_wheels_stages_each_suite_as_in_the_repository_without_its_code(tmp_path: Path) -> None:
    for root in PACKAGES:
        suite = check_wheels.stage_suite(root, tmp_path / root.name)
        staged = suite / "packages" / root.name
        assert not check_wheels.import_names(staged)
        assert {"README.md", "pyproject.toml", "tests"} <= set(os.listdir(staged))
        assert (staged / "tests" / "conftest.py").is_file()
        assert (suite / "conftest.py").read_bytes() == (REPO / "conftest.py").read_bytes()
        assert (suite / "docs" / "plugins.md").is_file()


def test_make_wheels_runs_the_suites_with_the_root_pytest_settings() -> None:
    options = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]["ini_options"]
    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string(check_wheels.pytest_ini())
    staged = {key: value.strip().splitlines() for key, value in ini["pytest"].items()}
    expected = {
        key: value if isinstance(value, list) else [str(value).lower() if isinstance(value, bool) else value]
        for key, value in options.items()
        if key != "testpaths"
    }
    assert staged == expected


def test_ci_runs_make_wheels_after_make_test() -> None:
    lines = (REPO / ".ci" / "run").read_text("utf-8").splitlines()
    assert lines.index("make test") < lines.index("make wheels")
