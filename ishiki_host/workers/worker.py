"""One worker process of ``ishiki run --workers N``: a ``Host`` in the worker role, serving its supervisor.

The worker connects to the supervisor's socket, says hello (its index and pid), and enters its host: the config
directory's models, memory database, profiles and their routes, and no channel, HTTP server or host plugin
(``HostRole("worker")``). Its runtimes send through the supervisor's connections (``RemoteOutlets``) and it
resumes the unfinished runtimes it owns. It serves:

- ``deliver`` (profile, key, event, attachments): the route of the profile takes the event at the key, as in
  one process; the answer is the durable entry's id (``None`` when a filter consumed it or it repeats one the
  runtime took before). What the route raises travels back as itself (``AgentStopped``, ``FactLogError``...).
- ``settled`` (key): until that runtime has no running or queued turn.
- ``channels`` (the supervisor's live connections, all of them: sent at start and on every change).
- ``beat.run`` (beat id, prompt): the beat, read from the memory database, on this worker's runtimes.
- ``reload``: reload the config directory (the supervisor reloaded its own first); ``stop``: stop cleanly.
- ``status``: this worker's ``Host.status()`` part that only it knows (its runtimes, its gateway).
- ``slot.granted`` (id): the supervisor granted one of its model call slots (``slots="lease"``: every call's slot
  is leased from the supervisor, ``ishiki_host.workers.leases``; ``split``: the worker keeps its even share).
- ``log.open``, ``log.read``, ``log.wait``, ``tools``: its runtimes' logs and tools, for the supervisor's host
  plugins (``ishiki_host.workers.views``).

The worker stops cleanly when its supervisor says so or on SIGTERM. When its link drops otherwise (the
supervisor is gone, or reset the link), it ends at once, as a crash would (``_link_lives`` says why), with
``LINK_GONE`` (4). Exit status 0 after a clean stop, ``CONFIG_UNUSABLE``
(3) when the config directory cannot be loaded (the supervisor does not restart it then), 1 when the host
failed.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.channels.codec import attachment_from, event_from
from ishiki_host.errors import AgentStopped, BeatRunFailed, ConfigDirError, IshikiError
from ishiki_host.heartbeat.runner import RuntimeBeatRunner
from ishiki_host.host.beats import RouteRuntimes
from ishiki_host.host.collector import freeze_startup_heap
from ishiki_host.host.host import Host
from ishiki_host.host.roles import HostRole
from ishiki_host.plugins.configdir import load_config_dir
from ishiki_host.workers.leases import LeaseClient
from ishiki_host.workers.outlets import ChannelInfo, RemoteFetchers, RemoteOutlets
from ishiki_host.workers.owners import HashOwners
from ishiki_host.workers.peer import Handler, Peer
from ishiki_host.workers.pool import CONFIG_UNUSABLE, LINK_GONE
from ishiki_host.workers.views import LogViewService, key_from
from ishiki_host.workers.wire import FrameError, write_frame

if TYPE_CHECKING:
    from collections.abc import Callable

    from ishiki_host.config.host import WorkerSlots
    from ishiki_host.gateway.gateway import CallListener, Gateway
    from ishiki_host.host.routes import ProfileRoute
    from ishiki_host.jsontypes import Json
    from ishiki_host.plugins.configdir import ConfigDir

__all__ = ["CONFIG_UNUSABLE", "WorkerService", "serve_worker"]

logger = logging.getLogger("ishiki_host.workers")


class WorkerService:
    """What a worker serves its supervisor, on its host (see the module docstring)."""

    def __init__(self, index: int):
        self.index = index
        self.outlets: RemoteOutlets | None = None  # set once the link is made (the outlets send over it)
        self.leases: LeaseClient | None = None  # likewise, when the worker leases its call slots
        self.stopping = False  # the supervisor asked this worker to stop (SIGTERM counts too)
        self._host: Host | None = None
        self._ready = anyio.Event()

    def serve(self, host: Host) -> None:
        """``host`` has started: requests that waited for it go on, and a stop asked for while it started
        begins now (it found no host to stop then)."""
        self._host = host
        self._ready.set()
        if self.stopping:
            host.request_stop("the supervisor asked")

    def handlers(self) -> dict[str, Handler]:
        """The handlers by method name."""
        return {
            "deliver": self.deliver,
            "settled": self.settled,
            "channels": self.channels,
            "beat.run": self.run_beat,
            "reload": self.reload,
            "stop": self.stop,
            "status": self.status,
            "slot.granted": self.slot_granted,
            **LogViewService(self._started).handlers(),
        }

    async def _started(self) -> Host:
        await self._ready.wait()
        assert self._host is not None
        return self._host

    async def deliver(self, params: dict[str, Json]) -> Json:
        """The event, durable in its runtime's fact log: ``{"entry_id": id or None}``."""
        host = await self._started()
        route, key = self._route(host, params)
        raw = params.get("attachments") or []
        if not isinstance(raw, list):
            raise FrameError("bad deliver: attachments must be a list")
        attachments = [attachment_from(a) for a in raw]
        _, entry = await route.deliver(key, event_from(params.get("event")), attachments)
        return {"entry_id": entry.id if entry is not None else None}

    async def settled(self, params: dict[str, Json]) -> Json:
        """Until the runtime at the key has no running or queued turn (at once when it does not run here)."""
        host = await self._started()
        key = key_from(params)
        route = host.routes.get(key.profile)
        runtime = route.runtimes.get(key) if route is not None else None
        if runtime is not None:
            await runtime.settled()
        return None

    async def channels(self, params: dict[str, Json]) -> Json:
        """The supervisor's live connections, all of them."""
        raw = params.get("up")
        if not isinstance(raw, list):
            raise FrameError("bad channels: up must be a list")
        infos = []
        for item in raw:
            if not isinstance(item, dict):
                raise FrameError("bad channels: each connection must be an object")
            sid, platform, self_id = item.get("sid"), item.get("platform"), item.get("self_id")
            abilities = item.get("abilities") or []
            if not (isinstance(sid, str) and isinstance(platform, str) and isinstance(self_id, str)):
                raise FrameError("bad channels: sid, platform and self_id must be text")
            if not isinstance(abilities, list) or not all(isinstance(a, str) for a in abilities):
                raise FrameError("bad channels: abilities must be a list of names")
            infos.append(ChannelInfo(sid, platform, self_id, [str(a) for a in abilities]))
        assert self.outlets is not None, "the link is made before it serves"
        self.outlets.replace_all(infos)
        return None

    async def run_beat(self, params: dict[str, Json]) -> Json:
        """Run a beat of the memory database on this worker's runtimes; the text it produced."""
        host = await self._started()
        beat_id, prompt = params.get("beat"), params.get("prompt")
        if not isinstance(beat_id, str) or not isinstance(prompt, str):
            raise FrameError("bad beat.run: beat and prompt must be text")
        store = host.services.memory
        beat = await store.heartbeats.get(beat_id) if store is not None else None
        if beat is None:
            raise BeatRunFailed(f"beat {beat_id} is not in the memory database (any more)")
        return await RuntimeBeatRunner(RouteRuntimes(host)).run(beat, prompt)

    async def reload(self, params: dict[str, Json]) -> Json:
        """Reload the config directory; what changed, in words."""
        host = await self._started()
        return repr(await host.reload())

    async def stop(self, params: dict[str, Json]) -> Json:
        """Stop cleanly: turns get the grace to finish, logs close."""
        self.stopping = True
        if self._host is not None:
            self._host.request_stop("the supervisor asked")
        return None

    async def status(self, params: dict[str, Json]) -> Json:
        """This worker's runtimes (by profile), its gateway, its pid, its activity and its metrics' counts."""
        host = await self._started()
        routes: dict[str, Json] = {r.profile.id: sorted(str(k) for k in r.runtimes) for r in host.routes}
        observed = host.observability
        counted: dict[str, Json] = {}
        if observed is not None:
            counted["activity"] = observed.activity.snapshot()
        if observed is not None and observed.metrics is not None:
            held = params.get("counts")  # the version the supervisor holds of each life's counts, by pid
            mine = held.get(str(os.getpid())) if isinstance(held, dict) else None
            counted["counts"] = await anyio.to_thread.run_sync(observed.metrics.counts_report, mine)  # off the loop
        gateway = host.gateways.gateway.status()
        return {"index": self.index, "pid": os.getpid(), "routes": routes, "gateway": gateway, **counted}

    async def slot_granted(self, params: dict[str, Json]) -> Json:
        """The supervisor granted one of this worker's slot leases."""
        if self.leases is None:
            raise FrameError("bad slot.granted: this worker leases no slots")
        return await self.leases.granted(params)

    def _route(self, host: Host, params: dict[str, Json]) -> tuple[ProfileRoute, RuntimeKey]:
        key = key_from(params)
        profile = params.get("profile")
        route = host.routes.get(profile) if isinstance(profile, str) else None
        if route is None:
            raise AgentStopped(f"profile {profile!r} is not active on worker {self.index}")
        return route, key


