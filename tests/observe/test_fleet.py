"""The counts of a supervisor's workers, summed into its own: counters and histograms carried as plain data (all
of them, then what changed), kept monotonic across a worker's restarts, printed as one family per name;
activity and gateway statuses merged."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ishiki_host import FakeClock, RuntimeKey, TurnOutcome, TurnReport
from ishiki_host.observe import HostMetrics, RecentActivity
from ishiki_host.observe.fleet import WorkerCounts, counts_from
from ishiki_host.observe.fleetstatus import merged_activity, merged_gateway

pytestmark = pytest.mark.anyio

ANA = RuntimeKey.for_channel("ana", "fake:bot", "private:1")
BOB = RuntimeKey.for_channel("bob", "fake:bot", "private:2")


def turns(metrics: HostMetrics, key: RuntimeKey, count: int, seconds: float = 0.3) -> HostMetrics:
    for _ in range(count):
        outcome = TurnOutcome(1, "done", "sent")
        metrics.turn_ended(key, TurnReport(1, "done", "sent", None, (), (), outcome, seconds=seconds, tools=("x",)))
    return metrics


def value(page: bytes, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(page.decode()):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return None


def report(metrics: HostMetrics, held: object = None) -> dict[str, object]:
    return metrics.counts_report(held)


def test_counts_travel_as_plain_data_without_their_created_stamps() -> None:
    counts = counts_from(report(turns(HostMetrics(), ANA, 2))["families"])
    turned = counts["ishiki_turns"]
    assert turned.type == "counter"
    assert turned.samples == {("ishiki_turns_total", (("profile", "ana"), ("status", "done"))): 2.0}
    seconds = counts["ishiki_turn_duration_seconds"]
    assert seconds.samples[("ishiki_turn_duration_seconds_count", (("profile", "ana"),))] == 2.0
    assert not any(name.endswith("_created") for family in counts.values() for name, _ in family.samples)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"name": "x"}, "counts must be a list"),
        ([{"name": "x", "type": "gauge", "help": "", "samples": []}], "count family 'x'"),
        ([{"name": "x", "type": "counter", "help": "", "samples": [["x_total", {"a": 1}, 1]]}], "labels"),
        ([{"name": "x", "type": "counter", "help": "", "samples": [["x_total", {}, "1"]]}], "value must be a number"),
    ],
)
def test_counts_that_do_not_have_their_shape_say_what_is_wrong(data: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        counts_from(data)


def test_after_the_first_report_only_what_changed_travels_and_nothing_when_nothing_did() -> None:
    worker = turns(HostMetrics(), ANA, 2)
    first = report(worker)
    unchanged = report(worker, first["version"])
    turns(worker, BOB, 1)
    changed = report(worker, unchanged["version"])
    again = report(worker, first["version"])  # the supervisor missed a report: everything again
    assert (first["version"], first["base"]) == (1, None)
    assert unchanged == {"version": 1, "base": 1, "families": []}  # not even collected
    assert (changed["version"], changed["base"]) == (2, 1)
    counts = counts_from(changed["families"])
    assert set(counts["ishiki_turns"].samples) == {("ishiki_turns_total", (("profile", "bob"), ("status", "done")))}
    assert ("ishiki_tool_calls_total", (("profile", "ana"), ("tool", "x"))) not in counts["ishiki_tool_calls"].samples
    assert (again["version"], again["base"]) == (3, None)
    assert len(counts_from(again["families"])["ishiki_turns"].samples) == 2


def test_reports_build_up_a_lifes_counts_and_one_out_of_order_is_dropped() -> None:
    worker, kept = turns(HostMetrics(), ANA, 2), WorkerCounts()
    kept.update(0, 100, report(worker, kept.held().get("100")))
    turns(worker, ANA, 1)
    late = report(worker, kept.held().get("100"))  # version 2, on version 1
    whole = report(worker, None)  # version 3, whole
    kept.update(0, 100, whole)
    kept.update(0, 100, late)  # it came after the newer whole one: dropped, nothing goes back
    assert kept.held() == {"100": 3}
    assert _turns(kept, "ana") == 3
    turns(worker, ANA, 2)
    kept.update(0, 100, report(worker, kept.held().get("100")))
    assert _turns(kept, "ana") == 5
    assert kept.held() == {"100": 4}


def test_a_restarted_worker_counting_from_zero_keeps_the_sum_growing() -> None:
    kept = WorkerCounts()
    kept.update(0, 100, report(turns(HostMetrics(), ANA, 3)))
    kept.update(1, 200, report(turns(HostMetrics(), BOB, 5)))
    kept.update(0, 101, report(turns(HostMetrics(), ANA, 1)))  # a new life (pid) of worker 0, from 0
    assert _turns(kept, "ana") == 4  # the dead life's 3, and the new one's 1
    assert _turns(kept, "bob") == 5
    assert kept.held() == {"101": 1, "200": 1}
    kept.retire_all()  # the workers are replaced (their count changed)
    kept.update(0, 300, report(HostMetrics()))
    assert (_turns(kept, "ana"), _turns(kept, "bob")) == (4, 5)


def _turns(kept: WorkerCounts, profile: str) -> float:
    samples = kept.totals()["ishiki_turns"].samples
    return samples.get(("ishiki_turns_total", (("profile", profile), ("status", "done"))), 0.0)


async def test_a_scrape_refreshes_the_included_counts_and_prints_one_family_per_name() -> None:
    own = turns(HostMetrics(), ANA, 1)
    kept = WorkerCounts()
    refreshed: list[int] = []

    async def refresh() -> None:
        refreshed.append(len(refreshed))
        worker = turns(HostMetrics(), ANA, 2)
        kept.update(0, 1, report(turns(worker, BOB, 1, seconds=7.0)))

    own.include(kept.totals, refresh)
    page = await own.scrape()
    names = [family.name for family in text_string_to_metric_families(page.decode())]
    assert refreshed == [0]
    assert len(names) == len(set(names))  # the workers' series are in the supervisor's families, not beside
    assert value(page, "ishiki_turns_total", profile="ana", status="done") == 3
    assert value(page, "ishiki_turns_total", profile="bob", status="done") == 1
    assert value(page, "ishiki_tool_calls_total", profile="ana", tool="x") == 3
    assert value(page, "ishiki_turn_duration_seconds_bucket", profile="bob", le="10.0") == 1
    assert value(page, "ishiki_turn_duration_seconds_bucket", profile="bob", le="5.0") == 0
    assert value(page, "ishiki_turn_duration_seconds_sum", profile="bob") == 7.0
    assert value(page, "ishiki_turns_created", profile="ana", status="done") is not None  # this process's stamp
    assert value(page, "ishiki_turns_created", profile="bob", status="done") is None


def test_activity_of_the_workers_is_summed_into_the_supervisors() -> None:
    activity = RecentActivity(FakeClock())
    worker = {"turnsLastMinute": 2, "turnsPerMinute": 1.5, "turnsLastHour": 7, "failedTurnsLastHour": 1,
              "errorsLastHour": 0, "turnsByStatus": {"done": 6, "failed": 1}}  # fmt: skip
    activity.include(lambda: [worker, {**worker, "turnsByStatus": {"aborted": 7}}])
    summed = activity.snapshot()
    assert summed["turnsLastHour"] == 14
    assert summed["turnsPerMinute"] == 3.0
    assert summed["turnsByStatus"] == {"done": 6, "failed": 1, "aborted": 7}
    assert merged_activity([]) == {}


def test_gateway_statuses_sum_their_counts_and_keep_the_worst_breaker() -> None:
    def status(calls: int, state: str, p95: float | None, failures: int) -> dict[str, object]:
        return {
            "providers": {"fake": {"api": "openai-completions", "error": None, "calls": calls, "failures": 1,
                                   "tokens": {"input": calls * 10}}},
            "members": {"fake:m": {"member": "fake:m", "state": state, "failures": failures, "calls": calls,
                                   "tokens": {"input": calls, "output": 1}, "errors": {"unavailable": 1},
                                   "latency": {"p50": p95, "p95": p95, "samples": calls}}},
            "scheduler": {"fake": {"max_concurrency": 2, "in_flight": 1, "waiting_interactive": 0, "granted": calls}},
        }  # fmt: skip

    merged = merged_gateway([status(0, "closed", None, 0), status(3, "open", 0.5, 4), status(2, "half_open", 0.2, 1)])
    provider, member, lane = merged["providers"]["fake"], merged["members"]["fake:m"], merged["scheduler"]["fake"]
    assert (provider["calls"], provider["failures"], provider["tokens"]) == (5, 3, {"input": 50})
    assert provider["api"] == "openai-completions"
    assert (member["state"], member["failures"], member["calls"]) == ("open", 4, 5)  # worst state, most failures
    assert member["errors"] == {"unavailable": 3}
    assert member["latency"] == {"p50": 0.5, "p95": 0.5, "samples": 5}  # the highest percentiles
    assert (lane["max_concurrency"], lane["in_flight"], lane["granted"]) == (2, 1, 0)  # the first's (its own)
