"""A host plugin reads a live runtime's log and tools the same way in one process (``LocalViews``) and across a
worker's link (``WorkerViews`` asking ``LogViewService`` over a real Unix socket pair): windows, appends waited
for, the end of the runtime, and the tools; the link's waits are shared by the readers of one runtime, and a
link that goes closes its views."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import pytest
from anyio.abc import UNIXSocketStream

from ishiki_host import RuntimeKey, RuntimeLogView, ToolContext
from ishiki_host.errors import FactLogError, ToolError
from ishiki_host.host.runtimeviews import LocalViews, RuntimeViews
from ishiki_host.testing import MakeHost, profile_yaml
from ishiki_host.workers.peer import Peer
from ishiki_host.workers.views import LogViewService, WorkerViews

pytestmark = pytest.mark.anyio

KEY = RuntimeKey.for_channel("ana", "fake:bot", "private:7")
WAIT = 10.0
Pair = tuple[UNIXSocketStream, UNIXSocketStream]
NO_CONTEXT = cast("ToolContext", object())  # the tool refuses before it reads its context


class Counted:
    """The worker's ``log.wait``, counting its calls and the most that ran at once; ``second`` is set when the
    second call starts (the first one answers at once: it asks where the log is)."""

    def __init__(self) -> None:
        self.handler: Callable[[dict[str, Any]], Awaitable[Any]] | None = None
        self.calls = self.running = self.most = 0
        self.second = anyio.Event()

    async def __call__(self, params: dict[str, Any]) -> Any:
        assert self.handler is not None
        self.calls += 1
        self.running += 1
        self.most = max(self.most, self.running)
        if self.calls == 2:
            self.second.set()
        try:
            return await self.handler(params)
        finally:
            self.running -= 1


@asynccontextmanager
async def linked(host: Any, pair: Pair, waits: Counted | None = None) -> AsyncIterator[tuple[WorkerViews, Peer]]:
    """``WorkerViews`` in the "supervisor" end of ``pair``, served by ``LogViewService`` on ``host`` at the other."""

    async def started() -> Any:
        return host

    handlers = LogViewService(started).handlers()
    if waits is not None:
        waits.handler = handlers["log.wait"]
        handlers["log.wait"] = waits
    worker = Peer(pair[0], handlers, label="worker")
    supervisor = Peer(pair[1], {}, label="supervisor")
    async with anyio.create_task_group() as tg:
        tg.start_soon(worker.run)
        tg.start_soon(supervisor.run)
        yield WorkerViews(lambda key: supervisor, lambda fn, name: tg.start_soon(fn, name=name)), supervisor
        # Closed from one end, as a supervisor's link ends: cancelling both ends' reads at once can race
        # asyncio's socket readiness against the cancellation (anyio's raw socket streams).
        await supervisor.aclose()
        with anyio.fail_after(WAIT):
            await worker.wait_closed()
        tg.cancel_scope.cancel()


@asynccontextmanager
async def views_of(kind: str, host: Any, pair: Pair) -> AsyncIterator[RuntimeViews]:
    if kind == "local":
        yield LocalViews(host)
    else:
        async with linked(host, pair) as (views, _):
            yield views


@pytest.fixture(params=["local", "link"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def appended_while_waiting(view: RuntimeLogView, after: int, append: Callable[[], Awaitable[object]]) -> None:
    """Wait on ``view`` after ``after`` while ``append()`` writes."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(append)
        with anyio.fail_after(WAIT):
            await view.wait_appended(after)


