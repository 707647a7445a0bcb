"""The sandbox holds: runaway programs are stopped, host access is absent, bad results are named."""

from __future__ import annotations

import pytest

from ishiki_host.errors import SandboxError
from ishiki_host.tools.codemode import Limits, run_program

pytestmark = pytest.mark.anyio

SHORT = Limits(timeout_ms=200)
SMALL = Limits(timeout_ms=5_000, memory_limit_bytes=32 << 20)


async def test_a_busy_loop_is_stopped_at_the_deadline() -> None:
    result = await run_program("while (true) {}", {}, SHORT)
    assert (result.ok, result.error_kind) == (False, "timeout")
    assert result.error == "the program ran out of time (200 ms, timeout_ms)"


async def test_a_busy_loop_cannot_catch_its_interruption() -> None:
    code = "try { while (true) {} } catch (e) { return 'escaped'; }"
    result = await run_program(code, {}, SHORT)
    assert result.error_kind == "timeout"


async def test_a_microtask_loop_is_stopped_at_the_deadline() -> None:
    result = await run_program("while (true) await null;", {}, SHORT)
    assert result.error_kind == "timeout"


async def test_a_microtask_loop_in_an_inner_async_function_is_stopped() -> None:
    result = await run_program("await (async () => { while (true) await null; })();", {}, SHORT)
    assert result.error_kind == "timeout"


async def test_a_microtask_loop_is_stopped_by_the_job_cap_before_the_deadline() -> None:
    result = await run_program("while (true) await null;", {}, Limits(timeout_ms=30_000, max_jobs=1_000))
    assert result.error_kind == "jobs"
    assert "more than 1000 microtasks (max_jobs)" in (result.error or "")
    assert result.jobs == 1_001


async def test_a_result_is_returned_even_while_a_background_await_loop_spins() -> None:
    code = "(async () => { while (true) await null; })();\nreturn 'done';"
    result = await run_program(code, {}, Limits(timeout_ms=5_000, max_jobs=10_000))
    assert result.ok, result.error
    assert result.value == "done"


async def test_a_one_gigabyte_buffer_hits_the_memory_limit() -> None:
    result = await run_program("const b = new ArrayBuffer(1 << 30);\nreturn b.byteLength;", {}, SMALL)
    assert result.error_kind == "memory"
    assert result.error == f"the program ran out of memory ({32 << 20} bytes, memory_limit_bytes)"


@pytest.mark.parametrize(
    "code",
    [
        "let s = 'x'; while (true) s = `${s}${s}`;",
        "let s = 'xy'; while (true) s = s.repeat(2);",
        "return 'x'.repeat((1 << 30) - 1).length;",
        "const a = []; while (true) a.push({ n: a.length });",
        "const a = []; while (true) a.push('y'.repeat(1 << 20) + a.length);",
    ],
    ids=["string-doubling", "string-repeat", "one-gigabyte-string", "many-objects", "many-strings"],
)
async def test_growing_without_bound_hits_the_memory_limit(code: str) -> None:
    result = await run_program(code, {}, SMALL)
    assert result.error_kind == "memory", result.error
    assert (result.error or "").endswith(f"({32 << 20} bytes, memory_limit_bytes)")


async def test_doubling_a_rope_string_hits_the_engine_length_limit_first() -> None:
    # ``s + s`` builds a rope that shares its halves, so memory stays small until the length cap (2**30).
    result = await run_program("let s = 'x';\nwhile (true) s = s + s;", {}, SMALL)
    assert (result.error_kind, result.error) == ("thrown", "InternalError: string too long\n    at line 2, column 22")


async def test_after_a_memory_failure_the_next_program_gets_a_fresh_context() -> None:
    await run_program("globalThis.leftover = 1; new ArrayBuffer(1 << 30);", {}, SMALL)
    result = await run_program("return typeof leftover;", {}, SMALL)
    assert result.value == "undefined"


async def test_deep_recursion_is_a_thrown_range_error() -> None:
    result = await run_program("function f(n) { return f(n + 1) + 1; }\nreturn f(0);", {}, SMALL)
    assert result.error_kind == "thrown"
    assert (result.error or "").startswith("RangeError: Maximum call stack size exceeded\n    at f (line 1, column")


async def test_require_fetch_and_dynamic_import_do_not_exist() -> None:
    code = """
        const out = {};
        for (const [name, f] of [["require", () => require("fs")], ["fetch", () => fetch("http://127.0.0.1/")]]) {
            try { f(); out[name] = "reachable"; } catch (e) { out[name] = e.name + ": " + e.message; }
        }
        for (const spec of ["os", "std", "qjs:os", "./x.js"]) {
            try { await import(spec); out[spec] = "loaded"; } catch (e) { out[spec] = e.name + ": " + e.message; }
        }
        return out;
    """
    result = await run_program(code, {}, SMALL)
    assert result.value == {
        "require": "ReferenceError: require is not defined",
        "fetch": "ReferenceError: fetch is not defined",
        "os": "ReferenceError: could not load module 'os'",
        "std": "ReferenceError: could not load module 'std'",
        "qjs:os": "ReferenceError: could not load module 'qjs:os'",
        "./x.js": "ReferenceError: could not load module 'x.js'",
    }


