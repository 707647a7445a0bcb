"""One INFO line per turn that answered messages, for the operator and for log shippers.

``AnsweredLog`` is a turn listener. A turn that ended ``done`` with inbound messages (one or several that
joined it) logs on ``ishiki_host.answers``::

    ana answered 1 message in telegram:bot private:42 in 1.84 s (turn 1.20 s): 1,234 tokens in, 56 out
    (fake:m); tools: send_message        (one line: folded here)

``latency`` runs from the oldest message's arrival (its fact-log time) to the turn's end, so it includes the
wait for the wakeup decision and for a model slot; the turn's own time is beside it. The same values are on
the record as fields (``extra``), which ``log_format: json`` writes as keys: ``profile``, ``runtime``,
``channel`` (``platform:selfId``), ``chat`` (the channel id), ``messages``, ``latency_seconds``,
``turn_seconds``, ``input_tokens``, ``output_tokens``, ``model``, ``tools``, ``sent``. Failed and aborted turns
are logged where they fail (the agent's warning), not here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ishiki_host.channels.inbound import source_target

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.core.clock import Clock
    from ishiki_host.plugins.runtime_api import TurnReport

__all__ = ["ANSWERS_LOGGER", "AnsweredLog", "answer_fields"]

ANSWERS_LOGGER = "ishiki_host.answers"


class AnsweredLog:
    """The turn listener of the module docstring."""

    def __init__(self, clock: Clock, logger: logging.Logger | None = None):
        self._clock = clock
        self._logger = logger or logging.getLogger(ANSWERS_LOGGER)

    def __call__(self, key: RuntimeKey, report: TurnReport) -> None:
        if report.status != "done" or not report.inbound or not self._logger.isEnabledFor(logging.INFO):
            return
        fields = answer_fields(key, report, self._clock.now())
        count = fields["messages"]
        self._logger.info(
            "%s answered %d message%s in %s %s in %.2f s (turn %.2f s): %s tokens in, %s out (%s); tools: %s",
            key.profile, count, "" if count == 1 else "s", fields["channel"] or "-", fields["chat"] or "-",
            fields["latency_seconds"], fields["turn_seconds"], f"{fields['input_tokens']:,}",
            f"{fields['output_tokens']:,}", fields["model"] or "no model", ", ".join(fields["tools"]) or "none",
            extra=fields,
        )  # fmt: skip


def answer_fields(key: RuntimeKey, report: TurnReport, now: float) -> dict[str, Any]:
    """The structured fields of the line for ``report``, the turn ending at wall time ``now``."""
    target = next((t for t in map(source_target, reversed(report.inbound)) if t is not None), None)
    usage = report.outcome.usage
    result = report.outcome.result
    return {
        "profile": key.profile,
        "runtime": str(key),
        "channel": target.sid if target is not None else key.sid,
        "chat": target.channel_id if target is not None else key.channel_id,
        "messages": len(report.inbound),
        "latency_seconds": round(max(0.0, now - min(e.ts for e in report.inbound)), 3),
        "turn_seconds": round(report.seconds, 3),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "model": result.model if result is not None else None,
        "tools": list(report.tools),
        "sent": len(report.sent_ids),
    }
