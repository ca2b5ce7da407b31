"""The threads that run turns: reused when idle, one more when all are busy, gone when idle long."""

from __future__ import annotations

import threading

from mcp_helpers import wait_for

from nanohermes.acp.workers import Workers


def run_and_wait(workers: Workers, hold: threading.Event | None = None) -> tuple[int, threading.Event]:
    ran, seen = threading.Event(), []

    def job() -> None:
        seen.append(threading.get_ident())
        ran.set()
        if hold is not None:
            hold.wait(10)

    workers.run(job)
    assert ran.wait(10)
    return seen[0], ran


def test_an_idle_thread_runs_the_next_job_and_busy_ones_are_never_waited_for() -> None:
    workers = Workers(idle_seconds=10)
    first, _ = run_and_wait(workers)
    assert wait_for(lambda: workers.idle() == 1)
    again, _ = run_and_wait(workers)
    assert again == first
    hold = threading.Event()
    try:
        assert wait_for(lambda: workers.idle() == 1)
        busy, _ = run_and_wait(workers, hold)
        other, _ = run_and_wait(workers)  # the only thread is busy: a new one runs this at once
        assert other != busy
    finally:
        hold.set()
    assert wait_for(lambda: workers.idle() == 2)


def test_idle_threads_end() -> None:
    workers = Workers(idle_seconds=0.05)
    ident, _ = run_and_wait(workers)
    assert wait_for(lambda: workers.idle() == 0 and all(t.ident != ident for t in threading.enumerate()))
    run_and_wait(workers)  # none idle any more: a fresh thread runs it
