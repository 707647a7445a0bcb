"""The model gateway: provider APIs over httpx, groups, circuit breakers, failover and call priority.

``Gateway(models_config, apis)`` is the entry; ``gateway.model(ref)`` gives a ``LanguageModel``.
"""

from ishiki_host.gateway.api import ModelAPI, ProviderClient
from ishiki_host.gateway.failover import FailoverPolicy
from ishiki_host.gateway.gateway import CallListener, Gateway, ModelCallRecord, ProbeResult
from ishiki_host.gateway.model import GatewayModel
from ishiki_host.gateway.report import models_report
from ishiki_host.gateway.scheduler import SchedulerConfig

__all__ = [
    "CallListener",
    "FailoverPolicy",
    "Gateway",
    "GatewayModel",
    "ModelAPI",
    "ModelCallRecord",
    "ProbeResult",
    "ProviderClient",
    "SchedulerConfig",
    "models_report",
]
