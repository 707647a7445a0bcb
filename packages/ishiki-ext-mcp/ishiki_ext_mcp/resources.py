"""The ``mcp://`` scheme: MCP resources through the runtime's ``read``.

A server's resource URI rides in the ``uri`` query parameter: ``mcp://<server>?uri=<resource uri>``, for
example ``mcp://docs?uri=file:///guide.md``. The host's strict URL parser decodes path segments one by one
and refuses a ``/`` inside one, so a whole URI cannot be a path segment; a query value may hold ``/``, ``:``,
``?`` and ``=`` as they are, and only ``%``, ``&``, ``#`` and spaces need escaping (``%25``, ``%26``,
``%23``, ``%20``); control characters cannot be addressed (the parser refuses them everywhere).
``mcp://<server>`` (no ``uri``) lists the server's resources and templates, and ``mcp://`` lists the
servers. ``?view=meta`` describes a listed resource without reading it.

Errors are ``ResourceError``: ``not_found`` (unknown server, or the server says the resource does not
exist), ``unavailable`` (the server is not running, timed out, or needs more trust than the running turn
has), ``read_failed`` (any other server error).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import mcp.types as types
from ishiki_host import Resource, TrustLevel, format_resource_url, trust_allows
from ishiki_host.errors import ResourceError

from ishiki_ext_mcp.errors import CallError, CallTimedOut, ServerUnavailable

if TYPE_CHECKING:
    from ishiki_host import ResourceRequest

    from ishiki_ext_mcp.runner import ServerRunner

__all__ = ["SCHEME", "SCHEME_TRUST", "MCPResources", "resource_url"]

SCHEME = "mcp"
SCHEME_TRUST: TrustLevel = "untrusted"  # the scheme is open; each server's own level is checked per read
_RESOURCE_NOT_FOUND = -32002
_NOT_FOUND_CODES = frozenset([_RESOURCE_NOT_FOUND, types.INVALID_PARAMS])


def resource_url(server: str, uri: str) -> str:
    """The ``mcp://`` URL of ``uri`` on ``server`` (it parses back to the same server and URI)."""
    escaped = "".join(_escape(ch) if ch in "%&#" or ch.isspace() or not ch.isprintable() else ch for ch in uri)
    return f"{format_resource_url(SCHEME, [server])}?uri={escaped}"


def count(n: int, noun: str) -> str:
    """``1 tool``, ``2 tools``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _escape(ch: str) -> str:
    return "".join(f"%{byte:02X}" for byte in ch.encode("utf-8"))


class MCPResources:
    """The ``mcp`` scheme handler of one runtime; ``runners()`` gives its servers by name.

    The scheme is registered open to every level (``SCHEME_TRUST``) because each server declares its own: a
    server's resources are read only by turns at or above the server's ``trust``, as its tools are offered.
    The level of the reading turn is ``request.trust`` (``None``: the host itself reads).
    """

    def __init__(self, runners: Callable[[], Mapping[str, ServerRunner]]):
        self._runners = runners

    async def read(self, request: ResourceRequest) -> Resource:
        """Serve one ``mcp://`` URL (see the module docstring)."""
        url = request.url
        unknown = sorted(set(url.params) - {"uri", "view"})
        if url.path_segments or unknown:
            raise ResourceError(
                "invalid_resource_uri",
                f"{url}: an MCP resource URL is mcp://<server>?uri=<resource uri> (e.g. mcp://docs?uri=file:///a.md)",
            )
        if not url.authority:
            return Resource(text=self._servers_text(), media_type="text/plain", name="MCP servers")
        runner = self._runner(url.authority, request.trust)
        uri = url.param("uri")
        if uri is None:
            return Resource(text=listing_text(runner), media_type="text/plain", name=f"{runner.name} resources")
        listed = next((r for r in runner.listing.resources if r.uri == uri), None)
        if not request.wants_content and listed is not None:
            return Resource(name=listed.name, media_type=listed.mime_type, size=listed.size, meta=_meta(listed))
        try:
            result = await runner.request(f"the read of {uri}", lambda client: client.read_resource(uri))
        except ServerUnavailable as exc:
            raise ResourceError("unavailable", str(exc)) from exc
        except CallTimedOut as exc:
            raise ResourceError("unavailable", str(exc)) from exc
        except CallError as exc:
            code = "not_found" if exc.code in _NOT_FOUND_CODES else "read_failed"
            raise ResourceError(code, str(exc)) from exc
        return _resource(result, listed, uri)

    def _runner(self, server: str, level: TrustLevel | None) -> ServerRunner:
        runners = self._runners()
        runner = runners.get(server)
        if runner is None:
            known = ", ".join(sorted(runners)) or "none"
            raise ResourceError("not_found", f"no MCP server '{server}' in this profile (servers: {known})")
        if level is not None and not trust_allows(level, runner.spec.trust):
            raise ResourceError(
                "unavailable",
                f"the resources of MCP server '{server}' need trust {runner.spec.trust}; this turn is {level}",
            )
        return runner

    def _servers_text(self) -> str:
        runners = self._runners()
        if not runners:
            return "No MCP servers are configured for this profile."
        lines = [
            f"{name}: {runner.state}, {len(runner.listing.resources)} resources" for name, runner in runners.items()
        ]
        return "\n".join([*lines, "", "Read mcp://<server> to list a server's resources."])


def listing_text(runner: ServerRunner) -> str:
    """The resources and templates of ``runner`` with their ``mcp://`` URLs."""
    listing = runner.listing
    lines = [f"MCP server {runner.name} ({runner.state})"]
    if listing.resources:
        lines.append("Resources:")
        lines += [f"- {resource_url(runner.name, r.uri)}  {_about(r)}" for r in listing.resources]
    if listing.templates:
        lines.append("Resource templates (fill in the {placeholders}):")
        lines += [f"- {resource_url(runner.name, t.uri_template)}  {_about(t)}" for t in listing.templates]
    if len(lines) == 1:
        lines.append("No resources.")
    return "\n".join(lines)


def _about(item: types.Resource | types.ResourceTemplate) -> str:
    parts = [item.title or item.name]
    if item.mime_type:
        parts.append(f"({item.mime_type})")
    if item.description:
        parts.append(f"— {item.description}")
    return " ".join(parts)


def _meta(listed: types.Resource) -> dict[str, str]:
    meta = {"uri": listed.uri}
    if listed.description:
        meta["description"] = listed.description
    return meta


def _resource(result: types.ReadResourceResult, listed: types.Resource | None, uri: str) -> Resource:
    contents = result.contents
    name = listed.name if listed else uri.rstrip("/").rsplit("/", 1)[-1] or uri
    meta = _meta(listed) if listed else {"uri": uri}
    if len(contents) == 1:
        part = contents[0]
        if isinstance(part, types.TextResourceContents):
            return Resource(text=part.text, media_type=part.mime_type, name=name, meta=meta)
        return Resource(data=_decode(part.blob), media_type=part.mime_type, name=name, meta=meta)
    sections = []
    for part in contents:
        head = f"--- {part.uri} ({part.mime_type or 'unknown type'})"
        if isinstance(part, types.TextResourceContents):
            sections.append(f"{head}\n{part.text}")
        else:
            sections.append(f"{head}: {len(_decode(part.blob))} bytes of binary content, not shown")
    return Resource(text="\n".join(sections), media_type="text/plain", name=name, meta=meta)


def _decode(blob: str) -> bytes:
    try:
        return base64.b64decode(blob, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise ResourceError("read_failed", f"the server sent a blob that is not base64: {exc}") from exc
