"""Saving the agent's session (SPEC §4.4): a snapshot rendered on the turn's thread, written by one
writer thread in order (a turn never waits on the disk); no write when nothing changed."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable

from nanohermes.core.errors import SessionError
from nanohermes.core.events import Note
from nanohermes.sessions.store import SessionData, SessionFile, Snapshot

State = tuple[object, ...]


class SessionSaver:
    def __init__(
        self,
        session: SessionFile,
        data: SessionData,
        *,
        secrets: tuple[str, ...],
        post_note: Callable[[Note], None],
    ) -> None:
        self._session, self._data, self._secrets, self._post = session, data, secrets, post_note
        self._writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nh-session")
        self._saved: State | None = self.state()  # nothing to save yet

    def state(self) -> State:
        """Cheap to compute, different after anything that needs saving."""
        messages = self._data.messages
        last = messages[-1] if messages else None
        return (len(messages), id(last), len(self._data.archive), self._data.usage, self._data.model)

    def submit(self) -> concurrent.futures.Future[None]:
        """Render now, write in the writer thread (nothing changed: no write)."""
        state = self.state()
        if state == self._saved:
            return self._writer.submit(lambda: None)
        snapshot = SessionFile.render(self._data, secrets=self._secrets)
        self._saved = state
        return self._writer.submit(self._write, snapshot)

    def in_background(self) -> None:
        self.submit().add_done_callback(self._report)

    def flush(self, timeout: float | None = None) -> bool:
        # one thread, first in first out: a no-op runs after every earlier write
        return not concurrent.futures.wait([self._writer.submit(lambda: None)], timeout).not_done

    def _write(self, snapshot: Snapshot) -> None:
        try:
            self._session.write(snapshot)
        except BaseException:
            self._saved = None  # the next save writes again, whatever changed
            raise

    def _report(self, future: concurrent.futures.Future[None]) -> None:
        err = future.exception()
        if isinstance(err, SessionError):
            self._post(Note(err.one_line(), "error"))
        elif err is not None:
            self._post(Note(f"could not save the session: {type(err).__name__}: {err}", "error"))
