"""The one exception tree of Ishiki Host.

Configuration mistakes and run failures are different branches: a ``ConfigError`` is the operator's to fix
(it names the file, the key path and, for YAML, the line), a ``RunError`` happens while the host serves.
Third-party errors are wrapped at the boundary (``raise PluginLoadFailed(...) from exc``).

    IshikiError
    ├── ConfigError                     file, line, path, message
    │   ├── ConfigDirError              DIR is not a usable config directory
    │   ├── HostConfigInvalid           ishiki.yaml
    │   ├── ProfileInvalid              profiles/<id>/profile.yml
    │   ├── ModelsConfigInvalid         models.yaml
    │   ├── HeartbeatInvalid            heartbeats.json, a beat's cron expression, time zone or fields
    │   ├── SkillInvalid                skills/<name>/SKILL.md (the skill is skipped, the others load)
    │   ├── PluginNotFound              a named service has no entry point
    │   ├── PluginLoadFailed            an entry point raised on import or load
    │   └── PluginAPIIncompatible       a plugin declares an API major the host does not speak
    ├── ScaffoldError                   ``ishiki new`` refuses a bad name or a target that is not empty
    └── RunError
        ├── ModelError                  classified once, at the provider boundary (``kind``)
        │   ├── ModelUnavailable        connect error, timeout, 5xx, 408, 409         kind="unavailable"
        │   ├── ModelRateLimited        429, ``retry_after`` seconds when known       kind="rate_limited"
        │   ├── ContextLengthExceeded   413 or a provider's context-length message    kind="context_length"
        │   ├── ModelAuthError          401, 403                                      kind="auth"
        │   └── ModelBadRequest         any other 4xx, malformed bodies               kind="bad_request"
        ├── ToolError                   a tool failed; becomes an error result, the turn continues
        │   ├── ToolConflictError       two tools of one turn share a name
        │   └── ToolNotAllowed          the turn's trust level is below the tool's
        ├── ChannelError                a channel failed to start, send or receive (``fatal``: no restart)
        │   ├── ChannelNotReady         a connection did not report readiness in time (restarted)
        │   ├── ChannelUnavailable      the platform (or, from ``dispatch``, the host) cannot take it right now
        │   ├── EventRejected           ``dispatch`` will never take this event: set it aside, do not retry
        │   │   └── EventInvalid        a shaped inbound event breaks its contract (also a ValueError)
        │   └── IngressError            the host serves no HTTP (``http.listen``), or a mount's prefix is taken
        ├── HostPluginError             a host plugin cannot run (``fatal``: no restart)
        │   └── HostPluginUnavailable   a passing trouble, or not ready in time (restarted with back-off)
        ├── FactLogError                the fact log cannot be opened or written
        │   └── FactLogLocked           another process holds the log
        ├── ConfigDirLocked             another host runs this data directory (``pid``: its process)
        ├── HostNotAnswering            no running host answers on a data directory's control socket
        ├── AgentBusy                   ``send(..., if_busy="reject")`` while a turn runs
        ├── AgentStopped                the agent is not running (never started, or stopped)
        ├── CommandError                a slash command cannot do what was asked (shown to the sender)
        ├── RuntimeStartFailed          a runtime could not start (an engine, extension or its log failed)
        ├── ResourceError               a resource URL cannot be read (``code``)
        ├── StoreError                  the memory database cannot be opened or used
        │   ├── BeatInvalid             a beat made or edited by a host plugin has a bad field (``field``)
        │   ├── BeatRefused             that beat is managed (from a file) or does not exist
        │   └── PairingCodeError        a pairing code that cannot be approved (``reason``: unknown, expired...)
        ├── BeatRunFailed               a beat's turn failed, or nothing could run it (recorded, not raised on)
        ├── SandboxError                a codemode program failed, or hit a limit
        └── EngineError                 an engine could not do its part (logged; the engine falls back)
            ├── EngineStateInvalid      an engine's persisted state is malformed
            └── JudgeReplyInvalid       a wakeup judge answered something that is not the strict JSON asked
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = [
    "AgentBusy",
    "AgentStopped",
    "BeatInvalid",
    "BeatRefused",
    "BeatRunFailed",
    "ChannelError",
    "ChannelNotReady",
    "ChannelUnavailable",
    "CommandError",
    "ConfigDirError",
    "ConfigDirLocked",
    "ConfigError",
    "ContextLengthExceeded",
    "EngineError",
    "EngineStateInvalid",
    "EventInvalid",
    "EventRejected",
    "FactLogError",
    "FactLogLocked",
    "HeartbeatInvalid",
    "HostConfigInvalid",
    "HostNotAnswering",
    "HostPluginError",
    "HostPluginUnavailable",
    "IngressError",
    "IshikiError",
    "JudgeReplyInvalid",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelError",
    "ModelErrorKind",
    "ModelRateLimited",
    "ModelUnavailable",
    "ModelsConfigInvalid",
    "PairingCodeError",
    "PluginAPIIncompatible",
    "PluginLoadFailed",
    "PluginNotFound",
    "ProfileInvalid",
    "ResourceError",
    "RunError",
    "RuntimeStartFailed",
    "SandboxError",
    "ScaffoldError",
    "SkillInvalid",
    "StoreError",
    "ToolConflictError",
    "ToolError",
    "ToolNotAllowed",
    "model_error_for_kind",
]

ModelErrorKind = Literal["unavailable", "rate_limited", "context_length", "auth", "bad_request"]


class IshikiError(Exception):
    """Base of every error this host raises on purpose."""


class ConfigError(IshikiError):
    """A configuration mistake: names the file, the key path and, for YAML, the line.

    ``path`` is the key path as a dotted string (``channels.console:local[0]``); ``line`` is 1-based.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, path: str = ""):
        self.message = message
        self.file = file
        self.line = line
        self.path = path
        super().__init__(self.describe())

    def describe(self) -> str:
        """The error as one line: ``file:line: path: message``."""
        where = self.file or ""
        if where and self.line is not None:
            where = f"{where}:{self.line}"
        head = ": ".join(part for part in (where, self.path) if part)
        return f"{head}: {self.message}" if head else self.message

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape ``ishiki check --json`` prints."""
        return {"file": self.file, "line": self.line, "path": self.path, "message": self.message}


class ConfigDirError(ConfigError):
    """The directory given to a command is not a usable config directory."""


class HostConfigInvalid(ConfigError):
    """``ishiki.yaml`` is malformed or breaks its schema."""


class ProfileInvalid(ConfigError):
    """A profile directory is malformed or breaks its schema."""


class ModelsConfigInvalid(ConfigError):
    """``models.yaml`` is malformed, breaks its schema, or names something that does not exist."""


class HeartbeatInvalid(ConfigError):
    """A beat cannot be used: ``heartbeats.json`` is not a JSON array, or a beat's cron expression, time zone
    or fields are wrong. Beat tools turn it into an error result for the model."""


class SkillInvalid(ConfigError):
    """A ``skills/<name>/SKILL.md`` cannot be used: unreadable, malformed front matter, or a bad name."""


class PluginNotFound(ConfigError):
    """A service a profile names has no entry point in its group."""


class PluginLoadFailed(ConfigError):
    """An entry point exists but raised while it was imported or loaded."""


class PluginAPIIncompatible(ConfigError):
    """A plugin declares a plugin-API major version this host does not speak."""


class ScaffoldError(IshikiError):
    """``ishiki new`` refuses what it was asked to write: an invalid name, or a target that is not empty."""


class RunError(IshikiError):
    """A failure while the host serves."""


class ModelError(RunError):
    """A model call failed; ``kind`` is its class, decided once at the provider boundary."""

    kind: ModelErrorKind = "bad_request"

    def __init__(self, message: str, *, model: str | None = None, status: int | None = None):
        self.model = model
        self.status = status
        super().__init__(message)


class ModelUnavailable(ModelError):
    """The provider could not be reached, timed out, or answered 5xx/408/409."""

    kind: ModelErrorKind = "unavailable"


class ModelRateLimited(ModelError):
    """The provider answered 429; ``retry_after`` is the wait it asked for, in seconds, when it said."""

    kind: ModelErrorKind = "rate_limited"

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        status: int | None = 429,
        retry_after: float | None = None,
    ):
        self.retry_after = retry_after
        super().__init__(message, model=model, status=status)


class ContextLengthExceeded(ModelError):
    """The request does not fit the model's context window."""

    kind: ModelErrorKind = "context_length"


