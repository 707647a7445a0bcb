"""The ``asset://`` scheme: inbound media captured under the runtime home's ``assets/``.

A channel captures an attachment either at once (``capture``, from bytes or an async byte source) or lazily
(``capture_lazy``: a JSON *locator* and the kind of fetcher that can download it). A lazy asset is downloaded on
its first read, once even when many reads race (a per-asset lock), and kept. Fetchers live in an
``AssetFetchers`` registry shared by the host: a channel registers its fetcher once, and assets captured before
a restart stay readable as soon as that channel runs again. A locator must hold no credentials (the fetcher adds
them); it is never shown to the model.

On disk: ``assets/<id>.json`` (what is known; written last, so its presence means the asset exists) and
``assets/<id>.data`` (the bytes). Eager ids are the content hash, so the same file captured twice is stored once.
URLs are ``asset://<id><ext>``; the extension is only a hint. ``data_path(url)`` is where an asset's bytes are
(or will be, for a lazy one), and ``asset_files(path)`` the files to remove to delete it, metadata first: the
host lists each capture in the memory database and its clean-up beat removes old ones
(``ishiki_host.heartbeat.janitor``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio

from ishiki_host.core.clock import Clock, SystemClock
from ishiki_host.errors import ResourceError
from ishiki_host.resources import _files
from ishiki_host.resources.center import Resource, ResourceRequest
from ishiki_host.resources.sniff import extension_for, guess_media_type
from ishiki_host.resources.urls import format_resource_url, parse_resource_url

if TYPE_CHECKING:
    from ishiki_host.resources.urls import ResourceURL

__all__ = [
    "DEFAULT_ASSET_MAX_BYTES",
    "AssetFetcher",
    "AssetFetchers",
    "AssetStore",
    "ByteSource",
    "asset_files",
]

DEFAULT_ASSET_MAX_BYTES = 50 * 1024 * 1024
ByteSource = bytes | AsyncIterable[bytes]
AssetFetcher = Callable[[Mapping[str, Any]], Awaitable[ByteSource]]
"""Downloads a lazily captured asset from its locator; returns the bytes or an async byte stream."""

_ID = re.compile(r"[0-9a-f]{32}")
_DATA_SUFFIX, _META_SUFFIX = ".data", ".json"


def asset_files(path: Path) -> tuple[Path, ...]:
    """The files to remove to delete what is stored at ``path``: for an asset's bytes (``assets/<id>.data``)
    its metadata first (once it is gone the asset no longer exists, so no read finds it half deleted), then the
    bytes; any other file is just itself."""
    stem, suffix = path.name[: -len(_DATA_SUFFIX)], path.name[-len(_DATA_SUFFIX) :]
    if path.parent.name == "assets" and suffix == _DATA_SUFFIX and _ID.fullmatch(stem):
        return (path.with_name(stem + _META_SUFFIX), path)
    return (path,)


class AssetFetchers:
    """Fetchers by source kind (``telegram``...), shared by every runtime's ``AssetStore``."""

    def __init__(self) -> None:
        self._fetchers: dict[str, AssetFetcher] = {}

    def register(self, kind: str, fetch: AssetFetcher) -> Callable[[], None]:
        """Download assets of ``kind`` with ``fetch``; returns the function that removes it."""
        if kind in self._fetchers:
            raise ResourceError("duplicate_fetcher", f"a fetcher for {kind!r} assets is already registered")
        self._fetchers[kind] = fetch

        def deregister() -> None:
            if self._fetchers.get(kind) is fetch:
                del self._fetchers[kind]

        return deregister

    def get(self, kind: str) -> AssetFetcher | None:
        """The fetcher for ``kind``, if one is registered."""
        return self._fetchers.get(kind)


