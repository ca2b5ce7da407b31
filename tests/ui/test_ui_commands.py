"""Slash commands against a fake runtime, output captured from a plain console."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ui_fakes import SPEC_COMMANDS, FakeRuntime, fake_runtime, memory_store, plain_console

from nanohermes.agent.compaction import total_chars
from nanohermes.core.cancel import CancelToken
from nanohermes.memory import MemoryStore
from nanohermes.sessions.store import SessionData, SessionFile
from nanohermes.ui.approve import TerminalApprover
from nanohermes.ui.command_context import CommandContext
from nanohermes.ui.commands import COMMANDS, dispatch, is_command, resume_hint
from nanohermes.ui.render import Renderer
from nanohermes.ui.turn import EventSource


class Harness:
    """A command context on a fake runtime; `run` returns what one command printed."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.console, self.out = plain_console(120)
        self.runtime: FakeRuntime = fake_runtime(store)
        self.renderer = Renderer(self.console)
        self.ctx = CommandContext(
            lambda: self.runtime,
            self.console,
            self._run_events,
            permission="ask",
            approver=TerminalApprover(self.console),
        )
        self.operations = 0

    def _run_events(self, source: EventSource) -> None:
        self.operations += 1
        for event in source(CancelToken()):
            self.renderer.handle(event)

    def run(self, text: str) -> str:
        start = len(self.out.getvalue())
        dispatch(self.ctx, text)
        return self.out.getvalue()[start:]


def test_every_spec_command_exists_and_help_lists_each_with_a_description() -> None:
    assert sorted(COMMANDS) == sorted(SPEC_COMMANDS)
    h = Harness()
    text = h.run("/help")
    for name, command in COMMANDS.items():
        line = next(ln for ln in text.splitlines() if ln.startswith(name))
        assert command.description in line
    assert "Ctrl-D" in text


def test_is_command_tells_commands_from_paths() -> None:
    assert is_command("/help")
    assert is_command("  /memory search foo")
    assert not is_command("/usr/bin/python crashes, why?")
    assert not is_command("hello /help")
    assert not is_command("")


def test_unknown_command_is_one_line_with_a_suggestion() -> None:
    h = Harness()
    assert h.run("/hepl").strip() == "unknown command /hepl — did you mean /help? (/help lists them)"


def test_exit_reset_model_permission_tokens() -> None:
    h = Harness()
    runtime = h.runtime
    agent = runtime.agent
    list(agent.run("hi"))
    assert len(agent.messages) == 3
    assert "takes no arguments" in h.run("/reset memory")  # meant something else: nothing cleared
    assert "takes no arguments" in h.run("/compact now")
    assert len(agent.messages) == 3
    assert "cleared" in h.run("/reset")
    assert len(agent.messages) == 1
    assert h.run("/model").strip() == "model: fake-model"
    h.run("/model deepseek-chat")
    assert agent.model == "deepseek-chat"
    assert "unknown permission mode 'yolo'" in h.run("/permission yolo")
    assert agent.permission == "ask"
    h.run("/permission auto")
    assert agent.permission == "auto"
    assert h.ctx.permission == "auto"
    assert "auto" in h.run("/permission")
    assert "10 prompt + 5 completion = 15" in h.run("/tokens")
    assert not h.ctx.exit_requested
    h.run("/exit")
    assert h.ctx.exit_requested


def test_a_model_name_with_an_escape_sequence_is_refused_and_not_echoed_raw() -> None:
    h = Harness()
    shown = h.run("/model m\x1b]0;pwned\x07")
    assert "must not contain control or invisible characters" in shown
    assert "\x1b" not in shown
    assert h.runtime.agent.model == "fake-model"


def test_context_fill_is_what_compaction_measures() -> None:
    h = Harness()
    h.runtime.agent.messages.extend(
        [
            {"role": "user", "content": "x" * 2_000},
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "r" * 300,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "y" * 600},
        ]
    )
    chars = total_chars(h.runtime.agent.messages)
    assert chars == 3 + 2_000 + 300 + len("read_file") + 2 + 600  # reasoning and tool names count too
    assert f"{chars:,} characters of context" in h.run("/session")
    percent = 100 * chars // h.runtime.settings.compact_threshold_chars
    assert f"context: {chars:,} characters ({percent}% of the compaction threshold)" in h.run("/tokens")


