"""The agent core: turns, the fact log, the event bus, messages, tools and the ``LanguageModel`` protocol.

Nothing here knows about the host, platforms or configuration files.
"""

from ishiki_host.core.agent import Agent, IfBusy
from ishiki_host.core.bus import BusEvent, EventBus
from ishiki_host.core.clock import Clock, FakeClock, SystemClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog, FsyncPolicy
from ishiki_host.core.hooks import AgentHooks, Block, Replace, StepDecision, Stop, ToolDecision
from ishiki_host.core.messages import ImagePart, Message, Part, TextPart, ToolCall
from ishiki_host.core.model import (
    LanguageModel,
    ModelRequest,
    ModelResult,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from ishiki_host.core.tools import Tool, ToolContext, ToolResult, TrustLevel
from ishiki_host.core.turns import (
    CallContext,
    Delivery,
    Recovery,
    Step,
    ToolCallRecord,
    Turn,
    TurnHandle,
    TurnOutcome,
    TurnSetup,
)

__all__ = [
    "Agent",
    "AgentHooks",
    "Block",
    "BusEvent",
    "CallContext",
    "Clock",
    "Delivery",
    "Entry",
    "EventBus",
    "FactLog",
    "FakeClock",
    "FsyncPolicy",
    "IfBusy",
    "ImagePart",
    "LanguageModel",
    "Message",
    "ModelRequest",
    "ModelResult",
    "Part",
    "Recovery",
    "Replace",
    "Step",
    "StepDecision",
    "Stop",
    "StreamDone",
    "StreamEvent",
    "SystemClock",
    "TextDelta",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallRecord",
    "ToolContext",
    "ToolDecision",
    "ToolResult",
    "ToolSpec",
    "TrustLevel",
    "Turn",
    "TurnHandle",
    "TurnOutcome",
    "TurnSetup",
    "Usage",
]
