"""Threads that run the turns of every session: one thread per running turn, kept a while after its
turn to run the next one (waking a waiting thread costs ~10 µs, starting one ~0.1 ms of each prompt).

A turn never waits for a free thread: with none idle, a new one starts. Idle threads end after
IDLE_SECONDS, so an idle server holds none.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

IDLE_SECONDS = 30.0

Job = Callable[[], None]


class Workers:
    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Job]] = []
        self._count = 0

    def run(self, job: Job) -> None:
        """Run `job` on a thread of its own now. `job` catches its own exceptions."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
            if inbox is None:
                self._count += 1
                name = f"nh-acp-turn-{self._count}"
        if inbox is not None:
            inbox.put(job)
            return
        inbox = queue.SimpleQueue()
        inbox.put(job)
        threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def _serve(self, inbox: queue.SimpleQueue[Job]) -> None:
        while True:
            try:
                job = inbox.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # else a job was handed over meanwhile: take it
                        self._idle.remove(inbox)
                        return
                continue
            job()
            with self._lock:
                self._idle.append(inbox)