def test_compact_runs_through_run_events() -> None:
    h = Harness()
    out = h.run("/compact")
    assert h.operations == 1  # like a turn: worker thread, Ctrl-C cancels it
    assert out.strip() == "context compacted (summarized): 5,000 → 1,000 characters, 4,000 characters saved"


def test_memory_subcommands(tmp_path: Path) -> None:
    pnpm = {"id": "a1a1a1a1", "kind": "preference", "text": "use pnpm not npm"}
    h = Harness(memory_store(tmp_path, pnpm, {"id": "b2b2b2b2", "kind": "fact", "text": "db is pg"}))
    listing = h.run("/memory")
    assert "a1a1a1a1" in listing
    assert "use pnpm not npm" in listing
    assert "2 memories" in listing
    assert "use pnpm" in h.run("/memory search pnpm")
    assert "No matching memories for 'zebra'" in h.run("/memory search zebra")
    assert "Forgot a1a1a1a1" in h.run("/memory forget a1a1")
    assert "'a1' is too short: give the id or at least 4 characters" in h.run("/memory forget a1")
    assert "1 of at most" in h.run("/memory stats")
    assert "usage: /memory" in h.run("/memory search")


def test_texts_are_shown_literally_not_as_rich_markup(tmp_path: Path) -> None:
    h = Harness(
        memory_store(tmp_path, {"id": "c3", "kind": "lesson", "text": "wrap [bold]x[/bold] and [list|y]"})
    )
    assert "[list|search Q|add K T|forget ID|stats|last]" in h.run("/help")
    assert "wrap [bold]x[/bold] and [list|y]" in h.run("/memory list")
    assert "[bold]x[/bold]" in h.run("/memory search wrap")


def test_memory_off() -> None:
    h = Harness(None)
    assert "memory is off" in h.run("/memory list")


def test_session_and_sessions(tmp_path: Path) -> None:
    h = Harness()
    runtime = h.runtime
    sessions = runtime.settings.sessions_dir
    sessions.mkdir(parents=True)
    for number, name in enumerate(["old", "20260101-120000", "newest"]):
        (sessions / f"{name}.json").write_text("{}")
        os.utime(sessions / f"{name}.json", (1_700_000_000 + number, 1_700_000_000 + number))
    text = h.run("/session")
    assert "20260101-120000.json" in text
    assert "nanohermes --session 20260101-120000" in text
    listing = h.run("/sessions").splitlines()
    assert [line.split()[0] for line in listing[:2]] == ["newest", "*"]
    assert "nanohermes --session old" in listing[2]
    assert "(unreadable session file)" in listing[0]


def test_sessions_shows_each_sessions_first_message(tmp_path: Path) -> None:
    h = Harness()
    sessions = h.runtime.settings.sessions_dir
    data = SessionData()
    data.messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "fix the  flaky\ntest"}]
    SessionFile(sessions / "work.json").save(data)
    line = next(ln for ln in h.run("/sessions").splitlines() if ln.split()[0] == "work")
    assert "fix the flaky test" in line
    assert "nanohermes --session work" in line


