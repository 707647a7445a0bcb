"""The runtime's own agent hooks, composed after the engines' hooks.

- **Trust in the window.** Content above the turn's level (a higher turn's tool results, an owner's message
  from another chat, a summary covering either) reaches the model as a placeholder (``runtime.redaction``).
- **Trust when a tool is called.** Before each step the tools above the turn's trust level are removed (a message that
  joined the turn may have lowered it), and a call to such a tool is blocked even if a model names it.
- **Large outputs.** A tool result longer than ``resources.artifactThresholdChars`` is archived as
  ``artifact://<tool>/<id>.txt`` with the tool's trust level (turns below it cannot read it); the model gets
  its first and last part and the URL to ``read`` the rest.
- **Images.** ``asset://`` image parts become ``data:`` URLs for models that take images, text otherwise.
- **The stop rule.** ``finish`` ends the turn (``finish``), so does ``wait`` (``wait``) and a step whose only
  calls were successful sends (``sent``).
- **reply_with_text.** Text the model wrote without calling any tool is sent as one message (profile option
  ``reply_with_text``, default on), then recorded as a ``custom`` entry (``kind: reply_with_text``). Nothing
  replays it after a crash: the assistant message holds the text, so it is never sent twice. When the step
  streamed a draft of it (``runtime.drafts``), the message is that draft's ``finish_draft``; a step that ends
  any other way drops its draft (``tools``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ishiki_host.core.hooks import AgentHooks, Block, Stop
from ishiki_host.core.tools import ToolResult, trust_allows
from ishiki_host.runtime.redaction import Redaction

if TYPE_CHECKING:
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.messages import Message, ToolCall
    from ishiki_host.core.turns import Step, ToolCallRecord
    from ishiki_host.plugins.runtime_api import TurnView
    from ishiki_host.resources import ArtifactStore
    from ishiki_host.runtime.drafts import DraftRelay, OpenDraft
    from ishiki_host.runtime.images import ImageResolver
    from ishiki_host.runtime.outbound import RuntimeOutbox

__all__ = ["RuntimeHooks", "stop_reason"]

logger = logging.getLogger(__name__)

_NOT_ARCHIVED = frozenset({"read"})  # read pages are already bounded; archiving one would only nest URLs


def _ok(record: ToolCallRecord) -> bool:
    return record.status == "ran" and not record.result.is_error


def stop_reason(step: Step) -> str | None:
    """``finish``, ``wait`` or ``sent`` when the step ends the turn by the stop rule, else ``None``."""
    calls = step.calls
    if any(r.call.name == "finish" and r.status == "ran" for r in calls):
        return "finish"
    if any(r.call.name == "wait" and _ok(r) for r in calls):
        return "wait"
    if calls and all(r.tool is not None and r.tool.kind == "send" and _ok(r) for r in calls):
        return "sent"
    return None


class RuntimeHooks(AgentHooks):
    """See the module docstring. ``turn`` reads the running turn; ``admit_joined`` counts the inbound messages
    that joined it (they may lower its trust); ``text_is_reply`` is false when the toolcall engine says the
    text its model writes is not meant for the person; ``drafts`` holds the steps' streamed drafts."""

    def __init__(
        self,
        profile: Profile,
        turn: Callable[[], TurnView],
        log: FactLogProtocol,
        outbox: RuntimeOutbox,
        artifacts: ArtifactStore,
        images: ImageResolver,
        admit_joined: Callable[[], None],
        *,
        text_is_reply: bool = True,
        drafts: DraftRelay | None = None,
    ):
        self._profile = profile
        self._turn = turn
        self._log = log
        self._outbox = outbox
        self._artifacts = artifacts
        self._images = images
        self._admit_joined = admit_joined
        self._text_is_reply = text_is_reply
        self._drafts = drafts
        self._redaction = Redaction()  # hide_above, kept from step to step; given back when the runtime cools
        log.on_shrink(self._redaction.clear)

    async def prepare_step(self, step: Step) -> None:
        """Drop a draft an earlier step left open; let joined messages lower the trust level, then drop the
        tools above it."""
        if self._drafts is not None:
            await self._drafts.drop_stale()
        if step.index > 1:
            self._admit_joined()
        trust = self._turn().trust
        setup = step.turn.setup
        if setup is not None and setup.trust != trust:
            step.turn.setup = dataclasses.replace(setup, trust=trust)  # what the calls' contexts say
        step.tools[:] = [tool for tool in step.tools if trust_allows(trust, tool.trust)]

    async def before_tool_call(self, call: ToolCall, step: Step) -> Block | None:
        """Refuse a tool above the turn's trust level (even if an engine offered it)."""
        tool = step.tool(call.name)
        trust = self._turn().trust
        if tool is not None and not trust_allows(trust, tool.trust):
            return Block(f"{call.name} needs trust {tool.trust}; this turn is {trust}")
        return None

    async def after_tool_call(self, call: ToolCall, result: ToolResult, step: Step) -> ToolResult:
        """Archive a result longer than the profile's threshold."""
        limit = self._profile.resources.artifact_threshold_chars
        if result.is_error or call.name in _NOT_ARCHIVED or len(result.content) <= limit:
            return result
        tool = step.tool(call.name)
        try:
            archived = await self._artifacts.archive_if_large(
                call.name,
                result.content,
                original=_original(result),
                limit=limit,
                trust=tool.trust if tool is not None else "trusted",
            )
        except Exception:
            logger.exception("could not archive the output of %s; passing it on whole", call.name)
            return result
        return ToolResult(archived.content, result.is_error, result.data)

    async def transform_entries(self, entries: list[Entry], step: Step) -> list[Entry]:
        """Content above the turn's level becomes a placeholder (``runtime.redaction``)."""
        turn = self._turn()
        chats = None if self._profile.mode == "channel" else turn.targets()
        return self._redaction(entries, turn.trust, chats)

    async def transform_messages(self, messages: list[Message], step: Step) -> list[Message]:
        """Resolve image parts for the model."""
        return await self._images.resolve(messages)

    async def on_step_finish(self, step: Step) -> Stop | None:
        """The stop rule; ``reply_with_text`` for a step that called no tool."""
        draft = self._drafts.take(step) if self._drafts is not None else None
        if draft is not None and not draft.open:
            await draft.drop("tools")  # a tool call took it back already: wait until that is done
            draft = None
        reason = stop_reason(step)
        result = step.result
        replies = reason is None and result is not None and not result.tool_calls and bool(result.text.strip())
        if replies and result is not None and self._replies_with_text():
            await self._reply_with_text(step, result.text, draft)
            draft = None
        if draft is not None:
            await draft.drop("tools")
        return Stop(reason) if reason is not None else None

    def _replies_with_text(self) -> bool:
        """The profile sends plain text, and the toolcall engine says its text is meant for the person."""
        return self._profile.reply_with_text and self._text_is_reply

    async def _reply_with_text(self, step: Step, text: str, draft: OpenDraft | None) -> None:
        outbox = self._outbox
        target = outbox.default_target() if outbox.needs_target else None
        outcome = await outbox.send([text], target, None, draft=draft)
        record: dict[str, Any] = {"kind": "reply_with_text", "ids": list(outcome.ids)}
        if step.appended:
            record["of"] = step.appended[0].id
        if not outcome.ok:
            record["error"] = outcome.error
            logger.warning("turn %s: the text reply was not sent: %s", step.turn.number, outcome.error)
        await self._log.append("custom", record, turn=step.turn.number)


def _original(result: ToolResult) -> Any:
    """The structured value to keep beside an archived text (when it is more than the text itself)."""
    return None if result.data is None or isinstance(result.data, str) else result.data
