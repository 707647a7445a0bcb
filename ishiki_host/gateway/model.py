"""``GatewayModel``: the ``LanguageModel`` a profile gets from ``Gateway.model(ref)``.

It runs each call through the failover attempts of its policy: the group orders the members, the breakers
filter them, the gateway makes each member call. A stream fails over only until its first content event has
been passed on; after that an error reaches the caller, which has already shown part of the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING

from ishiki_host.core.model import ModelRequest, ModelResult, StreamDone, StreamEvent
from ishiki_host.errors import ModelError
from ishiki_host.gateway.failover import Attempts

if TYPE_CHECKING:
    from ishiki_host.gateway.failover import FailoverPolicy
    from ishiki_host.gateway.gateway import Gateway
    from ishiki_host.gateway.group import MemberGroup

__all__ = ["GatewayModel"]


class GatewayModel:
    """A group or a single member behind failover, breakers and the scheduler; ``name`` is the ref."""

    def __init__(self, gateway: Gateway, ref: str, group: MemberGroup, policy: FailoverPolicy):
        self.gateway = gateway
        self.ref = ref
        self.group = group
        self.policy = policy

    @property
    def name(self) -> str:
        """The ref this model was asked for (a group name or ``provider:modelId``)."""
        return self.ref

    @property
    def members(self) -> tuple[str, ...]:
        """The ``provider:modelId`` members behind this model."""
        return self.group.members

    def _attempts(self) -> Attempts:
        gateway = self.gateway
        return Attempts(self.policy, self.group, gateway.breakers, gateway.clock, gateway.rng)

    async def generate(self, request: ModelRequest) -> ModelResult:
        """Answer in one piece; ``result.model`` names the member that answered."""
        attempts = self._attempts()
        while True:
            member = await attempts.next()
            try:
                return await self.gateway._call_member(member, request, ref=self.ref)
            except ModelError as error:
                attempts.failed(member, error)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer as events; retried on another member only while no content event has been yielded."""
        attempts = self._attempts()
        while True:
            member = await attempts.next()
            started = False
            try:
                async with aclosing(self.gateway._stream_member(member, request, ref=self.ref)) as events:
                    async for event in events:
                        started = started or not isinstance(event, StreamDone)
                        yield event
                return
            except ModelError as error:
                if started:
                    raise
                attempts.failed(member, error)
