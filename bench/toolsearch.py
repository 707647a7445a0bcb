"""toolsearch latency over 1,000 tools vs a plain substring scan of the same names and descriptions.

Prints medians measured in the same run: building the index once, one ``ToolIndex.search`` (the ranked,
tokenized search), and the baseline, a case-insensitive substring scan of every name and description for the
query (no ranking). The ratio is search / scan.

Run: ``.venv/bin/python bench/toolsearch.py [--quick]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

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


def median(run: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(quick: bool) -> None:
    rounds = 5 if quick else 51
    tools = catalogue()
    lowered = [(tool.name.lower(), tool.description.lower()) for tool in tools]
    build = median(lambda: ToolIndex(tools), max(3, rounds // 5))
    index = ToolIndex(tools)

    def ranked() -> None:
        for query in QUERIES:
            index.search(query, max_results=5)

    def scan() -> None:
        for query in QUERIES:
            needle = query.lower()
            [name for name, description in lowered if needle in name or needle in description]

    search_s = median(ranked, rounds) / len(QUERIES)
    scan_s = median(scan, rounds) / len(QUERIES)
    print(f"tools: {len(tools)}, queries: {len(QUERIES)}")
    print(f"build the index (once)           {build * 1e3:10.3f} ms")
    print(f"substring scan per query         {scan_s * 1e6:10.1f} us   (baseline)")
    print(f"ranked search per query          {search_s * 1e6:10.1f} us   {search_s / scan_s:6.1f}x the scan")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    main(parser.parse_args().quick)
