"""The resource center of one runtime: scheme handlers behind one ``read``.

A handler is registered for a scheme and gets every URL of that scheme, parsed (``ResourceURL``), with the view
asked for; it answers with a ``Resource`` (bytes or text, plus what it knows about them). The center does the
rest the same way for every scheme: the shared strict URL parse, the ``meta`` view, text-versus-binary
detection (binary content is described, never shown), size limits and paging (``paging.page_lines``).
The query parameter ``view`` belongs to the center (``?view=meta``); a handler finds it in ``request.view``.

**Trust.** A scheme declares the lowest trust level that may read it (``register(..., trust=...)``, default
``trusted``). A read made for a turn carries the turn's level (``read(url, trust=...)``; the kernel ``read`` tool
passes it): below the scheme's level the center refuses with ``forbidden`` before the handler runs, and the
handler finds the level in ``request.trust`` for finer checks of its own (an artifact of an owner-only tool).
A read without a level (``None``) is the host's own (images for the model, media a channel sends).

Errors are ``ResourceError(code, message)`` with stable codes: ``invalid_resource_uri``, ``invalid_scheme``,
``duplicate_scheme``, ``unknown_scheme``, ``unknown_view``, ``not_found``, ``too_large``, ``invalid_selector``,
``out_of_range``, ``unavailable``, ``fetch_failed``, ``forbidden`` (the reader's trust is too low),
``read_failed`` (a handler failed unexpectedly).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ishiki_host.core.tools import TRUST_ORDER, trust_allows
from ishiki_host.errors import ResourceError
from ishiki_host.jsontypes import Json
from ishiki_host.resources.paging import (
    DEFAULT_PAGE_CHARS,
    DEFAULT_PAGE_LINES,
    Page,
    page_lines,
    parse_line_fragment,
    parse_line_selector,
    split_lines,
)
from ishiki_host.resources.sniff import decode_text, guess_media_type, is_text_media_type
from ishiki_host.resources.urls import ResourceURL, is_valid_scheme, parse_resource_url

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.resources.paging import LineSelector

__all__ = [
    "DEFAULT_MAX_BYTES",
    "Blob",
    "ReadResult",
    "Resource",
    "ResourceCenter",
    "ResourceRequest",
    "SchemeHandler",
]

DEFAULT_MAX_BYTES = 32 * 1024 * 1024
_BINARY_FAMILIES = ("image/", "audio/", "video/", "font/")
_BINARY_TYPES = frozenset(["application/pdf", "application/zip", "application/gzip", "application/x-tgsticker"])


@dataclass(frozen=True, slots=True)
class ResourceRequest:
    """What a handler is asked: the parsed URL, the view (``None`` is the default one), a size limit and
    the reader's trust level.

    For ``view == "meta"`` (``wants_content`` false) a handler should describe the resource without loading it.
    A handler whose content is over ``max_bytes`` raises ``ResourceError("too_large")``. ``trust`` is the level
    of the turn the read is for (already at least the scheme's), ``None`` when the host itself reads.
    """

    url: ResourceURL
    view: str | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    trust: TrustLevel | None = None

    def allows(self, needed: TrustLevel) -> bool:
        """Whether this reader may see something that needs ``needed`` (the host itself always may)."""
        return self.trust is None or trust_allows(self.trust, needed)

    @property
    def wants_content(self) -> bool:
        """False for the ``meta`` view."""
        return self.view != "meta"


@dataclass(frozen=True, slots=True)
class Resource:
    """A handler's answer: ``data`` (bytes) or ``text``, and what is known about it.

    ``media_type`` may be left out (guessed from ``name`` or the bytes). ``meta`` holds anything else worth
    showing in the ``meta`` view (JSON values). Neither ``data`` nor ``text``: metadata only.
    """

    data: bytes | None = None
    text: str | None = None
    media_type: str | None = None
    size: int | None = None
    name: str | None = None
    meta: Mapping[str, Json] = field(default_factory=dict)


class SchemeHandler(Protocol):
    """Serves one scheme. ``views`` (optional attribute) lists the views it accepts besides ``meta``."""

    async def read(self, request: ResourceRequest) -> Resource:
        """Find ``request.url``; ``ResourceError("not_found")`` and friends when it cannot."""
        ...


@dataclass(frozen=True, slots=True)
class Blob:
    """A resource's bytes, for channels sending media and for model image inputs."""

    data: bytes
    media_type: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ReadResult:
    """One page of a resource as text, or a description of binary content (``binary``, ``page is None``)."""

    url: str
    media_type: str
    view: str | None = None
    binary: bool = False
    size: int | None = None
    name: str | None = None
    meta: Mapping[str, Json] = field(default_factory=dict)
    page: Page | None = None
    lines: str | None = None

    @property
    def text(self) -> str | None:
        """The page's text (``None`` for binary content)."""
        return self.page.text if self.page is not None else None

    def to_dict(self) -> dict[str, Json]:
        """JSON form (the structured data of a ``read`` tool result)."""
        out: dict[str, Json] = {"url": self.url, "mediaType": self.media_type, "binary": self.binary}
        for key, value in (("view", self.view), ("size", self.size), ("name", self.name)):
            if value is not None:
                out[key] = value
        if self.meta:
            out["meta"] = dict(self.meta)
        if self.lines is not None:
            out["lines"] = self.lines
        if self.page is not None:
            page = self.page
            out.update(text=page.text, firstLine=page.first_line, lastLine=page.last_line)
            out.update(totalLines=page.total_lines, remainingLines=page.remaining_lines)
            if page.first_column != 1:
                out["firstColumn"] = page.first_column
            if page.next_offset is not None:
                out["nextOffset"] = page.next_offset
            if page.next_column is not None:
                out["nextColumn"] = page.next_column
        return out


@dataclass(slots=True, eq=False)
class _Registration:
    handler: SchemeHandler
    owner: str | None
    trust: TrustLevel


def _positive(name: str, value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ResourceError("invalid_selector", f"{name}={value!r}: expected a whole number from 1")
    return value


def _is_binary_type(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return base.startswith(_BINARY_FAMILIES) or base in _BINARY_TYPES


class ResourceCenter:
    """Scheme handlers of one runtime behind one ``read``; see the module docstring for the error codes."""

    def __init__(
        self,
        *,
        page_lines: int = DEFAULT_PAGE_LINES,
        page_chars: int = DEFAULT_PAGE_CHARS,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ):
        self.page_lines = page_lines
        self.page_chars = page_chars
        self.max_bytes = max_bytes
        self._handlers: dict[str, _Registration] = {}

    @property
    def schemes(self) -> tuple[str, ...]:
        """The registered schemes, sorted."""
        return tuple(sorted(self._handlers))

    def register(
        self, scheme: str, handler: SchemeHandler, *, owner: str | None = None, trust: TrustLevel = "trusted"
    ) -> Callable[[], None]:
        """Serve ``scheme`` with ``handler``; returns the function that removes exactly this registration.

        ``owner`` (an extension name) is only used in error messages. ``trust`` is the lowest level a turn must
        have to read the scheme (``untrusted`` opens it to every turn). A scheme already served raises
        ``ResourceError("duplicate_scheme")``.
        """
        if not is_valid_scheme(scheme):
            raise ResourceError("invalid_scheme", f"{scheme!r} is not a valid scheme (expected [a-z][a-z0-9+.-]*)")
        if trust not in TRUST_ORDER:
            raise ValueError(f"scheme {scheme!r}: trust must be untrusted, trusted or owner, not {trust!r}")
        taken = self._handlers.get(scheme)
        if taken is not None:
            by = f" by {taken.owner}" if taken.owner else ""
            raise ResourceError("duplicate_scheme", f"scheme {scheme!r} is already registered{by}")
        registration = _Registration(handler, owner, trust)
        self._handlers[scheme] = registration

        def deregister() -> None:
            if self._handlers.get(scheme) is registration:
                del self._handlers[scheme]

        return deregister

    def trust(self, scheme: str) -> TrustLevel:
        """The lowest trust level that may read ``scheme``; ``unknown_scheme`` if none serves it."""
        return self._lookup(scheme).trust

    def views(self, scheme: str) -> tuple[str, ...]:
        """The views a scheme accepts (always ``meta``), sorted; ``unknown_scheme`` if none serves it."""
        handler = self._lookup(scheme).handler
        extra: Collection[str] = getattr(handler, "views", ())
        return tuple(sorted({"meta", *extra}))

    def _lookup(self, scheme: str) -> _Registration:
        registration = self._handlers.get(scheme)
        if registration is None:
            available = ", ".join(f"{s}://" for s in self.schemes) or "none"
            raise ResourceError("unknown_scheme", f"no handler for {scheme}://; schemes available: {available}")
        return registration

    async def resolve(
        self,
        url: str | ResourceURL,
        *,
        view: str | None = None,
        max_bytes: int | None = None,
        trust: TrustLevel | None = None,
    ) -> Resource:
        """Ask the scheme's handler for ``url`` (no paging, no detection); handler failures become ``read_failed``.

        ``trust``: the level of the turn reading (``forbidden`` below the scheme's); ``None`` for the host itself.
        """
        parsed = url if isinstance(url, ResourceURL) else parse_resource_url(url)
        if view is not None and parsed.view is not None and view != parsed.view:
            raise ResourceError("invalid_resource_uri", f"view {view!r} given, but the URL asks for {parsed.view!r}")
        view = view if view is not None else parsed.view
        registration = self._lookup(parsed.scheme)
        if trust is not None and not trust_allows(trust, registration.trust):
            raise ResourceError(
                "forbidden", f"{parsed.scheme}:// needs trust {registration.trust}; this conversation is {trust}"
            )
        if view is not None and view not in self.views(parsed.scheme):
            known = ", ".join(self.views(parsed.scheme))
            raise ResourceError("unknown_view", f"{parsed.scheme}:// has no view {view!r}; views: {known}")
        request = ResourceRequest(parsed, view, self.max_bytes if max_bytes is None else max_bytes, trust)
        try:
            return await registration.handler.read(request)
        except ResourceError:
            raise
        except Exception as exc:
            raise ResourceError("read_failed", f"{parsed.scheme}:// handler failed: {exc}") from exc

    async def read(
        self,
        url: str | ResourceURL,
        *,
        lines: str | int | None = None,
        offset: int | None = None,
        column: int | None = None,
        view: str | None = None,
        trust: TrustLevel | None = None,
    ) -> ReadResult:
        """Read one page of ``url`` (``lines``, or a ``#L10-L20`` fragment, select; ``offset``/``column`` continue).

        ``trust``: the level of the turn reading (see the module docstring); ``None`` for the host itself.
        """
        parsed = url if isinstance(url, ResourceURL) else parse_resource_url(url)
        selector = _selector(parsed, lines)
        _positive("offset", offset)
        _positive("column", column)
        resource = await self.resolve(parsed, view=view, trust=trust)
        shown = str(parsed.without_fragment())
        view = view if view is not None else parsed.view
        if view == "meta":
            return self._meta_result(shown, resource, selector, offset, column)
        media_type, text = self._content(resource)
        size = resource.size if resource.size is not None else _size(resource)
        common: dict[str, Json] = {"view": view, "size": size, "name": resource.name, "meta": resource.meta}
        common["lines"] = str(selector) if selector is not None else None
        if text is None:
            return ReadResult(shown, media_type, binary=True, **common)
        return ReadResult(shown, media_type, page=self._page(text, selector, offset, column), **common)

    async def read_bytes(
        self, url: str | ResourceURL, *, max_bytes: int | None = None, trust: TrustLevel | None = None
    ) -> Blob:
        """The bytes of ``url`` (text is UTF-8 encoded), at most ``max_bytes`` (default: the center's limit)."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        resource = await self.resolve(url, max_bytes=limit, trust=trust)
        data = resource.data if resource.data is not None else (resource.text or "").encode("utf-8")
        if resource.data is None and resource.text is None:
            raise ResourceError("read_failed", f"{url} has no content to send")
        if len(data) > limit:
            raise ResourceError("too_large", f"{url} is {len(data)} bytes; the limit is {limit}")
        media_type = resource.media_type or guess_media_type(resource.name, data)
        return Blob(data, media_type, resource.name)

    def _content(self, resource: Resource) -> tuple[str, str | None]:
        if resource.text is not None:
            if len(resource.text) > self.max_bytes:
                raise ResourceError("too_large", f"{len(resource.text)} characters; the limit is {self.max_bytes}")
            return resource.media_type or "text/plain", resource.text
        if resource.data is None:
            return resource.media_type or guess_media_type(resource.name), None
        if len(resource.data) > self.max_bytes:
            raise ResourceError("too_large", f"{len(resource.data)} bytes; the limit is {self.max_bytes}")
        media_type = resource.media_type or guess_media_type(resource.name, resource.data)
        if _is_binary_type(media_type):
            return media_type, None
        text = decode_text(resource.data)
        if text is not None and not is_text_media_type(media_type) and media_type == "application/octet-stream":
            media_type = "text/plain"
        return media_type, text

    def _page(self, text: str, selector: LineSelector | None, offset: int | None, column: int | None) -> Page:
        return page_lines(
            split_lines(text),
            selector=selector,
            offset=offset,
            column=column,
            max_lines=self.page_lines,
            max_chars=self.page_chars,
        )

    def _meta_result(
        self, url: str, resource: Resource, selector: LineSelector | None, offset: int | None, column: int | None
    ) -> ReadResult:
        media_type = resource.media_type or guess_media_type(resource.name, resource.data)
        described: dict[str, Json] = {"url": url, "mediaType": media_type}
        size = resource.size if resource.size is not None else _size(resource)
        if size is not None:
            described["size"] = size
        if resource.name is not None:
            described["name"] = resource.name
        described.update(resource.meta)
        text = json.dumps(described, ensure_ascii=False, indent=2, default=str)
        page = self._page(text, selector, offset, column)
        lines = str(selector) if selector is not None else None
        return ReadResult(url, "application/json", "meta", False, size, resource.name, resource.meta, page, lines)


def _selector(parsed: ResourceURL, lines: str | int | None) -> LineSelector | None:
    from_fragment = parse_line_fragment(parsed.fragment)
    from_argument = parse_line_selector(lines) if lines is not None else None
    if from_fragment and from_argument and from_fragment != from_argument:
        raise ResourceError(
            "invalid_selector", f"lines={lines!r} disagrees with the URL fragment #{parsed.fragment}; give one"
        )
    return from_argument or from_fragment


def _size(resource: Resource) -> int | None:
    if resource.data is not None:
        return len(resource.data)
    if resource.text is not None:
        return len(resource.text.encode("utf-8"))
    return None
