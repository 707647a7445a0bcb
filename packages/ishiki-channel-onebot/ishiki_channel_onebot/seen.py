"""``SeenEvents``: the events an account has taken, kept on disk so the same one is never dispatched twice.

An event is known by ``<kind>/<channel>/<message id>`` (``shaping.event_key``). A OneBot implementation may send
an event again: over HTTP when its post of it failed or timed out (the channel answers only once the event
is durable), after a reconnect (some replay what they buffered), and the crash harness plays both. The host
recognises a repeat among the runtime's recent input itself; this file covers the rest: input set aside or
owned by no profile, and repeats that come after many more messages.

A key is added in memory once the host made its event durable (or set it aside), and written behind, in
order, by ``run``: one append of every key gathered, once ``BATCH`` are waiting or the intake has nothing more
in hand (``settle``), so a burst of events costs one write per batch rather than one per event. A crash
before the write loses only keys of events that are durable in their fact log, which the host recognises as
its newest input. The file is ``<state_dir>/onebot-seen.jsonl``, one JSON string a line; the newest
``limit`` keys are kept, and the file is rewritten with just those when it reaches twice as many lines. An
unreadable line is skipped.
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from pathlib import Path

import anyio

__all__ = ["BATCH", "SEEN_FILE", "SeenEvents"]

SEEN_FILE = "onebot-seen.jsonl"
BATCH = 128
"""Keys gathered before a write starts while events keep coming."""


class SeenEvents:
    """The keys of the newest ``limit`` events taken (see the module docstring); ``load`` before use."""

    def __init__(self, directory: Path, *, logger: logging.Logger, limit: int = 20_000):
        self.path = Path(directory, SEEN_FILE)
        self._log = logger
        self._limit = limit
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._unwritten: list[str] = []
        self._lines = 0
        self._wake = anyio.Event()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    async def load(self) -> None:
        """Read the file (a missing one is empty)."""
        await anyio.to_thread.run_sync(self._load)

    def add(self, key: str) -> None:
        """Remember ``key`` now; it reaches the disk with the next write."""
        if key in self._keys:
            return
        self._keys[key] = None
        while len(self._keys) > self._limit:
            self._keys.popitem(last=False)
        self._unwritten.append(key)
        if len(self._unwritten) >= BATCH:
            self._wake.set()

    def settle(self) -> None:
        """Nothing more is in hand: write what is gathered now."""
        if self._unwritten:
            self._wake.set()

    async def run(self) -> None:
        """Write keys behind as they come, until cancelled (the last ones are written then)."""
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await self.flush()
        finally:
            await self.flush()

    async def flush(self) -> None:
        """Write the keys added since the last write (shielded: a write begun is finished, so no key taken
        from the list is lost to a cancellation); a failure is logged, never raised."""
        keys, self._unwritten = self._unwritten, []
        if not keys:
            return
        with anyio.CancelScope(shield=True):
            try:
                if self._lines + len(keys) >= 2 * self._limit:
                    await anyio.to_thread.run_sync(self._rewrite, list(self._keys))
                else:
                    await anyio.to_thread.run_sync(self._append, keys)
            except OSError as exc:
                message = "onebot: could not write %s (%s); the host alone recognises repeats for now"
                self._log.error(message, self.path, exc)

    def _load(self) -> None:
        try:
            lines = self.path.read_text("utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return
        except OSError as exc:
            self._log.warning("onebot: %s cannot be read (%s); the host alone recognises repeats", self.path, exc)
            return
        for line in lines:
            try:
                key = json.loads(line)
            except ValueError:
                continue
            if isinstance(key, str):
                self._keys[key] = None
                self._keys.move_to_end(key)
        while len(self._keys) > self._limit:
            self._keys.popitem(last=False)
        self._lines = len(lines)

    def _append(self, keys: list[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write("".join(json.dumps(key) + "\n" for key in keys))
        self._lines += len(keys)

    def _rewrite(self, keys: list[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{SEEN_FILE}.{os.getpid()}.tmp")
        temp.write_text("".join(json.dumps(key) + "\n" for key in keys), "utf-8")
        os.replace(temp, self.path)
        self._lines = len(keys)
