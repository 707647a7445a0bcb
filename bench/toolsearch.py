"""toolsearch latency over 1,000 tools vs a plain substring scan of the same names and descriptions.

Reports, measured in the same run: building the index once, and one ``ToolIndex.search`` (the ranked,
tokenized search) against the baseline, a case-insensitive substring scan of every name and description for
the query (no ranking). A run is one pass over the 12 queries; its value is the time per query.

Run: ``.venv/bin/python bench/toolsearch.py [--quick] [--runs N] [--json PATH]``.
"""

from __future__ import annotations

import random
import sys

from _report import Bench, run, time_calls

from ishiki_host.core.model import ToolSpec
from ishiki_host.tools.search_index import ToolIndex

VERBS = ["get", "list", "create", "delete", "update", "search", "send", "read", "write", "sync", "export", "share",
         "archive", "restore", "rename", "tag", "count", "summarize", "translate", "schedule"]  # fmt: skip
NOUNS = ["email", "file", "calendar event", "contact", "invoice", "image", "message", "note", "task", "user",
         "report", "playlist", "weather forecast", "ticket", "repository", "photo", "document", "reminder",
         "order", "payment", "channel", "comment", "issue", "folder", "video"]  # fmt: skip
SERVICES = ["mail", "storage", "billing", "crm", "media", "office", "support", "chat", "git", "drive"]
QUERIES = ["send email", "calendar", "invoi", "read file", "weather", "delete the old photos", "playlist sync",
           "summarize document", "restore", "translate message to french", "git issue", "chat channel"]  # fmt: skip


def catalogue(size: int = 1_000, seed: int = 7) -> list[ToolSpec]:
    rng = random.Random(seed)
    tools = []
    for i, (verb, noun) in enumerate(rng.choices([(v, n) for v in VERBS for n in NOUNS], k=size)):
        service = rng.choice(SERVICES)
        words = [verb, *noun.split(), service, str(i)]
        name = rng.choice(["_".join(words), "-".join(words), words[0] + "".join(w.title() for w in words[1:])])
        description = f"{verb.title()} a {noun} in the {service} service. Works with {rng.choice(NOUNS)}s too."
        tools.append(ToolSpec(name, description))
    return tools


def measure(bench: Bench) -> None:
    """Index build, then ranked search against the substring scan."""
    rounds = bench.runs(quick=5, full=51)
    tools = catalogue()
    lowered = [(tool.name.lower(), tool.description.lower()) for tool in tools]
    build = time_calls(lambda: ToolIndex(tools), max(3, rounds // 5))
    index = ToolIndex(tools)

    def ranked() -> None:
        for query in QUERIES:
            index.search(query, max_results=5)

    def scan() -> None:
        for query in QUERIES:
            needle = query.lower()
            [name for name, description in lowered if needle in name or needle in description]

    search_s = [t / len(QUERIES) for t in time_calls(ranked, rounds)]
    scan_s = [t / len(QUERIES) for t in time_calls(scan, rounds)]
    bench.note(f"tools: {len(tools)}, queries: {len(QUERIES)}")
    bench.add(f"build the index of {len(tools):,} tools", "s", build)
    bench.add("ranked search, per query", "s", search_s, baseline="substring scan", baseline_samples=scan_s)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
