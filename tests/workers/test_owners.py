"""The local owners of runtime keys: the same worker for a key in every process and run, spread over all."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest

from ishiki_host.workers.owners import HashOwners, RuntimeOwners

KEYS = [f"persona-{n}/telegram:{n * 7919}" for n in range(400)]


def test_a_key_has_the_same_owner_in_another_process_with_another_hash_seed() -> None:
    here = [HashOwners(4).owner(key) for key in KEYS]
    program = (
        "import sys; from ishiki_host.workers.owners import HashOwners; "
        "owners = HashOwners(4); print(','.join(str(owners.owner(k)) for k in sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-c", program, *KEYS], env=env, capture_output=True, text=True, check=True)
    assert [int(part) for part in done.stdout.strip().split(",")] == here


def test_keys_spread_over_every_worker_and_one_worker_owns_all() -> None:
    owners: RuntimeOwners = HashOwners(4)
    spread = Counter(owners.owner(key) for key in KEYS)
    assert sorted(spread) == [0, 1, 2, 3]
    assert min(spread.values()) > len(KEYS) / 8  # none starved
    assert {HashOwners(1).owner(key) for key in KEYS} == {0}
    assert owners.count == 4


def test_a_known_key_keeps_its_owner() -> None:
    # pinned: changing the hash would move every runtime (and its fact log's writer) to another worker
    assert [HashOwners(7).owner(key) for key in ("a/b", "luna/console:local", "")] == [5, 0, 0]


def test_at_least_one_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker, not 0"):
        HashOwners(0)
