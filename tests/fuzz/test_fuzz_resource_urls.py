"""Resource URLs of any shape never lead out of their roots, and every refusal is a ``ResourceError``.

A runtime's resource center (``local://`` on its home, ``asset://``, ``artifact://``) plus the workspace
extension's ``workspace://`` on a directory of its own, next to a directory that must stay out of reach: its
file's contents and name are recognisable, and symlinks inside both roots point at it. URLs are built from
segments that try every way out: ``..`` plain and percent-encoded, encoded separators, empty segments, NUL,
backslashes, the symlinks, the host's own fact log, real asset and artifact ids, queries and fragments.

Found with it: ``local://notes.txt/x`` (a path going on past a file) failed as ``read_failed`` ("a handler
failed unexpectedly") instead of ``not_found``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from ishiki_ext_workspace._config import settings_from_config
from ishiki_ext_workspace._scheme import WorkspaceScheme

from ishiki_host.errors import ResourceError
from ishiki_host.resources import RuntimeResources, create_runtime_resources
from ishiki_host.resources.urls import parse_resource_url

MARK = "TOPSECRET"  # in the contents of the file outside: never in a URL
NAME = "outsider.txt"  # its name: a listing that shows it without the URL naming it lists the outside


@dataclass
class Place:
    """The roots and what was captured in them."""

    resources: RuntimeResources
    asset: str
    artifact: str


@pytest.fixture(scope="module")
def place() -> Iterator[Place]:
    with tempfile.TemporaryDirectory(prefix="ishiki-fuzz-urls-") as base:
        root = Path(base)
        outside = root / "outside"
        outside.mkdir()
        (outside / NAME).write_text(f"{MARK} contents\n", "utf-8")
        home, workspace = root / "home", root / "ws"
        home.mkdir()
        workspace.mkdir()
        (home / "notes.txt").write_text("inside the home\n", "utf-8")
        (home / "facts.jsonl").write_text(f'{{"id": 1, "type": "message", "ts": 0, "data": {{"x": "{MARK}"}}}}\n')
        (workspace / "file.txt").write_text("inside the workspace\n", "utf-8")
        for inside in (home, workspace):
            os.symlink(outside, inside / "dirlink")
            os.symlink(outside / NAME, inside / "filelink")
            os.symlink(inside / "loop", inside / "loop")
        resources = create_runtime_resources(home)
        config = {"root": str(workspace)}
        scheme = WorkspaceScheme(settings_from_config(config, home=home, config_dir=root, data_dir=root / "data"))
        resources.center.register("workspace", scheme, owner="the workspace extension")

        async def capture() -> Place:
            asset = await resources.assets.capture(b"an image", media_type="image/png", name="cat.png")
            artifact = await resources.artifacts.archive("search", "a long tool output\n" * 50)
            return Place(resources, asset, artifact)

        yield anyio.run(capture)


SEGMENTS = ["..", ".", "", "%2e%2e", "%2E%2e", ".%2e", "%2f", "%5c", "..%2f..", "..\\..", "\\", "%00", "\x00",
            "dirlink", "filelink", "loop", "outside", NAME, "notes.txt", "facts.jsonl", "FACTS.JSONL",
            "facts.jsonl.corrupt", "root", "file.txt", "assets", "artifacts", "~", "etc", "passwd", "%252e%252e",
            "é", "😀", "a b", "%", "%zz"]  # fmt: skip
SCHEMES = ["local", "asset", "artifact", "workspace", "LOCAL", "Workspace", "file", "http", "", "local:"]


@st.composite
def urls(draw: st.DrawFn, place: Place) -> str:
    known = [place.asset, place.artifact, "workspace://root/file.txt", "local://notes.txt", "local://", "workspace://",
             "workspace://root", "local://dirlink", "workspace://root/dirlink"]  # fmt: skip
    if draw(st.booleans()):
        base = draw(st.sampled_from(known)).rstrip("/")
    else:
        base = draw(st.sampled_from(SCHEMES)) + ":/" + draw(st.sampled_from(["", "/", "//"]))
    named = st.sampled_from(SEGMENTS)
    path = "/".join(draw(st.lists(named | named | named | st.text(max_size=4), max_size=4)))
    tail = draw(st.sampled_from(["", "", "", "?view=meta", "?view=original", "#L1-L3", "?x=1&x=2", "?view=", "#"]))
    return f"{base}/{path}{tail}" if path else f"{base}{tail}"


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_url_reads_outside_its_root(place: Place, data: st.DataObject) -> None:
    url = data.draw(urls(place), label="url")
    with contextlib.suppress(ResourceError):  # refused at the parse, as the read below will be
        parse_resource_url(url)

    async def read() -> str:
        try:
            result = await place.resources.center.read(url)
        except ResourceError as exc:
            event(f"refused: {exc.code}")
            return str(exc) if exc.code != "read_failed" else f"a handler failed unexpectedly: {exc}"
        event("read")
        return " ".join(str(x) for x in (result.text, result.name, result.meta))

    shown = anyio.run(read)
    assert "failed unexpectedly" not in shown, shown
    assert MARK not in shown, url
    assert NAME not in shown or NAME in url, url
