"""The ``artifact://<tool>/<name>`` scheme: large tool outputs archived under the runtime home's ``artifacts/``.

When a tool answers with more than the model should get in one go, the agent keeps a preview in the
conversation and archives the whole (``archive_if_large``). The default view of an artifact is the full text
the model would have seen; ``view=original`` is the value the tool produced when it differs (structured data
as indented JSON, which pages by lines where a one-line JSON blob cannot; raw bytes, described if binary);
``view=meta`` describes it without loading it.

On disk, per tool (the directory name escaped like runtime paths): ``<id>.txt`` (the text), ``<id>.original``
(when given) and ``<id>.json`` (metadata, written last). The id is a hash of the content, so archiving the
same output twice keeps one copy.

An artifact keeps the trust level of the tool that produced it (``trust`` in its metadata; ``trusted`` for
artifacts archived before levels were kept): a turn below it is refused (``forbidden``), so the output of an
owner-only tool is never read by an untrusted conversation through ``read``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.addresses.segments import escape_segment
from ishiki_host.core.clock import Clock, SystemClock
from ishiki_host.core.tools import TRUST_ORDER
from ishiki_host.errors import ResourceError
from ishiki_host.resources import _files
from ishiki_host.resources.center import Resource, ResourceRequest
from ishiki_host.resources.paging import split_lines
from ishiki_host.resources.sniff import guess_media_type
from ishiki_host.resources.urls import format_resource_url

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.resources.urls import ResourceURL

__all__ = [
    "DEFAULT_ARCHIVE_LIMIT",
    "ArchivedOutput",
    "ArtifactStore",
    "preview",
]

DEFAULT_ARCHIVE_LIMIT = 30_000
_ID_LENGTH = 20
_UNKNOWN_TRUST: TrustLevel = "trusted"  # artifacts archived before their tool's level was kept


@dataclass(frozen=True, slots=True)
class ArchivedOutput:
    """What goes into the conversation for a tool result: the text itself, or a preview and the URL."""

    content: str
    url: str | None = None
    chars: int = 0
    lines: int = 0


def _original_bytes(original: Any) -> tuple[bytes, str | None]:
    if isinstance(original, bytes | bytearray):
        return bytes(original), None
    if isinstance(original, str):
        return original.encode("utf-8"), "text/plain"
    try:
        text = json.dumps(original, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError) as exc:
        raise ResourceError("read_failed", f"the original output cannot be stored as JSON: {exc}") from exc
    return text.encode("utf-8"), "application/json"


def preview(content: str, head: int, tail: int) -> str:
    """The start and the end of ``content`` with the number of characters left out between them."""
    if len(content) <= head + tail:
        return content
    start, end = content[:head], content[len(content) - tail :] if tail else ""
    # Prefer whole lines when a line break is near the cut.
    cut = start.rfind("\n")
    start = start[:cut] if cut >= head * 0.8 else start
    cut = end.find("\n")
    end = end[cut + 1 :] if 0 <= cut <= tail * 0.2 else end
    omitted = len(content) - len(start) - len(end)
    return f"{start}\n… [{omitted:,} characters omitted] …\n{end}".rstrip("\n")


class ArtifactStore:
    """The ``artifact://`` handler of one runtime, and the archive API the agent uses."""

    views: tuple[str, ...] = ("original",)

    def __init__(self, root: Path, *, clock: Clock | None = None):
        self.root = Path(root)
        self._clock = clock or SystemClock()

    async def archive(
        self,
        tool: str,
        content: str,
        *,
        original: Any = None,
        media_type: str = "text/plain",
        trust: TrustLevel = "trusted",
    ) -> str:
        """Keep ``content`` (and the tool's ``original`` value, if any); returns the artifact's URL.

        ``trust`` is the level the producing tool needs: turns below it cannot read the artifact.
        """
        if not tool:
            raise ResourceError("invalid_resource_uri", "an artifact needs the name of the tool that made it")
        text = content.encode("utf-8")
        raw, raw_type = _original_bytes(original) if original is not None else (None, None)
        hasher = hashlib.sha256(tool.encode("utf-8") + b"\0" + text)
        if raw is not None:
            hasher.update(b"\0original\0" + raw)
        artifact_id = hasher.hexdigest()[:_ID_LENGTH]
        directory = self.root / escape_segment(tool)
        meta_path = directory / f"{artifact_id}.json"
        if not await anyio.to_thread.run_sync(meta_path.exists):
            meta: dict[str, Any] = {"tool": tool, "id": artifact_id, "created": self._clock.now(), "trust": trust}
            meta |= {"mediaType": media_type, "chars": len(content), "lines": len(split_lines(content))}
            meta["bytes"] = len(text)
            await anyio.to_thread.run_sync(_files.write_atomic, directory / f"{artifact_id}.txt", text)
            if raw is not None:
                original_type = raw_type or guess_media_type(None, raw)
                meta["original"] = {"mediaType": original_type, "bytes": len(raw)}
                await anyio.to_thread.run_sync(_files.write_atomic, directory / f"{artifact_id}.original", raw)
            encoded = json.dumps(meta, ensure_ascii=False, sort_keys=True).encode("utf-8")
            await anyio.to_thread.run_sync(_files.write_atomic, meta_path, encoded)
        return format_resource_url("artifact", [tool, f"{artifact_id}.txt"])

    async def archive_if_large(
        self,
        tool: str,
        content: str,
        *,
        original: Any = None,
        limit: int = DEFAULT_ARCHIVE_LIMIT,
        head: int = 4_000,
        tail: int = 1_000,
        trust: TrustLevel = "trusted",
    ) -> ArchivedOutput:
        """``content`` as is when it has at most ``limit`` characters; else archive it, return a preview + URL."""
        lines = len(split_lines(content))
        if len(content) <= limit:
            return ArchivedOutput(content, None, len(content), lines)
        url = await self.archive(tool, content, original=original, trust=trust)
        note = (
            f"[The full output ({len(content):,} characters, {lines:,} lines) is archived at {url}; "
            f'call read with url="{url}" to page through it, or lines="A-B" for a part.]'
        )
        return ArchivedOutput(f"{preview(content, head, tail)}\n\n{note}", url, len(content), lines)

    async def read(self, request: ResourceRequest) -> Resource:
        """Serve ``artifact://<tool>/<id>.txt`` in its default, ``original`` and ``meta`` views."""
        directory, artifact_id = self._locate(request.url)
        meta = await anyio.to_thread.run_sync(_files.read_json, directory / f"{artifact_id}.json")
        if meta is None:
            raise ResourceError("not_found", f"{request.url}: no such artifact in this runtime")
        needed = meta.get("trust")
        needed = needed if needed in TRUST_ORDER else _UNKNOWN_TRUST
        if not request.allows(needed):
            raise ResourceError(
                "forbidden",
                f"{request.url.bare()} is the output of a tool that needs trust {needed}; "
                f"this conversation is {request.trust}",
            )
        shown = {key: value for key, value in meta.items() if key not in ("mediaType", "id")}
        original = meta.get("original")
        if request.view == "meta":
            return Resource(media_type=meta.get("mediaType"), size=meta.get("bytes"), meta=shown)
        if request.view == "original" and isinstance(original, dict):
            path, media_type = directory / f"{artifact_id}.original", original.get("mediaType")
        else:
            path, media_type = directory / f"{artifact_id}.txt", meta.get("mediaType")
        what = str(request.url.bare())
        data = await anyio.to_thread.run_sync(_files.read_limited, path, request.max_bytes, what)
        return Resource(data=data, media_type=media_type, meta=shown)

    def _locate(self, url: ResourceURL) -> tuple[Path, str]:
        if len(url.path_segments) != 1:
            raise ResourceError("invalid_resource_uri", f"{url}: expected artifact://<tool>/<name>")
        artifact_id = url.path_segments[0].split(".", 1)[0]
        if len(artifact_id) != _ID_LENGTH or any(ch not in "0123456789abcdef" for ch in artifact_id):
            raise ResourceError("not_found", f"{url}: {url.path_segments[0]!r} is not an artifact name")
        return self.root / escape_segment(url.authority), artifact_id
