"""``OneBotExtension`` (entry point ``onebot`` of ``ishiki.ext``): the ``onebot://`` scheme in a runtime.

A profile enables it with ``extends: {onebot: {}}``; each of its runtimes then reads ``onebot://`` URLs
(``ishiki_channel_onebot.scheme``) through the accounts this host runs (``bots.ONEBOT_BOTS``). ``trust`` is
the lowest trust level a turn needs to read them; like every extension scheme it is ``trusted`` unless the
profile says otherwise (a forwarded message may hold what its group said, so ``untrusted`` is a choice).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host import Extension, TrustLevel, hookimpl

from ishiki_channel_onebot.bots import ONEBOT_BOTS, OneBotBots
from ishiki_channel_onebot.scheme import SCHEME, OneBotResources

if TYPE_CHECKING:
    from ishiki_host import RuntimeContext

__all__ = ["CONFIG_SCHEMA", "OneBotExtension", "OneBotScheme"]

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "trust": {
            "enum": ["untrusted", "trusted", "owner"],
            "default": "trusted",
            "description": "The lowest trust level a turn needs to read onebot:// resources.",
        },
    },
}


class OneBotScheme:
    """One runtime's ``onebot://`` (see the module docstring)."""

    def __init__(self, ctx: RuntimeContext, trust: TrustLevel):
        self._ctx = ctx
        self._trust = trust

    @hookimpl
    def ishiki_attach(self, runtime: RuntimeContext) -> Callable[[], None]:
        """Serve ``onebot://`` in the runtime's resource center until the runtime stops."""
        bots = self._ctx.services.setdefault(ONEBOT_BOTS, OneBotBots)
        handler = OneBotResources(bots, self._ctx.home / "onebot")
        deregister: Callable[[], None] = runtime.resources.register(SCHEME, handler, owner="onebot", trust=self._trust)
        return deregister

    @hookimpl
    def ishiki_instructions(self) -> str:
        """How to read the platform's media and forwarded messages."""
        return (
            "## QQ resources\n"
            "Images, voice records and forwarded messages from QQ can be read with the read tool as "
            "onebot://<bot>/image/<file>, onebot://<bot>/record/<file>, onebot://<bot>/forward/<id> "
            "(the messages name them). Mention someone by writing @ and their QQ number (@123456)."
        )

    @hookimpl
    def ishiki_status(self) -> Sequence[str]:
        """One line: who may read the scheme."""
        return [f"onebot: onebot:// readable at trust {self._trust} and above"]


class OneBotExtension(Extension):
    """The ``onebot://`` scheme (and a prompt section saying how to mention and read media)."""

    config_schema: ClassVar[Mapping[str, Any]] = CONFIG_SCHEMA

    def create(self, ctx: RuntimeContext, config: Mapping[str, Any]) -> OneBotScheme:
        """The scheme of one runtime."""
        return OneBotScheme(ctx, config.get("trust", "trusted"))
