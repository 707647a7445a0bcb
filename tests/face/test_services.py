"""``HostServices``: what a host shares with its runtimes' plugins, typed, with host-wide objects by key."""

from __future__ import annotations

import anyio
import pytest

from ishiki_host import HostServices, ServiceKey
from ishiki_host.testing import MakeHost, profile_yaml


class Registry:
    """A host-wide object a plugin shares between its runtimes."""

    def __init__(self) -> None:
        self.users = 0


REGISTRY = ServiceKey("registry", Registry)


def test_setdefault_makes_the_object_once_and_shares_it() -> None:
    services = HostServices()
    assert services.get(REGISTRY) is None
    first = services.setdefault(REGISTRY, Registry)
    assert services.setdefault(REGISTRY, Registry) is first
    assert services.get(REGISTRY) is first


def test_a_value_of_another_type_is_refused() -> None:
    services = HostServices()
    with pytest.raises(TypeError, match="services\\['registry'\\] holds a str, not a Registry"):
        services.put(REGISTRY, "not a registry")  # type: ignore[arg-type]
    services.put(ServiceKey("registry", str), "taken")
    with pytest.raises(TypeError, match="holds a str, not a Registry"):
        services.get(REGISTRY)


def test_spawn_without_a_task_group_says_so() -> None:
    services = HostServices()
    assert not services.can_spawn
    with pytest.raises(RuntimeError, match="work: this host has no task group for host-wide work"):
        services.spawn(anyio.lowlevel.checkpoint, name="work")


@pytest.mark.anyio
async def test_a_host_runs_host_wide_work_in_its_task_group_until_it_stops(make_host: MakeHost) -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def serve() -> None:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async with make_host(profiles={"ana": profile_yaml()}) as th:
        services = th.host.services
        assert services.can_spawn
        services.spawn(serve, name="a shared server")
        with anyio.fail_after(30):
            await started.wait()
        assert not cancelled.is_set()
        assert services.runtimes is not None
        context = await services.runtimes.runtime_for("ana", "fake:bot", "private:1")
        assert context.key.profile == "ana"
    assert cancelled.is_set()
