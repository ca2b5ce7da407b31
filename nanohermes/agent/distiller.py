"""Distillation (SPEC §3.7): after a completed turn, a background thread asks the model what is worth
remembering and saves it. It reports through callbacks and never blocks a turn."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import StoreError
from nanohermes.core.events import Note
from nanohermes.core.types import Message, Usage, message_text, plural
from nanohermes.memory import distill_messages, parse_distill, save_distilled, worth_distilling

if TYPE_CHECKING:
    from nanohermes.llm import ChatClient
    from nanohermes.memory import MemoryStore


@dataclass
class Distiller:
    model: ChatClient
    store: MemoryStore | None
    _: KW_ONLY
    model_name: Callable[[], str]
    post_note: Callable[[Note], None]
    add_usage: Callable[[Usage], None]
    verbose: bool = False
    cancel: CancelToken = field(default_factory=CancelToken, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)

    def start(self, excerpt: list[Message], *, had_tools: bool) -> None:
        """Distil `excerpt` (the turn, from its user message) when it is worth it."""
        store = self.store
        if store is None or not excerpt or not worth_distilling(message_text(excerpt[0]), had_tools):
            return
        thread = threading.Thread(
            target=self._run, args=(store, excerpt), name="nanohermes-distill", daemon=True
        )
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            return not self._threads

    def _run(self, store: MemoryStore, excerpt: list[Message]) -> None:
        try:
            # The turn's user message is each memory's context: indexed, never shown (SPEC §3.7).
            context = message_text(excerpt[0]) if excerpt[0].get("role") == "user" else ""
            known = [entry for _, entry in store.search(context, top_k=8) if not entry.team]
            request = distill_messages(excerpt, known)  # (an item may replace one of `known`)
            result = self.model.complete(request, None, model=self.model_name(), cancel=self.cancel)
            self.add_usage(result.counted_usage(request))  # spent, whatever happens to the answer
            items = parse_distill(result.content)
            saved = save_distilled(store, items, "auto", self._refused, context=context)
        except StoreError as err:  # disk full, read-only directory, lock timeout: never silent
            self.post_note(Note(f"memory not saved: {err.one_line()}", "warning"))
            return
        except Exception as err:  # background thread: failures are silent unless --verbose
            if self.verbose:
                self.post_note(Note(f"distillation failed: {type(err).__name__}: {err}", "debug"))
            return
        if saved:
            self.post_note(Note(f"{plural(saved, 'memory')} saved"))
        elif self.verbose:
            self.post_note(Note("distillation found nothing durable to remember", "debug"))

    def _refused(self, text: str, reason: str) -> None:
        if self.verbose:
            self.post_note(Note(f"distilled memory refused: {reason}: {text!r}", "debug"))
