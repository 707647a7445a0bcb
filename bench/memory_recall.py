"""Recall that can be checked: recall@5 of hybrid recall against full-text recall, on the same memories.

Run: ``.venv/bin/python bench/memory_recall.py [--quick] [--runs N] [--json PATH]``.

Each run seeds a store with the memories earlier sessions left (``PAIRS``: 30 facts about 30 people, the way
the summarizer writes them) among ``FILLERS`` unrelated memories drawn from a seeded vocabulary with the
common words of chat, then asks two sets of questions in a new session, each the way a turn asks
(``relevant_memories``: owner trust, the current session excluded, limit 5):

- *paraphrased*: each question is answered by one memory and shares no word with it ("How is her dog doing?"
  for "Maria adopted a puppy named Biscuit."): the questions word matching cannot answer;
- *by name*: "What about Maria?" for the same memories: the questions word matching does answer.

A question scores when its memory is among the five recalled. Full-text recall is today's (FTS5 BM25); hybrid
recall is the same search fused with the vector index's nearest memories (``memory.hybrid``), the memories
embedded by the background backlog and the questions by the test kit's deterministic ``ConceptEmbedder``
(a small thesaurus hashed into 128 dimensions: a stand-in for a real embeddings model, the same on every
machine). Runs differ by the filler seed. The ratio is hybrid over full text on all the questions.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

from _report import Bench, run

from ishiki_host.memory.embedding import EmbeddingBacklog
from ishiki_host.memory.retrieval import VectorQuery, relevant_memories
from ishiki_host.store import MemoryStore
from ishiki_host.store.text import query_terms
from ishiki_host.testing.embeddings import ConceptEmbedder

PROFILE = "bench"
FILLERS = 300
TOP = 5

PAIRS: tuple[tuple[str, str, str], ...] = (
    ("Maria", "Maria adopted a puppy named Biscuit.", "How is her dog doing?"),
    ("Tom", "Tom is allergic to peanuts.", "Can he eat the satay?"),
    ("Ana", "Ana's sister lives in Lisbon.", "Where does her sibling stay?"),
    ("Leo", "Leo starts a new job at the bakery on Monday.", "When does his employment begin?"),
    ("Priya", "Priya is vegetarian and never eats meat.", "What dinner should I cook for her?"),
    ("Sam", "Sam drinks espresso every morning.", "Does he like coffee at dawn?"),
    ("Mei", "Mei's father is in the hospital with the flu.", "Has her dad been sick long?"),
    ("Omar", "Omar is training for the Berlin marathon.", "How are his jogs going?"),
    ("Lena", "Lena bought a new laptop for university.", "Did she purchase the computer to study?"),
    ("Kenji", "Kenji is learning Spanish before his trip.", "Which language will he practise on vacation?"),
    ("Rosa", "Rosa's wedding is in June.", "When does she get married?"),
    ("Nina", "Nina is expecting a baby in spring.", "When will her newborn arrive?"),
    ("Ivan", "Ivan fears flying.", "Does he get nervous about flights?"),
    ("Julia", "Julia plays the piano in a band.", "What instrument does she perform music with?"),
    ("Ben", "Ben moved to a flat in Glasgow.", "Where is his new apartment?"),
    ("Aisha", "Aisha hates cold weather.", "Does she dislike the snow?"),
    ("Carlos", "Carlos saves money for a car.", "Does he put aside savings toward the vehicle?"),
    ("Hana", "Hana's cat Mochi turned ten.", "How old is her kitten?"),
    ("Felix", "Felix has insomnia and sleeps badly.", "Does he rest well at night?"),
    ("Grace", "Grace studies for a chemistry exam.", "When is the test?"),
    ("Diego", "Diego loves jazz concerts.", "What music does he enjoy?"),
    ("Sofia", "Sofia's daughter started school in September.", "Did her child begin classes?"),
    ("Arjun", "Arjun works as a software engineer.", "What is his career in code?"),
    ("Elena", "Elena grows tomatoes in her garden.", "How are the plants doing?"),
    ("Noah", "Noah's birthday party is on Saturday.", "When does he celebrate?"),
    ("Yuki", "Yuki feels anxious before exams.", "Does she get nervous about tests?"),
    ("Marco", "Marco rides his bicycle to the office.", "How does he commute by bike?"),
    ("Ingrid", "Ingrid's husband is a doctor.", "Which clinic does her spouse run?"),
    ("Pablo", "Pablo reads a novel every night.", "Which books does he enjoy in the evening?"),
    ("Zoe", "Zoe is afraid of big dogs.", "Does she fear large hounds?"),
)
_FILLER_WORDS = (
    "invoice",
    "shipment",
    "quarterly",
    "report",
    "meeting",
    "agenda",
    "server",
    "backup",
    "ticket",
    "deadline",
    "budget",
    "review",
    "slide",
    "printer",
    "warehouse",
    "supplier",
    "contract",
    "update",
    "schedule",
    "audit",
    "inventory",
    "delivery",
    "draft",
    "minutes",
    "project",
    "milestone",
    "client",
    "proposal",
    "feedback",
    "spreadsheet",
    "approval",
    "vendor",
    "license",
    "renewal",
    "policy",
)
_COMMON = ("the", "is", "and", "to", "of", "a", "in", "for", "with", "on", "was", "her", "his", "about")


def _filler(rng: random.Random) -> str:
    words = [rng.choice(_FILLER_WORDS) for _ in range(rng.randint(5, 10))]
    for _ in range(rng.randint(1, 3)):
        words.insert(rng.randrange(len(words)), rng.choice(_COMMON))
    return " ".join(words).capitalize() + "."


def _shares_a_word(a: str, b: str) -> bool:
    return bool({t.lower() for t in query_terms(a)} & {t.lower() for t in query_terms(b)})


async def _recall_at_top(
    store: MemoryStore, kit: ConceptEmbedder | None, questions: list[tuple[int, str]], session: int
) -> float:
    hits = 0
    for expected, question in questions:
        vector = None
        if kit is not None:
            embedded = await kit.embed([question])
            vector = VectorQuery(kit.name, embedded.vectors[0], store.clock.now())
        found = await relevant_memories(store, profile=PROFILE, text=question, trust="owner", limit=TOP,
                                        session_id=session, vector=vector)  # fmt: skip
        hits += expected in [m.id for m in found]
    return hits / len(questions)


async def _one_run(seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        async with await MemoryStore.open(Path(tmp) / "memory.db") as store:
            rows = [(None, _filler(rng)) for _ in range(FILLERS)] + [(i, pair[1]) for i, pair in enumerate(PAIRS)]
            rng.shuffle(rows)
            ids: dict[int, int] = {}
            for pair, content in rows:
                memory = await store.memories.add("fact", content, profile=PROFILE, runtime_key=f"{PROFILE}/main")
                if pair is not None:
                    ids[pair] = memory.id
            kit = ConceptEmbedder()
            if not await EmbeddingBacklog(store.vectors, kit, PROFILE, batch=64).drain():
                raise RuntimeError("the backlog did not embed every memory")
            session = (await store.sessions.open(f"{PROFILE}/main", start_fact_id=1)).id
            paraphrased = [(ids[i], pair[2]) for i, pair in enumerate(PAIRS)]
            by_name = [(ids[i], f"What about {pair[0]}?") for i, pair in enumerate(PAIRS)]
            return {
                "hybrid/paraphrased": await _recall_at_top(store, kit, paraphrased, session),
                "text/paraphrased": await _recall_at_top(store, None, paraphrased, session),
                "hybrid/all": await _recall_at_top(store, kit, paraphrased + by_name, session),
                "text/all": await _recall_at_top(store, None, paraphrased + by_name, session),
            }


async def measure(bench: Bench) -> None:
    """Score both recalls on the same stores, one store per run (the filler seed changes)."""
    shared = [name for name, memory, question in PAIRS if _shares_a_word(memory, question)]
    if shared:
        raise RuntimeError(f"paraphrased questions must share no word with their memory: {shared}")
    results = [await _one_run(20250101 + run) for run in range(bench.runs(quick=2, full=5))]

    def column(key: str) -> list[float]:
        return [r[key] for r in results]

    bench.note(f"{len(PAIRS)} memories to find among {FILLERS} others; {len(PAIRS)} paraphrased and "
               f"{len(PAIRS)} by-name questions; a hit is the memory among the top {TOP}")  # fmt: skip
    unit = f"recall@{TOP}"
    bench.add("hybrid, paraphrased questions", unit, column("hybrid/paraphrased"), direction="higher",
              target=">= 0.8")  # fmt: skip
    bench.add("full text, paraphrased questions", unit, column("text/paraphrased"), direction="higher",
              notes="no question shares a word with its memory")  # fmt: skip
    bench.add("hybrid, all questions", unit, column("hybrid/all"), direction="higher",
              baseline="full text, all questions", baseline_samples=column("text/all"), paired=True,
              target=">= 1.5")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