class _KeyedLocks:
    """One lock per key, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[anyio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (anyio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


@contextlib.asynccontextmanager
async def _removed_on_error(temp: Path) -> AsyncIterator[None]:
    """Remove a spooled temporary file if what follows fails or is cancelled (it is gone once placed)."""
    try:
        yield
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(functools.partial(temp.unlink, missing_ok=True))
        raise


async def _chunks(source: ByteSource) -> AsyncIterable[bytes]:
    if isinstance(source, bytes | bytearray | memoryview):
        yield bytes(source)
        return
    async for chunk in source:
        yield chunk


class AssetStore:
    """The ``asset://`` handler of one runtime, and the capture API channels call."""

    views: tuple[str, ...] = ()

    def __init__(
        self,
        root: Path,
        *,
        fetchers: AssetFetchers | None = None,
        clock: Clock | None = None,
        max_bytes: int = DEFAULT_ASSET_MAX_BYTES,
        fetch_timeout: float = 120.0,
    ):
        self.root = Path(root)
        self.fetchers = fetchers if fetchers is not None else AssetFetchers()
        self.max_bytes = max_bytes
        self.fetch_timeout = fetch_timeout
        self._clock = clock or SystemClock()
        self._locks = _KeyedLocks()

    async def capture(self, data: ByteSource, *, media_type: str | None = None, name: str | None = None) -> str:
        """Store ``data`` now; returns its ``asset://`` URL. Over ``max_bytes``: ``too_large``, nothing kept."""
        temp, digest, size, head = await self._spool(data, self.max_bytes, name or "the attachment")
        asset_id = digest[:32]
        media_type = media_type or guess_media_type(name, head)
        async with _removed_on_error(temp), self._locks.hold(asset_id):
            if await anyio.to_thread.run_sync(self._meta_path(asset_id).exists):
                await anyio.to_thread.run_sync(temp.unlink)
            else:
                await anyio.to_thread.run_sync(_files.place, temp, self._data_path(asset_id))
                meta = {"id": asset_id, "mediaType": media_type, "name": name, "size": size}
                await self._write_meta(asset_id, meta | {"captured": self._clock.now(), "fetched": True})
        return self.url_for(asset_id, media_type, name)

    async def capture_lazy(
        self,
        kind: str,
        locator: Mapping[str, Any],
        *,
        media_type: str | None = None,
        name: str | None = None,
        size: int | None = None,
    ) -> str:
        """Record an asset that ``kind``'s fetcher downloads on first read; returns its URL.

        ``locator`` is JSON the fetcher understands (a Telegram ``file_id``...). A known ``size`` over
        ``max_bytes`` is refused at once with ``too_large``.
        """
        if size is not None and size > self.max_bytes:
            raise ResourceError(
                "too_large", f"{name or 'the attachment'} is {size} bytes; the limit is {self.max_bytes}"
            )
        canonical = json.dumps({"kind": kind, "locator": locator}, sort_keys=True, ensure_ascii=False)
        asset_id = hashlib.sha256(b"lazy\0" + canonical.encode("utf-8")).hexdigest()[:32]
        media_type = media_type or guess_media_type(name)
        async with self._locks.hold(asset_id):
            if not await anyio.to_thread.run_sync(self._meta_path(asset_id).exists):
                meta = {"id": asset_id, "mediaType": media_type, "name": name, "size": size, "fetched": False}
                source = {"kind": kind, "locator": dict(locator)}
                await self._write_meta(asset_id, meta | {"captured": self._clock.now(), "source": source})
        return self.url_for(asset_id, media_type, name)

    def url_for(self, asset_id: str, media_type: str, name: str | None = None) -> str:
        """The URL of an asset: ``asset://<id><ext>``."""
        return format_resource_url("asset", [asset_id + extension_for(media_type, name)])

    async def read(self, request: ResourceRequest) -> Resource:
        """Serve ``asset://<id>``: metadata without fetching for ``meta``, else the bytes (fetched once)."""
        asset_id = self._parse(request.url)
        meta = await anyio.to_thread.run_sync(_files.read_json, self._meta_path(asset_id))
        if meta is None:
            raise ResourceError("not_found", f"no asset {asset_id} in this runtime")
        if request.wants_content:
            if not meta.get("fetched"):
                meta = await self._fetch_once(asset_id, request.max_bytes)
            path, what = self._data_path(asset_id), f"asset {asset_id}"
            data = await anyio.to_thread.run_sync(_files.read_limited, path, request.max_bytes, what)
            return Resource(data=data, media_type=meta.get("mediaType"), name=meta.get("name"), meta=_shown(meta))
        return Resource(
            media_type=meta.get("mediaType"), size=meta.get("size"), name=meta.get("name"), meta=_shown(meta)
        )

    def data_path(self, url: str) -> Path:
        """Where the bytes of the asset at ``url`` are (a lazy one's once fetched); ``ResourceError`` for a URL
        that is not an asset's."""
        parsed = parse_resource_url(url)
        if parsed.scheme != "asset":
            raise ResourceError("invalid_resource_uri", f"{url}: not an asset:// URL")
        return self._data_path(self._parse(parsed))

    def _parse(self, url: ResourceURL) -> str:
        if url.path_segments or set(url.params) - {"view"}:
            raise ResourceError("invalid_resource_uri", f"{url}: an asset URL is asset://<id> with nothing after it")
        asset_id = url.authority.split(".", 1)[0]
        if not _ID.fullmatch(asset_id):
            raise ResourceError("not_found", f"{url}: {asset_id!r} is not an asset id")
        return asset_id

    async def _fetch_once(self, asset_id: str, limit: int) -> dict[str, Any]:
        async with self._locks.hold(asset_id):
            meta = await anyio.to_thread.run_sync(_files.read_json, self._meta_path(asset_id))
            assert meta is not None  # metadata is never removed while the store runs
            if meta.get("fetched"):
                return meta
            source = meta.get("source") or {}
            fetch = self.fetchers.get(str(source.get("kind")))
            if fetch is None:
                raise ResourceError(
                    "unavailable", f"asset {asset_id} is not downloaded yet and no {source.get('kind')!r} fetcher runs"
                )
            temp, _, size, head = await self._download(fetch, source.get("locator") or {}, asset_id, limit)
            async with _removed_on_error(temp):
                await anyio.to_thread.run_sync(_files.place, temp, self._data_path(asset_id))
            media_type = meta.get("mediaType")
            if media_type in (None, "application/octet-stream"):
                media_type = guess_media_type(meta.get("name"), head)
            meta = meta | {"fetched": True, "size": size, "mediaType": media_type}
            await self._write_meta(asset_id, meta)
            return meta

    async def _download(
        self, fetch: AssetFetcher, locator: Mapping[str, Any], asset_id: str, limit: int
    ) -> tuple[Path, str, int, bytes]:
        try:
            with anyio.fail_after(self.fetch_timeout):
                return await self._spool(await fetch(locator), min(limit, self.max_bytes), f"asset {asset_id}")
        except ResourceError:
            raise
        except TimeoutError:
            raise ResourceError("fetch_failed", f"asset {asset_id}: download took over {self.fetch_timeout}s") from None
        except Exception as exc:
            raise ResourceError("fetch_failed", f"asset {asset_id}: download failed: {exc}") from exc

    async def _spool(self, source: ByteSource, limit: int, what: str) -> tuple[Path, str, int, bytes]:
        """Write ``source`` to a temporary file; returns (path, sha256 hex, size, first bytes)."""
        temp, handle = await anyio.to_thread.run_sync(_files.new_temp, self.root)
        try:
            digest, size, head = await self._copy(source, handle, limit, what)
            await anyio.to_thread.run_sync(_files.finish, handle)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_files.discard, temp, handle)
            raise
        return temp, digest, size, head

    async def _copy(self, source: ByteSource, handle: IO[bytes], limit: int, what: str) -> tuple[str, int, bytes]:
        hasher, size, head = hashlib.sha256(), 0, b""
        async for chunk in _chunks(source):
            size += len(chunk)
            if size > limit:
                raise ResourceError("too_large", f"{what} is over {limit} bytes")
            hasher.update(chunk)
            head = head if len(head) >= 4096 else head + chunk[: 4096 - len(head)]
            await anyio.to_thread.run_sync(handle.write, chunk)
        return hasher.hexdigest(), size, head

    async def _write_meta(self, asset_id: str, meta: Mapping[str, Any]) -> None:
        data = json.dumps(meta, ensure_ascii=False, sort_keys=True).encode("utf-8")
        await anyio.to_thread.run_sync(_files.write_atomic, self._meta_path(asset_id), data)

    def _meta_path(self, asset_id: str) -> Path:
        return self.root / f"{asset_id}{_META_SUFFIX}"

    def _data_path(self, asset_id: str) -> Path:
        return self.root / f"{asset_id}{_DATA_SUFFIX}"


def _shown(meta: Mapping[str, Any]) -> dict[str, Any]:
    # The locator is the fetcher's business (and may identify more than the model needs); show its kind only.
    shown = {key: value for key, value in meta.items() if key not in ("source", "mediaType", "name", "size")}
    if isinstance(meta.get("source"), Mapping):
        shown["source"] = meta["source"].get("kind")
    return shown
