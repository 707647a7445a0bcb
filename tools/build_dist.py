"""``make dist``: the wheels of the host and of every package under ``packages/``, in ``dist/``.

Each project is built from a clean copy the way ``make wheels`` builds it (``tools/check_wheels.py``: the sdist,
then the wheel from the sdist, ``python -m build --no-isolation``). The wheels of an earlier run are removed
first, so ``pip install dist/*.whl`` installs exactly this checkout. These names are not on PyPI: the wheels
install from the files (docs/deploy.md).

    python tools/build_dist.py [--out DIR]        # make dist

One line per wheel; the exit status is 1 when a build failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from check_wheels import PACKAGES, REPO, CheckFailed, build, build_host


def package_roots() -> list[Path]:
    """Every project under ``packages/`` (a folder with a ``pyproject.toml``), sorted."""
    return sorted(p for p in PACKAGES.iterdir() if (p / "pyproject.toml").is_file())


def build_all(out: Path, work: Path) -> list[Path]:
    """Build the host's wheel and each package's into ``out``; their paths there."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.whl"):
        stale.unlink()
    built = [build_host(work), *(build(root, work) for root in package_roots())]
    return [Path(shutil.copy2(wheel, out / wheel.name)) for wheel in built]


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="where the wheels go (default: dist/)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ishiki-dist-") as work:
        try:
            wheels = build_all(args.out.resolve(), Path(work))
        except CheckFailed as exc:
            print(f"FAIL  {exc}", file=sys.stderr)
            return 1
    for wheel in wheels:
        print(_shown(wheel))
    where = _shown(args.out.resolve())
    print(f"{len(wheels)} wheels; into a venv: python3 -m venv VENV && VENV/bin/pip install {where}/*.whl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
