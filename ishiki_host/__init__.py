"""Ishiki Host: run LLM personas in chat channels.

This module is the public face plugins are written against; everything under it is internal. A channel, an
engine, an extension, a model API or a host plugin needs nothing else: the plugin base classes and
``hookimpl``, the contract of a runtime (``RuntimeContext``, ``HostServices``, ``Sessions``, ``Command``,
``Reminders``), the channel contract (``ChannelHost``, ``IshikiEvent``, ``SendResult``, ``split_message``), the
host-plugin contract (``HostPluginContext``, ``HostPluginInstance``, ``ProfileStatus``), the HTTP ingress a
webhook channel or a host plugin serves on (``HttpMount``, ``HttpRequest``, ``HttpResponse``, ``HttpStream``,
``sse_event``, and ``HttpWebSocket`` for a platform that connects and stays), the model's Markdown as marked
text for a channel's renderer (``parse_markdown``, ``Marked``, ``cut_marked``), the agent core (messages,
models, tools, hooks, the fact log), resources, the model-API helpers and the config loaders. Test helpers are
``ishiki_host.testing``; errors are ``ishiki_host.errors``. ``__all__`` is exact and sorted, and every name's
``__module__`` is ``ishiki_host`` (tests keep both so); see ``docs/plugins.md``.
"""

import types

