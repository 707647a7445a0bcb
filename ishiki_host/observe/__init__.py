"""What the host tells about itself: Prometheus metrics, readiness, usage counts, the answered-message log
line, the JSON log format and the control socket ``ishiki status`` asks (docs/observability.md).

Nothing here knows the ``Host``: each part takes the narrow callables it reads (a state snapshot, the usage
repository, a list of readiness problems), and the host wires them (``ishiki_host.host.observability``).
"""

from ishiki_host.observe.activity import RATE_MINUTES, RecentActivity
from ishiki_host.observe.answered import ANSWERS_LOGGER, AnsweredLog, answer_fields
from ishiki_host.observe.control import CONTROL_SOCKET, ControlServer, ask_host
from ishiki_host.observe.logformat import JsonFormatter, TextFormatter
from ishiki_host.observe.metrics import CONTENT_TYPE, HostMetrics
from ishiki_host.observe.routes import METRICS_PATH, READY_PATH, metrics_handler, ready_handler
from ishiki_host.observe.state import HostState, StateCollector
from ishiki_host.observe.usage import FLUSH_SECONDS, UsageRecorder

__all__ = [
    "ANSWERS_LOGGER",
    "CONTENT_TYPE",
    "CONTROL_SOCKET",
    "FLUSH_SECONDS",
    "METRICS_PATH",
    "RATE_MINUTES",
    "READY_PATH",
    "AnsweredLog",
    "ControlServer",
    "HostMetrics",
    "HostState",
    "JsonFormatter",
    "RecentActivity",
    "StateCollector",
    "TextFormatter",
    "UsageRecorder",
    "answer_fields",
    "ask_host",
    "metrics_handler",
    "ready_handler",
]
