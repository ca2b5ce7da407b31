"""The background distiller: what it reports and what it counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_scripted import ScriptedModel

from nanohermes.agent.distiller import Distiller
from nanohermes.core.errors import StoreError
from nanohermes.core.events import Note
from nanohermes.core.types import Usage
from nanohermes.memory import MemoryStore


def test_the_request_is_counted_even_when_its_memories_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel()
    model.distill.append('[{"kind": "preference", "text": "The user always prefers tabs."}]')
    store = MemoryStore(tmp_path / "mem")

    def disk_full(*args: object, **kwargs: object) -> bool:
        raise StoreError("cannot write memory.json: No space left on device")

    monkeypatch.setattr(store, "remember_many", disk_full)
    notes: list[Note] = []
    usage: list[Usage] = []
    distiller = Distiller(
        model, store, model_name=lambda: "m", post_note=notes.append, add_usage=usage.append
    )
    distiller.start([{"role": "user", "content": "please remember I always prefer tabs"}], had_tools=False)
    assert distiller.wait(30)
    assert [note.text for note in notes] == [
        "memory not saved: cannot write memory.json: No space left on device"
    ]
    assert usage == [Usage(10, 5, 15)]  # the tokens were spent: /tokens counts them


PYTEST, UNITTEST = "Run the tests with pytest -q.", "Run the tests with unittest, never pytest."


def test_a_distilled_replaces_supersedes_the_memory_it_was_shown(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.remember("preference", PYTEST, source="user")
    old = store.last_id or ""
    model = ScriptedModel()
    model.distill.append(json.dumps([{"kind": "preference", "text": UNITTEST, "replaces": old}]))
    distiller = Distiller(
        model, store, model_name=lambda: "m", post_note=lambda n: None, add_usage=lambda u: None
    )
    distiller.start(
        [{"role": "user", "content": "no, don't run the tests with pytest, use unittest"}], had_tools=False
    )
    assert distiller.wait(30)
    shown = model.distill_requests[0]["messages"][1]["content"]
    assert f"<memories>\n- {old} {PYTEST}\n</memories>" in shown
    assert [(e.text, e.superseded_by) for e in store.load()] == [(PYTEST, store.last_id), (UNITTEST, "")]
