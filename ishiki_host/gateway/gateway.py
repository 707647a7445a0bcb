"""The gateway: ``models.yaml`` made callable.

``Gateway(config, apis)`` makes one shared ``httpx.AsyncClient`` and one ``ProviderClient`` per provider, one
circuit breaker per member and one scheduler (or the ``SlotSource`` given: a worker's leases from its
supervisor's scheduler). ``gateway.model(ref)`` gives the ``LanguageModel`` of a group name or a
``provider:modelId``: each call goes through the scheduler (priority, ``max_concurrency``), a whole-call
deadline, the breakers and the profile's failover policy. Every model call made (including failed ones and
probes' exceptions) is reported to the call listeners as a ``ModelCallRecord``, which is how the runtime
logs token usage; the ``ModelResult`` itself also carries ``usage`` and ``model`` (the member that answered).
Each record is also noted in its member's ``MemberStats`` (latency percentiles, errors by kind, calls, tokens),
which ``status()`` shows beside the member's breaker.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import anyio
import httpx

from ishiki_host.config.models import CircuitBreakerConfig, ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.core.clock import Clock, SystemClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, ModelResult, StreamDone, StreamEvent, Usage
from ishiki_host.errors import ModelError, ModelsConfigInvalid, ModelUnavailable
from ishiki_host.gateway.breaker import CircuitBreaker
from ishiki_host.gateway.classify import classify_exception, stream_cut, timed_out
from ishiki_host.gateway.failover import FailoverPolicy
from ishiki_host.gateway.group import MemberGroup
from ishiki_host.gateway.model import GatewayModel
from ishiki_host.gateway.pools import HttpClients, ProviderPool, make_pool
from ishiki_host.gateway.scheduler import Scheduler, SchedulerConfig, SlotSource
from ishiki_host.gateway.stats import MemberStats
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    import os

    from ishiki_host.core.model import Priority
    from ishiki_host.gateway.api import ModelAPI, ProviderClient

__all__ = ["CallListener", "Gateway", "ModelCallRecord", "ProbeResult"]

log = logging.getLogger("ishiki_host.gateway")

T = TypeVar("T")


PROBE_PROMPT = "Reply with the single word OK."


@dataclass(frozen=True, slots=True)
class ModelCallRecord:
    """One model call as the gateway saw it: who answered, tokens, how long, and the error kind if it failed."""

    ref: str
    member: str
    priority: Priority
    stream: bool
    latency_seconds: float
    usage: Usage | None = None
    error_kind: str | None = None

    def to_dict(self) -> dict[str, Json]:
        """JSON form (for the fact log)."""
        return {
            "ref": self.ref,
            "member": self.member,
            "priority": self.priority,
            "stream": self.stream,
            "latency_seconds": round(self.latency_seconds, 6),
            "usage": self.usage.to_dict() if self.usage else None,
            "error_kind": self.error_kind,
        }


CallListener = Callable[[ModelCallRecord], None]


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The answer of ``Gateway.probe``: latency when the member answered, else the classified error."""

    member: str
    ok: bool
    latency_seconds: float | None = None
    error_kind: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Json]:
        """JSON form."""
        return {
            "ok": self.ok,
            "latency_seconds": self.latency_seconds,
            "error_kind": self.error_kind,
            "error": self.error,
        }


