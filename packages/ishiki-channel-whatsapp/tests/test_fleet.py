"""Three ``ishiki run`` hosts of one fleet (``store: postgresql://...``) on one WhatsApp Cloud API number: Meta's
webhooks posted to the hosts in turn, as a load balancer would (a host that is down fails the post, and Meta
posts again to the next), hosts killed (SIGKILL) and frozen past their leases (SIGSTOP) at random while people
write. Every message is recorded once and answered, an answer is said twice only where a host stopped in the
middle of that very send, and no runtime is written by two hosts at once. (The Telegram package runs the same
fleet behind its webhook.)"""

from __future__ import annotations

import json
import random
import signal
from collections import Counter
from collections.abc import Iterator

import anyio
import httpx
import psycopg
import pytest
from ishiki_host.testing import IshikiProcess, RecordedRequest, Reply, ScriptedCall, free_ports
from ishiki_host.testing.postgres import PostgresServer

from ishiki_channel_whatsapp.testing import DEFAULT_APP_SECRET, WebhookDriver

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOSTS = 3
PEOPLE = 5
ROUNDS = 4  # messages per person, each written once the last one was answered
LEASE_SECONDS = 2
READY = "runs as +1 555-010-0000"


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


def answer_newest(request: RecordedRequest) -> Reply:
    """ "re: <text>" of the newest message, unless the conversation shows it answered already (a send whose
    result was ok: a host died after sending, and the next owner's model sees the reply, as a real one would)."""
    messages = request.json["messages"]
    last = max(index for index, m in enumerate(messages) if m["role"] == "user")
    if any(m["role"] == "tool" and '"ok": true' in str(m.get("content")) for m in messages[last + 1 :]):
        return Reply(tool_calls=(ScriptedCall("finish", {}),))
    text = str(messages[last]["content"]).rsplit("\n", 1)[-1]  # after the message's header line
    return Reply(tool_calls=(ScriptedCall("send_message", {"messages": [f"re: {text}"]}),))


def logs(url: str) -> list[tuple[str, dict]]:
    """Every entry of the fleet's fact logs, with its runtime key."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT runtime_key, line FROM ishiki_facts ORDER BY runtime_key, id").fetchall()
    return [(key, json.loads(line)["data"]) for key, line in rows]


def gaps(url: str) -> list[str]:
    """The runtimes whose entry ids are not 1, 2, 3, ... (two writers would leave a hole or a clash)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT runtime_key, count(*), max(id) FROM ishiki_facts GROUP BY runtime_key").fetchall()
    return [key for key, count, top in rows if count != top]


async def lease_over(url: str, name: str) -> None:
    """Until no live lease is held by a host named ``name`` (on the database's clock)."""
    with anyio.fail_after(120):
        while True:
            async with await psycopg.AsyncConnection.connect(url) as conn:
                cursor = await conn.execute(
                    "SELECT count(*) FROM ishiki_leases "
                    "WHERE starts_with(holder, %s) AND expires_at > clock_timestamp()",
                    (name + "/",),
                )
                row = await cursor.fetchone()
            if row is not None and row[0] == 0:
                return
            await anyio.sleep(LEASE_SECONDS / 4)  # the lease runs out on the database's clock: look again


