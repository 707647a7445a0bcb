"""The host's models: one stable model object per profile, and one-line notices when a group fails over.

``ModelSlot`` is the model object a profile's runtimes share. It forwards to the gateway's ``GatewayModel``
for the profile's reference and failover policy; when ``models.yaml`` changes, the host builds a new gateway
and points the slots of untouched profiles at it, so their runtimes keep running.

``FailoverNotices`` is a gateway call listener that says once, in one line, when a member stops answering
and another member answers for its group instead (``model default: local:llama3.2 is not answering
(unavailable); demo:demo answers instead``), and once when it answers again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ishiki_host.gateway.failover import FailoverPolicy

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.model import LanguageModel, ModelRequest, ModelResult, StreamEvent
    from ishiki_host.gateway.gateway import Gateway, ModelCallRecord

__all__ = ["FailoverNotices", "ModelSlot", "failover_policy"]

logger = logging.getLogger("ishiki_host.models")


def failover_policy(profile: Profile) -> FailoverPolicy:
    """The gateway failover policy of a profile's ``failover`` section."""
    section = profile.document.get("failover")
    if isinstance(section, dict):
        return FailoverPolicy.from_mapping(section)
    config = profile.failover
    return FailoverPolicy(attempts=config.attempts, backoff_ms=config.backoff_ms, failover_on=config.failover_on)


class ModelSlot:
    """A profile's model object: forwards to the current gateway's model (see the module docstring)."""

    def __init__(self, target: LanguageModel):
        self.target = target

    @property
    def name(self) -> str:
        """The reference (a group name or ``provider:modelId``)."""
        return self.target.name

    async def generate(self, request: ModelRequest) -> ModelResult:
        """The current target's answer."""
        return await self.target.generate(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The current target's events."""
        async for event in self.target.stream(request):
            yield event

    def __getattr__(self, name: str) -> Any:
        # ``members``, ``ref``... of the gateway model, for engines that look
        return getattr(self.target, name)


class FailoverNotices:
    """A gateway call listener (see the module docstring)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._failing: dict[str, str] = {}  # member -> error kind
        self._announced: set[tuple[str, str]] = set()

    def __call__(self, record: ModelCallRecord) -> None:
        if record.ref.startswith("probe:"):
            return
        if record.error_kind is not None:
            self._failing.setdefault(record.member, record.error_kind)
            return
        if record.member in self._failing:
            del self._failing[record.member]
            announced = {pair for pair in self._announced if pair[0] == record.member}
            if announced:
                self._announced -= announced
                logger.warning("model %s answers again", record.member)
            return
        members = self._gateway.config.resolve(record.ref) or ()
        for member in members:
            if member == record.member:
                break
            kind = self._failing.get(member)
            if kind is not None and (member, record.member) not in self._announced:
                self._announced.add((member, record.member))
                logger.warning(
                    "model %s: %s is not answering (%s); %s answers instead", record.ref, member, kind, record.member
                )
