"""The public face is enough: each package under ``packages/`` passes its own tests against wheels alone.

The host and every package are built from clean copies into wheels (``python -m build --no-isolation``: the
sdist, then the wheel from it, as a release would). For each package a fresh venv outside the checkout gets
the host's wheel, the package's wheel (with its ``test`` extra, if it declares one) and the test tools, pinned to
the versions of the venv running this script, so a failure points at packaging, not at a new release. The
package's tests then run from a copy laid out as in the repository but holding no code: ``packages/<name>/``
keeps everything of the package except its import packages (its tests, its README), beside a copy of ``docs/``,
the root ``conftest.py`` and the root's pytest settings. The host and the package import from the venv's
site-packages, or the package fails before its tests start.

    python tools/check_wheels.py [--only NAME ...] [--keep]        # make wheels [ONLY="..."]

One line per package, then ``N passed, N failed`` (packages); the exit status is 1 when any package failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PACKAGES = REPO / "packages"
LEFTOVERS = shutil.ignore_patterns(
    "build", "dist", "*.egg-info", "__pycache__", ".ruff_cache", ".mypy_cache", ".pytest_cache", ".hypothesis"
)
TEST_TOOLS = ("pytest", "hypothesis")
"""What the suites import beyond the packages' dependencies: pytest, and hypothesis (the root ``conftest.py``)."""
HOST_FILES = ("pyproject.toml", "README.md")
SUITE_TIMEOUT = 30 * 60


class CheckFailed(Exception):
    """A step before the tests failed (a build, an install, an import from the wrong place)."""


