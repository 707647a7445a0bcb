"""All the checks of ``ishiki doctor`` in order, the network ones concurrently (see ``ishiki_host.cli.doctor``)."""

from __future__ import annotations

from pathlib import Path

import anyio

from ishiki_host.channels.base import Finding
from ishiki_host.cli.doctor.channels import channel_findings
from ishiki_host.cli.doctor.clock import DateRecorder, DateSeen, clock_finding
from ishiki_host.cli.doctor.config import config_findings, load_checked
from ishiki_host.cli.doctor.ingress import ingress_findings, webhook_accounts
from ishiki_host.cli.doctor.local import data_dir_findings, lock_finding
from ishiki_host.cli.doctor.models import model_findings
from ishiki_host.cli.doctor.store import store_findings
from ishiki_host.plugins.configdir import ConfigDir

__all__ = ["examine"]


def examine(root: Path, seconds: float) -> list[Finding]:
    """Every finding about ``root``; raises ``ConfigDirError`` when it is no config directory."""
    checked = load_checked(root)
    config = checked.config
    data_dir = config.host.data_dir
    lock, state = lock_finding(data_dir)
    running = state is not None and state.held
    network = anyio.run(_network, config, seconds, running)
    return [*config_findings(checked, root), *network[0], *data_dir_findings(data_dir), lock, network[1]]


async def _network(config: ConfigDir, seconds: float, host_running: bool) -> tuple[list[Finding], Finding]:
    """Models, channels, ingress and the store concurrently, in that order; then the clock, dated by their
    answers."""
    seen: list[DateSeen] = []
    parts: dict[str, list[Finding]] = {}

    async def models() -> None:
        parts["models"] = await model_findings(config, seconds, DateRecorder(seen))

    async def channels() -> None:
        parts["channels"] = await channel_findings(config, seconds)

    async def ingress() -> None:
        hooks = webhook_accounts(config.host.channels)
        parts["ingress"] = await ingress_findings(
            config.host.http, hooks, seconds, host_running=host_running, transport=DateRecorder(seen)
        )

    async def store() -> None:
        parts["store"] = await store_findings(config.host.store, seconds)

    async with anyio.create_task_group() as tg:
        tg.start_soon(models)
        tg.start_soon(channels)
        tg.start_soon(ingress)
        tg.start_soon(store)
    return [*parts["models"], *parts["channels"], *parts["ingress"], *parts["store"]], clock_finding(seen)
