"""``mcp://<server>?uri=<resource uri>``: URLs that parse back, listings, meta and errors with stable codes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ishiki_host import ResourceRequest, parse_resource_url
from ishiki_host.errors import ResourceError

from ishiki_ext_mcp import resource_url
from ishiki_ext_mcp.resources import MCPResources
from ishiki_ext_mcp.testing import ConfigDir, RuntimeFactory, demo

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("uri", "url"),
    [
        ("note://greeting", "mcp://demo?uri=note://greeting"),
        ("file:///srv/a b.md", "mcp://demo?uri=file:///srv/a%20b.md"),
        ("db://q?x=1&y=2#top", "mcp://demo?uri=db://q?x=1%26y=2%23top"),
        ("text://100%", "mcp://demo?uri=text://100%25"),
    ],
)
def test_urls_stay_readable(uri: str, url: str) -> None:
    assert resource_url("demo", uri) == url


ADDRESSABLE = st.text(st.characters(exclude_categories=["Cc", "Cs"]), min_size=1)


@settings(deadline=None)
@given(server=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,20}", fullmatch=True), uri=ADDRESSABLE)
def test_every_url_parses_back_to_its_server_and_uri(server: str, uri: str) -> None:
    parsed = parse_resource_url(resource_url(server, uri))
    assert (parsed.scheme, parsed.authority, parsed.path_segments) == ("mcp", server, ())
    assert parsed.param("uri") == uri


async def test_reads_listings_meta_and_errors(cfg: ConfigDir, open_runtime: RuntimeFactory) -> None:
    cfg.write({"demo": demo()})
    async with open_runtime() as (rt, _instance):
        center = rt.resources
        greeting = await center.read("mcp://demo?uri=note://greeting")
        assert (greeting.text, greeting.media_type, greeting.name) == (
            "hello from the resource",
            "text/plain",
            "greeting",
        )
        meta = await center.read("mcp://demo?uri=note://greeting&view=meta")
        assert '"description": "A friendly greeting."' in (meta.text or "")
        servers = await center.read("mcp://")
        assert (servers.text or "").startswith("demo: ready, 1 resource")
        with pytest.raises(ResourceError) as unknown_server:
            await center.read("mcp://nope?uri=note://greeting")
        assert unknown_server.value.code == "not_found"
        assert "no MCP server 'nope' in this profile (servers: demo)" in str(unknown_server.value)
        with pytest.raises(ResourceError) as unknown_resource:
            await center.read("mcp://demo?uri=other://x")
        assert unknown_resource.value.code == "not_found"
        with pytest.raises(ResourceError) as as_path:
            await center.read("mcp://demo/note/greeting")
        assert as_path.value.code == "invalid_resource_uri"
        assert "mcp://<server>?uri=<resource uri>" in str(as_path.value)


async def test_a_turn_below_the_servers_trust_cannot_read_its_resources(
    cfg: ConfigDir, open_runtime: RuntimeFactory
) -> None:
    cfg.write({"private": demo(trust="owner")})
    async with open_runtime() as (rt, instance):
        assert rt.resources.trust("mcp") == "untrusted"  # the scheme is open; each server has its own level
        with pytest.raises(ResourceError, match="need trust owner; this turn is trusted"):
            await rt.resources.read("mcp://private?uri=note://greeting", trust="trusted")  # what read passes
        for level, allowed in (("untrusted", False), ("trusted", False), ("owner", True), (None, True)):
            handler = MCPResources(lambda: instance.runners)
            request = ResourceRequest(parse_resource_url("mcp://private?uri=note://greeting"), trust=level)
            if allowed:
                assert (await handler.read(request)).text == "hello from the resource"
                continue
            with pytest.raises(ResourceError) as refused:
                await handler.read(request)
            assert refused.value.code == "unavailable"
            assert f"need trust owner; this turn is {level}" in str(refused.value)
