"""Metrics read from the host's state at scrape time: nothing is counted on the path of a turn for these.

``StateCollector`` asks for a ``HostState`` (what ``Host.status()`` knows, as plain mappings) at every scrape
and turns it into gauges:

- ``ishiki_profiles{state}``: profiles by state (``ready``, ``waiting``, ``invalid``, ``disabled``, ``skipped``);
- ``ishiki_runtimes{profile}``: runtimes alive per active profile;
- ``ishiki_channel_up{channel}`` (1 while the connection runs), ``ishiki_channel_restarts_total{channel}`` and
  ``ishiki_channel_errors_total{channel}`` (lives of the connection that ended in an error), per account
  (``telegram#0``; they count from the supervisor's start, so a changed account starts again from 0);
- ``ishiki_breaker_state{model,state}``: 1 for the state each member's circuit breaker is in, 0 for the others;
- ``ishiki_scheduler_in_flight{provider}``, ``ishiki_scheduler_waiting{provider,priority}`` and
  ``ishiki_scheduler_slots{provider}``: the model call queues.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

__all__ = ["BREAKER_STATES", "PROFILE_STATES", "HostState", "StateCollector"]

PROFILE_STATES = ("ready", "waiting", "invalid", "disabled", "skipped")
BREAKER_STATES = ("closed", "half_open", "open")


@dataclass(frozen=True, slots=True)
class HostState:
    """What a scrape reads: profile states by id, runtimes alive by active profile, ``ChannelSet.status()``
    and ``Gateway.status()``."""

    profiles: Mapping[str, str] = field(default_factory=dict)
    runtimes: Mapping[str, int] = field(default_factory=dict)
    channels: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    gateway: Mapping[str, Any] = field(default_factory=dict)


class StateCollector(Collector):
    """A ``prometheus_client`` collector over ``read()`` (see the module docstring)."""

    def __init__(self, read: Callable[[], HostState]):
        self._read = read

    def collect(self) -> Iterator[Metric]:
        """The gauges of the host's state now."""
        state = self._read()
        yield from _profiles(state)
        yield from _channels(state.channels)
        yield from _breakers(state.gateway.get("members", {}))
        yield from _scheduler(state.gateway.get("scheduler", {}))


def _profiles(state: HostState) -> Iterator[Metric]:
    by_state = GaugeMetricFamily("ishiki_profiles", "Profiles by state", labels=["state"])
    counts = dict.fromkeys(PROFILE_STATES, 0)
    for value in state.profiles.values():
        counts[value] = counts.get(value, 0) + 1
    for name, count in counts.items():
        by_state.add_metric([name], count)
    yield by_state
    runtimes = GaugeMetricFamily("ishiki_runtimes", "Runtimes alive, per active profile", labels=["profile"])
    for profile, count in sorted(state.runtimes.items()):
        runtimes.add_metric([profile], count)
    yield runtimes


def _channels(channels: Mapping[str, Mapping[str, Any]]) -> Iterator[Metric]:
    up = GaugeMetricFamily("ishiki_channel_up", "1 while the account's connection runs", labels=["channel"])
    restarts = CounterMetricFamily("ishiki_channel_restarts", "Restarts of the connection", labels=["channel"])
    errors = CounterMetricFamily(
        "ishiki_channel_errors", "Lives of the connection that ended in an error", labels=["channel"]
    )
    for label, channel in sorted(channels.items()):
        up.add_metric([label], 1 if channel.get("state") == "running" else 0)
        restarts.add_metric([label], int(channel.get("restarts") or 0))
        errors.add_metric([label], int(channel.get("errors") or 0))
    yield from (up, restarts, errors)


def _breakers(members: Mapping[str, Mapping[str, Any]]) -> Iterator[Metric]:
    breakers = GaugeMetricFamily(
        "ishiki_breaker_state", "1 for the state the member's circuit breaker is in", labels=["model", "state"]
    )
    for member, status in sorted(members.items()):
        for name in BREAKER_STATES:
            breakers.add_metric([member, name], 1 if status.get("state") == name else 0)
    yield breakers


def _scheduler(lanes: Mapping[str, Mapping[str, Any]]) -> Iterator[Metric]:
    in_flight = GaugeMetricFamily("ishiki_scheduler_in_flight", "Model calls running", labels=["provider"])
    waiting = GaugeMetricFamily(
        "ishiki_scheduler_waiting", "Model calls waiting for a slot", labels=["provider", "priority"]
    )
    slots = GaugeMetricFamily("ishiki_scheduler_slots", "The provider's max_concurrency", labels=["provider"])
    for provider, lane in sorted(lanes.items()):
        in_flight.add_metric([provider], lane.get("in_flight", 0))
        slots.add_metric([provider], lane.get("max_concurrency", 0))
        for priority in ("interactive", "background"):
            waiting.add_metric([provider, priority], lane.get(f"waiting_{priority}", 0))
    yield from (in_flight, waiting, slots)