async def test_a_view_reads_windows_and_waits_for_appends(make_host: MakeHost, socket_pair: Pair, kind: str) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th, views_of(kind, th.host, socket_pair) as views:
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:7")
        log = runtime.context.log
        for n in range(5):
            await log.append("custom", {"kind": "test.n", "n": n})
        view = await views.log(KEY)
        assert view is not None
        assert view.key == KEY
        last = log.last_id
        window = await view.window(limit=3)
        earlier = await view.window(before=last - 2, limit=2)
        since = await view.since(last - 2, limit=10)
        newest = await view.since(last - 4, limit=2)  # the newest 2 of the 4 after it
        with anyio.fail_after(WAIT):
            await view.wait_appended(last - 1)  # at once: there is a newer one
        await appended_while_waiting(view, last, lambda: log.append("custom", {"kind": "test.late"}))
        late = await view.since(last, limit=10)
        assert not view.closed
    assert [e.id for e in window] == [last - 2, last - 1, last]
    assert [e.id for e in earlier] == [last - 4, last - 3]
    assert [e.id for e in since] == [last - 1, last]
    assert [e.id for e in newest] == [last - 1, last]
    assert [e.data for e in late] == [{"kind": "test.late"}]


async def test_a_view_closes_with_its_runtime_and_a_stopped_runtime_has_none(
    make_host: MakeHost, socket_pair: Pair, kind: str
) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th, views_of(kind, th.host, socket_pair) as views:
        assert await views.log(KEY) is None  # not running: never spawned by asking
        assert await views.tools(KEY) is None
        assert th.host.routes.get("ana").runtimes == {}
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:7")
        view = await views.log(KEY)
        assert view is not None
        last = runtime.context.log.last_id
        await appended_while_waiting(view, last, lambda: runtime.stop("test"))  # a waiter is woken by the stop
        assert view.closed
        with pytest.raises(FactLogError):
            await view.window(limit=5)
        assert await views.log(KEY) is None
        again = await th.host.runtime_for("ana", "fake:bot", "private:7")  # the next life, on the same log
        renewed = await views.log(KEY)
        assert renewed is not None
        assert not renewed.closed
        assert view.closed  # a view stays with the life it was opened on
        assert [e.id for e in await renewed.window(limit=1)] == [again.context.log.last_id]


async def test_the_tools_are_listed_by_the_worker_and_run_only_there(make_host: MakeHost, socket_pair: Pair) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th, linked(th.host, socket_pair) as (views, _):
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:7")
        listed = await views.tools(KEY)
        here = await runtime.tool_surface()
        assert listed is not None
        send = next(tool for tool in listed if tool.name == "send_message")
        with pytest.raises(ToolError, match="runs in the turns of ana/fake:bot/private:7"):
            await send.handler({}, NO_CONTEXT)
    assert [(t.name, t.description, dict(t.parameters), t.trust, t.kind) for t in listed] == [
        (t.name, t.description, dict(t.parameters), t.trust, t.kind) for t in here
    ]


async def test_readers_of_one_runtime_share_one_wait_on_the_link(make_host: MakeHost, socket_pair: Pair) -> None:
    waits = Counted()
    async with make_host(profiles={"ana": profile_yaml()}) as th, linked(th.host, socket_pair, waits) as (views, _):
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:7")
        log = runtime.context.log
        readers = [await views.log(KEY) for _ in range(4)]
        last = log.last_id

        async def read_on(view: RuntimeLogView | None) -> None:
            assert view is not None
            await view.wait_appended(last)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for view in readers:
                    tg.start_soon(read_on, view)
                await waits.second.wait()  # every reader waits by now: they were started before the poll
                await log.append("custom", {"kind": "test.one"})
    assert waits.most == 1  # four readers, one request in flight


async def test_a_link_that_goes_closes_its_views(make_host: MakeHost, socket_pair: Pair) -> None:
    async with make_host(profiles={"ana": profile_yaml()}) as th, linked(th.host, socket_pair) as (views, link):
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:7")
        view = await views.log(KEY)
        assert view is not None
        await appended_while_waiting(view, runtime.context.log.last_id, link.aclose)
        assert view.closed
        with pytest.raises(FactLogError, match="is gone"):
            await view.since(0, limit=5)
        assert await views.log(KEY) is None
