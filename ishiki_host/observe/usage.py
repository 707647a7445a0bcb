"""``UsageRecorder``: every model call and tool call of the host, counted into the memory database.

It is a gateway call listener (``model_call``: the call's member, tokens and whether it failed, for the
profile and channel of the runtime it was made for) and a turn listener (``turn_ended``: the turn's tool
calls). Both only note the counts in memory (``UsageRepo.note_call``, ``note_tool``), so no call waits on
SQLite. ``flush_soon`` writes them in the background (``spawn``) once ``FLUSH_SECONDS`` have passed since the
last write: the host calls it at every turn's end and every reload tick, the store's close writes the rest,
and ``/usage`` flushes before it reads. There is no timer of its own: a sleeper on the host's clock would be
one more thing for every test on a ``FakeClock`` to step over. Without a memory database (it could not be
opened) nothing is counted.

The hour a call counts in is that of the host's time zone (``timezone`` of ishiki.yaml) when it ended, looked
up once a minute rather than per call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from ishiki_host.errors import StoreError
from ishiki_host.observe.owner import call_owner, key_labels
from ishiki_host.store.repos.usage import usage_bucket

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.clock import Clock
    from ishiki_host.gateway.gateway import ModelCallRecord
    from ishiki_host.plugins.runtime_api import TurnReport
    from ishiki_host.store.repos.usage import Bucket, UsageRepo

__all__ = ["FLUSH_SECONDS", "UsageRecorder"]

logger = logging.getLogger("ishiki_host.usage")

FLUSH_SECONDS = 5.0
"""The least time between two writes of the counts (a busy host's ``ishiki usage`` is about this far behind)."""


class UsageRecorder:
    """See the module docstring. ``repo()`` is the memory database's ``UsageRepo`` (``None`` without one) and
    ``timezone()`` the host's zone name, both read when used (the database opens after the gateway is built)."""

    def __init__(
        self,
        repo: Callable[[], UsageRepo | None],
        clock: Clock,
        timezone: Callable[[], str],
        spawn: Callable[[Callable[[], Awaitable[object]], str], None],
    ):
        self._repo = repo
        self._clock = clock
        self._timezone = timezone
        self._spawn = spawn
        self._zone: tuple[str, ZoneInfo] | None = None
        self._minute: tuple[int, Bucket] | None = None
        self._flushed_at = clock.monotonic()
        self._flushing = False

    def model_call(self, record: ModelCallRecord) -> None:
        """Count one model call (a gateway call listener)."""
        repo = self._repo()
        if repo is None:
            return
        profile, channel = call_owner()
        usage = record.usage
        repo.note_call(
            self._bucket(),
            profile,
            channel,
            record.member,
            input_tokens=usage.input_tokens if usage is not None else 0,
            output_tokens=usage.output_tokens if usage is not None else 0,
            failed=record.error_kind is not None,
        )

    def turn_ended(self, key: RuntimeKey, report: TurnReport) -> None:
        """Count a turn's tool calls (a turn listener)."""
        repo = self._repo()
        if repo is None or not report.tools:
            return
        bucket = self._bucket()
        profile, channel = key_labels(key)
        for tool in report.tools:
            repo.note_tool(bucket, profile, channel, tool)

    def flush_soon(self) -> None:
        """Write the counts in the background if ``FLUSH_SECONDS`` have passed since the last write (and none
        is under way)."""
        repo = self._repo()
        if repo is None or self._flushing or not repo.pending:
            return
        if self._clock.monotonic() - self._flushed_at < FLUSH_SECONDS:
            return
        self._flushing = True
        try:
            self._spawn(self.flush, "usage flush")
        except RuntimeError:  # the host's task group has closed: the store's close writes the counts
            self._flushing = False

    async def flush(self) -> None:
        """Write what was counted so far (a failure is logged; the counts wait for the next flush)."""
        repo = self._repo()
        try:
            if repo is not None:
                await repo.flush()
        except StoreError as exc:
            logger.error("usage: could not write the counts (kept for the next try): %s", exc)
        finally:
            self._flushing = False
            self._flushed_at = self._clock.monotonic()

    def _bucket(self) -> Bucket:
        now = self._clock.now()
        minute = int(now // 60)
        if self._minute is not None and self._minute[0] == minute:
            return self._minute[1]
        bucket = usage_bucket(now, self._zone_info())
        self._minute = (minute, bucket)
        return bucket

    def _zone_info(self) -> ZoneInfo:
        name = self._timezone()
        if self._zone is None or self._zone[0] != name:
            self._zone = (name, ZoneInfo(name))
        return self._zone[1]