from ishiki_host import errors
from ishiki_host._version import __version__
from ishiki_host.addresses.ids import ChannelKind, Target, channel_id, parse_channel_id, parse_sid
from ishiki_host.addresses.keys import RuntimeKey, RuntimeMode
from ishiki_host.channels.base import (
    Channel,
    ChannelConnection,
    ChannelHost,
    Delivery,
    Draft,
    DraftEnd,
    DraftingConnection,
    Finding,
    FindingLevel,
    InboundAttachment,
    OutboundFile,
    SendResult,
    TurnActivity,
    TurnActivityState,
)
from ishiki_host.channels.events import Attachment, EventKind, IshikiEvent, Quote, User
from ishiki_host.channels.inbound import is_inbound, source_target
from ishiki_host.channels.layout import cut_marked
from ishiki_host.channels.markup import Mark, MarkdownStyle, Marked, MarkKind, parse_markdown
from ishiki_host.channels.split import split_message, utf16_len
from ishiki_host.config.envvars import expand_vars
from ishiki_host.config.jsonio import parse_json
from ishiki_host.config.keys import KeyRename, Normalized, normalize_keys
from ishiki_host.config.models import (
    CircuitBreakerConfig,
    GroupConfig,
    ModelPrice,
    ModelsConfig,
    ModelSpec,
    ProviderConfig,
)
from ishiki_host.config.profile_types import Profile
from ishiki_host.config.reference import schema_table
from ishiki_host.config.services import PLUGIN_API_VERSION, Plugin, PluginConfig
from ishiki_host.config.validation import did_you_mean, schema_problems, with_defaults
from ishiki_host.config.yamlio import YamlDocument, format_path, parse_yaml, read_text
from ishiki_host.core.agent import Agent
from ishiki_host.core.backoff import Backoff, RandomSource
from ishiki_host.core.bus import BusEvent, BusPhase, EventBus, EventValue
from ishiki_host.core.clock import Clock, FakeClock, SystemClock, run_with_deadline
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.factlog_contract import FactLogProtocol
from ishiki_host.core.hooks import AgentHooks, Block, Replace, StepDecision, Stop, ToolDecision
from ishiki_host.core.levels import content_level, summary_readers
from ishiki_host.core.messages import ImagePart, Message, Part, TextPart, ToolCall
from ishiki_host.core.model import (
    LanguageModel,
    ModelRequest,
    ModelResult,
    Priority,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from ishiki_host.core.shared import SharedObjects
from ishiki_host.core.strict_json import loads_strict
from ishiki_host.core.tokens import Estimator, estimate_tokens, host_estimator
from ishiki_host.core.tools import Tool, ToolContext, ToolHandler, ToolResult, TrustLevel, trust_allows
from ishiki_host.core.turns import Step, ToolCallRecord, Turn, TurnHandle, TurnOutcome, TurnStatus
from ishiki_host.core.window import Projection, project_entries, select_session_window
from ishiki_host.gateway.api import ModelAPI, ProviderClient
from ishiki_host.gateway.attribution import usage_purpose
from ishiki_host.gateway.classify import classify_http, classify_transport, malformed
from ishiki_host.ingress.types import (
    HttpHandler,
    HttpMount,
    HttpRequest,
    HttpResponse,
    HttpStream,
    HttpWebSocket,
    WebSocketHandler,
    sse_event,
)
from ishiki_host.jsontypes import Json
from ishiki_host.plugins.base import CheckContext, ContextEngine, Extension, ToolcallEngine, WakeupEngine
from ishiki_host.plugins.commands import Command, CommandContext, CommandHandler, CommandTable, HostView
from ishiki_host.plugins.hookspecs import hookimpl
from ishiki_host.plugins.hostplugin import (
    HeartbeatAdmin,
    HostPlugin,
    HostPluginContext,
    HostPluginInstance,
    InstalledPlugin,
    LogLine,
    LogTail,
    PairingAdmin,
    ProfileStatus,
    RuntimeLogView,
)
from ishiki_host.plugins.logview import FactLogView
from ishiki_host.plugins.reminders import REMINDERS, Reminder, Reminders, ScheduledReminder
from ishiki_host.plugins.runtime_api import (
    ContextEngineInstance,
    Dispose,
    RuntimeContext,
    ToolcallEngineInstance,
    TurnReport,
    TurnView,
    WakeupEngineInstance,
)
from ishiki_host.plugins.services import HostServices, RuntimeDirectory, ServiceKey
from ishiki_host.plugins.validate import compatible_api
from ishiki_host.resources import (
    AssetFetcher,
    AssetFetchers,
    Blob,
    ReadResult,
    Resource,
    ResourceCenter,
    ResourceRequest,
    ResourceURL,
    SchemeHandler,
    format_resource_url,
    parse_resource_url,
)
from ishiki_host.resources.sniff import guess_media_type
from ishiki_host.sessions.manager import CarriedSummary, SessionChange, Sessions, SessionSize
from ishiki_host.store.memory_store import MemoryStore
from ishiki_host.store.repos.beat_types import Beat, BeatRun, BeatSpec, BeatTarget, BeatType
from ishiki_host.store.repos.memory_types import Memory, MemoryDraft, MemoryHit, MemoryScope, MemoryType, ScopeMode
from ishiki_host.store.repos.pairing import PairedSender, PairingRequest
from ishiki_host.store.repos.people import PersonProfile
from ishiki_host.store.repos.plugin_settings import PluginKind
from ishiki_host.store.repos.usage import CallTotal, ToolTotal, UsagePoint, UsageSum, UsageTotals, usage_cost
from ishiki_host.tools.kernel import OPEN_TOOLS
from ishiki_host.tools.read import render_read_result

__all__ = [
    "OPEN_TOOLS",
    "PLUGIN_API_VERSION",
    "REMINDERS",
    "Agent",
    "AgentHooks",
    "AssetFetcher",
    "AssetFetchers",
    "Attachment",
    "Backoff",
    "Beat",
    "BeatRun",
    "BeatSpec",
    "BeatTarget",
    "BeatType",
    "Blob",
    "Block",
    "BusEvent",
    "BusPhase",
    "CallTotal",
    "CarriedSummary",
    "Channel",
    "ChannelConnection",
    "ChannelHost",
    "ChannelKind",
    "CheckContext",
    "CircuitBreakerConfig",
    "Clock",
    "Command",
    "CommandContext",
    "CommandHandler",
    "CommandTable",
    "ContextEngine",
    "ContextEngineInstance",
    "Delivery",
    "Dispose",
    "Draft",
    "DraftEnd",
    "DraftingConnection",
    "Entry",
    "Estimator",
    "EventBus",
    "EventKind",
    "EventValue",
    "Extension",
    "FactLog",
    "FactLogProtocol",
    "FactLogView",
    "FakeClock",
    "Finding",
    "FindingLevel",
    "GroupConfig",
    "HeartbeatAdmin",
    "HostPlugin",
    "HostPluginContext",
    "HostPluginInstance",
    "HostServices",
    "HostView",
    "HttpHandler",
    "HttpMount",
    "HttpRequest",
    "HttpResponse",
    "HttpStream",
    "HttpWebSocket",
    "ImagePart",
    "InboundAttachment",
    "InstalledPlugin",
    "IshikiEvent",
    "Json",
    "KeyRename",
    "LanguageModel",
    "LogLine",
    "LogTail",
    "Mark",
    "MarkKind",
    "MarkdownStyle",
    "Marked",
    "Memory",
    "MemoryDraft",
    "MemoryHit",
    "MemoryScope",
    "MemoryStore",
    "MemoryType",
    "Message",
    "ModelAPI",
    "ModelPrice",
    "ModelRequest",
    "ModelResult",
    "ModelSpec",
    "ModelsConfig",
    "Normalized",
    "OutboundFile",
    "PairedSender",
    "PairingAdmin",
    "PairingRequest",
    "Part",
    "PersonProfile",
    "Plugin",
    "PluginConfig",
    "PluginKind",
    "Priority",
    "Profile",
    "ProfileStatus",
    "Projection",
    "ProviderClient",
    "ProviderConfig",
    "Quote",
    "RandomSource",
    "ReadResult",
    "Reminder",
    "Reminders",
    "Replace",
    "Resource",
    "ResourceCenter",
    "ResourceRequest",
    "ResourceURL",
    "RuntimeContext",
    "RuntimeDirectory",
    "RuntimeKey",
    "RuntimeLogView",
    "RuntimeMode",
    "ScheduledReminder",
    "SchemeHandler",
    "ScopeMode",
    "SendResult",
    "ServiceKey",
    "SessionChange",
    "SessionSize",
    "Sessions",
    "SharedObjects",
    "Step",
    "StepDecision",
    "Stop",
    "StreamDone",
    "StreamEvent",
    "SystemClock",
    "Target",
    "TextDelta",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallRecord",
    "ToolContext",
    "ToolDecision",
    "ToolHandler",
    "ToolResult",
    "ToolSpec",
    "ToolTotal",
    "ToolcallEngine",
    "ToolcallEngineInstance",
    "TrustLevel",
    "Turn",
    "TurnActivity",
    "TurnActivityState",
    "TurnHandle",
    "TurnOutcome",
    "TurnReport",
    "TurnStatus",
    "TurnView",
    "Usage",
    "UsagePoint",
    "UsageSum",
    "UsageTotals",
    "User",
    "WakeupEngine",
    "WakeupEngineInstance",
    "WebSocketHandler",
    "YamlDocument",
    "__version__",
    "channel_id",
    "classify_http",
    "classify_transport",
    "compatible_api",
    "content_level",
    "cut_marked",
    "did_you_mean",
    "errors",
    "estimate_tokens",
    "expand_vars",
    "format_path",
    "format_resource_url",
    "guess_media_type",
    "hookimpl",
    "host_estimator",
    "is_inbound",
    "loads_strict",
    "malformed",
    "normalize_keys",
    "parse_channel_id",
    "parse_json",
    "parse_markdown",
    "parse_resource_url",
    "parse_sid",
    "parse_yaml",
    "project_entries",
    "read_text",
    "render_read_result",
    "run_with_deadline",
    "schema_problems",
    "schema_table",
    "select_session_window",
    "source_target",
    "split_message",
    "sse_event",
    "summary_readers",
    "trust_allows",
    "usage_cost",
    "usage_purpose",
    "utf16_len",
    "with_defaults",
]


def _claim_public_names() -> None:
    """Show the face's classes and functions as ``ishiki_host.X`` (in reprs, docs and tracebacks), where they
    are to be imported from, not the internal module that defines them (as httpx does). Type aliases and
    what other libraries define (``Json`` is ``typing.Any``) keep their own."""
    for name in __all__:
        value = globals()[name]
        own = str(getattr(value, "__module__", "")).startswith(__name__ + ".")
        if own and (isinstance(value, type | types.FunctionType) or hasattr(value, "__wrapped__")):
            value.__module__ = __name__


_claim_public_names()