async def test_no_host_object_is_in_scope() -> None:
    names = [
        "std",
        "os",
        "process",
        "Deno",
        "Bun",
        "require",
        "module",
        "exports",
        "fetch",
        "XMLHttpRequest",
        "WebSocket",
        "setTimeout",
        "setInterval",
        "WebAssembly",
        "scriptArgs",
        "print",
        "__loadScript",
    ]
    code = f"return Object.fromEntries({names!r}.map((n) => [n, typeof globalThis[n]]));"
    result = await run_program(code, {}, SMALL)
    assert result.value == dict.fromkeys(names, "undefined")


async def test_a_static_import_is_a_syntax_error() -> None:
    result = await run_program("import os from 'os';\nreturn os.getcwd();", {}, SMALL)
    assert result.error_kind == "syntax"
    assert result.error == "SyntaxError: Unexpected identifier 'os' (line 1, column 8)"


async def test_a_syntax_error_names_its_line_and_column() -> None:
    result = await run_program("const a = 1;\nconst b = a +* 2;\nreturn b;", {}, SMALL)
    assert result.error_kind == "syntax"
    assert result.error == "SyntaxError: unexpected token in expression: '*' (line 2, column 14)"


async def test_an_unclosed_program_is_a_syntax_error_at_its_end() -> None:
    result = await run_program("return [1, 2", {}, SMALL)
    assert result.error_kind == "syntax"
    assert (result.error or "").endswith("(at the end of the program)")


async def test_a_thrown_error_reports_the_program_stack() -> None:
    code = "function check(x) {\n  if (x > 1) throw new RangeError('too big: ' + x);\n}\ncheck(1);\ncheck(2);"
    result = await run_program(code, {}, SMALL)
    assert result.error_kind == "thrown"
    assert result.error == "RangeError: too big: 2\n    at check (line 2, column 49)\n    at line 5, column 1"


async def test_a_thrown_non_error_value_is_shown() -> None:
    result = await run_program("throw { code: 42 };", {}, SMALL)
    assert result.error == 'the program threw a non-Error value: {"code":42}'


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("return () => 1;", "the program's result is not JSON: result is a function"),
        (
            "const a = { b: {} }; a.b.back = a; return a;",
            "the program's result is not JSON: result.b.back is a cycle: it refers back to result",
        ),
        ("return;", "the program returned undefined: end it with `return <value>`"),
        (
            "return 10n ** 20n;",
            "the program's result is not JSON: result is a BigInt; convert it with String() or Number()",
        ),
        ("return { s: Symbol('x') };", "the program's result is not JSON: result.s is a Symbol"),
        (
            "return { m: new Map([[1, 2]]) };",
            "the program's result is not JSON: result.m is a Map; convert it first (Object.fromEntries(map), [...set])",
        ),
        (
            "return [1, Promise.resolve(2)];",
            "the program's result is not JSON: result[1] is a Promise; did you forget await?",
        ),
        ("return { 'odd key': [() => 1] };", 'the program\'s result is not JSON: result["odd key"][0] is a function'),
    ],
    ids=["function", "cycle", "undefined", "bigint", "symbol", "map", "promise", "nested-function"],
)
async def test_a_result_that_is_not_json_is_named(code: str, message: str) -> None:
    result = await run_program(code, {}, SMALL)
    assert (result.error_kind, result.error) == ("result_not_json", message)


async def test_json_semantics_apply_to_shared_references_dates_and_undefined_fields() -> None:
    code = """
        const shared = { v: 1 };
        return { a: shared, b: shared, d: new Date(0), gone: undefined, list: [undefined, NaN] };
    """
    result = await run_program(code, {}, SMALL)
    assert result.value == {"a": {"v": 1}, "b": {"v": 1}, "d": "1970-01-01T00:00:00.000Z", "list": [None, None]}


async def test_a_result_larger_than_max_result_bytes_is_refused() -> None:
    result = await run_program("return 'é'.repeat(60);", {}, Limits(timeout_ms=5_000, max_result_bytes=100))
    assert result.error_kind == "result_too_large"
    assert result.error == (
        "the program's result is 122 bytes, more than max_result_bytes (100); return less: filter or summarize "
        "inside the program"
    )


async def test_awaiting_a_promise_nothing_can_settle_is_reported_at_once() -> None:
    result = await run_program("await new Promise(() => {});\nreturn 1;", {}, Limits(timeout_ms=30_000))
    assert result.error_kind == "stalled"
    assert result.error == "the program is waiting for a promise that nothing will ever settle"


async def test_escaping_the_function_wrapper_gains_nothing() -> None:
    result = await run_program("}); globalThis.escaped = 1; (async function () {", {}, SMALL)
    assert not result.ok
    again = await run_program("return typeof escaped;", {}, SMALL)
    assert again.value == "undefined"


async def test_raise_for_error_turns_a_failure_into_a_sandbox_error() -> None:
    failed = await run_program("throw new Error('bad');", {}, SMALL)
    with pytest.raises(SandboxError, match="Error: bad"):
        failed.raise_for_error()
    ok = await run_program("return 1;", {}, SMALL)
    assert ok.raise_for_error() is ok