class ModelAuthError(ModelError):
    """The provider refused the credentials (401/403)."""

    kind: ModelErrorKind = "auth"


class ModelBadRequest(ModelError):
    """The provider refused the request (other 4xx), or answered something that cannot be parsed."""

    kind: ModelErrorKind = "bad_request"


_KINDS: dict[str, type[ModelError]] = {
    cls.kind: cls
    for cls in (ModelUnavailable, ModelRateLimited, ContextLengthExceeded, ModelAuthError, ModelBadRequest)
}


def model_error_for_kind(kind: str, message: str, *, model: str | None = None) -> ModelError:
    """Build the ``ModelError`` subclass for ``kind`` (used to rebuild errors from logs and fakes)."""
    return _KINDS.get(kind, ModelBadRequest)(message, model=model)


class ToolError(RunError):
    """A tool failed. The agent turns it into an error result and the turn continues."""


class ToolConflictError(ToolError):
    """Two tools offered in one turn share a name."""


class ToolNotAllowed(ToolError):
    """A tool was called above the trust level of the turn; refused when called."""


class ChannelError(RunError):
    """A channel failed to start, receive or send.

    ``fatal`` tells the host's channel supervisor what to do when a connection's ``run`` raises it: ``True``
    (the default) means restarting cannot help (a refused token): the channel is reported once and stopped,
    the rest of the host keeps serving. A subclass for a passing trouble (the platform cannot be reached) sets
    ``fatal = False``, and the supervisor restarts the connection with back-off.

    ``ChannelHost.dispatch`` raises one when it did not take an event, and the class tells the channel what to
    do with that input (it must never let one event hold back every later one):

    - ``EventRejected`` (``EventInvalid`` among them): retrying cannot help; set the event aside (log it,
      count it) and confirm past it;
    - a ``ChannelError`` whose ``fatal`` is false (``ChannelUnavailable``): the host cannot take input right
      now (it is stopping, the fact log cannot be written); retry with back-off, without counting it against
      the event;
    - anything else (another ``ChannelError``, or an exception the host did not expect): unknown; retry with
      back-off a bounded number of times, then set the event aside.
    """

    fatal: bool = True


