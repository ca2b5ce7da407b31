"""Retrieval benchmark on LoCoMo conversations: nanohermes memory vs plain BM25, in one run.

    .venv/bin/pip install -e '.[bench]'      # rank_bm25, bm25s
    .venv/bin/python bench/recall_bench.py --data ../shared/data/locomo-dev [--scopes]

The protocol of the data folder's README: every dialog turn becomes one memory through the public
API (`MemoryStore(dir, max_entries=…)`, `remember("fact", "<speaker>: <text> (image: <caption>)",
context=<the texts of the turns just before and after it in the same session>)`), every question
with evidence is a query `search(question, top_k=10)`, and a question is a hit at k when one of its
evidence turns is among the first k memories. Printed per category and overall: recall@4 (the
memories the product injects), recall@10 and MRR (of the first evidence turn, 0 beyond rank 10),
for nanohermes with and without context, and for the baselines on the same turns: rank_bm25
(BM25Okapi, defaults) with whitespace split, rank_bm25 with a regex tokenizer and English stop
words, bm25s (defaults) with the Snowball stemmer and English stop words. Figures only.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nanohermes.memory import MemoryStore

TOP = 10
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
Ranker = Callable[[str], list[int]]  # question → turn indices, best first (at most TOP)


@dataclass
class Conversation:
    name: str
    texts: list[str]  # one memory text per turn
    contexts: list[str]  # the texts of the neighbouring turns in the same session
    questions: list[tuple[str, set[int], int]]  # (question, evidence turn indices, category)


@dataclass
class Score:
    hits4: dict[int, int] = field(default_factory=dict)
    hits10: dict[int, int] = field(default_factory=dict)
    rr: dict[int, float] = field(default_factory=dict)
    count: dict[int, int] = field(default_factory=dict)

    def add(self, category: int, ranked: Sequence[int], evidence: set[int]) -> None:
        rank = next((i for i, turn in enumerate(ranked[:TOP], start=1) if turn in evidence), 0)
        self.count[category] = self.count.get(category, 0) + 1
        self.hits4[category] = self.hits4.get(category, 0) + (0 < rank <= 4)
        self.hits10[category] = self.hits10.get(category, 0) + (rank > 0)
        self.rr[category] = self.rr.get(category, 0.0) + (1.0 / rank if rank else 0.0)

    def overall(self, part: dict[int, Any]) -> float:
        return sum(part.values()) / max(sum(self.count.values()), 1)


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    conv = data.get("conversation", data)
    texts: list[str] = []
    contexts: list[str] = []
    where: dict[str, int] = {}
    sessions = sorted(
        (int(key.split("_")[1]) for key in conv if re.fullmatch(r"session_\d+", key)),
    )
    for number in sessions:
        turns = conv[f"session_{number}"]
        for i, turn in enumerate(turns):
            caption = turn.get("blip_caption")
            text = f"{turn['speaker']}: {turn['text']}" + (f" (image: {caption})" if caption else "")
            around = [turns[j]["text"] for j in (i - 1, i + 1) if 0 <= j < len(turns)]
            where[turn["dia_id"]] = len(texts)
            texts.append(text)
            contexts.append(" ".join(around))
    questions = []
    for qa in data.get("qa", []):
        evidence = {where[e] for e in qa.get("evidence", []) if e in where}
        if evidence:
            questions.append((qa["question"], evidence, int(qa["category"])))
    return Conversation(path.stem, texts, contexts, questions)


def nanohermes_ranker(conv: Conversation, root: Path, with_context: bool) -> Ranker:
    directory = root / f"{conv.name}-{'ctx' if with_context else 'plain'}"
    store = MemoryStore(directory, max_entries=len(conv.texts) + 100)
    turn_of: dict[str, list[int]] = {}
    for i, (text, context) in enumerate(zip(conv.texts, conv.contexts, strict=True)):
        store.remember("fact", text, source=f"t{i}", context=context if with_context else "")
        entry = next(e for e in reversed(store.load()) if e.source == f"t{i}")  # new, or merged into
        turn_of.setdefault(entry.id, []).append(i)

    def rank(question: str) -> list[int]:
        return [turn for _, entry in store.search(question, top_k=TOP) for turn in turn_of[entry.id]]

    return rank


def scoped_ranker(conv: Conversation, shared: Path) -> Ranker:
    """Scopes on (SPEC §3.9): every conversation is a project of one shared memory directory; its
    questions are asked from that project, so the other conversations' memories must stay out."""
    store = MemoryStore(shared, max_entries=1_000_000, project=f"bench/{conv.name}")
    turn_of: dict[str, list[int]] = {}
    for i, (text, context) in enumerate(zip(conv.texts, conv.contexts, strict=True)):
        store.remember("fact", text, source=f"{conv.name}/t{i}", context=context, scope="project")
        assert store.last_id is not None
        turn_of.setdefault(store.last_id, []).append(i)

    def rank(question: str) -> list[int]:
        hits = store.search(question, top_k=TOP)
        return [turn for _, entry in hits for turn in turn_of.get(entry.id, ())]

    return rank


