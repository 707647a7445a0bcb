"""The channel check of ``ishiki doctor``: each configured account's own ``Channel.diagnose``.

Every account of ``ishiki.yaml``'s ``channels`` is checked, concurrently: an account with a config error is
reported with it (its plugin is not asked); a platform whose plugin is not installed is an error; otherwise
the plugin's ``diagnose(account, seconds=..., state_dir=...)`` (the account's state directory, to read only)
answers with findings, shown as it words them (one without a ``what`` gets the account's label, ``channel
telegram#0``). A plugin that raises, returns something other than findings, or takes far longer than it was
given is an error naming the plugin and its distribution: a broken plugin never stops the doctor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from ishiki_host.channels.base import Channel, Finding
from ishiki_host.config.services import CHANNEL_GROUP, service_name
from ishiki_host.host.connections import ChannelSpec, state_dir
from ishiki_host.plugins.configdir import ConfigDir

__all__ = ["GRACE_SECONDS", "channel_findings"]

GRACE_SECONDS = 5.0
"""What a plugin's ``diagnose`` may take beyond its ``seconds`` (it may make several calls) before the doctor
stops waiting for it."""


async def channel_findings(config: ConfigDir, seconds: float) -> list[Finding]:
    """The findings of every configured account, in the order of ``ishiki.yaml``."""
    slots: list[list[Finding]] = []
    async with anyio.create_task_group() as tg:
        for platform, accounts in config.host.channels.items():
            name = service_name(CHANNEL_GROUP, platform)
            cls = config.registry.plugin(name)
            for index, account in enumerate(accounts):
                label = f"channel {platform}#{index}"
                slot: list[Finding] = []
                slots.append(slot)
                errors = config.host.invalid_accounts.get((platform, index))
                if errors:
                    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
                    fix = f"fix channels.{platform}.accounts[{index}] in ishiki.yaml (`ishiki check` lists every error)"
                    slot.append(Finding("error", label, f"invalid: {errors[0].message}{more}", fix))
                elif cls is None:
                    fix = "install the package of that channel (`ishiki plugins` lists what is installed)"
                    slot.append(Finding("error", label, f"no channel plugin {platform!r} is installed", fix))
                else:
                    home = state_dir(config.host.data_dir, ChannelSpec(platform, index, account, cls))
                    tg.start_soon(_diagnose, slot, label, _origin(config, name), cls, account, seconds, home)
    return [finding for slot in slots for finding in slot]


def _origin(config: ConfigDir, name: str) -> str:
    record = next((r for r in config.registry.records if r.full_name == name), None)
    dist = record.distribution if record is not None and record.distribution else "unknown distribution"
    return f"{name} ({dist})"


async def _diagnose(
    slot: list[Finding],
    label: str,
    origin: str,
    cls: Any,
    account: Mapping[str, Any],
    seconds: float,
    home: Path,
) -> None:
    fix = f"a bug of {origin}: report it to its authors (the other checks are unaffected)"
    try:
        channel: Channel = cls()
        with anyio.fail_after(seconds + GRACE_SECONDS):
            found: Sequence[Any] = await channel.diagnose(account, seconds=seconds, state_dir=home)
    except TimeoutError:
        slot.append(Finding("error", label, f"{origin} did not finish its check in {seconds + GRACE_SECONDS:g} s", fix))
        return
    except Exception as exc:  # a plugin's bug is a finding, never a traceback of the doctor
        slot.append(Finding("error", label, f"{origin} raised {type(exc).__name__}: {exc}", fix))
        return
    bad = [f for f in found if not isinstance(f, Finding)]
    if bad:
        slot.append(Finding("error", label, f"{origin} answered {type(bad[0]).__name__}, not Finding", fix))
        return
    if not found:
        slot.append(Finding("ok", label, "configured (the channel has no checks of its own)"))
    slot.extend(f if f.what else Finding(f.level, label, f.detail, f.fix) for f in found)
