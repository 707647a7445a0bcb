"""How tool paths and URLs name places, and how globs match."""

from __future__ import annotations

from pathlib import Path

import pytest
from ishiki_ext_workspace import locate, settings_from_config
from ishiki_ext_workspace._tree import glob_matcher

from ishiki_host.errors import ResourceError


@pytest.fixture
def settings(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    config = {"mounts": [{"name": "docs", "path": str(tmp_path / "docs")}]}
    return settings_from_config(config, home=tmp_path / "home", config_dir=tmp_path)


@pytest.mark.parametrize(
    ("path", "mount", "segments", "shown"),
    [
        ("notes/a.txt", "root", ("notes", "a.txt"), "notes/a.txt"),
        ("./notes//a.txt/", "root", ("notes", "a.txt"), "notes/a.txt"),
        ("", "root", (), "."),
        (".", "root", (), "."),
        ("my file%20.txt", "root", ("my file%20.txt",), "my file%20.txt"),
        ("workspace://root/notes/a.txt", "root", ("notes", "a.txt"), "notes/a.txt"),
        ("WORKSPACE://docs/guide%20v2.md", "docs", ("guide v2.md",), "workspace://docs/guide%20v2.md"),
        ("workspace://docs", "docs", (), "workspace://docs"),
    ],
)
def test_paths_and_urls_name_a_mount_and_segments(
    settings, path: str, mount: str, segments: tuple[str, ...], shown: str
) -> None:
    location = locate(path, settings)
    assert location is not None
    assert (location.mount.name, location.segments, location.shown) == (mount, segments, shown)
    assert locate(location.url, settings) == location


def test_every_mount_is_named_only_where_allowed(settings) -> None:
    assert locate("workspace://", settings, allow_all=True) is None
    with pytest.raises(ResourceError, match="names every mount"):
        locate("workspace://", settings)
    with pytest.raises(ResourceError, match="no mount named 'nope'; mounts: root, docs"):
        locate("workspace://nope/x", settings)
    with pytest.raises(ResourceError, match="a path must be a string"):
        locate(3, settings)


@pytest.mark.parametrize(
    ("glob", "yes", "no"),
    [
        ("*.py", ["a.py", "src/deep/b.py"], ["a.pyc", "py", "src/a.md"]),
        ("src/*.py", ["src/a.py"], ["src/deep/a.py", "a.py"]),
        ("src/**/*.py", ["src/a.py", "src/x/y/a.py"], ["lib/a.py"]),
        ("**", ["a", "a/b/c"], []),
        ("file?.txt", ["file1.txt"], ["file10.txt"]),
        ("[!a]*.md", ["b.md"], ["a.md"]),
        ("*.{md,txt}", ["a.md", "d/b.txt"], ["c.rst"]),
        ("a+b(1).txt", ["a+b(1).txt"], ["aab1.txt"]),
    ],
)
def test_globs(glob: str, yes: list[str], no: list[str]) -> None:
    matches = glob_matcher(glob)
    assert [p for p in yes if not matches(tuple(p.split("/")))] == []
    assert [p for p in no if matches(tuple(p.split("/")))] == []


def test_an_absolute_glob_is_refused() -> None:
    with pytest.raises(ResourceError, match="a glob is relative"):
        glob_matcher("/etc/*")