def rank_bm25_ranker(conv: Conversation, tokenizer: Callable[[str], list[str]]) -> Ranker:
    from rank_bm25 import BM25Okapi

    model = BM25Okapi([tokenizer(text) or ["∅"] for text in conv.texts])

    def rank(question: str) -> list[int]:
        scores = model.get_scores(tokenizer(question))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        return [i for i in order[:TOP] if scores[i] > 0]

    return rank


def bm25s_ranker(conv: Conversation) -> Ranker:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    model = bm25s.BM25()
    model.index(
        bm25s.tokenize(conv.texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )
    vocab = model.vocab_dict

    def rank(question: str) -> list[int]:
        tokens = bm25s.tokenize(
            [question], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )
        known = [t for t in tokens[0] if t in vocab]
        if not known:
            return []
        scores = model.get_scores(known)
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        return [i for i in order[:TOP] if scores[i] > 0]

    return rank


def regex_stop_tokenizer() -> Callable[[str], list[str]]:
    from bm25s.stopwords import STOPWORDS_EN

    stop = set(STOPWORDS_EN)
    return lambda text: [w for w in re.findall(r"\w+", text.lower()) if w not in stop]


def systems(conv: Conversation, root: Path, scopes: bool = False) -> dict[str, Ranker]:
    scoped = {"nanohermes, ctx, scoped": scoped_ranker(conv, root / "shared")} if scopes else {}
    return {
        "nanohermes, context": nanohermes_ranker(conv, root, with_context=True),
        **scoped,
        "nanohermes, no context": nanohermes_ranker(conv, root, with_context=False),
        "rank_bm25 split": rank_bm25_ranker(conv, str.split),
        "rank_bm25 regex+stop": rank_bm25_ranker(conv, regex_stop_tokenizer()),
        "bm25s stem+stop": bm25s_ranker(conv),
    }


def report(scores: dict[str, Score]) -> None:
    cats = sorted({c for score in scores.values() for c in score.count})
    head = f"{'system':<24}" + "".join(f"{CATEGORIES.get(c, c)!s:>12}" for c in cats) + f"{'all':>8}"
    for title, part in (("recall@4", "hits4"), ("recall@10", "hits10"), ("MRR@10", "rr")):
        print(f"\n{title}")
        print(head)
        for name, score in scores.items():
            values: dict[int, Any] = getattr(score, part)
            cells = "".join(f"{values.get(c, 0) / score.count[c]:>12.3f}" for c in cats)
            print(f"{name:<24}{cells}{score.overall(values):>8.3f}")
    any_score = next(iter(scores.values()))
    counts = ", ".join(f"{CATEGORIES.get(c, c)} {any_score.count[c]}" for c in cats)
    print(f"\nquestions: {sum(any_score.count.values())} ({counts})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo conversation .json files")
    parser.add_argument(
        "--scopes",
        action="store_true",
        help="also run nanohermes with every conversation a project of one shared memory dir",
    )
    args = parser.parse_args()
    files = sorted(args.data.glob("*.json"))
    if not files:
        parser.error(f"no .json conversations in {args.data}")
    scores: dict[str, Score] = {}
    with tempfile.TemporaryDirectory(prefix="nh-recall-") as tmp:
        for path in files:
            conv = load_conversation(path)
            print(f"{conv.name}: {len(conv.texts)} turns, {len(conv.questions)} questions", flush=True)
            for name, rank in systems(conv, Path(tmp), args.scopes).items():
                score = scores.setdefault(name, Score())
                for question, evidence, category in conv.questions:
                    score.add(category, rank(question), evidence)
    report(scores)


if __name__ == "__main__":
    main()
