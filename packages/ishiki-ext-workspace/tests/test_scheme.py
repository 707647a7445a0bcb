"""The workspace:// scheme through the runtime's resource center (what the kernel read tool uses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ishiki_host.errors import ResourceError

pytestmark = pytest.mark.anyio


async def test_urls_name_a_mount_then_a_path(open_workspace, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "guides" / "setup.md").write_text("".join(f"step {n}\n" for n in range(1, 31)))
    async with open_workspace({"mounts": [{"name": "docs", "path": str(docs)}]}) as ws:
        (ws.root / "todo.txt").write_text("buy milk\n")
        center = ws.rt.resources
        assert "workspace" in center.schemes
        mounts = await center.read("workspace://")
        assert mounts.text == "root/ (read-write)\ndocs/ (read-only)"
        assert (await center.read("workspace://root")).text == "todo.txt"
        assert (await center.read("workspace://docs")).text == "guides/"
        page = await center.read("workspace://docs/guides/setup.md#L3-L4")
        assert page.text == "step 3\nstep 4"
        assert page.media_type == "text/markdown"
        assert (await center.read("workspace://root/todo.txt")).text == "buy milk"


async def test_the_meta_view_describes_without_reading(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
        (ws.root / "d").mkdir()
        meta = await ws.rt.resources.read("workspace://root/pic.png?view=meta")
        assert meta.media_type == "application/json"
        assert (meta.size, meta.meta["kind"], meta.meta["mount"], meta.meta["mode"]) == (72, "file", "root", "rw")
        assert '"mediaType": "image/png"' in (meta.text or "")
        directory = await ws.rt.resources.read("workspace://root/d?view=meta")
        assert directory.meta["kind"] == "directory"


async def test_errors_have_stable_codes(open_workspace) -> None:
    async with open_workspace() as ws:
        center = ws.rt.resources
        for url, code in [
            ("workspace://nope/a.txt", "not_found"),
            ("workspace://root/missing.txt", "not_found"),
            ("workspace://root/%2e%2e/x", "invalid_resource_uri"),
            ("workspace://root/a%2Fb", "invalid_resource_uri"),
        ]:
            with pytest.raises(ResourceError) as caught:
                await center.read(url)
            assert caught.value.code == code, url


async def test_the_center_limit_applies_as_well(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "big.txt").write_text("x" * 5000)
        with pytest.raises(ResourceError, match="too_large"):
            await ws.rt.resources.read_bytes("workspace://root/big.txt", max_bytes=100)
        blob = await ws.rt.resources.read_bytes("workspace://root/big.txt")
        assert len(blob.data) == 5000


async def test_stopping_the_runtime_deregisters_the_scheme(open_workspace) -> None:
    async with open_workspace() as ws:
        center = ws.rt.resources
        assert "workspace" in center.schemes
    assert "workspace" not in center.schemes


async def test_a_turn_below_trusted_cannot_read_the_workspace(open_workspace) -> None:
    async with open_workspace() as ws:
        (ws.root / "todo.txt").write_text("buy milk\n")
        center = ws.rt.resources
        assert center.trust("workspace") == "trusted"  # the file tools' level
        with pytest.raises(ResourceError, match="workspace:// needs trust trusted; this conversation is untrusted"):
            await center.read("workspace://root/todo.txt", trust="untrusted")
        assert (await center.read("workspace://root/todo.txt", trust="trusted")).text == "buy milk"
