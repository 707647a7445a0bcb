"""The background embedding of memories: ``EmbeddingBacklog``, one per profile and embeddings model.

Memories are embedded after they are written, never on a turn's path: the memory extension ``kick``\\ s the
backlog after a turn left a memory, and the backlog's task (in the host's task group) takes the memories
without a vector of its model in batches of ``batch``, oldest first (a pass starts after the newest memory
every earlier one of which is done, so it costs what is new, not the table), embeds each batch in one ``background``
call through the gateway and stores the vectors (``MemoryVectorIndex.put``). Changing a profile's embeddings
model makes every memory pending for the new one, so they are embedded again the same way (each new vector
replaces the old one); once none is left, what remains of the old model is deleted. Recall uses only the
vectors of the current model.

When something goes wrong nothing is lost, and nothing waits on it:

- the embeddings model is down (any ``ModelError`` of a batch): the pass stops, ``problem`` says why (shown in
  ``/status``), the memories stay pending, and the next pass comes at the next kick, or after ``retry_seconds``
  (doubling up to ``MAX_RETRY_SECONDS`` while it keeps failing); recall uses full text meanwhile;
- it refuses a batch as a bad request or as too long (a text it will not take): the batch's memories are tried
  one by one, and one it refuses alone is left out until the host restarts (logged with its id);
- it answers vectors of another length than the model's stored ones: ``MemoryVectorIndex.put`` refuses the
  batch whole (``StoreError``, no row written), ``problem`` says so, and the pass stops;
- a memory longer than ``MAX_EMBED_CHARS`` is embedded by its first ``MAX_EMBED_CHARS`` characters
  (``ishiki_host.gateway.embeddings``).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import anyio

from ishiki_host.errors import ContextLengthExceeded, ModelBadRequest, ModelError, StoreError

if TYPE_CHECKING:
    from ishiki_host.gateway.embeddings import Embedder
    from ishiki_host.store.repos.memory_vectors import MemoryVectorIndex, PendingMemory

__all__ = ["BATCH", "MAX_RETRY_SECONDS", "EmbeddingBacklog"]

logger = logging.getLogger("ishiki_host.memory")

BATCH = 32
MAX_RETRY_SECONDS = 600.0


class EmbeddingBacklog:
    """The memories of ``profile`` still to embed with ``embedder``, stored in ``vectors`` (``store.vectors``,
    or another database's ``MemoryVectorIndex``; see the module docstring)."""

    def __init__(
        self,
        vectors: MemoryVectorIndex,
        embedder: Embedder,
        profile: str,
        *,
        batch: int = BATCH,
        retry_seconds: float = 30.0,
    ):
        self.vectors = vectors
        self.embedder = embedder
        self.profile = profile
        self.batch = max(1, batch)
        self.retry_seconds = retry_seconds
        self.problem: str | None = None
        self.embedded = 0
        self._refused: set[int] = set()
        self._wake = anyio.Event()
        self._failures = 0
        self._has_runner = False
        self._passed = anyio.Event()
        self._done_through = 0  # every memory up to this id has a vector (or was refused): passes start after it
        self._prune_due = True  # vectors of other models may be left: after the first pass done, and a switch

    @property
    def model(self) -> str:
        """The embeddings model's ref (the key of its vectors)."""
        return self.embedder.name

    def use(self, embedder: Embedder) -> None:
        """Embed with ``embedder`` from now on (its memories become pending; the old vectors go once done)."""
        self.embedder = embedder
        self.problem, self._failures = None, 0
        self._refused.clear()
        self._done_through = 0
        self._prune_due = True
        self.kick()

    def kick(self) -> None:
        """Ask for a pass soon (a memory was written)."""
        self._wake.set()

    async def drain(self) -> bool:
        """One pass: embed every pending memory, batch by batch; whether it ended with nothing left to do.

        Never raises for the model or the store: a failure ends the pass and is kept in ``problem``.
        """
        try:
            await self._check_cursor()
        except StoreError as exc:
            return self._failed(f"the memory database failed: {exc}")
        while True:
            after = self._done_through
            try:
                pending = await self.vectors.pending(self.profile, self.model, after=after, limit=self.batch)
            except StoreError as exc:
                return self._failed(f"the memory database failed: {exc}")
            todo = [memory for memory in pending if memory.id not in self._refused]
            if not pending:
                break
            if todo and not await self._embed(todo):
                return False
            self._done_through = pending[-1].id
        self.problem, self._failures = None, 0
        if self._prune_due:
            await self._prune()
        return True

    async def _check_cursor(self) -> None:
        """Start from the beginning when the memory the cursor is at lost its vector: it was deleted, and a new
        memory may have taken its id (SQLite gives a new row the highest id + 1)."""
        done = self._done_through
        if done and done not in self._refused and not await self.vectors.has(self.model, done):
            self._done_through = 0

    async def _embed(self, batch: list[PendingMemory]) -> bool:
        try:
            result = await self.embedder.embed([memory.content for memory in batch])
        except (ModelBadRequest, ContextLengthExceeded) as exc:
            if len(batch) > 1:
                for memory in batch:
                    if not await self._embed([memory]):
                        return False
                return True
            self._refused.add(batch[0].id)
            logger.warning("memory %d of %s: %s refused to embed it: %s", batch[0].id, self.profile, self.model, exc)
            return True
        except ModelError as exc:
            return self._failed(f"{self.model} is not answering ({exc}); recall uses full text meanwhile")
        pairs = [(memory.id, vector) for memory, vector in zip(batch, result.vectors, strict=True)]
        try:
            self.embedded += await self.vectors.put(self.profile, self.model, pairs)
        except StoreError as exc:
            return self._failed(str(exc))
        return True

    def _failed(self, problem: str) -> bool:
        if problem != self.problem:
            logger.warning("memory embeddings of %s: %s", self.profile, problem)
        self.problem = problem
        self._failures += 1
        return False

    async def _prune(self) -> None:
        try:
            removed = await self.vectors.prune(self.profile, self.model)
        except StoreError as exc:
            logger.warning("memory embeddings of %s: old vectors stay: %s", self.profile, exc)
            return
        self._prune_due = False
        if removed:
            logger.info("memory embeddings of %s: %d vectors of earlier models removed", self.profile, removed)

    def retry_delay(self) -> float | None:
        """How long the loop waits before a pass nobody asked for: ``None`` while the last one succeeded."""
        if self._failures == 0:
            return None
        return min(MAX_RETRY_SECONDS, self.retry_seconds * math.pow(2, self._failures - 1))

    def claim_runner(self) -> bool:
        """Whether the caller must start a task running ``run`` (none runs, or is about to); claims it."""
        if self._has_runner:
            return False
        self._has_runner = True
        return True

    async def run(self) -> None:
        """Pass after pass, each on a kick (or, after a failure, when the retry delay is over), until cancelled
        (then ``claim_runner`` lets the next caller start another)."""
        self._has_runner = True
        try:
            while True:
                self._wake = anyio.Event()
                await self.drain()
                self._passed.set()
                self._passed = anyio.Event()
                delay = self.retry_delay()
                with anyio.move_on_after(delay if delay is not None else math.inf):
                    await self._wake.wait()
        finally:
            self._has_runner = False

    async def next_pass(self) -> None:
        """Wait until the running loop has finished its next pass (for tests and ``ishiki`` tools)."""
        await self._passed.wait()

    async def status(self) -> str:
        """``embeddings: <model>, E of N memories embedded (P waiting)``, and the problem if there is one."""
        try:
            counts = await self.vectors.counts(self.profile, self.model)
        except StoreError as exc:
            return f"embeddings: {self.model}, unknown progress ({exc})"
        total = counts.embedded + counts.pending
        noun = "memory" if total == 1 else "memories"
        line = f"embeddings: {self.model}, {counts.embedded:,} of {total:,} {noun} embedded"
        if counts.pending:
            line += f" ({counts.pending:,} waiting)"
        return line + (f"; {self.problem}" if self.problem else "")
