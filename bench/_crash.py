"""The crash harness: ``ishiki run`` on Telegram or WhatsApp, SIGKILLed again and again while it answers chats.

``CrashRun(plan, workdir, ishiki).run()`` writes a config directory whose profile claims the bot of a loopback
fake of ``plan.platform`` (``_crash_platforms``: Telegram's Bot API, polled; WhatsApp's Graph API, with the
webhooks posted to the host until they are answered 200), served from this event loop, and whose model is a
loopback fake OpenAI server answering as ``RationalModel``; then it runs lives of a real ``ishiki run``
subprocess while pushing the seeded traffic in waves (a wave whenever fewer than ``plan.outstanding`` direct
messages wait for their answer). Every life but the last ends in SIGKILL at a point drawn from a seeded random
source, as a count of observed events, never wall time: the n-th model request of that life (killed before it
is answered), the n-th message the bot sends, or the n-th input confirmed (an update past the offset, a webhook
answered 200). After every ``plan.torn_every``-th kill a torn tail is written at the end of one fact log, as a
power loss cutting a write would leave it. The last life runs until every message is recorded and every direct
message settled, then stops with SIGTERM; one more life starts on a log given a torn tail after that clean
stop, and is stopped as soon as it listens again. Then ``CrashReport.properties`` holds the checks of
``_crash_check``.

With ``plan.workers`` above 1 each life is ``ishiki run --workers N``: a supervisor and its worker processes.
Before its own end, each killed life also SIGKILLs ``plan.worker_kills`` of its workers, one at a time, each
after a seeded number of messages sent (the worker picked by the same seeded source among the supervisor's
children); the supervisor restarts it and the life goes on. Killing the supervisor leaves its workers to stop
on their own (their link is gone); the next life starts once they have exited, as a restarted machine would.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import select
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from _crash_check import (
    FactLogs,
    Property,
    Torn,
    answers_by_token,
    check_answers,
    check_inbound,
    check_memory_db,
    check_tool_results,
    check_torn_tails,
    duplicates_by_runtime,
)
from _crash_model import RationalModel, Traffic
from _crash_platforms import PLATFORMS, Platform
from _workers import children

from ishiki_host.testing import FakeOpenAIServer

__all__ = ["CrashPlan", "CrashReport", "CrashRun", "Life"]

_KINDS = ("model", "send", "confirm")
_TORN = b'{"id": 987654321, "type": "message", "ts": 1700000000.0, "data": {"role": "assistant", "parts": [{"ty'
_PLUGINS = Path(__file__).with_name("_crash_plugins.py")


@dataclass(frozen=True)
class CrashPlan:
    """The size and seed of one run (the defaults are the full run: 500 messages, 50 chats, 24 kills)."""

    seed: int = 1
    messages: int = 500
    chats: int = 50
    groups: int = 10
    kills: int = 24
    latency: float = 0.01
    wave: int = 25
    outstanding: int = 60
    torn_every: int = 3
    max_events: int = 8
    platform: str = "telegram"  # a key of ``_crash_platforms.PLATFORMS``
    life_cap: float = 1800.0  # a last resort, never a measure: a life still running then is reported timed out
    workers: int = 1  # above 1: ``ishiki run --workers N``
    worker_kills: int = 0  # workers SIGKILLed in each killed life before the life's own end


@dataclass(frozen=True)
class Life:
    """One ``ishiki run`` process: how it was to end, how it did, how long it lived, where its log is."""

    index: int
    trigger: str
    code: int | None
    seconds: float
    log: Path
    ready: float | None = None  # seconds from the start of the process until it listens (first getUpdates...)
    timed_out: bool = False  # it was still running at ``plan.life_cap`` and was killed: no property verdict


@dataclass
class CrashReport:
    """What a run did and what it found."""

    plan: CrashPlan
    lives: list[Life] = field(default_factory=list)
    torn: list[Torn] = field(default_factory=list)
    properties: list[Property] = field(default_factory=list)
    duplicates: dict[str, int] = field(default_factory=dict)
    cut_sends: int = 0  # direct messages unanswered because a kill cut their send in flight (at most once)
    worker_kills: int = 0  # workers SIGKILLed while their supervisor lived on
    seconds: float = 0.0

    @property
    def kills(self) -> int:
        """Lives ended by SIGKILL."""
        return sum(1 for life in self.lives if life.code == -signal.SIGKILL)

    def failed(self) -> list[Property]:
        """The properties that do not hold."""
        return [p for p in self.properties if not p.ok]

    def timed_out(self) -> list[Life]:
        """The lives still running at the cap (the machine could not keep up, or the host hangs): the run
        says nothing about the properties then, and the test reports "timed out", not a broken property."""
        return [life for life in self.lives if life.timed_out]

    def lines(self) -> list[str]:
        """A readable summary."""
        kinds = sorted({life.trigger.split()[0] for life in self.lives})
        head = (
            f"{self.plan.platform}, seed {self.plan.seed}: {self.plan.messages} messages in {self.plan.chats} chats "
            f"({self.plan.groups} groups), {len(self.lives)} lives, {self.kills} SIGKILLs ({', '.join(kinds)}), "
            f"{len(self.torn)} torn tails written, {self.seconds:.1f} s"
        )
        if self.plan.workers > 1:
            head += f"; {self.plan.workers} workers, {self.worker_kills} of them SIGKILLed"
        late = [f"timed out: life {life.index} ({life.trigger}) still ran at the cap" for life in self.timed_out()]
        return [head, *late, *(p.line() for p in self.properties)]


class CrashRun:
    """One run of the harness (see the module docstring)."""

    def __init__(self, plan: CrashPlan, workdir: Path, ishiki: Path, *, env: Mapping[str, str] | None = None):
        self.platform: Platform = PLATFORMS[plan.platform]()
        if not self.platform.has_groups:
            plan = dataclasses.replace(plan, groups=0)  # WhatsApp's Cloud API has no groups
        self.plan = plan
        self.workdir = Path(workdir)
        self.root = self.workdir / "bot"
        self.ishiki = ishiki
        self.env = dict(env if env is not None else os.environ)
        self.model = RationalModel()
        self.traffic = Traffic(plan.seed, plan.messages, plan.chats, plan.groups)
        self.rng = random.Random(f"kills/{plan.seed}")
        self.report = CrashReport(plan)

    async def run(self) -> CrashReport:
        """Run every life, then check (see the module docstring)."""
        start = time.monotonic()
        with FakeOpenAIServer() as llm:
            llm.default = self.model
            llm.latency = self.plan.latency
            async with self.platform, anyio.create_task_group() as tg:
                self._write_config(llm.base_url)
                tg.start_soon(self._drive)
                for index in range(self.plan.kills):
                    await self._life(index, self._trigger())
                    if (index + 1) % self.plan.torn_every == 0:
                        self._tear(index)
                await self._life(self.plan.kills, ("final", 0))
                self._tear(self.plan.kills)
                await self._life(self.plan.kills + 1, ("restart", 0))
                tg.cancel_scope.cancel()
            self.report.seconds = time.monotonic() - start
            await self._check()
        return self.report

    # -- set-up -----------------------------------------------------------------------------------------

    def _write_config(self, model_url: str) -> None:
        site = self.workdir / "site"
        (site / "ishiki_crash_plugins-0.1.dist-info").mkdir(parents=True, exist_ok=True)
        shutil.copy(_PLUGINS, site / "ishiki_crash_plugins.py")
        info = site / "ishiki_crash_plugins-0.1.dist-info"
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ishiki-crash-plugins\nVersion: 0.1\n", "utf-8")
        (info / "entry_points.txt").write_text("[ishiki.ext]\nmemo = ishiki_crash_plugins:Memo\n", "utf-8")
        self.env["PYTHONPATH"] = str(site)
        self.env.update(self.platform.env())
        files = {
            "ishiki.yaml": "reload_interval_seconds: 0\nshutdown_grace_seconds: 10\nlog_level: info\n"
            + self.platform.host_yaml(),
            "models.yaml": (
                f"providers:\n  fake:\n    api: openai-completions\n    base_url: {model_url}\n"
                "    max_concurrency: 64\n"
                "    models: [{id: fake-model}]\ngroups:\n  default:\n    models: [fake:fake-model]\n"
            ),
            "profiles/ana/profile.yml": (
                f"model: default\nchannels:\n  {self.platform.claim()}\nextends:\n  memo: {{}}\n"
            ),
            "profiles/ana/persona.md": "You are Ana. Acknowledge every message you are sent.\n",
        }
        for name, text in files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, "utf-8")

    def _trigger(self) -> tuple[str, int]:
        return self.rng.choice(_KINDS), self.rng.randint(1, self.plan.max_events)

    # -- traffic ----------------------------------------------------------------------------------------

    async def _drive(self) -> None:
        """Push waves of messages whenever few enough direct messages wait for their answer."""
        while not self.traffic.done:
            await self.platform.until(lambda: self._outstanding() < self.plan.outstanding)
            for message in self.traffic.next_wave(self.plan.wave):
                self.platform.push(message)

    def _answers(self) -> Counter[str]:
        return answers_by_token(self.platform.sent())

    def _outstanding(self) -> int:
        answered, settled = self._answers(), self.model.settled
        pushed = self.traffic.plan[: self.traffic.pushed]
        return sum(1 for m in pushed if m.direct and not answered.get(m.token) and m.token not in settled)

    def _done(self) -> bool:
        return self.traffic.done and not self.platform.pending() and self._outstanding() == 0

    # -- lives ------------------------------------------------------------------------------------------

    async def _life(self, index: int, trigger: tuple[str, int]) -> None:
        kind, count = trigger
        log = self.workdir / f"life{index:02d}.log"
        command = [str(self.ishiki), "run", str(self.root)]
        if self.plan.workers > 1:
            command += ["--workers", str(self.plan.workers)]
        with log.open("wb") as out:
            process = await anyio.open_process(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )
        began = time.monotonic()
        ready: list[float] = []
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._note_ready, began, ready)
                if kind == "model":
                    self.model.arm(count, process.pid)
                elif kind in ("send", "confirm"):
                    tg.start_soon(self._kill_after, kind, count, process.pid)
                if kind in _KINDS and self.plan.workers > 1:
                    tg.start_soon(self._kill_workers, process.pid)
                tg.start_soon(self._end_when_idle, kind, process)
                with anyio.move_on_after(self.plan.life_cap) as deadline:
                    await process.wait()
                tg.cancel_scope.cancel()
        finally:
            self.model.disarm()
            workers = children(process.pid)
            if process.returncode is None:
                process.kill()
            with anyio.CancelScope(shield=True):
                code = await process.wait()
                await process.aclose()
                await anyio.to_thread.run_sync(_wait_exits, workers)
                await self.platform.hang_up()
        text = f"{kind} {count}" if count else kind
        seconds = time.monotonic() - began
        life = Life(index, text, code, seconds, log, ready[0] if ready else None, deadline.cancelled_caught)
        self.report.lives.append(life)

    async def _note_ready(self, began: float, ready: list[float]) -> None:
        """When the host starts to listen for the first time in this life."""
        await self._listens()
        ready.append(time.monotonic() - began)

    async def _listens(self) -> None:
        platform = self.platform
        starts = platform.ready_count()
        await platform.until(lambda: platform.ready_count() > starts)

    async def _kill_after(self, kind: str, count: int, pid: int) -> None:
        platform = self.platform
        if kind == "send":
            base = self._sends()
            await platform.until(lambda: self._sends() >= base + count)
        else:
            base = platform.confirmed()
            await platform.until(lambda: platform.confirmed() >= base + count)
        _kill(pid)

    async def _kill_workers(self, supervisor: int) -> None:
        """SIGKILL ``plan.worker_kills`` workers of this life, each after a seeded number of messages sent."""
        for _ in range(self.plan.worker_kills):
            await self._sent_more(self.rng.randint(1, max(1, self.plan.max_events // 3)))  # before the life's end
            workers = children(supervisor)
            if not workers:
                return
            _kill(self.rng.choice(workers))
            self.report.worker_kills += 1

    async def _sent_more(self, count: int) -> None:
        """Until the bot has sent ``count`` more messages."""
        target = self._sends() + count
        await self.platform.until(lambda: self._sends() >= target)

    def _sends(self) -> int:
        return sum(1 for _ in self.platform.sent())

    async def _end_when_idle(self, kind: str, process: anyio.abc.Process) -> None:
        """The last life stops (SIGTERM) once it polls and all is settled; the restart once it polls; a kill life
        that ran out of work is killed then (its trigger would never come). Each waits on what it waits for,
        however long a loaded machine takes: only ``plan.life_cap`` ends a life that never gets there."""
        if kind in ("restart", "final"):  # the host set up what it recovers before it listens
            await self._listens()
        if kind == "restart":
            process.send_signal(signal.SIGTERM)
            return
        while not self._done():  # the model's view of what is settled changes in its own thread: look again
            with anyio.move_on_after(0.25):
                await self.platform.until(self._done)
        if kind == "final":
            process.send_signal(signal.SIGTERM)
        else:
            _kill(process.pid)

    def _tear(self, after_life: int) -> None:
        logs = sorted(Path(self.root, "data", "runtimes").rglob("facts.jsonl"))
        if not logs:
            return
        path = self.rng.choice(logs)
        with path.open("ab") as out:
            out.write(_TORN)
        self.report.torn.append(Torn(path, _TORN, after_life))

    # -- checks -----------------------------------------------------------------------------------------

    async def _check(self) -> None:
        data = self.root / "data"
        logs = FactLogs.read(data)
        traffic, report = self.traffic, self.report
        report.duplicates = {k: v for k, v in duplicates_by_runtime(logs).items() if v}
        answers, in_doubt = self._answers(), logs.in_doubt()
        report.cut_sends = sum(1 for t in traffic.direct_tokens if not answers[t] and t in in_doubt)
        report.properties = [
            check_inbound(logs, [m.token for m in traffic.plan]),
            check_answers(answers, traffic.direct_tokens, traffic.group_tokens, in_doubt),
            check_tool_results(logs),
            check_memory_db(data / "memory.db"),
            check_torn_tails(logs, report.torn, [life.log for life in report.lives]),
            _check_exits(report.lives),
        ]


def _check_exits(lives: list[Life]) -> Property:
    """Every life ended as planned: SIGKILL for the killed ones, exit 0 after SIGTERM for the others."""
    wrong = [
        f"life {life.index} ({life.trigger}) ended with {life.code}; see {life.log}"
        for life in lives
        if not life.timed_out and life.code != (0 if life.trigger in ("final", "restart") else -signal.SIGKILL)
    ]
    return Property("every life ended as planned", not wrong, f"{len(lives)} lives", tuple(wrong))


def _wait_exits(pids: list[int]) -> None:
    """Until every process of ``pids`` has exited (a pidfd is readable then); what is gone already is skipped."""
    handles = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            handles.append(os.pidfd_open(pid))
    try:
        pending = list(handles)
        while pending:
            ready, _, _ = select.select(pending, [], [])
            pending = [h for h in pending if h not in ready]
    finally:
        for handle in handles:
            os.close(handle)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
