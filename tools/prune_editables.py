"""``make setup``: uninstall the editable installs whose project folder under ``packages/`` is gone.

An editable install (``pip install -e packages/<name>``) stays in the venv after its folder is deleted or
renamed; its entry points are still found and each start logs that the plugin failed to load. This lists the
venv's editable installs (pip's ``direct_url.json`` with ``dir_info.editable``, PEP 610) that point into this
checkout's ``packages/`` at a folder that no longer exists, and runs ``pip uninstall -y`` on them. Standard
library only: it runs before anything else is installed.

    python tools/prune_editables.py [--dry-run] [--site DIR ...] [--packages DIR]

Prints one line per uninstalled project (nothing when there is none); exit status 1 when pip failed.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Stale:
    """An editable install whose project folder is gone: the project's name and the folder it points at."""

    name: str
    folder: Path


def editable_folder(info: Path) -> Path | None:
    """The folder the distribution of the ``.dist-info`` ``info`` is an editable install of, if it is one."""
    try:
        data = json.loads((info / "direct_url.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("dir_info"), dict):
        return None
    url = urlparse(str(data.get("url", "")))
    if not data["dir_info"].get("editable") or url.scheme != "file":
        return None
    return Path(unquote(url.path))


def project_name(info: Path) -> str:
    """The ``Name`` of ``info``'s METADATA (the folder's name before ``-<version>`` when it has none)."""
    try:
        headers = email.parser.HeaderParser().parsestr((info / "METADATA").read_text(encoding="utf-8"))
    except OSError:
        headers = None
    return (headers.get("Name") if headers else None) or info.name.split("-", 1)[0]


def stale_editables(sites: Iterable[Path], packages: Path) -> list[Stale]:
    """The editable installs in ``sites`` pointing at a folder under ``packages`` that does not exist."""
    packages = packages.resolve()
    found: dict[str, Stale] = {}
    for site in sites:
        for info in sorted(site.glob("*.dist-info")):
            folder = editable_folder(info)
            folder = folder.resolve() if folder is not None else None  # as ``packages`` (a symlinked checkout)
            if folder is not None and folder.is_relative_to(packages) and not folder.exists():
                name = project_name(info)
                found.setdefault(name, Stale(name, folder))
    return sorted(found.values(), key=lambda s: s.name)


def site_dirs() -> list[Path]:
    """The site-packages folders of the interpreter running this script."""
    paths = sysconfig.get_paths()
    return sorted({Path(paths["purelib"]), Path(paths["platlib"])})


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print what would be uninstalled; uninstall nothing")
    parser.add_argument("--site", type=Path, action="append", help="a site-packages folder (default: this venv's)")
    parser.add_argument("--packages", type=Path, default=REPO / "packages", help="the packages folder")
    args = parser.parse_args(argv)
    stale = stale_editables(args.site or site_dirs(), args.packages)
    for item in stale:
        print(f"uninstalling {item.name}: an editable install of {item.folder}, which is gone")
    if not stale or args.dry_run:
        return 0
    command = [sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", *(s.name for s in stale)]
    return 0 if subprocess.run(command, check=False).returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
