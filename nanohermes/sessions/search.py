"""Search of a workspace's earlier conversations (`session_search`, `/sessions search Q`): exchanges (a
user message and its answer) ranked by BM25; other workspaces' files are not read past their header."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from nanohermes.core.errors import SessionError
from nanohermes.core.types import IMAGES_SHOWN, Message, message_text, shorten
from nanohermes.memory import K1, B, analyze
from nanohermes.sessions.paths import recent_session_files, same_place
from nanohermes.sessions.store import SessionFile, read_header

HITS_SHOWN = 5
QUESTION_CHARS = 300
ANSWER_CHARS = 600


@dataclass(frozen=True)
class Hit:
    session: str
    date: str
    question: str
    answer: str
    score: float


def search_sessions(sessions_dir: Path, workspace: Path, query: str) -> tuple[list[Hit], list[str]]:
    found, notes = _workspace_exchanges(sessions_dir, workspace)
    documents = [analyze(f"{hit.question}\n{hit.answer}") for hit in found]
    scores = _bm25(documents, set(analyze(query, query=True)))
    ranked = sorted(zip(scores, found, strict=True), key=lambda pair: pair[0], reverse=True)
    return [replace(hit, score=score) for score, hit in ranked[:HITS_SHOWN] if score > 0], notes


def _workspace_exchanges(sessions_dir: Path, workspace: Path) -> tuple[list[Hit], list[str]]:
    found: list[Hit] = []
    notes: list[str] = []
    for path, _ in recent_session_files(sessions_dir):
        header = read_header(path)
        if header is not None and not same_place(header.get("workspace"), workspace):
            continue  # another workspace's: not read past its header
        file = SessionFile(path)
        try:
            data = file.load()  # of this workspace: read_header is None only where this fails
            older = file.load_archive() if data.archived else data.archive
        except SessionError as err:
            notes.append(f"skipped: {err}")
            continue
        date = data.updated[:16].replace("T", " ")
        for question, answer in _exchanges([*older, *data.messages]):
            found.append(Hit(path.stem, date, question, answer, 0.0))
    return found, notes


def _exchanges(messages: list[Message]) -> list[tuple[str, str]]:
    """(user message, the last answer it got) pairs."""
    exchanges: list[tuple[str, str]] = []
    for message in messages:
        text = message_text(message).strip()
        if message.get("role") == "user" and text != IMAGES_SHOWN:
            exchanges.append((text, ""))
        elif message.get("role") == "assistant" and text and exchanges:
            exchanges[-1] = (exchanges[-1][0], text)
    return exchanges


def _bm25(documents: list[list[str]], wanted: set[str]) -> list[float]:
    average = sum(map(len, documents)) / max(len(documents), 1) or 1.0
    frequency = Counter(term for terms in documents for term in set(terms) & wanted)
    idf = {term: math.log(1 + (len(documents) - n + 0.5) / (n + 0.5)) for term, n in frequency.items()}
    scores: list[float] = []
    for terms in documents:
        counts = Counter(term for term in terms if term in idf)
        norm = K1 * (1 - B + B * len(terms) / average)
        scores.append(sum(idf[t] * c * (K1 + 1) / (c + norm) for t, c in counts.items()))
    return scores


def format_hits(hits: list[Hit], notes: list[str], query: str) -> str:
    lines = [*notes]
    for hit in hits:
        lines += [
            f"{hit.session} · {hit.date}",
            f"  you: {shorten(hit.question, QUESTION_CHARS)}",
            f"  answer: {shorten(hit.answer, ANSWER_CHARS) or '(none)'}",
        ]
    if not hits:
        lines.append(f"no earlier conversation of this workspace matches {shorten(query, 80)!r}")
    return "\n".join(lines)
