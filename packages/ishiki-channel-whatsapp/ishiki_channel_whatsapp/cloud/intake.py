"""What the cloud backend does with the messages of one notification: recognise repeats, dispatch, set aside,
and say whether the notification may be answered 200.

Meta sends a notification again until it gets a 200, so a 200 is the confirmation, and it is given only once
every message of the notification is taken: durable in the host (``dispatch`` returned), a repeat, or set
aside. In order, for each message:

- its ``wamid`` is in ``SeenIds`` (taken before, restarts included) or is one this number sent: skipped;
- it cannot be shaped (``EventInvalid``): set aside at once, as malformed;
- ``dispatch`` raised ``EventRejected``: set aside at once;
- ``dispatch`` raised a ``ChannelError`` whose ``fatal`` is false (the host cannot take input now: it is
  stopping, its disk is full): the notification is answered 503, the try not counted, and Meta's
  redelivery tries again;
- ``dispatch`` raised anything else: the try is counted (``AccountState.failing``, saved, so restarts do not
  reset it) and the notification answered 503; at the account's ``dispatch_tries``-th failure the message is
  set aside instead, so one poison message never holds back the others of its notification for seven days.

Setting aside logs one line (message id and why), counts it (``setAside`` and ``lastSetAside`` of the
connection's ``status()``), keeps the message in ``whatsapp-set-aside.jsonl``, and adds its id to
``SeenIds`` so a redelivery is not set aside twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ishiki_host.errors import ChannelError, EventInvalid, EventRejected

from ishiki_channel_whatsapp.aside import SetAsideFile
from ishiki_channel_whatsapp.state import FAILING_KEPT

if TYPE_CHECKING:
    from ishiki_host import ChannelHost, IshikiEvent, Json

    from ishiki_channel_whatsapp.cloud.payload import Change
    from ishiki_channel_whatsapp.cloud.shaping import Shaped, Shaper
    from ishiki_channel_whatsapp.config import CloudAccount
    from ishiki_channel_whatsapp.seen import SeenIds
    from ishiki_channel_whatsapp.state import AccountState, StateStore

__all__ = ["Intake"]


class Intake:
    """Takes the messages of one running account (see the module docstring).

    ``own(wamid)`` tells a message this number sent (never dispatched); ``on_arrival(event)`` is told of each
    message just before it is dispatched (the connection remembers the chat's newest message for read
    receipts: the host may start its turn, and show typing, before ``dispatch`` returns).
    """

    def __init__(
        self,
        host: ChannelHost,
        account: CloudAccount,
        shaper: Shaper,
        seen: SeenIds,
        store: StateStore,
        state: AccountState,
        *,
        own: Callable[[str], bool],
        on_arrival: Callable[[IshikiEvent], None] = lambda event: None,
    ):
        self._host = host
        self._account = account
        self._shaper = shaper
        self._seen = seen
        self._store = store
        self.state = state
        self._own = own
        self._on_arrival = on_arrival
        self._log = host.logger
        self._aside = SetAsideFile(host.state_dir, logger=self._log)

    async def take(self, change: Change) -> bool:
        """Take every message of ``change`` in order; False when one must be delivered again (answer 503)."""
        for message in change.messages:
            wamid = message.get("id") if isinstance(message, dict) else None
            if isinstance(wamid, str) and (wamid in self._seen or self._own(wamid)):
                self._log.debug("whatsapp: message %s came again (or is our own); not dispatched", wamid)
                continue
            try:
                shaped = self._shaper.shape(message, change)
            except EventInvalid as exc:
                await self.set_aside(str(wamid or "(no id)"), message, f"malformed message: {exc}", malformed=True)
                continue
            if not await self._dispatch(shaped):
                return False
        return True

    async def _dispatch(self, shaped: Shaped) -> bool:
        event = shaped.event
        self._on_arrival(event)
        try:
            await self._host.dispatch(event, shaped.attachments)
        except EventRejected as exc:
            await self.set_aside(event.message_id, shaped.raw, f"the host rejected it ({exc})")
            return True
        except Exception as exc:
            return await self._failed(shaped, exc)
        await self._seen.add(event.message_id)
        if self.state.failing.pop(event.message_id, None) is not None:
            await self._store.save(self.state)
        return True

    async def _failed(self, shaped: Shaped, exc: Exception) -> bool:
        """Count a failed try (unless the host called it passing); set aside after the last one."""
        wamid, error = shaped.event.message_id, f"{type(exc).__name__}: {exc}"
        label = self._account.label
        if isinstance(exc, ChannelError) and not exc.fatal:
            self._log.warning(
                "whatsapp account %s: the host cannot take message %s now (%s); answered 503, Meta delivers it again",
                label,
                wamid,
                error,
            )
            return False
        tries = self.state.failing.pop(wamid, 0) + 1
        if tries >= self._account.dispatch_tries:
            await self.set_aside(wamid, shaped.raw, f"{tries} tries failed, the last with {error}")
            return True
        self.state.failing[wamid] = tries
        while len(self.state.failing) > FAILING_KEPT:
            self.state.failing.popitem(last=False)
        await self._store.save(self.state)
        self._log.error(
            "whatsapp account %s: dispatching message %s failed (%s), try %d of %d; answered 503, Meta delivers it "
            "again",
            label,
            wamid,
            error,
            tries,
            self._account.dispatch_tries,
        )
        return False

    async def set_aside(self, wamid: str, raw: Any, why: str, *, malformed: bool = False) -> None:
        """Set input aside: count it, keep it in the set-aside file, remember its id, log one line (a warning
        when ``malformed``: the channel's own finding; an error when the host failed on it)."""
        state = self.state
        state.failing.pop(wamid, None)
        state.set_aside += 1
        state.last_set_aside = {"updateId": wamid, "why": why}
        await self._store.save(state)
        await self._aside.keep(wamid, raw, why, self._host.clock.now())
        if not wamid.startswith("("):  # "(no id)", "(notification)": nothing to recognise a redelivery by
            await self._seen.add(wamid)
        self._log.log(
            logging.WARNING if malformed else logging.ERROR,
            "whatsapp account %s: set aside message %s: %s; the others go on (kept in %s)",
            self._account.label,
            wamid,
            why,
            self._aside.path.name,
        )

    def status(self) -> dict[str, Json]:
        """``setAside``, ``lastSetAside`` and ``failing`` (message id -> failed tries)."""
        state = self.state
        return {"setAside": state.set_aside, "lastSetAside": state.last_set_aside, "failing": dict(state.failing)}