class Gateway:
    """Providers, breakers, groups and the scheduler of one host (see the module docstring)."""

    def __init__(
        self,
        config: ModelsConfig,
        apis: Mapping[str, ModelAPI],
        *,
        clock: Clock | None = None,
        seed: int | None = None,
        scheduler: SchedulerConfig | None = None,
        config_dir: str | os.PathLike[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        slots: SlotSource | None = None,
    ):
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.seed = seed
        self.rng = random.Random(seed)
        self.scheduler: SlotSource = slots if slots is not None else Scheduler(self.clock, scheduler)
        if config_dir is None and config.file:
            config_dir = Path(config.file).parent
        self.config_dir = str(config_dir) if config_dir is not None else None
        self._clients = HttpClients()
        self._providers = {pid: self._make_provider(p, apis, transport) for pid, p in config.providers.items()}
        self.breakers = self._make_breakers()
        self.stats = {member: MemberStats() for member in self.breakers}
        self._groups: dict[str, MemberGroup] = {}
        self._models: dict[tuple[str, FailoverPolicy], GatewayModel] = {}
        self._listeners: list[CallListener] = []

    # -- construction -------------------------------------------------------------------------------------

    def _make_provider(
        self, provider: ProviderConfig, apis: Mapping[str, ModelAPI], transport: httpx.AsyncBaseTransport | None
    ) -> ProviderPool:
        made = make_pool(provider, apis, self._clients, transport=transport, config_dir=self.config_dir)
        if isinstance(made, ProviderPool):
            return made
        error = made
        if error.file is None and self.config.file:
            error = ModelsConfigInvalid(error.message, file=self.config.file, path=error.path)
        log.error("provider %s cannot start: %s", provider.id, error)
        return ProviderPool(provider, error=str(error))

    def _make_breakers(self) -> dict[str, CircuitBreaker]:
        settings: dict[str, CircuitBreakerConfig] = {}
        for group in self.config.groups.values():
            for member in group.members:
                if self.config.spec(member) is None:
                    raise ModelsConfigInvalid(
                        f"group {group.name!r} lists {member!r}, which no provider serves",
                        file=self.config.file,
                        path=f"groups.{group.name}.members",
                    )
                settings.setdefault(member, group.circuit_breaker)
        members = [f"{p.id}:{m.id}" for p in self.config.providers.values() for m in p.models]
        return {m: CircuitBreaker(m, settings.get(m, CircuitBreakerConfig()), self.clock) for m in members}

    # -- the public face ----------------------------------------------------------------------------------

    def model(self, ref: str, *, failover: FailoverPolicy | None = None) -> GatewayModel:
        """The ``LanguageModel`` for a group name or ``provider:modelId`` (one shared object per ref and policy).

        An unknown ref raises ``ModelsConfigInvalid`` with the closest known names.
        """
        policy = failover or FailoverPolicy()
        cached = self._models.get((ref, policy))
        if cached is not None:
            return cached
        members = self.config.resolve(ref)
        if members == ():
            raise ModelsConfigInvalid(f"group {ref!r} has no members", file=self.config.file, path=f"groups.{ref}")
        if members is None:
            known = [*self.config.groups, *self.breakers]
            hint = difflib.get_close_matches(ref, known, n=3)
            suffix = f" (did you mean {', '.join(map(repr, hint))}?)" if hint else ""
            raise ModelsConfigInvalid(f"unknown model {ref!r}{suffix}", file=self.config.file)
        group = self._groups.get(ref)
        if group is None:
            spec = self.config.groups.get(ref)
            seed = (
                spec.seed if spec and spec.seed is not None else (None if self.seed is None else f"{self.seed}/{ref}")
            )
            strategy = spec.strategy if spec else "failover"
            group = self._groups[ref] = MemberGroup(ref, members, self.breakers, strategy, _seed(seed))
        model = self._models[(ref, policy)] = GatewayModel(self, ref, group, policy)
        return model

    def add_listener(self, listener: CallListener) -> Callable[[], None]:
        """Call ``listener`` with a ``ModelCallRecord`` after every model call; returns a function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def spec(self, member: str) -> ModelSpec | None:
        """The ``ModelSpec`` of a member (for context windows)."""
        return self.config.spec(member)

    def status(self) -> dict[str, Json]:
        """A JSON snapshot: providers (errors, counters), members (breaker state and ``MemberStats``: ``calls``,
        ``tokens``, ``errors`` by kind, ``latency`` p50/p95), scheduler lanes."""
        return {
            "providers": {
                pid: {
                    "api": p.config.api,
                    "base_url": p.config.base_url,
                    "error": p.error,
                    "calls": p.calls,
                    "failures": p.failures,
                    "tokens": dict(p.tokens),
                }
                for pid, p in self._providers.items()
            },
            "members": {member: {**b.status(), **self.stats[member].status()} for member, b in self.breakers.items()},
            "scheduler": self.scheduler.status(),
        }

    async def probe(self, member: str, *, limit_seconds: float | None = None) -> ProbeResult:
        """Send one tiny request to ``member`` (not through failover or breakers); latency or the error."""
        request = ModelRequest((Message.user(PROBE_PROMPT),), max_tokens=16)
        start = self.clock.monotonic()
        try:
            await self._call_member(member, request, ref=f"probe:{member}", limit_seconds=limit_seconds, judge=False)
        except ModelError as exc:
            return ProbeResult(member, False, error_kind=exc.kind, error=str(exc))
        return ProbeResult(member, True, latency_seconds=round(self.clock.monotonic() - start, 6))

    async def aclose(self) -> None:
        """Close every provider client and shared httpx client."""
        with anyio.CancelScope(shield=True):
            for provider in self._providers.values():
                for client in provider.clients:
                    await client.aclose()
            await self._clients.aclose()

    async def __aenter__(self) -> Gateway:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- one member call (used by GatewayModel) ------------------------------------------------------------

    def _resolve(self, member: str) -> tuple[ProviderPool, ModelSpec]:
        provider_id, _, model_id = member.partition(":")
        provider = self._providers[provider_id]
        spec = provider.config.model(model_id)
        if not provider.usable or spec is None:
            raise ModelUnavailable(f"provider {provider_id!r} is not usable: {provider.error}", model=member)
        return provider, spec

    def _emit(self, record: ModelCallRecord) -> None:
        provider = self._providers.get(record.member.partition(":")[0])
        if provider is not None:
            provider.calls += 1
            provider.failures += record.error_kind is not None
            if record.usage is not None:
                provider.tokens["input"] += record.usage.input_tokens
                provider.tokens["output"] += record.usage.output_tokens
        stats = self.stats.get(record.member)
        if stats is not None:
            stats.note(record.latency_seconds, record.usage, record.error_kind)
        for listener in list(self._listeners):
            try:
                listener(record)
            except Exception:
                log.exception("call listener %r failed", listener)

    def _verdict(self, member: str, error: ModelError | None, judge: bool) -> None:
        if not judge:
            return
        if error is not None:
            self.breakers[member].record_failure(error)
        else:
            self.breakers[member].record_success()

    async def _call_member(
        self, member: str, request: ModelRequest, *, ref: str, limit_seconds: float | None = None, judge: bool = True
    ) -> ModelResult:
        """One ``generate`` on one member: scheduler slot, whole-call deadline, breaker verdict, call record."""
        result, latency = await self._call_on_member(
            member, lambda client, spec: client.generate(spec, request), request.priority, limit_seconds, judge, ref
        )
        result = replace(result, model=member)
        self._emit(ModelCallRecord(ref, member, request.priority, False, latency, result.usage))
        return result

    async def _call_on_member(
        self,
        member: str,
        call: Callable[[ProviderClient, ModelSpec], Awaitable[T]],
        priority: Priority,
        limit_seconds: float | None,
        judge: bool,
        ref: str,
    ) -> tuple[T, float]:
        """``call(client, spec)`` on one member in a scheduler slot, within the whole-call deadline, its failure
        classified, judged by the breaker and recorded; what it returned and its latency (the caller records a
        success: only it knows the usage)."""
        start = self.clock.monotonic()
        try:
            provider, spec = self._resolve(member)
            limit = limit_seconds or provider.config.timeout_seconds
            async with self.scheduler.slot(provider.config.id, provider.config.max_concurrency, priority):
                start = self.clock.monotonic()
                try:
                    with provider.lease() as client, anyio.fail_after(limit):
                        result = await call(client, spec)
                except TimeoutError:
                    raise timed_out(member, limit) from None
                except Exception as exc:
                    raise classify_exception(exc, member) from exc
        except ModelError as error:
            self._verdict(member, error, judge)
            self._emit(ModelCallRecord(ref, member, priority, False, self.clock.monotonic() - start, None, error.kind))
            raise
        except BaseException:
            if judge:
                self.breakers[member].release()
            raise
        self._verdict(member, None, judge)
        return result, self.clock.monotonic() - start

    async def _stream_member(
        self, member: str, request: ModelRequest, *, ref: str
    ) -> AsyncGenerator[StreamEvent, None]:
        """One ``stream`` on one member. The first event must come within the whole-call timeout, each later one
        within the read timeout (a long answer that keeps streaming is never cut)."""
        start = self.clock.monotonic()
        try:
            provider, spec = self._resolve(member)
            slot = self.scheduler.slot(provider.config.id, provider.config.max_concurrency, request.priority)
            async with slot:
                start = self.clock.monotonic()
                index, client = provider.acquire()
                events = client.stream(spec, request)
                try:
                    limit = provider.config.timeout_seconds
                    while True:
                        event = await _next_event(events, member, limit)
                        limit = provider.config.read_timeout_seconds
                        if isinstance(event, StreamDone):
                            result = replace(event.result, model=member)
                            self._verdict(member, None, True)
                            latency = self.clock.monotonic() - start
                            self._emit(ModelCallRecord(ref, member, request.priority, True, latency, result.usage))
                            yield StreamDone(result)
                            return
                        yield event
                finally:
                    try:
                        closer = getattr(events, "aclose", None)
                        if closer is not None:
                            with anyio.CancelScope(shield=True):
                                await closer()
                    finally:
                        provider.release(index)
        except ModelError as error:
            self._verdict(member, error, True)
            self._emit(
                ModelCallRecord(ref, member, request.priority, True, self.clock.monotonic() - start, None, error.kind)
            )
            raise
        except BaseException:
            self.breakers[member].release()
            raise


async def _next_event(events: AsyncIterator[StreamEvent], member: str, limit: float) -> StreamEvent:
    """The next event of a provider stream within ``limit`` seconds, every failure classified."""
    try:
        with anyio.fail_after(limit):
            return await events.__anext__()
    except StopAsyncIteration:
        raise stream_cut(member, "the stream ended without a result") from None
    except TimeoutError:
        raise timed_out(member, limit, "stream") from None
    except ModelError:
        raise
    except Exception as exc:
        raise classify_exception(exc, member) from exc


def _seed(seed: int | str | None) -> int | None:
    """A stable integer seed from a group's own seed or the gateway's seed and the group name."""
    if seed is None or isinstance(seed, int):
        return seed
    return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
