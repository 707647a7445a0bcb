"""Listing a runtime's captured attachments in the memory database, so the clean-up beat can find them.

Each attachment a delivery captured into the runtime's ``asset://`` store gets a row of the ``images`` table
(``ishiki_host.store.repos.images``): the runtime key, the asset URL, the path of its bytes relative to the data
directory, the media type, the size (``0`` while a lazy asset's size is unknown) and the capture time. The
reserved beat ``__clear_images__`` deletes rows older than ``attachments.retention`` and their files
(``ishiki_host.heartbeat.janitor``).

The rows are written after the capture and before the message is appended, so a file is listed before anything
refers to it. Listing is bookkeeping, never a reason to lose a message: when the database is not open or a
write fails, the failure is logged and the message goes on to the fact log (its file is then not cleaned up,
which costs disk space, never an answer). Capturing the same bytes again refreshes the row's age: the file is
shared (eager asset ids are content hashes), and the newest message that refers to it decides how long it stays.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ishiki_host.errors import ResourceError, StoreError

if TYPE_CHECKING:
    from ishiki_host.channels.events import Attachment
    from ishiki_host.resources import AssetStore
    from ishiki_host.store.repos.images import ImagesRepo

__all__ = ["CaptureLedger"]


class CaptureLedger:
    """Writes the ``images`` rows of one runtime's captures (see the module docstring)."""

    def __init__(
        self,
        runtime_key: str,
        data_dir: Path,
        images: Callable[[], ImagesRepo | None],
        logger: logging.Logger,
    ):
        self._key = runtime_key
        self._data_dir = Path(data_dir)
        self._images = images
        self._logger = logger

    async def record(self, assets: AssetStore, captured: Sequence[Attachment]) -> None:
        """List each of ``captured`` (kept in ``assets``); logs a failure and never raises it."""
        images = self._images() if captured else None
        if images is None:
            return
        for attachment in captured:
            path = self._relative(assets, attachment.url)
            if path is None:
                continue
            try:
                await images.add(
                    self._key, attachment.url, path=path, media_type=attachment.media_type, size=attachment.size or 0
                )
            except StoreError as exc:
                self._logger.warning("attachment %s is kept but not listed for clean-up: %s", attachment.url, exc)

    def _relative(self, assets: AssetStore, url: str) -> str | None:
        """The path of the asset's bytes relative to the data directory; ``None`` for a home outside it."""
        try:
            return assets.data_path(url).relative_to(self._data_dir).as_posix()
        except (ResourceError, ValueError):
            # A home outside the data directory (a test harness's) has nothing the clean-up beat may touch.
            return None
