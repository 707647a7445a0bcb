"""``ishiki run [DIR]``: run a config directory until signalled (or, when the console is its only channel, until
piped console input ends; with other channels up only the console closes).

Exit status: 0 after a normal stop (SIGINT, SIGTERM, the end of piped console input), 1 when no profile is
ready (the reasons are printed) or the host could not start, 2 when DIR is not a config directory. Another
host running on the same data directory is a failed start: one line naming its pid, exit 1, nothing touched.
Logs go to stderr at ``log_level`` of ishiki.yaml (``--log-level`` overrides it), as text or as one JSON object
per line (``log_format``, ``--log-format``); stdout is the console channel's.
A run in which no model answers still stops with 0 (each sender was told the turn failed); the first time
every member of a model has failed before any answered, stderr says once what to configure in models.yaml
(the provider, its address, the key and the variables it reads: ``ishiki_host.cli._hints``).
SIGHUP reloads the config (so does ``ishiki reload DIR``); a second SIGINT or SIGTERM exits at once. A SIGINT
or SIGTERM before the host runs (while the config loads and plugins import, as a busy machine may take a while)
is a clean stop too: exit 0, nothing started (``_EarlyStop``).
Once the host runs, the start-up heap is frozen out of the garbage collector's walks
(``ishiki_host.host.collector.freeze_startup_heap``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from anyio.abc import TaskStatus

    from ishiki_host.cli._hints import RawProvider
    from ishiki_host.host.host import Host
    from ishiki_host.plugins.configdir import ConfigDir
    from ishiki_host.workers.supervisor import WorkerSupervision

from ishiki_host.cli._args import add_dir_argument, worker_count

__all__ = ["register", "run", "setup_logging"]

LEVELS = ("debug", "info", "warning", "error", "critical")
FORMATS = ("text", "json")
_QUIET = {"httpx": logging.WARNING, "httpcore": logging.WARNING, "stevedore": logging.WARNING}


def register(subparsers: Any) -> None:
    """Add the ``run`` command."""
    parser = subparsers.add_parser(
        "run",
        help="run a config directory",
        description="Run the ready profiles of DIR in the channels they claim, until SIGINT/SIGTERM (or the end "
        "of piped console input). Exit 0 after a normal stop, 1 when no profile is ready, 2 when DIR is not a "
        "config directory. SIGHUP (or `ishiki reload DIR`) reloads the config.",
    )
    add_dir_argument(parser)
    parser.add_argument("--log-level", choices=LEVELS, help="override log_level of ishiki.yaml")
    parser.add_argument("--log-format", choices=FORMATS, help="override log_format of ishiki.yaml")
    parser.add_argument(
        "--reload",
        action="store_true",
        help="restart the host in a fresh process when Python files of plugins change (DIR/plugins/, "
        "packages/, editable plugin installs; see ishiki_host.cli.reloader)",
    )
    parser.add_argument(
        "--workers",
        type=worker_count,
        metavar="N",
        help="run the runtimes on N worker processes (1 to 64, or auto: one per core); overrides workers of "
        "ishiki.yaml",
    )
    parser.add_argument(
        "--reload-dir",
        action="append",
        metavar="PATH",
        help="--reload, watching this folder instead of those (repeat for more)",
    )
    parser.set_defaults(handler=run)


def setup_logging(level: str, log_format: str = "text") -> None:
    """Log to stderr at ``level``, as text or (``log_format: json``) one JSON object per line
    (``ishiki_host.observe.logformat``); per-request and per-retry chatter of libraries and the gateway only in
    debug (the host says in one line when a model fails over)."""
    from ishiki_host.observe.logformat import JsonFormatter, TextFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    if level != "debug":
        for name, floor in {**_QUIET, "ishiki_host.gateway": logging.ERROR}.items():
            logging.getLogger(name).setLevel(floor)


class _EarlyStop:
    """SIGINT and SIGTERM while the event loop's handlers are not up: before them (the config loads, plugins
    import, the loop starts) and after them (the loop closes). The default actions would kill the host
    mid-write (SIGTERM) or raise ``KeyboardInterrupt`` anywhere (SIGINT); this remembers the first, and a second
    exits at once, as in a running host. ``_serve`` reads it once its own handlers are up."""

    def __init__(self) -> None:
        self.name: str | None = None

    def __call__(self, signum: int, frame: object) -> None:
        if self.name is not None:
            os._exit(130)
        self.name = signal.Signals(signum).name

    def install(self) -> None:
        """Handle SIGINT and SIGTERM here (the loop's own receiver replaces this while it runs)."""
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self)