async def serve_worker(
    root: Path,
    socket_path: Path,
    index: int,
    count: int,
    terminated: anyio.Event | None = None,
    hint: Callable[[Callable[[], Gateway]], CallListener] | None = None,
    slots: WorkerSlots = "split",
) -> int:
    """Run worker ``index`` of ``count`` for the supervisor at ``socket_path`` until it is told to stop, its link
    drops or ``terminated`` is set (SIGTERM); the exit status. ``hint(gateway)`` is told of every model call of
    the worker's gateway (``ishiki run``'s hint of what to configure when no model answers). ``slots``: how it
    shares each ``max_concurrency`` with the other workers (its supervisor says)."""
    try:
        config: ConfigDir = await anyio.to_thread.run_sync(load_config_dir, root)
    except ConfigDirError as exc:
        logger.error("the config directory cannot be used: %s", exc.message)
        return CONFIG_UNUSABLE
    link = await anyio.connect_unix(str(socket_path))
    await write_frame(link, {"hello": {"index": index, "pid": os.getpid()}})
    owners = HashOwners(count)
    service = WorkerService(index)
    peer = Peer(link, service.handlers(), label="supervisor")
    outlets = service.outlets = RemoteOutlets(peer)
    leases = service.leases = LeaseClient(peer) if slots == "lease" else None
    role = HostRole(
        "worker",
        outlets=outlets,
        fetchers=RemoteFetchers(peer),
        owns=lambda key: owners.owner(str(key)) == index,
        share=(index, count) if leases is None else None,
        slots=leases,
    )
    listeners = [hint(lambda: host.gateways.gateway)] if hint is not None else []
    host = Host(root, config=config, role=role, model_listeners=listeners)
    status = 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(_link_lives, peer, service)
        if terminated is not None:
            tg.start_soon(_stop_when, terminated, service, host)
        tg.start_soon(outlets.one_way.run)
        if leases is not None:
            tg.start_soon(leases.watch)
        try:
            async with host:
                freeze_startup_heap()  # as ``ishiki run`` does: no full collection walks start-up's heap again
                service.serve(host)
                await host.wait_stop_requested()
        except IshikiError as exc:
            logger.error("could not start: %s", exc)
            status = 1
        except Exception:
            logger.exception("the worker failed")
            status = 1
        tg.cancel_scope.cancel()
    await peer.aclose()
    return status


async def _link_lives(peer: Peer, service: WorkerService) -> None:
    """Serve the link. When it drops while the worker was not asked to stop (its supervisor died, or reset the
    link), the worker ends at once, as a crash would: a turn could neither send nor be told what its sends did,
    and recording a send cut in flight as failed would have it sent again. The next start recovers the fact
    logs as after a SIGKILL (a call in flight is answered "interrupted"), which is what a crash-consistent host
    promises."""
    await peer.run()
    if not service.stopping:
        logger.warning("the supervisor's link is gone; ending at once, as a crash would")
        logging.shutdown()
        os._exit(LINK_GONE)


async def _stop_when(terminated: anyio.Event, service: WorkerService, host: Host) -> None:
    await terminated.wait()
    service.stopping = True
    host.request_stop("SIGTERM")
