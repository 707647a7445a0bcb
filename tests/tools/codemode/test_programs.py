"""Programs that call host tools: composition, concurrency, failures, and the limits on tool traffic."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from ishiki_host.tools.codemode import Limits, ToolFn, run_program

pytestmark = pytest.mark.anyio

# Long enough never to be hit by a working program, short enough that a broken one fails fast.
SAFE = Limits(timeout_ms=5_000)


async def test_a_program_composes_three_tools_and_returns_nested_data() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def recording(name: str, answer: Any) -> ToolFn:
        async def tool(args: dict[str, Any]) -> Any:
            calls.append((name, args))
            return answer(args)

        return tool

    tools = {
        "lookup": recording("lookup", lambda args: {"id": args["id"], "title": "Ishiki"}),
        "count_words": recording("count_words", lambda args: len(args["text"].split())),
        "tag": recording("tag", lambda args: [f"#{word.lower()}" for word in args["words"]]),
    }
    code = """
        const doc = await tools.lookup({ id: 7 });
        const words = await tools.count_words({ text: doc.title + " host 意識" });
        const tags = await tools.tag({ words: [doc.title, "Host"] });
        return { doc, stats: { words, tags }, list: [doc.id, [words, { deep: true }]] };
    """
    result = await run_program(code, tools, SAFE)
    assert result.ok, result.error
    assert result.value == {
        "doc": {"id": 7, "title": "Ishiki"},
        "stats": {"words": 3, "tags": ["#ishiki", "#host"]},
        "list": [7, [3, {"deep": True}]],
    }
    assert [name for name, _ in calls] == ["lookup", "count_words", "tag"]
    assert calls[1][1] == {"text": "Ishiki host 意識"}
    assert result.tool_calls == 3
    assert result.json == '{"doc":{"id":7,"title":"Ishiki"},"stats":{"words":3,"tags":["#ishiki","#host"]},' + (
        '"list":[7,[3,{"deep":true}]]}'
    )


async def test_promise_all_runs_two_tools_at_once() -> None:
    # Each tool waits until both have started: run one after the other, the first would wait forever.
    started: set[str] = set()
    both_started = anyio.Event()

    def rendezvous(name: str) -> ToolFn:
        async def tool(args: dict[str, Any]) -> str:
            started.add(name)
            if len(started) == 2:
                both_started.set()
            await both_started.wait()
            return f"{name}:{args['n']}"

        return tool

    code = "return await Promise.all([tools.left({ n: 1 }), tools.right({ n: 2 })]);"
    result = await run_program(code, {"left": rendezvous("left"), "right": rendezvous("right")}, SAFE)
    assert result.ok, result.error
    assert result.value == ["left:1", "right:2"]


async def test_concurrent_calls_are_capped_at_max_concurrent_tool_calls() -> None:
    in_flight = 0
    peak = 0
    reached_cap = anyio.Event()

    async def work(args: dict[str, Any]) -> int:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 2:
            reached_cap.set()
        await reached_cap.wait()
        in_flight -= 1
        return int(args["i"]) * 10

    code = "return await Promise.all([1, 2, 3, 4, 5, 6].map((i) => tools.work({ i })));"
    result = await run_program(code, {"work": work}, Limits(timeout_ms=5_000, max_concurrent_tool_calls=2))
    assert result.ok, result.error
    assert result.value == [10, 20, 30, 40, 50, 60]
    assert peak == 2


async def test_a_tool_that_raises_rejects_its_promise_and_try_catch_sees_it() -> None:
    async def broken(args: dict[str, Any]) -> Any:
        raise FileNotFoundError(f"no such file: {args['path']}")

    code = """
        try {
            await tools.read_file({ path: "a.txt" });
            return "not reached";
        } catch (e) {
            return { name: e.name, message: e.message, isError: e instanceof Error };
        }
    """
    result = await run_program(code, {"read_file": broken}, SAFE)
    assert result.ok, result.error
    assert result.value == {
        "name": "Error",
        "message": "tools.read_file failed: FileNotFoundError: no such file: a.txt",
        "isError": True,
    }


async def test_an_uncaught_tool_error_fails_the_program_at_the_calling_line() -> None:
    async def broken(args: dict[str, Any]) -> Any:
        raise ValueError("quota exceeded")

    async def fine(args: dict[str, Any]) -> int:
        return 1

    code = "const a = await tools.fine({});\nconst b = await tools.broken({});\nreturn a + b;"
    result = await run_program(code, {"broken": broken, "fine": fine}, SAFE)
    assert not result.ok
    assert result.error_kind == "thrown"
    assert result.error == "Error: tools.broken failed: ValueError: quota exceeded\n    at line 2, column 23"


async def test_promise_all_rejects_with_the_first_failure_and_other_calls_still_finish() -> None:
    finished: list[str] = []
    release = anyio.Event()

    async def slow(args: dict[str, Any]) -> str:
        await release.wait()
        finished.append("slow")
        return "slow"

    async def failing(args: dict[str, Any]) -> str:
        release.set()
        raise RuntimeError("nope")

    code = "return await Promise.all([tools.slow({}), tools.failing({})]);"
    result = await run_program(code, {"slow": slow, "failing": failing}, SAFE)
    assert result.error_kind == "thrown"
    assert "tools.failing failed: RuntimeError: nope" in (result.error or "")
    assert finished == ["slow"]


async def test_a_call_the_program_did_not_await_may_finish_before_the_result_is_returned() -> None:
    done: list[dict[str, Any]] = []

    async def send(args: dict[str, Any]) -> str:
        await anyio.lowlevel.checkpoint()
        done.append(args)
        return "sent"

    result = await run_program('tools.send({ text: "hi" });\nreturn "returned";', {"send": send}, SAFE)
    assert result.ok, result.error
    assert result.value == "returned"
    assert done == [{"text": "hi"}]


async def test_a_hanging_tool_times_out_the_program_and_is_cancelled() -> None:
    cancelled = anyio.Event()

    async def hang(args: dict[str, Any]) -> None:
        try:
            await anyio.Event().wait()
        finally:
            cancelled.set()

    result = await run_program("return await tools.hang({});", {"hang": hang}, Limits(timeout_ms=100))
    assert result.error_kind == "timeout"
    assert result.error == "the program ran out of time (100 ms, timeout_ms)"
    assert cancelled.is_set()


async def test_cancelling_the_caller_stops_the_program_and_its_thread() -> None:
    started = anyio.Event()
    tool_cancelled = anyio.Event()

    async def hang(args: dict[str, Any]) -> None:
        started.set()
        try:
            await anyio.Event().wait()
        finally:
            tool_cancelled.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_program, "return await tools.hang({});", {"hang": hang}, SAFE)
        await started.wait()
        tg.cancel_scope.cancel()
    assert tool_cancelled.is_set()
    # The worker ends on its own once told to stop; let the loop run until it has (the fixture counts threads).
    with anyio.fail_after(5):
        while any(thread.name.startswith("ishiki-codemode-") for thread in threading.enumerate()):
            await anyio.lowlevel.checkpoint()


async def test_tool_input_output_and_call_count_limits_reject_the_call() -> None:
    async def echo(args: dict[str, Any]) -> Any:
        return args

    async def big(args: dict[str, Any]) -> str:
        return "x" * 300

    limits = Limits(timeout_ms=5_000, max_tool_input_bytes=100, max_tool_output_bytes=200, max_tool_calls=2)
    code = """
        const outcome = async (p) => { try { return await p; } catch (e) { return e.message; } };
        return [
            await outcome(tools.echo({ text: "x".repeat(200) })),
            await outcome(tools.big({})),
            await outcome(tools.echo({ text: "ok" })),
            await outcome(tools.echo({ text: "one too many" })),
        ];
    """
    result = await run_program(code, {"echo": echo, "big": big}, limits)
    assert result.ok, result.error
    assert result.value == [
        "tools.echo: input is 211 bytes, more than max_tool_input_bytes (100)",
        "tools.big returned 302 bytes, more than max_tool_output_bytes (200)",
        {"text": "ok"},
        "tools.echo: the program already made 2 tool calls (max_tool_calls)",
    ]
    assert result.tool_calls == 2


async def test_bad_tool_inputs_and_outputs_reject_with_a_reason() -> None:
    async def echo(args: dict[str, Any]) -> Any:
        return args

    async def not_json(args: dict[str, Any]) -> Any:
        return {1, 2}

    code = """
        const outcome = async (f) => { try { return await f(); } catch (e) { return e.name + ": " + e.message; } };
        return [
            await outcome(() => tools.echo("text")),
            await outcome(() => tools.echo({ f: () => 1 })),
            await outcome(() => tools.not_json({})),
            await outcome(() => tools.missing({})),
            await outcome(() => tools.echo()),
        ];
    """
    result = await run_program(code, {"echo": echo, "not_json": not_json}, SAFE)
    assert result.ok, result.error
    assert result.value == [
        "TypeError: tools.echo: input must be an object, got a string",
        "TypeError: tools.echo: input.f is a function",
        "Error: tools.not_json returned a value that is not JSON (Object of type set is not JSON serializable)",
        "TypeError: not a function",
        {},
    ]


async def test_tools_with_names_that_are_not_identifiers_are_reachable_by_index() -> None:
    async def tool(args: dict[str, Any]) -> str:
        raise KeyError("gone")

    code = 'try { await tools["web-search"]({}); } catch (e) { return [Object.keys(tools), e.message]; }'
    result = await run_program(code, {"web-search": tool}, SAFE)
    assert result.value == [["web-search"], "tools[\"web-search\"] failed: KeyError: 'gone'"]


async def test_console_output_is_kept_in_order_and_capped() -> None:
    code = """
        console.log("start", { n: 1 }, [2], null);
        console.warn("careful");
        for (let i = 0; i < 100; i++) console.log("line " + i);
        return 1;
    """
    result = await run_program(code, {}, Limits(timeout_ms=5_000, max_log_bytes=64))
    assert result.ok, result.error
    assert result.logs == (
        'start {"n":1} [2] null',
        "[warn] careful",
        "line 0",
        "line 1",
        "line 2",
        "line 3",
        "[logs truncated at 64 bytes, max_log_bytes]",
    )


async def test_the_tools_object_is_frozen_and_host_plumbing_is_invisible() -> None:
    code = """
        "use strict";
        let error = null;
        try { tools.extra = 1; } catch (e) { error = e.name; }
        return { error, keys: Object.keys(tools), globals: Object.keys(globalThis).filter((k) => k.startsWith("__")) };
    """
    result = await run_program(code, {"b": _noop, "a": _noop}, SAFE)
    assert result.value == {"error": "TypeError", "keys": ["a", "b"], "globals": []}


async def _noop(args: dict[str, Any]) -> None:
    return None


async def test_cancelling_during_a_busy_loop_leaves_no_thread_after_the_deadline() -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_program, "while (true) {}", {}, Limits(timeout_ms=200))
        await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
    with anyio.fail_after(5):
        while any(thread.name.startswith("ishiki-codemode-") for thread in threading.enumerate()):
            await anyio.lowlevel.checkpoint()


async def test_lone_surrogates_cross_the_boundary_both_ways() -> None:
    async def odd(args: dict[str, Any]) -> str:
        return "x\ud800y" + args["s"]

    async def odd_error(args: dict[str, Any]) -> str:
        raise ValueError("bad \udc80")

    code = """
        const text = await tools.odd({ s: "\ud83d" });
        let message;
        try { await tools.odd_error({}); } catch (e) { message = e.message; }
        return { text, message, literal: "\udfff" };
    """
    result = await run_program(code, {"odd": odd, "odd_error": odd_error}, SAFE)
    assert result.ok, result.error
    assert result.value == {
        "text": "x\ud800y\ud83d",
        "message": "tools.odd_error failed: ValueError: bad \\udc80",
        "literal": "\udfff",
    }
