"""What a new user trips over in the first hour (issue #20), through the real `nanohermes -p`
against the fake loopback endpoint. The REPL side of it is in tests/ui/test_ui_first_hour.py."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from contextlib import AbstractContextManager
from pathlib import Path
from subprocess import Popen

import pytest
from cli_process import (
    DISTILL,
    chat_bodies,
    memory_file,
    read_line,
    run_nanohermes,
    sessions_dir,
    started_nanohermes,
)
from fake_server import FakeServer
from fake_server import fake_server as fake_server

LESSON = '[{"kind": "lesson", "text": "The build needs make before tests.", "keys": ["build"]}]'
SLOW_DISTILL = 8.0  # seconds the distillation reply is held back
nh = run_nanohermes


def slow_distillation_turn(server: FakeServer, workspace: Path) -> AbstractContextManager[Popen[str]]:
    """A tool turn (worth distilling) whose distillation reply is held back SLOW_DISTILL seconds."""
    (workspace / "Makefile").write_text("all:\n\ttrue\n", encoding="utf-8")
    server.push_tool_calls([("list_files", {})])
    server.push_text("There is a Makefile.")
    server.push_text(LESSON, match=DISTILL, delay=SLOW_DISTILL)
    return started_nanohermes(server, workspace, "--session", "slow", "-p", "what is here?")


# -- 1 and 2: the answer comes first; Ctrl-C while distilling never loses it ----------------------


def test_answer_is_printed_before_a_slow_distillation_finishes(
    fake_server: FakeServer, workspace: Path
) -> None:
    with slow_distillation_turn(fake_server, workspace) as process:
        line = read_line(process, timeout=SLOW_DISTILL - 2)
        assert line == "There is a Makefile.\n"
        assert process.poll() is None  # still waiting for distillation
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out == ""
    assert "saving what to remember from this turn" in err
    assert "1 memory saved" in err
    assert "The build needs make before tests." in memory_file().read_text(encoding="utf-8")


def test_ctrl_c_while_distilling_keeps_the_answer_and_skips_distillation(
    fake_server: FakeServer, workspace: Path
) -> None:
    with slow_distillation_turn(fake_server, workspace) as process:
        line = read_line(process, timeout=SLOW_DISTILL - 2)
        assert line == "There is a Makefile.\n"
        assert fake_server.wait_for_requests(3, timeout=10)  # the distillation request is out
        assert process.stderr is not None
        note = ""
        while "saving what to remember" not in note:  # now waiting: Ctrl-C skips that
            ready, _, _ = select.select([process.stderr], [], [], SLOW_DISTILL - 2)
            assert ready, "no note about the distillation wait"
            note = process.stderr.readline()
            assert note, "stderr closed before the note"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out == ""
    assert "memory distillation skipped" in err
    assert "Traceback" not in err
    assert not memory_file().exists() or "make before" not in memory_file().read_text(encoding="utf-8")
    saved = json.loads((sessions_dir() / "slow.json").read_text(encoding="utf-8"))
    assert saved["messages"][-1] == {"role": "assistant", "content": "There is a Makefile."}


def test_json_output_comes_before_a_slow_distillation_finishes(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_tool_calls([("list_files", {})])
    fake_server.push_text("Listed.")
    fake_server.push_text(LESSON, match=DISTILL, delay=SLOW_DISTILL)
    with started_nanohermes(fake_server, workspace, "-p", "list", "--json") as process:
        line = read_line(process, timeout=SLOW_DISTILL - 2)
        assert json.loads(line)["answer"] == "Listed."
        assert process.poll() is None
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err


def test_interrupted_turn_says_so_once(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.push_text("word " * 400, delay=0.05)
    with started_nanohermes(fake_server, workspace, "-p", "tell me") as process:
        assert fake_server.wait_for_requests(1, timeout=30)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert out == ""
    assert err.count("interrupted by user") == 1, err


# -- 3: --continue stays in this workspace -------------------------------------------------------


def test_continue_picks_the_latest_session_of_this_workspace(fake_server: FakeServer, tmp_path: Path) -> None:
    here, there, empty = (tmp_path / name for name in ("here", "there", "empty"))
    for path in (here, there, empty):
        path.mkdir()
    fake_server.push_text("Noted for here.")
    assert nh(fake_server, here, "--session", "mine", "-p", "remember: here").returncode == 0
    time.sleep(0.05)  # modification times must differ
    fake_server.push_text("Noted for there.")
    assert nh(fake_server, there, "--session", "theirs", "-p", "remember: there").returncode == 0
    theirs_before = (sessions_dir() / "theirs.json").read_text(encoding="utf-8")
    fake_server.push_text("Back here.")
    again = nh(fake_server, here, "--continue", "-p", "and now?")
    assert again.returncode == 0, again.stderr
    chat = chat_bodies(fake_server)[-1]
    assert [m["content"] for m in chat["messages"] if m["role"] == "user"] == ["remember: here", "and now?"]
    assert (sessions_dir() / "theirs.json").read_text(encoding="utf-8") == theirs_before
    assert json.loads((sessions_dir() / "mine.json").read_text(encoding="utf-8"))["workspace"] == str(here)
    fake_server.push_text("Fresh start.")
    fresh = nh(fake_server, empty, "--continue", "-p", "hello there")
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout == "Fresh start.\n"
    assert f"no earlier session in this workspace ({empty}); starting a new one" in fresh.stderr
    chat = chat_bodies(fake_server)[-1]
    assert [m["content"] for m in chat["messages"] if m["role"] == "user"] == ["hello there"]
    assert len(list(sessions_dir().glob("*.json"))) == 3


# -- 5: a remote endpoint without a key is named at start-up -------------------------------------


def test_remote_https_endpoint_without_a_key_exits_2_at_once(workspace: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}
    done = run_nanohermes(
        None, workspace, "--base-url", "https://api.example.invalid/v1", "--model", "m", "-p", "hi", env=env
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no API key set for https://api.example.invalid/v1" in lines[0]
    assert "OPENAI_API_KEY" in lines[0]


# -- 6: --session is a plain name or a .json path ------------------------------------------------


@pytest.mark.parametrize("value", ["a/b", "../escape", "..", "a b", "dir.json", "sub/", "/tmp"])
def test_session_values_that_are_neither_name_nor_json_path_are_usage_errors(
    fake_server: FakeServer, workspace: Path, value: str
) -> None:
    (workspace / "dir.json").mkdir()
    (workspace / "sub").mkdir()
    done = nh(fake_server, workspace, "--session", value, "-p", "hi")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("nanohermes: error: --session")
    assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in workspace.iterdir()) == ["dir.json", "sub"]
    assert not (workspace.parent / "escape").exists()
    assert fake_server.bodies == []


def test_session_names_and_json_paths(fake_server: FakeServer, workspace: Path) -> None:
    named = nh(fake_server, workspace, "--session", "v1.2_fix-x", "-p", "hi")
    assert named.returncode == 0, named.stderr
    assert (sessions_dir() / "v1.2_fix-x.json").is_file()
    (workspace / "notes").mkdir()
    pathed = nh(fake_server, workspace, "--session", "notes/s.json", "-p", "hi")
    assert pathed.returncode == 0, pathed.stderr
    assert (workspace / "notes" / "s.json").is_file()


# -- 7: usage is estimated when the server sends none --------------------------------------------


def test_usage_is_estimated_when_the_server_sends_none(fake_server: FakeServer, workspace: Path) -> None:
    fake_server.send_usage = False
    fake_server.push_tool_calls([("list_files", {})])
    fake_server.push_text("Nothing much here.")
    fake_server.push_text(LESSON, match=DISTILL)
    done = nh(fake_server, workspace, "--session", "est", "-p", "what is here?", "--json")
    assert done.returncode == 0, done.stderr
    usage = json.loads(done.stdout)["usage"]
    assert usage["estimated"] is True
    assert usage["prompt_tokens"] > 100  # two calls with the system prompt and the tool schemas
    assert usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    saved = json.loads((sessions_dir() / "est.json").read_text(encoding="utf-8"))["usage"]
    assert saved["estimated"] is True
    assert saved["total_tokens"] > usage["total_tokens"]  # the distillation call is counted too
    fake_server.send_usage = True
    fake_server.push_text("Counted.")
    real = nh(fake_server, workspace, "-p", "hi", "--json")
    assert json.loads(real.stdout)["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
    }


# -- 8: memory sub-commands take global options before or after ----------------------------------


def test_memory_options_before_or_after_the_sub_command(tmp_path: Path, workspace: Path) -> None:
    from nanohermes.memory import MemoryStore

    elsewhere = tmp_path / "elsewhere"
    MemoryStore(elsewhere).remember("preference", "Use tabs in Makefiles.", source="user")
    wide = {**os.environ, "COLUMNS": "250"}  # one table row per memory
    for args in (
        ["memory", "list", "--memory-dir", str(elsewhere)],
        ["--memory-dir", str(elsewhere), "memory", "list"],
        ["memory", "--memory-dir", str(elsewhere), "list"],
        ["--verbose", "memory", "search", "tabs", "--memory-dir", str(elsewhere)],
    ):
        done = run_nanohermes(None, workspace, *args, env=wide)
        assert done.returncode == 0, (args, done.stderr)
        assert "Use tabs in Makefiles." in done.stdout, args
    wrong = run_nanohermes(None, workspace, "--model", "m", "memory", "list")
    assert wrong.returncode == 2
    assert "--model" in wrong.stderr


# -- 10: small things ----------------------------------------------------------------------------


def test_memory_texts_plural_and_short_ids(workspace: Path) -> None:
    from nanohermes.memory import MemoryStore

    MemoryStore(memory_file().parent).remember("preference", "Use tabs in Makefiles.", source="user")

    def memory(*args: str) -> subprocess.CompletedProcess[str]:
        return run_nanohermes(None, workspace, "memory", *args, env={**os.environ, "COLUMNS": "250"})

    assert memory("list").stdout.startswith("1 memory (global + ")
    assert "1 best match for" in memory("search", "tabs").stdout
    short = memory("forget", "48")
    assert short.returncode == 2
    assert "'48' is too short: give the id or at least 4 characters of it" in short.stderr


def test_unknown_setting_points_at_the_users_config(tmp_path: Path, workspace: Path) -> None:
    config = tmp_path / "my.toml"
    config.write_text('modle = "x"\n', encoding="utf-8")
    done = run_nanohermes(None, workspace, "--config", str(config), "-p", "hi")
    assert done.returncode == 2
    assert f"{config}, line 1: unknown setting 'modle'" in done.stderr
    assert "did you mean 'model'?" in done.stderr
    assert f"fix or remove it in {config}" in done.stderr
    assert "config/nanohermes.toml" not in done.stderr


def test_write_file_reports_characters_and_summaries_cut_at_a_word(
    fake_server: FakeServer, workspace: Path
) -> None:
    pattern = " ".join(f"word{n}" for n in range(60))  # 350 characters
    fake_server.push_tool_calls(
        [("write_file", {"path": "hi.txt", "content": "héllo\n"}), ("grep", {"pattern": pattern})]
    )
    fake_server.push_text("Done.")
    done = nh(fake_server, workspace, "--yes", "-p", "write it", "--json")
    assert done.returncode == 0, done.stderr
    calls = json.loads(done.stdout)["tool_calls"]
    assert calls[0]["summary"] == "ok · Created hi.txt (1 line, 6 chars, 7 bytes)"
    shown = next(line for line in done.stderr.splitlines() if line.startswith("· grep "))
    assert shown.endswith("…")
    assert len(shown) <= len("· grep ") + 200
    assert shown.removesuffix("…").split()[-1] in pattern.split()  # a whole word, not half of one


def test_malformed_text_tool_call_gets_a_note(fake_server: FakeServer, workspace: Path) -> None:
    text = '<tool_call>{"name": "read_file", "arguments": {"path": }}</tool_call>'
    fake_server.push_text(text)
    done = nh(fake_server, workspace, "-p", "read it")
    assert done.returncode == 0, done.stderr
    assert done.stdout == text + "\n"
    assert "the model wrote a <tool_call> that could not be read" in done.stderr


def test_unreadable_memory_file_is_reported_before_the_turn(fake_server: FakeServer, workspace: Path) -> None:
    memory_file().parent.mkdir(parents=True, exist_ok=True)
    memory_file().write_text("{not json", encoding="utf-8")
    fake_server.push_tool_calls([("list_files", {})])
    fake_server.push_text("Listed.")
    done = nh(fake_server, workspace, "-p", "list")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    notice = next(i for i, line in enumerate(lines) if "memory.json was unreadable" in line)
    assert notice < next(i for i, line in enumerate(lines) if line.startswith("· list_files"))


# -- 9: the «install the extra» hint works from any directory ------------------------------------


def test_local_extra_hint_names_the_packages_not_the_checkout() -> None:
    import tomllib

    from nanohermes.local.server import MISSING_EXTRA

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extra = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["local"]
    for requirement in extra:
        assert f"'{requirement}'" in MISSING_EXTRA
    assert ".[local]" not in MISSING_EXTRA  # only works inside the checkout
    assert "compiles from source" in MISSING_EXTRA
