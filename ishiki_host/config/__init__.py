"""Configuration: ``ishiki.yaml``, ``models.yaml`` and profiles, loaded with errors that name file, key and line.

The loaders never import the plugin layer: they ask a ``ServiceCatalog`` (the plugin registry) for the schemas
of installed services. ``ishiki_host.plugins.load_config_dir`` puts everything together.
"""

from ishiki_host.config.claims import ClaimIndex, Claims, ClaimSet, Pattern, compile_claims, overlaps
from ishiki_host.config.host import (
    AttachmentSettings,
    HeartbeatSettings,
    HostConfig,
    SchedulerSettings,
    load_host_config,
)
from ishiki_host.config.models import CircuitBreakerConfig, GroupConfig, ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.config.models_loader import load_models
from ishiki_host.config.profile import ProfileLoad, load_profile
from ishiki_host.config.profile_types import (
    CodemodeConfig,
    EngineChoice,
    ExtensionUse,
    FailoverConfig,
    Profile,
    ResourcesConfig,
    SessionConfig,
    ToolsearchConfig,
    TrustConfig,
    TypingConfig,
)
from ishiki_host.config.services import ServiceCatalog, ServiceSpec

__all__ = [
    "AttachmentSettings",
    "CircuitBreakerConfig",
    "ClaimIndex",
    "ClaimSet",
    "Claims",
    "CodemodeConfig",
    "EngineChoice",
    "ExtensionUse",
    "FailoverConfig",
    "GroupConfig",
    "HeartbeatSettings",
    "HostConfig",
    "ModelSpec",
    "ModelsConfig",
    "Pattern",
    "Profile",
    "ProfileLoad",
    "ProviderConfig",
    "ResourcesConfig",
    "SchedulerSettings",
    "ServiceCatalog",
    "ServiceSpec",
    "SessionConfig",
    "ToolsearchConfig",
    "TrustConfig",
    "TypingConfig",
    "compile_claims",
    "load_host_config",
    "load_models",
    "load_profile",
    "overlaps",
]
