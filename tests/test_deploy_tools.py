"""The scripts behind ``make setup`` (``tools/prune_editables.py``: editable installs of deleted packages go) and
``make dist`` (``tools/build_dist.py``: one wheel per project in ``dist/``)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
PRUNE = REPO / "tools" / "prune_editables.py"


def load_prune() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prune_editables", PRUNE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


prune = load_prune()


def installed(site: Path, name: str, direct_url: object | None, *, metadata: bool = True) -> None:
    """A ``.dist-info`` of ``name`` in ``site``, with ``direct_url`` as its ``direct_url.json`` (when given)."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    if metadata:
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    if direct_url is not None:
        text = direct_url if isinstance(direct_url, str) else json.dumps(direct_url)
        (info / "direct_url.json").write_text(text, encoding="utf-8")


def editable(folder: Path) -> dict[str, object]:
    return {"url": folder.as_uri(), "dir_info": {"editable": True}}


def test_only_editable_installs_of_missing_folders_under_packages_are_chosen(tmp_path: Path) -> None:
    site, packages, elsewhere = tmp_path / "site", tmp_path / "repo" / "packages", tmp_path / "elsewhere"
    (packages / "ishiki-ext-kept").mkdir(parents=True)
    installed(site, "ishiki-ext-kept", editable(packages / "ishiki-ext-kept"))
    installed(site, "ishiki-ext-gone", editable(packages / "ishiki-ext-gone"))
    installed(site, "ishiki-ext-renamed", editable(packages / "old name"), metadata=False)
    installed(site, "ishiki-ext-outside", editable(elsewhere / "ishiki-ext-outside"))  # not this checkout's
    installed(site, "ishiki-ext-wheel", {"url": (packages / "x.whl").as_uri(), "archive_info": {}})
    installed(site, "ishiki-ext-plain", {"url": (packages / "ishiki-ext-plain").as_uri(), "dir_info": {}})
    installed(site, "ishiki-ext-broken", "{not json")
    installed(site, "requests", None)

    stale = prune.stale_editables([site], packages)

    assert [(s.name, s.folder) for s in stale] == [
        ("ishiki-ext-gone", packages / "ishiki-ext-gone"),
        ("ishiki_ext_renamed", packages / "old name"),  # no METADATA: the folder's name
    ]


def test_dry_run_prints_what_it_would_uninstall(tmp_path: Path) -> None:
    site, packages = tmp_path / "site", tmp_path / "packages"
    packages.mkdir()
    installed(site, "ishiki-ext-gone", editable(packages / "ishiki-ext-gone"))
    command = [sys.executable, str(PRUNE), "--dry-run", "--site", str(site), "--packages", str(packages)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"uninstalling ishiki-ext-gone: an editable install of {packages / 'ishiki-ext-gone'}, which is gone\n",
        "",
    )
    assert (site / "ishiki_ext_gone-1.0.dist-info").is_dir()


@pytest.mark.slow
def test_a_real_editable_install_of_a_deleted_package_is_uninstalled(tmp_path: Path) -> None:
    venv, project = tmp_path / "venv", tmp_path / "repo" / "packages" / "ishiki-ext-gone"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    (project / "gone").mkdir(parents=True)
    (project / "gone" / "__init__.py").write_text("", encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "ishiki-ext-gone"\nversion = "1.0"\n',
        encoding="utf-8",
    )
    # This venv's setuptools builds it, offline: only it and its helpers are put on the path.
    tools = tmp_path / "build-tools"
    tools.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for name in ("setuptools", "pkg_resources", "_distutils_hack"):
        (tools / name).symlink_to(ours / name)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input"]
    install = [*pip, "install", "--quiet", "--no-build-isolation", "--no-deps", "--no-index", "-e", str(project)]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tools)}
    subprocess.run(install, check=True, timeout=300, env=env, capture_output=True)

    def listed() -> list[str]:
        done = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True, check=True, timeout=120)
        return [row["name"] for row in json.loads(done.stdout)]

    assert "ishiki-ext-gone" in listed()
    shutil.rmtree(project)
    prune_it = [str(python), str(PRUNE), "--packages", str(project.parent)]
    done = subprocess.run(prune_it, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"uninstalling ishiki-ext-gone: an editable install of {project}, which is gone\n"
    assert "ishiki-ext-gone" not in listed()
    again = subprocess.run(prune_it, capture_output=True, text=True, timeout=120, check=False)
    assert (again.returncode, again.stdout) == (0, "")


@pytest.mark.slow
def test_build_dist_leaves_one_wheel_per_project(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    out.mkdir()
    (out / "ishiki_host-0.0.1-py3-none-any.whl").write_bytes(b"an old build")
    command = [sys.executable, str(REPO / "tools" / "build_dist.py"), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    packages = [p.name for p in (REPO / "packages").iterdir() if (p / "pyproject.toml").is_file()]
    projects = ["ishiki-host", *packages]
    wheels = sorted(out.glob("*.whl"))
    assert sorted(w.name.split("-")[0] for w in wheels) == sorted(p.replace("-", "_") for p in projects)
    for wheel in wheels:
        assert zipfile.ZipFile(wheel).testzip() is None
    assert done.stdout.splitlines()[-1].startswith(f"{len(projects)} wheels; into a venv: ")
