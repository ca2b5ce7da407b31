"""TurnDriver: events rendered on the main thread, approvals relayed, Ctrl-C (a real SIGINT) cancels."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

from ui_fakes import plain_console

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import LLMError
from nanohermes.core.events import Event, Note, TextDelta, TurnFinished
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.ui.approve import TerminalApprover
from nanohermes.ui.render import Renderer
from nanohermes.ui.turn import TurnDriver


def test_events_are_rendered_and_main_thread_answers_approvals() -> None:
    console, out = plain_console()
    approver = TerminalApprover(console, read_key=lambda question: "y")
    driver = TurnDriver(Renderer(console), approver)
    decisions: list[Decision] = []

    def source(cancel: CancelToken) -> Iterator[Event]:
        yield TextDelta("Writing the file.\n\n")
        decisions.append(approver(ApprovalRequest("write_file", "write a.txt", "+hello")))
        yield TurnFinished(True)

    assert driver.run(source) is True
    assert decisions == [Decision.YES]
    text = out.getvalue()
    assert text.index("Writing the file.") < text.index("write a.txt") < text.index("→ yes")


def test_text_still_queued_when_the_turn_is_cancelled_is_not_rendered() -> None:
    console, out = plain_console()
    driver = TurnDriver(Renderer(console), TerminalApprover(console))

    def source(cancel: CancelToken) -> Iterator[Event]:
        yield TextDelta("shown before the stop\n\n")
        deadline = time.monotonic() + 10
        while "shown before" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        cancel.cancel()  # Ctrl-C, with a fast server's backlog still in the queue
        for _ in range(1_000):
            yield TextDelta("backlog " * 100)
        yield TurnFinished(False, "interrupted")

    assert driver.run(source) is False
    assert "shown before the stop" in out.getvalue()
    assert "backlog" not in out.getvalue()


def test_errors_in_the_worker_become_one_red_line() -> None:
    console, out = plain_console()
    driver = TurnDriver(Renderer(console), TerminalApprover(console))

    def failing(cancel: CancelToken) -> Iterator[Event]:
        yield TextDelta("partial")
        raise LLMError("endpoint said no", "check the key")

    def crashing(cancel: CancelToken) -> Iterator[Event]:
        yield from ()
        raise ValueError("bad")

    assert driver.run(failing) is True
    assert driver.run(crashing) is True
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    assert lines == [
        "partial",
        "error: endpoint said no (check the key)",
        "error: internal error: ValueError: bad",
    ]


def test_sigint_cancels_the_turn_at_once_and_drains_its_last_events() -> None:
    console, out = plain_console()
    driver = TurnDriver(Renderer(console), TerminalApprover(console))
    started = threading.Event()
    seen: list[CancelToken] = []

    def slow(cancel: CancelToken) -> Iterator[Event]:
        seen.append(cancel)
        yield TextDelta("streaming")
        started.set()
        while not cancel.wait(0.05):
            yield TextDelta(".")
        yield Note("interrupted by user", "warning")
        yield TurnFinished(False, "interrupted")

    def press_ctrl_c() -> None:
        started.wait(5)
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    begin = time.monotonic()
    assert driver.run(slow) is False
    elapsed = time.monotonic() - begin
    presser.join(5)
    assert seen[0].cancelled
    assert elapsed < 3.0
    assert out.getvalue().rstrip().endswith("interrupted by user")