async def test_hosts_killed_and_frozen_at_random_lose_nothing_on_a_whatsapp_number(
    tmp_path, postgres, whatsapp_graph, fake_openai, wa_config, wa_env, ishiki_processes
):
    url = postgres.create_database("fleet")
    fake_openai.default = answer_newest
    ports, names = free_ports(HOSTS), [f"h{index}" for index in range(HOSTS)]
    roots = []
    for name, port in zip(names, ports, strict=True):
        root = wa_config(root=tmp_path / name, listen=f"127.0.0.1:{port}")
        with (root / "ishiki.yaml").open("a") as file:
            fleet = f"{{name: {name}, lease_seconds: {LEASE_SECONDS}, poll_seconds: 0.2}}"
            file.write(f"store: ${{ISHIKI_STORE}}\nfleet: {fleet}\n")
        roots.append(root)
    env = {**wa_env, "ISHIKI_STORE": url}
    hosts: list[IshikiProcess] = [ishiki_processes(root, env=env) for root in roots]
    for host in hosts:
        await host.start()
        await host.logged(READY)

    rng = random.Random(25)
    people = [f"49151000000{n:02d}" for n in range(PEOPLE)]
    written = dict.fromkeys(people, 0)
    chaos: list[str] = []
    plan: list[str | None] = ["kill", "freeze", *(rng.choice(["kill", "freeze", None]) for _ in range(ROUNDS - 2))]
    rng.shuffle(plan)
    turn = 0

    def answered(person: str) -> int:
        return sum(1 for m in whatsapp_graph.sent if m.to == person)

    async def post(driver_of: list[WebhookDriver], person: str, text: str) -> None:
        """As Meta does: to the next host in turn, and again to the next when one does not answer 200."""
        nonlocal turn
        for _ in range(HOSTS * 20):
            turn += 1
            try:
                answer, _ = await driver_of[turn % HOSTS].text(person, text, name=f"Person {person[-2:]}")
            except httpx.TransportError:
                continue  # that host is down
            if answer.status_code == 200:
                return
        raise AssertionError(f"no host took {text!r}")

    drivers = [
        WebhookDriver(f"http://127.0.0.1:{port}/hooks/whatsapp/0", app_secret=DEFAULT_APP_SECRET) for port in ports
    ]
    try:
        with anyio.fail_after(600):
            while any(answered(p) < ROUNDS for p in people):
                for person in people:
                    if written[person] < ROUNDS and answered(person) >= written[person]:
                        await post(drivers, person, f"{person} message {written[person]}")
                        written[person] += 1
                action, victim = plan.pop() if plan else None, rng.randrange(HOSTS)
                if action == "kill":
                    chaos.append(f"kill {names[victim]}")
                    await hosts[victim].kill()
                    hosts[victim] = await ishiki_processes(roots[victim], env=env).start()
                    await hosts[victim].logged(READY)
                elif action == "freeze":
                    chaos.append(f"freeze {names[victim]}")
                    assert hosts[victim].process is not None
                    hosts[victim].process.send_signal(signal.SIGSTOP)
                    await lease_over(url, names[victim])  # another host takes its runtimes over meanwhile
                    hosts[victim].process.send_signal(signal.SIGCONT)
                await whatsapp_graph.until(lambda: all(answered(p) >= written[p] for p in people), deadline=120)
    finally:
        for driver in drivers:
            await driver.aclose()
    for host in hosts:
        assert await host.stop() == 0, host.stderr()

    texts = Counter((m.to, m.text) for m in whatsapp_graph.sent)
    expected = {(p, f"re: {p} message {n}") for p in people for n in range(ROUNDS)}
    assert set(texts) == expected, chaos  # nothing lost
    entries = logs(url)
    interrupted = Counter(
        key.rsplit(":", 1)[1]
        for key, data in entries
        if data.get("tool_name") == "send_message" and "interrupted" in json.dumps(data.get("parts"))
    )
    twice = Counter(person for (person, _), count in texts.items() for _ in range(count - 1))
    assert twice - interrupted == Counter(), (chaos, twice)  # said twice only where a send was cut mid-flight
    inbound = Counter((key, data["source"]["content"]) for key, data in entries if isinstance(data.get("source"), dict))
    assert len(inbound) == PEOPLE * ROUNDS
    assert [k for k, count in inbound.items() if count != 1] == [], chaos  # recorded once
    assert gaps(url) == []  # one writer at a time
    assert any(step.startswith("kill") for step in chaos), chaos
    assert any(step.startswith("freeze") for step in chaos), chaos