class ChannelUnavailable(ChannelError):
    """The platform cannot be reached or answered a server error: passing, so the host restarts with back-off."""

    fatal = False


class ChannelNotReady(ChannelError):
    """A channel connection did not report readiness in time; the host restarts it with back-off."""

    fatal = False


class EventRejected(ChannelError):
    """``dispatch`` will never take this event as it is: retrying cannot fix it (see ``ChannelError``).

    A channel sets the input aside (logged, counted) and confirms past it, so later input flows.
    """


class IngressError(ChannelError):
    """An ``HttpMount`` cannot be entered: the host serves no HTTP (``http.listen`` of ``ishiki.yaml`` is not
    set, or its address could not be bound), or another holder has the prefix. Fatal: restarting the channel
    cannot fix its configuration, so its supervisor reports it once and stops it."""


class HostPluginError(RunError):
    """A host plugin (group ``ishiki.host``) cannot run.

    ``fatal`` tells the host's supervisor what to do when the plugin's ``run`` raises it, as for channels:
    ``True`` (the default) means restarting cannot help (a port or key the operator must fix): the plugin is
    reported in one line and stays stopped, the rest of the host keeps serving. ``HostPluginUnavailable``
    (``fatal`` false) is a passing trouble: one line, then a restart with back-off.
    """

    fatal: bool = True


class HostPluginUnavailable(HostPluginError):
    """A host plugin's passing trouble (or it was not ready in time): restarted with back-off."""

    fatal = False


class EventInvalid(EventRejected, ValueError):
    """A channel shaped an inbound event that breaks its contract (a bad channel id, a missing sender...).

    Also raised when a stored event (a fact-log ``data.source``) cannot be read back.
    """


class FactLogError(RunError):
    """A fact log cannot be opened or written."""


class FactLogLocked(FactLogError):
    """Another process holds the fact log's exclusive lock."""


class ConfigDirLocked(RunError):
    """Another host holds the lock of this data directory; ``pid`` is its process (``None`` if unknown)."""

    def __init__(self, message: str, *, path: str, pid: int | None = None):
        self.path = path
        self.pid = pid
        super().__init__(message)


class HostNotAnswering(RunError):
    """Nothing answered on a data directory's control socket (``ishiki status``): no host runs there, or it
    cannot be reached; the message says which."""


class AgentBusy(RunError):
    """An entry was sent with ``if_busy="reject"`` while the agent was running a turn."""


class AgentStopped(RunError):
    """The agent is not running: it was never started with ``tg.start(agent.run)``, or it was stopped."""


class CommandError(RunError):
    """A slash command cannot do what was asked (bad arguments, an unknown name); the message is the reply."""


class RuntimeStartFailed(RunError):
    """A runtime could not start: an engine's or extension's ``create`` raised, or its fact log failed.

    The input that asked for it is not taken (``dispatch`` raises a plain ``ChannelError``): a channel retries
    it a bounded number of times, then sets it aside; the host keeps serving.
    """


class ResourceError(RunError):
    """A resource URL cannot be read. ``code`` is stable (``invalid_resource_uri``, ``unknown_scheme``, ...)."""

    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__(f"{code}: {message}")


class StoreError(RunError):
    """The memory database cannot be opened, migrated or used."""


class BeatInvalid(StoreError):
    """A beat given to ``HostPluginContext.heartbeats`` has a bad field: ``field`` names it (``cron``,
    ``timezone``, ``target``, ``text``, ``id``, ``type``) so a form can show the error beside it."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


class BeatRefused(StoreError):
    """A change to a beat that may not be made: it is managed (``heartbeats.json`` or the host's own, edited
    in its file), or there is no beat by that id."""


class PairingCodeError(StoreError):
    """A DM pairing code that cannot be approved: ``reason`` is ``unknown`` (no request has it), ``approved``
    (it was used before) or ``expired``; the message says it in words, with the code (and when it expired)."""

    def __init__(self, code: str, reason: Literal["unknown", "expired", "approved"], message: str):
        self.code = code
        self.reason = reason
        super().__init__(message)


class BeatRunFailed(RunError):
    """A beat's run failed: its turn failed, was aborted or dropped, or no runtime or model could run it.

    The heartbeat scheduler records it as the run's outcome; the beat runs again at its next slot.
    """


class SandboxError(RunError):
    """A codemode program failed or hit a limit; the message says which."""


class EngineError(RunError):
    """An engine could not do its part; the engine logs it and falls back to its safe behaviour."""


class EngineStateInvalid(EngineError):
    """An engine's persisted state is malformed (the engine starts fresh and logs why)."""


class JudgeReplyInvalid(EngineError):
    """A wakeup judge's reply is not the strict JSON that was asked for (the engine waits)."""