def test_sessions_search_shows_the_matching_exchanges_of_this_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    h = Harness()
    sessions = h.runtime.settings.sessions_dir
    data = SessionData(workspace=str(tmp_path))
    data.messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "which database for the cache?"},
        {"role": "assistant", "content": "We chose Postgres."},
    ]
    SessionFile(sessions / "monday.json").save(data)
    (sessions / "broken.json").write_text("{")
    lines = h.run("/sessions search cache database").splitlines()
    assert lines[0].startswith("skipped: session file ")  # one line, folded at the console's width
    assert lines[-3].startswith("monday · ")
    assert lines[-2:] == ["  you: which database for the cache?", "  answer: We chose Postgres."]
    assert "no earlier conversation of this workspace matches 'zebra'" in h.run("/sessions search zebra")
    for wrong in ("/sessions serch cache", "/sessions search"):
        assert h.run(wrong).startswith("usage: /sessions [search QUERY], not /sessions ")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("SESS/work.json", "nanohermes --session work"),
        ("/tmp/my session.json", "nanohermes --session '/tmp/my session.json'"),
    ],
)
def test_resume_hint(path: str, expected: str) -> None:
    sessions_dir = Path("/home/u/.nanohermes/sessions")
    session = sessions_dir / path.removeprefix("SESS/") if path.startswith("SESS/") else Path(path)
    assert resume_hint(session, sessions_dir) == expected


def test_memory_command_on_the_real_store(tmp_path: Path) -> None:
    from nanohermes.memory import MemoryStore

    store = MemoryStore(tmp_path / "mem")
    assert store.remember("preference", "Always use pnpm instead of npm in this repo", source="user")
    assert store.remember("fact", "The database is PostgreSQL 16", source="user")
    h = Harness()
    h.runtime.store = store
    listing = h.run("/memory list")
    first = store.load()[0]
    assert first.id in listing
    assert "preference" in listing.lower()
    assert "Always use pnpm" in h.run("/memory search pnpm")
    size = store.path.stat().st_size
    h.console.width = 400  # the temp path on one line
    stats = h.run("/memory stats")
    assert f"{size:,} bytes" in stats
    assert str(store.path) in stats
    assert f"Forgot {first.id}" in h.run(f"/memory forget {first.id[:4]}")  # a prefix, as the CLI takes
    assert [e.text for e in store.load()] == ["The database is PostgreSQL 16"]


def test_memory_ids_with_markup_are_shown_literally(tmp_path: Path) -> None:
    marked = {"id": "[/x]", "kind": "fact", "text": "hand-edited"}
    h = Harness(memory_store(tmp_path, marked, {"id": "abcd1234", "kind": "fact", "text": "why"}))
    assert "[/x]" in h.run("/memory list")
    assert "[/x]" in h.run("/memory search hand")
    assert "Forgot abcd1234" in h.run("/memory forget abcd")


def test_mcp_shows_each_server_state_tools_and_last_error() -> None:
    from nanohermes.mcp.manager import ServerStatus, ToolInfo

    class FakeMcp:
        def status(self) -> list[ServerStatus]:
            echo = ToolInfo("mcp__demo__echo", "Echo the text back.", True)
            write = ToolInfo("mcp__demo__write_note", "Write a note.", False)
            return [
                ServerStatus("demo", "stdio", "python demo.py", "ready", False, (echo, write), ""),
                ServerStatus("web", "http", "http://h/mcp", "failed", False, (), "cannot connect: refused"),
            ]

    h = Harness()
    assert h.run("/mcp").startswith("no MCP servers configured")
    h.runtime.mcp = FakeMcp()
    lines = h.run("/mcp").splitlines()
    assert lines[0] == "demo · ready · stdio: python demo.py · 2 tools"
    assert lines[1].split() == ["mcp__demo__echo", "read", "Echo", "the", "text", "back."]
    assert lines[2].split()[:2] == ["mcp__demo__write_note", "asks"]
    assert lines[3] == "web · failed · http: http://h/mcp · 0 tools"
    assert lines[4] == "  last error: cannot connect: refused"


def test_slash_command_output_shows_escape_sequences_instead_of_obeying_them(tmp_path: Path) -> None:
    hostile = "clear \x1b[2K\x1b]52;c;ZXZpbA==\x07 the \u202eline"
    h = Harness(memory_store(tmp_path, {"id": "e5e5e5e5", "kind": "lesson", "text": hostile}))
    for command in ("/memory list", "/memory search clear", "/\x1b[2Kmemory"):
        shown = h.run(command)
        assert not {"\x1b", "\x07", "\u202e"} & set(shown), command
        assert "\\x1b[2K" in shown, command