def run(args: argparse.Namespace) -> int:
    """Run ``args.dir``; return the exit status."""
    if getattr(args, "reload", False) or getattr(args, "reload_dir", None):
        return _supervised(args)
    early = _EarlyStop()
    early.install()  # first of all: a stop asked for while the config loads is a clean stop, not a kill
    from ishiki_host import eventloop
    from ishiki_host.errors import ConfigDirError
    from ishiki_host.plugins.configdir import load_config_dir

    root = Path(args.dir)
    try:
        config = load_config_dir(root)
    except ConfigDirError as exc:
        print(f"ishiki run: {exc.message}", file=sys.stderr)
        return 2
    setup_logging(args.log_level or config.host.log_level, args.log_format or config.host.log_format)
    if early.name is not None:
        print(f"ishiki run: {early.name} before the host started; it stops without starting", file=sys.stderr)
        return 0
    if not config.ready():
        _explain_not_ready(config)
        return 1
    from ishiki_host.cli._hints import raw_providers
    from ishiki_host.config.host import resolved_workers

    given = getattr(args, "workers", None)
    workers = _Workers(
        resolved_workers(given if given is not None else config.host.workers),
        given is not None,
        (args.log_level or config.host.log_level, args.log_format or config.host.log_format),
    )
    try:
        return eventloop.run(_serve, root, config, raw_providers(root), early, workers, loop=config.host.event_loop)
    except KeyboardInterrupt:
        return 130
    finally:
        early.install()  # the loop's handlers are gone: a signal while the process exits changes nothing


def _supervised(args: argparse.Namespace) -> int:
    """``--reload``: this process watches and each host runs in a child (``ishiki_host.cli.reloader``)."""
    from ishiki_host.cli._args import usable_dir
    from ishiki_host.cli.reloader import passed_on_options, supervise

    root = usable_dir("run", args.dir)
    return 2 if root is None else supervise(root, passed_on_options(args), args.reload_dir)


def _explain_not_ready(config: ConfigDir) -> None:
    from ishiki_host.cli.check import report

    print("ishiki run: no profile is ready, so there is nothing to run:", file=sys.stderr)
    for line in report(config):
        print(f"  {line}", file=sys.stderr)


class _Workers:
    """How many worker processes run the runtimes (1: none, the host runs them itself), whether ``--workers``
    fixed it, and the log settings they get."""

    def __init__(self, count: int, fixed: bool, logs: tuple[str, str]):
        self.count = count
        self.fixed = fixed
        self.logs = logs
        self.reshaped: ConfigDir | None = None  # set when a reload asked for another shape: serve that config next

    def supervision(self, root: Path, config: ConfigDir) -> WorkerSupervision | None:
        """The supervision of ``count`` workers (``None`` for one process)."""
        if self.count == 1:
            return None
        from ishiki_host.core.clock import SystemClock
        from ishiki_host.workers.supervisor import WorkerSupervision

        level, log_format = self.logs
        options = ["--log-level", level, "--log-format", log_format, "--event-loop", config.host.event_loop]
        return WorkerSupervision(
            root.resolve(), self.count, options, clock=SystemClock(), fixed=self.fixed, one_process=self.reshape
        )

    def reshape(self, host: Host, wanted: int) -> None:
        """A reload asked for ``wanted`` workers where this process cannot take them as it runs (one process
        becoming a supervisor, or a supervisor becoming one process): stop the host cleanly, and serve again in
        the new shape (``_serve``), as a restart would, without the process ending."""
        shape = "one process" if wanted == 1 else f"a supervisor of {wanted} workers"
        logging.getLogger("ishiki_host.cli").warning(
            "ishiki.yaml: workers changed from %d to %d; restarting the host as %s", self.count, wanted, shape
        )
        self.count, self.reshaped = wanted, host.config
        host.request_stop(f"workers changed to {wanted}")

    def after_reload(self, host: Callable[[], Host]) -> Callable[[], Awaitable[None]]:
        """A single host's hook after each of its reloads: a ``workers`` of more than one reshapes it (unless
        ``--workers`` fixed the count)."""

        async def check() -> None:
            from ishiki_host.config.host import resolved_workers

            wanted = resolved_workers(host().config.host.workers)
            if wanted == self.count:
                return
            if self.fixed:
                logging.getLogger("ishiki_host.cli").warning(
                    "ishiki.yaml: workers %d; --workers %d given, so it stays %d", wanted, self.count, self.count
                )
                return
            self.reshape(host(), wanted)

        return check


