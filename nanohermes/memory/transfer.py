"""`memory export` and `memory import` (SPEC §3.10): Markdown grouped by scope and kind, one
`- text` line a memory with indented `- keys:` and `- context:` lines; import reads it (or a JSON
list, or a memory.json) back through `remember`."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from nanohermes.core.errors import JSON_ERRORS, MemoryRejected, json_problem
from nanohermes.memory.entry import Entry, clean_keys
from nanohermes.memory.kinds import Kind
from nanohermes.memory.store import MemoryStore
from nanohermes.memory.writing import GLOBAL, PROJECT, NewMemory

TITLE = "# nanohermes memory"
GLOBAL_HEADING = "## Global"
PROJECT_HEADING = "## Project "
_LABELS = {kind.label(lang).lower(): kind for kind in Kind for lang in ("en", "zh")}
_DETAIL = re.compile(r"^\s+[-*]\s+(keys|context):\s*(.*)$", re.IGNORECASE)
_ITEM = re.compile(r"^[-*]\s+(.*)$")


@dataclass(frozen=True)
class Importable(NewMemory):
    """One memory read from an export, with its project (None: global)."""

    project: str | None = None


def export_markdown(entries: Sequence[Entry], source: str = "") -> str:
    """Every entry as Markdown, global first, then each project; kinds in eviction order."""
    projects = sorted({entry.project for entry in entries if entry.project is not None})
    where = f" from {_one_line(source)}" if source else ""
    intro = f"{len(entries)} memories{where}. Edit freely; `nanohermes memory import FILE` reads this back."
    lines = [TITLE, "", intro, ""]
    for project in (None, *projects):
        scoped = [entry for entry in entries if entry.project == project]
        if not scoped:
            continue
        lines += [GLOBAL_HEADING if project is None else PROJECT_HEADING + _one_line(project), ""]
        for kind in Kind:
            of_kind = [entry for entry in scoped if entry.kind is kind]
            if of_kind:
                lines += [f"### {kind.label('en')}", ""]
                for entry in of_kind:
                    lines.append(f"- {_one_line(entry.text)}")
                    if entry.keys:
                        lines.append(f"  - keys: {json.dumps(list(entry.keys), ensure_ascii=False)}")
                    if entry.context:
                        lines.append(f"  - context: {_one_line(entry.context)}")
                lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _one_line(value: str) -> str:
    """`value` on one line: a line break would start a heading or a memory of its own on import."""
    return " ".join(value.splitlines())


def parse_import(text: str) -> list[Importable]:
    """The memories in an export; MemoryRejected, naming the line, when it is not one."""
    stripped = text.lstrip("\ufeff").strip()
    if stripped.startswith(("[", "{")):
        return _parse_json(stripped)
    return _parse_markdown(stripped.splitlines())


def _parse_json(text: str) -> list[Importable]:
    try:
        data = json.loads(text)
    except JSON_ERRORS as err:
        raise MemoryRejected(f"not valid JSON: {json_problem(err)}") from None
    whole_file = isinstance(data, dict)  # a memory.json: what this version cannot use is skipped
    items = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise MemoryRejected("JSON import needs a list of memories (or a memory.json with 'entries')")
    found: list[Importable] = []
    for number, raw in enumerate(items, start=1):
        item = raw if isinstance(raw, dict) else {}
        kind, body = Kind.parse(item.get("kind")), item.get("text")
        if kind is None or not isinstance(body, str) or not body.strip():
            if whole_file:
                continue
            raise MemoryRejected(f"item {number}: needs a known kind and a non-empty text")
        context, project = item.get("context"), item.get("project")
        keys = clean_keys(item.get("keys"), cut=False)  # `remember` redacts, then cuts
        project = project.strip() if isinstance(project, str) and project.strip() else None
        context = context if isinstance(context, str) else ""
        found.append(Importable(kind, body.strip(), keys, context, project=project))
    return found


def _parse_markdown(lines: Sequence[str]) -> list[Importable]:
    project: str | None = None
    kind: Kind | None = None
    drafts: list[Importable] = []
    for number, line in enumerate(lines, start=1):
        if line.startswith("## "):
            project, kind = _scope_heading(line, number), None
        elif line.startswith("### "):
            kind = _kind_heading(line, number)
        elif (detail := _DETAIL.match(line)) is not None and drafts and kind is not None:
            drafts[-1] = _with_detail(drafts[-1], detail.group(1).lower(), detail.group(2), number)
        elif (item := _ITEM.match(line)) is not None:
            if kind is None:
                raise MemoryRejected(f"line {number}: a memory before any '### Kind' heading")
            drafts.append(Importable(kind, item.group(1).strip(), project=project))
        elif line.startswith((" ", "\t")) and line.strip() and drafts and kind is not None:
            wrapped = f"{drafts[-1].text} {line.strip()}"  # a wrapped line continues the text
            drafts[-1] = dataclasses.replace(drafts[-1], text=wrapped)
    return [draft for draft in drafts if draft.text]


def _scope_heading(line: str, number: int) -> str | None:
    if line.strip() == GLOBAL_HEADING:
        return None
    if line.startswith(PROJECT_HEADING) and line[len(PROJECT_HEADING) :].strip():
        return line[len(PROJECT_HEADING) :].strip()
    raise MemoryRejected(f"line {number}: expected '## Global' or '## Project KEY', got {line.strip()!r}")


def _kind_heading(line: str, number: int) -> Kind:
    name = line[4:].strip()
    kind = Kind.parse(name) or _LABELS.get(name.lower()) or Kind.parse(name.lower().removesuffix("s"))
    if kind is None:
        raise MemoryRejected(
            f"line {number}: unknown kind heading {name!r}; use Preference, Correction, Lesson or Fact"
        )
    return kind


def _with_detail(draft: Importable, field: str, value: str, number: int) -> Importable:
    if field == "context":
        return dataclasses.replace(draft, context=value.strip())
    try:
        keys = json.loads(value) if value.strip().startswith("[") else value.split(",")
    except JSON_ERRORS:
        raise MemoryRejected(f"line {number}: keys must be a JSON list or comma-separated words") from None
    return dataclasses.replace(draft, keys=clean_keys(keys, cut=False))  # `remember` redacts, then cuts


@dataclass
class ImportResult:
    added: int = 0
    merged: int = 0
    refused: list[str] = field(default_factory=list)  # one line per memory refused, with its reason


def import_memories(store: MemoryStore, items: Sequence[Importable]) -> ImportResult:
    """Save `items` through `remember`, each in its scope, with one write of the file per scope.
    StoreError stops it; the scopes written before stay (importing again adds nothing twice)."""
    result = ImportResult()
    for project in sorted({item.project for item in items}, key=lambda key: (key is not None, key or "")):
        scope = GLOBAL if project is None else PROJECT
        chosen = [item for item in items if item.project == project]
        memories = [dataclasses.replace(item, scope=scope) for item in chosen]
        outcomes = store.for_project(project).remember_many(memories, "user")
        for item, outcome in zip(chosen, outcomes, strict=True):
            if isinstance(outcome, MemoryRejected):
                result.refused.append(f"{item.text[:60]!r}: {outcome.one_line()}")
            elif outcome:
                result.added += 1
            else:
                result.merged += 1
    return result
