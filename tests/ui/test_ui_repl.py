"""The Repl loop on a prompt_toolkit pipe with a fake runtime: background start-up, turns, commands,
exit paths, a start-up failure that must end the prompt with the error, and what a resumed REPL
shows of the conversation."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from io import StringIO

import pytest
from prompt_toolkit.formatted_text import to_plain_text
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from ui_fakes import FakeRuntime, fake_runtime, plain_console

from nanohermes.core.errors import SessionError
from nanohermes.core.events import Note
from nanohermes.core.types import Message
from nanohermes.ui.approve import TerminalApprover
from nanohermes.ui.repl import Repl, exchange_lines
from nanohermes.ui.seams import ResumePreview, RuntimeLike, RuntimeLoader


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


def make_repl(pipe: PipeInput, loader: RuntimeLoader, runtime: FakeRuntime) -> tuple[Repl, StringIO]:
    console, out = plain_console()
    repl = Repl(loader, runtime.settings, console, TerminalApprover(console), terminal=(pipe, DummyOutput()))
    return repl, out


def test_new_session_builds_in_the_background_and_runs_turns_and_commands(pipe: PipeInput) -> None:
    runtime = fake_runtime()
    threads: list[str] = []

    def build() -> RuntimeLike:
        threads.append(threading.current_thread().name)
        return runtime

    runtime.agent.background.append(Note("Saved 1 memory (preference)"))
    repl, out = make_repl(pipe, RuntimeLoader(build), runtime)
    pipe.send_text("hello\r/tokens\r\x04")
    assert repl.loop() == 0
    text = out.getvalue()
    assert threads == ["nh-build"]
    assert "echo: hello" in text
    assert "tokens so far: 10 prompt + 5 completion = 15" in text
    assert "Saved 1 memory (preference)" in text
    assert runtime.agent.saved == 1
    assert runtime.agent.waited == 1
    assert "Resume it with: nanohermes --session 20260101-120000\n" in text
    assert text.rstrip().endswith("(or nanohermes --continue: the latest session in this directory)")


def test_toolbar_shows_the_context_fill_after_turns_and_commands(pipe: PipeInput) -> None:
    runtime = fake_runtime(compact_threshold_chars=1_000)
    repl, _ = make_repl(pipe, RuntimeLoader(lambda: runtime), runtime)
    fills: list[str] = []
    repl.session.app.after_render += lambda app: fills.append(to_plain_text(repl._toolbar()))
    pipe.send_text("x" * 200 + "\r/reset\r\x04")
    assert repl.loop() == 0
    # sys 3 + user 200 + "echo: " 6 + 200 = 409 of 1,000 after the turn; back to 3 after /reset
    assert any("context 40%" in fill for fill in fills)
    assert "context 0%" in fills[-1]


def test_ctrl_c_twice_on_an_empty_line_exits_after_saving(pipe: PipeInput) -> None:
    runtime = fake_runtime()
    repl, _ = make_repl(pipe, RuntimeLoader(lambda: runtime), runtime)
    pipe.send_text("half a thought\x03\x03\x03")  # the first clears the line; two more exit
    assert repl.loop() == 0
    assert runtime.agent.saved == 1
    assert [m["role"] for m in runtime.agent.messages] == ["system"]


@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_a_failed_background_build_ends_the_prompt_with_its_error(pipe: PipeInput, delay: float) -> None:
    runtime = fake_runtime()

    def build() -> RuntimeLike:
        time.sleep(delay)
        raise SessionError("session file x.json is not valid JSON", "start fresh")

    repl, _ = make_repl(pipe, RuntimeLoader(build), runtime)
    with pytest.raises(SessionError, match="not valid JSON"):
        repl.loop()  # nothing typed: the failure itself must end the prompt


def test_loader_get_reraises_on_the_caller_thread() -> None:
    loader = RuntimeLoader(lambda: (_ for _ in ()).throw(SessionError("broken")))
    loader.start()
    with pytest.raises(SessionError, match="broken"):
        loader.get()
    assert isinstance(loader.error, SessionError)
    assert not loader.ready


def test_the_configured_key_and_known_secret_shapes_never_reach_the_history_file(pipe: PipeInput) -> None:
    key = "0123456789abcdef0123456789abcdef"  # an Azure-style key: no known prefix
    runtime = fake_runtime(api_key=key)
    repl, _ = make_repl(pipe, RuntimeLoader(lambda: runtime), runtime)
    pipe.send_text(f"my key is {key}\rand ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 too\r\x04")
    assert repl.loop() == 0
    history = runtime.settings.history_file.read_text(encoding="utf-8")
    assert "my key is [REDACTED]" in history
    assert "and [REDACTED] too" in history
    assert key not in history
    assert "ghp_ABCDEF" not in history


def test_a_resumed_session_shows_its_summary_and_prompt_before_the_runtime_is_built(pipe: PipeInput) -> None:
    runtime = fake_runtime()
    list(runtime.agent.run("earlier question"))
    release = threading.Event()
    threads: list[str] = []

    def build() -> RuntimeLike:
        threads.append(threading.current_thread().name)
        assert release.wait(10)
        return runtime

    loader = RuntimeLoader(build, ResumePreview("20260101-120000", tuple(runtime.agent.messages)))
    repl, out = make_repl(pipe, loader, runtime)
    names: list[str] = []

    def first_frame(app: object) -> None:
        if not names:
            names.append("".join(text for _, text in repl._toolbar()))
            release.set()  # the prompt is drawn: only now may the build finish

    repl.session.app.after_render += first_frame
    pipe.send_text("/exit\r")
    assert repl.loop() == 0
    assert "resumed 20260101-120000: 2 messages" in out.getvalue()
    assert "earlier question" in out.getvalue()
    assert len(names) == 1
    assert "│ 20260101-120000 │" in names[0]  # the toolbar names the session while it builds
    assert threads == ["nh-build"]
    assert runtime.agent.saved == 1


def test_escape_sequences_from_the_session_file_are_shown_not_sent() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "hi \x1b]0;retitled\x07 there"},
        {"role": "assistant", "content": "done \x1b[2J\x9b31m"},
    ]
    lines = exchange_lines(messages, 200)
    assert lines == ["you: hi \\x1b]0;retitled\\x07 there", "→ done \\x1b[2J\\x9b31m"]
    assert not any(ch in line for line in lines for ch in "\x1b\x07\x9b")


def test_a_reply_that_only_called_tools_names_them() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    messages: list[Message] = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    assert exchange_lines(messages, 80) == ["you: look", "→ (called read_file)"]