async def _serve(
    root: Path, config: ConfigDir, raw: Mapping[str, RawProvider], early: _EarlyStop, workers: _Workers
) -> int:
    while True:  # once more for each reload that changed the host's shape (``_Workers.reshape``)
        code = await _serve_shape(root, config, raw, early, workers)
        if workers.reshaped is None or code != 0:
            return code
        config, workers.reshaped = workers.reshaped, None


async def _serve_shape(
    root: Path, config: ConfigDir, raw: Mapping[str, RawProvider], early: _EarlyStop, workers: _Workers
) -> int:
    from ishiki_host.cli._hints import ModelHint
    from ishiki_host.host.host import Host
    from ishiki_host.host.roles import HostRole
    from ishiki_host.workers.supervisor import socket_folder

    hint = ModelHint(lambda: host.gateways.gateway, raw)
    supervision = workers.supervision(root, config)
    if supervision is None:
        role = HostRole(after_reload=workers.after_reload(lambda: host))
        host = Host(root, config=config, role=role, model_listeners=[hint])
        return await _serve_host(host, None, early)
    with socket_folder() as socket_path:
        host = Host(root, config=config, role=supervision.role(socket_path), model_listeners=[hint])
        return await _serve_host(host, supervision, early)


async def _serve_host(host: Host, supervision: WorkerSupervision | None, early: _EarlyStop) -> int:
    import contextlib

    import anyio

    from ishiki_host.cli._lifeline import watch_lifeline
    from ishiki_host.errors import ConfigDirLocked, StoreError
    from ishiki_host.eventloop import running_loop
    from ishiki_host.host.collector import freeze_startup_heap

    async with anyio.create_task_group() as tg:
        await tg.start(_signals, host)  # the receiver is up before anything of the host starts
        await tg.start(watch_lifeline, host.request_stop)  # under --reload: stops the host when the supervisor dies
        if early.name is not None:  # it came while the loop was starting
            logging.getLogger("ishiki_host.cli").info("%s before the host started; it stops", early.name)
            tg.cancel_scope.cancel()
            return 0
        try:
            async with host:
                logging.getLogger("ishiki_host.cli").info("event loop: %s", running_loop())
                frozen = freeze_startup_heap()  # no full collection walks what start-up made again
                logging.getLogger("ishiki_host.cli").debug("%d objects of the start-up frozen", frozen)
                # With workers, they drain first (their turns still send through this host's channels).
                async with supervision.running(host) if supervision is not None else contextlib.nullcontext():
                    await host.wait_stop_requested()
        except ConfigDirLocked as exc:
            print(f"ishiki run: {host.root}: {exc} (lock {exc.path}); stop it first", file=sys.stderr)
            tg.cancel_scope.cancel()
            return 1
        except StoreError as exc:  # the fleet's store: unreachable, newer, no driver; the sentence says it all
            print(f"ishiki run: {host.root}: {exc}", file=sys.stderr)
            tg.cancel_scope.cancel()
            return 1
        except Exception:
            logging.getLogger("ishiki_host.cli").exception("the host failed")
            tg.cancel_scope.cancel()
            return 1
        tg.cancel_scope.cancel()
    return 0


async def _signals(host: Host, *, task_status: TaskStatus[None]) -> None:
    import anyio

    log = logging.getLogger("ishiki_host.cli")
    stops = 0
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as received:
        task_status.started()
        async for signum in received:
            if signum == signal.SIGHUP:
                log.info("SIGHUP: reloading the config")
                await _reload(host)
                continue
            stops += 1
            if stops > 1:
                log.warning("%s again: exiting at once", signal.Signals(signum).name)
                logging.shutdown()
                os._exit(130)
            host.request_stop(signal.Signals(signum).name)


async def _reload(host: Host) -> None:
    try:
        report = await host.reload()
    except Exception:
        logging.getLogger("ishiki_host.cli").exception("reload failed; the running config stays")
        return
    logging.getLogger("ishiki_host.cli").info("reloaded: %s", report)
