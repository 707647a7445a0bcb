"""Shared pieces of the fuzz tests: a model server for the whole module, a ``probe`` tool that records what it
was run with, and ``HostRun``, which runs one real host per Hypothesis example (fixtures of function scope do
not mix with ``@given``, so everything here is module-scoped or made inside the example)."""

from __future__ import annotations

import json
import logging
import tempfile
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from jsonschema import Draft202012Validator

from ishiki_host import Extension, Tool, hookimpl
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, Response, TestHost, write_config
from ishiki_host.testing.host import models_yaml

PROBE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["count"],
    "properties": {"count": {"type": "integer", "minimum": 0}, "label": {"type": "string", "maxLength": 40}},
}
"""The arguments ``probe`` accepts; the dispatcher must never run it with anything else."""

PROBED: list[dict[str, Any]] = []  # what ``probe`` ran with, in this example


class ProbeInstance:
    """One runtime's ``probe`` tool (open to every trust level)."""

    @hookimpl
    def ishiki_tools(self, runtime: Any) -> list[Tool]:
        async def probe(args: Mapping[str, Any], ctx: Any) -> str:
            PROBED.append(dict(args))
            return "probed"

        return [Tool("probe", "Count something.", probe, PROBE_SCHEMA, trust="untrusted")]


class Probe(Extension):
    """The ``probe`` extension (registered as ``ishiki.ext.probe`` by ``HostRun``)."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "object", "additionalProperties": False}

    def create(self, ctx: Any, config: Mapping[str, Any]) -> ProbeInstance:
        """One instance per runtime."""
        return ProbeInstance()


class Answers:
    """The model's answers for one example, in order; ``fallback`` once they run out."""

    def __init__(self) -> None:
        self.queue: deque[Reply | Response] = deque()
        self.fallback: Reply = Reply("")

    def __call__(self, request: RecordedRequest) -> Reply | Response:
        return self.queue.popleft() if self.queue else self.fallback


class ErrorRecords(logging.Handler):
    """Log records at ERROR or above, and records carrying a traceback (an exception nobody classified)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)

    def lines(self) -> list[str]:
        """The records, formatted."""
        return [f"{r.name}: {r.getMessage()} {r.exc_info[1]!r}" if r.exc_info else r.getMessage() for r in self.records]


class HostRun:
    """Runs ``body(test_host)`` on a fresh real host in a temporary directory (one per example), and checks
    what it left."""

    def __init__(self, server: FakeOpenAIServer, answers: Answers):
        self.server = server
        self.answers = answers

    def __call__(
        self, profile: str, body: Callable[[TestHost], Awaitable[None]], *, answers: Sequence[Reply | Response] = ()
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """Run; returns every fact-log entry and the unexpected log records."""
        self.answers.queue = deque(answers)
        PROBED.clear()
        errors = ErrorRecords()
        logging.getLogger().addHandler(errors)
        try:
            with tempfile.TemporaryDirectory(prefix="ishiki-fuzz-") as base:
                root = write_config(Path(base) / "bot", profiles={"ana": profile}, models=models_yaml(self.server))

                async def main() -> None:
                    async with TestHost(root, plugins={"ishiki.ext.probe": Probe}, shutdown_grace=2.0) as th:
                        await body(th)

                anyio.run(main)
                entries = [
                    json.loads(line)
                    for path in sorted((root / "data" / "runtimes").rglob("facts.jsonl"))
                    for line in path.read_bytes().split(b"\n")  # not splitlines(): U+0085 is no line end here
                    if line
                ]
        finally:
            logging.getLogger().removeHandler(errors)
        return entries, errors.lines()

    @property
    def probed(self) -> list[dict[str, Any]]:
        """The arguments ``probe`` ran with in the last run."""
        return PROBED

    @staticmethod
    def schema_valid(arguments: Mapping[str, Any]) -> bool:
        """Whether ``probe`` accepts these arguments."""
        return Draft202012Validator(PROBE_SCHEMA).is_valid(arguments)

    @staticmethod
    def unanswered_calls(entries: Sequence[Mapping[str, Any]]) -> list[str]:
        """Tool calls in the entries without a result."""
        results = {e["data"].get("tool_call_id") for e in entries}
        return [c["id"] for e in entries for c in e["data"].get("tool_calls") or () if c["id"] not in results]

    @staticmethod
    def turn_ends(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The data of every turn end event."""
        ends = ("turn.done", "turn.failed", "turn.aborted")
        return [e["data"] for e in entries if e["type"] == "event" and e["data"].get("name") in ends]


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAIServer]:
    """One fake OpenAI server for the module."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def host_run(model_server: FakeOpenAIServer) -> HostRun:
    """``host_run(profile_text, body, answers=[...])``: see ``HostRun``."""
    answers = Answers()
    model_server.default = answers
    return HostRun(model_server, answers)