def run(
    command: Sequence[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: int = 900
) -> subprocess.CompletedProcess[str]:
    """``command`` with its output captured; never raises on a non-zero status."""
    args = [str(a) for a in command]
    environ = environment() if env is None else env
    return subprocess.run(args, cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout, check=False)


def checked(done: subprocess.CompletedProcess[str], what: str) -> subprocess.CompletedProcess[str]:
    """``done``, or ``CheckFailed`` with the end of its output."""
    if done.returncode != 0:
        raise CheckFailed(f"{what} exited {done.returncode}:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    return done


def environment(venv: Path | None = None) -> dict[str, str]:
    """This process's environment without anything that reaches into the checkout; ``venv`` first on PATH."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTEST_ADDOPTS", "PIP_REQUIRE_VIRTUALENV", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not Path(p).resolve().is_relative_to(REPO)]
    if venv is not None:
        path.insert(0, str(venv / "bin"))
        env["VIRTUAL_ENV"] = str(venv)
        env["PYTHONSAFEPATH"] = "1"  # the working directory is never on sys.path, in the tests' subprocesses too
    env["PATH"] = os.pathsep.join(path)
    return env


def project(root: Path) -> dict[str, Any]:
    """The ``[project]`` table of ``root/pyproject.toml``."""
    table: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["project"]
    return table


def is_code(root: Path, name: str) -> bool:
    """Whether ``root/name`` is an import package or a module of the project."""
    return (root / name / "__init__.py").is_file() or name.endswith(".py")


def import_names(root: Path) -> list[str]:
    """The top-level import names the project ships."""
    return sorted(name.removesuffix(".py") for name in os.listdir(root) if is_code(root, name))


def without_code(root: Path) -> Callable[[str, list[str]], set[str]]:
    """A ``copytree`` filter that leaves out build leftovers, and the import packages at the top of ``root``."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        ignored = set(LEFTOVERS(directory, names))
        if Path(directory) == root:
            ignored |= {name for name in names if is_code(root, name)}
        return ignored

    return ignore


def stage_host(dest: Path) -> Path:
    """A copy of the host's project as it is built: its import package, ``pyproject.toml`` and README."""
    dest.mkdir(parents=True)
    shutil.copytree(REPO / "ishiki_host", dest / "ishiki_host", ignore=LEFTOVERS)
    for name in HOST_FILES:
        shutil.copy2(REPO / name, dest / name)
    return dest


def build(root: Path, work: Path) -> Path:
    """The wheel of the project at ``root``, built from a clean copy under ``work``; returns its path."""
    source = work / "src" / root.name
    if source != root:
        shutil.copytree(root, source, ignore=LEFTOVERS)
    out = work / "dist" / root.name
    command: list[str | Path] = [sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source]
    checked(run(command, timeout=600), f"python -m build {root.name}")
    (wheel,) = out.glob("*.whl")
    return wheel


def build_host(work: Path) -> Path:
    """The host's wheel, built under ``work``."""
    return build(stage_host(work / "src" / "ishiki-host"), work)


def pins(path: Path) -> Path:
    """The versions installed beside this script (editable installs left out), as a pip constraints file."""
    done = checked(run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"]), "pip freeze")
    lines = [line for line in done.stdout.splitlines() if line and not line.startswith("#") and " @ " not in line]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def fresh_venv(venv: Path, requirements: Sequence[str | Path], constraints: Path) -> Path:
    """A new venv at ``venv`` with ``requirements`` installed by its own pip; returns its python."""
    checked(run([sys.executable, "-m", "venv", venv]), "python -m venv")
    python = venv / "bin" / "python"
    pip: list[str | Path] = [python, "-m", "pip", "install", "--no-input", "--disable-pip-version-check", "--quiet"]
    checked(run([*pip, "--constraint", constraints, *requirements]), f"pip install into {venv.name}")
    return python


def with_test_extra(root: Path, wheel: Path) -> str:
    """The requirement that installs ``wheel``, with the ``test`` extra when the project declares one."""
    extras = project(root).get("optional-dependencies") or {}
    return f"{wheel}[test]" if "test" in extras else str(wheel)


def pytest_ini() -> str:
    """The root's ``[tool.pytest.ini_options]`` as a ``pytest.ini``, without its ``testpaths``."""
    options = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]["ini_options"]
    lines = ["[pytest]"]
    for key, value in options.items():
        if key == "testpaths":
            continue
        if isinstance(value, list):
            lines.append(f"{key} =" + "".join(f"\n    {item}" for item in value))
        else:
            lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
    return "\n".join(lines) + "\n"


def stage_suite(root: Path, dest: Path) -> Path:
    """``root``'s tests laid out as in the repository under ``dest``, with no code; returns ``dest``."""
    shutil.copytree(root, dest / "packages" / root.name, ignore=without_code(root))
    shutil.copytree(REPO / "docs", dest / "docs", ignore=LEFTOVERS)
    shutil.copy2(REPO / "conftest.py", dest / "conftest.py")
    (dest / "pytest.ini").write_text(pytest_ini(), "utf-8")
    return dest


def assert_installed(python: Path, names: Sequence[str], cwd: Path) -> None:
    """``CheckFailed`` unless every module of ``names`` imports from the venv of ``python``."""
    venv = python.parent.parent
    code = "import importlib, sys\nfor name in sys.argv[1:]: print(importlib.import_module(name).__file__)"
    done = checked(run([python, "-c", code, *names], cwd=cwd, env=environment(venv)), "import check")
    strays = [line for line in done.stdout.splitlines() if not Path(line).is_relative_to(venv)]
    if strays:
        raise CheckFailed(f"imported from outside {venv}: {strays}")


def run_suite(python: Path, suite: Path, tests: Path) -> subprocess.CompletedProcess[str]:
    """pytest on ``tests`` with the settings of ``suite/pytest.ini``, run by the venv of ``python``."""
    command: list[str | Path] = [python, "-m", "pytest", "-q", "-c", suite / "pytest.ini", "--rootdir", suite]
    command += ["-p", "no:cacheprovider", "--import-mode=importlib", tests]
    return run(command, cwd=suite, env=environment(python.parent.parent), timeout=SUITE_TIMEOUT)


def summary(output: str) -> str:
    """pytest's closing line (``12 passed in 3.40s``), or the last line of ``output``."""
    lines = [line.strip("= ") for line in output.splitlines() if line.strip()]
    closing = [line for line in lines if re.search(r"\b(passed|failed|errors?|no tests ran)\b.* in [\d.]+s", line)]
    return (closing or lines or ["no output"])[-1]


def check_package(root: Path, host: Path, wheel: Path, constraints: Path, work: Path) -> tuple[bool, str]:
    """Install and test one package; whether it passed, and what to print."""
    started = time.monotonic()
    python = fresh_venv(work / "venvs" / root.name, [host, with_test_extra(root, wheel), *TEST_TOOLS], constraints)
    installed = time.monotonic() - started
    suite = stage_suite(root, work / "suites" / root.name)
    assert_installed(python, ["ishiki_host", *import_names(root)], suite)
    done = run_suite(python, suite, suite / "packages" / root.name / "tests")
    took = f"{time.monotonic() - started:.0f}s, venv {installed:.0f}s"
    if done.returncode == 0:
        return True, f"{summary(done.stdout)} ({took})"
    return False, f"{summary(done.stdout)} ({took})\n{done.stdout}{done.stderr}"


def check(roots: Sequence[Path], work: Path) -> int:
    """Build, install and test ``roots``; prints a line for each and the closing count; the number failed."""
    try:
        constraints = pins(work / "constraints.txt")
        host = build_host(work)
    except (CheckFailed, subprocess.TimeoutExpired) as exc:
        print(f"FAIL  ishiki-host: {exc}\n0 passed, {len(roots)} failed", flush=True)
        return len(roots)
    print(f"built {host.name}", flush=True)
    failed = 0
    for root in roots:
        try:
            passed, report = check_package(root, host, build(root, work), constraints, work)
        except (CheckFailed, subprocess.TimeoutExpired) as exc:
            passed, report = False, str(exc)
        failed += not passed
        print(f"{'ok' if passed else 'FAIL'}  {root.name}: {report}", flush=True)
    print(f"{len(roots) - failed} passed, {failed} failed", flush=True)
    return failed


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these packages (directory names) only")
    parser.add_argument("--keep", action="store_true", help="keep the wheels, venvs and staged suites")
    args = parser.parse_args(argv)
    roots = sorted(p for p in PACKAGES.iterdir() if (p / "pyproject.toml").is_file())
    if args.only:
        unknown = set(args.only) - {p.name for p in roots}
        if unknown:
            parser.error(f"no package {sorted(unknown)} under {PACKAGES}")
        roots = [p for p in roots if p.name in args.only]
    work = Path(tempfile.mkdtemp(prefix="ishiki-wheels-")).resolve()
    if work.is_relative_to(REPO):
        parser.error(f"the temporary directory {work} is inside the checkout: set TMPDIR")
    if args.keep:
        print(f"keeping the wheels, venvs and staged suites in {work}", flush=True)
    try:
        return 1 if check(roots, work) else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
