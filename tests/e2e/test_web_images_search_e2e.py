"""End to end (issue 35): web_fetch, images (`@path`, view_image) and session_search through the real
`nanohermes -p` against the fake model server, with a web site on loopback."""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path
from typing import Any

import pytest
from cli_process import chat_bodies, run_nanohermes, sessions_dir
from fake_server import FakeServer
from fake_server import fake_server as fake_server
from page_server import PageServer
from page_server import page_server as page_server

from nanohermes.core.types import IMAGES_SHOWN

nh = functools.partial(run_nanohermes, key="sk-e2e-0123456789abcdef")
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
FIRST_REQUEST_MAX_BYTES = 10_350
"""1.5 × the first request's size before issue 35's tools (6.9 KB): their descriptions stay short."""


def tool_results(server: FakeServer) -> list[str]:
    """The tool results the last chat request sent back, in call order."""
    return [m["content"] for m in chat_bodies(server)[-1]["messages"] if m["role"] == "tool"]


def test_web_fetch_reads_a_page_and_refuses_loops_and_binaries(
    fake_server: FakeServer, page_server: PageServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NANOHERMES_WEB_FETCH_PRIVATE", "true")  # the site is on loopback
    urls = [page_server.url(path) for path in ("/page", "/loop", "/png", "/binary", "/huge")]
    fake_server.push_tool_calls([("web_fetch", {"url": url, "max_chars": 50}) for url in urls])
    fake_server.push_text("Read it.")
    done = nh(fake_server, workspace, "--no-memory", "--yes", "-p", "read the release notes")
    assert done.returncode == 0, done.stderr
    page, loop, png, binary, huge = tool_results(fake_server)
    assert "# Version 2" in page
    assert "alert" not in page
    assert loop == f"ERROR: more than 5 redirects, last to {urls[1]}; not followed"
    assert png == f"ERROR: {urls[2]} is image/png, not text; not fetched"
    assert binary == f"ERROR: {urls[3]} is binary data, not text; not fetched"
    assert "first 2 MB read" in huge
    assert huge.endswith("[… cut at 50 of 2,097,152 characters]")


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--yes",), "127.0.0.1 is a private address (127.0.0.1); refused (set web_fetch_private = true"),
        ((), "web_fetch was refused: writes, edits, shell commands and MCP tools"),
        (("--permission", "read-only"), "web_fetch was refused in read-only mode: it reaches the network"),
    ],
)
def test_web_fetch_refuses_loopback_unless_allowed_and_is_asked_like_a_write(
    fake_server: FakeServer, page_server: PageServer, workspace: Path, flags: tuple[str, ...], says: str
) -> None:
    fake_server.push_tool_calls([("web_fetch", {"url": page_server.url("/text")})])
    fake_server.push_text("No page.")
    done = nh(fake_server, workspace, "--no-memory", *flags, "-p", "fetch it")
    assert done.returncode == 0, done.stderr
    [result] = tool_results(fake_server)
    assert result.startswith("ERROR: ")
    assert says in result


def user_content(body: dict[str, Any]) -> Any:
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def test_an_image_in_the_prompt_reaches_the_model_and_stays_in_the_session(
    fake_server: FakeServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "shot.png").write_bytes(PNG)
    monkeypatch.setenv("NANOHERMES_MODEL_VISION", "true")
    fake_server.push_text("A black square.")
    done = nh(fake_server, workspace, "--no-memory", "--session", "pics", "-p", "what is in @shot.png?")
    assert done.returncode == 0, done.stderr
    sent = [
        {"type": "text", "text": "what is in @shot.png?"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]
    assert user_content(chat_bodies(fake_server)[0]) == sent
    fake_server.push_text("Still black.")
    again = nh(fake_server, workspace, "--no-memory", "--session", "pics", "-p", "and now?")
    assert again.returncode == 0, again.stderr
    messages = chat_bodies(fake_server)[-1]["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == [sent, "and now?"]


def test_without_vision_or_over_the_cap_the_text_goes_without_the_image(
    fake_server: FakeServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "shot.png").write_bytes(PNG)
    with (workspace / "big.png").open("wb") as handle:
        handle.write(PNG)
        handle.truncate(50 * 1024 * 1024)
    done = nh(fake_server, workspace, "--no-memory", "-p", "what is in @shot.png?")
    assert done.returncode == 0, done.stderr
    note = "nanohermes: @shot.png not sent: the model is not set up to see images (model_vision = false)"
    assert [line for line in done.stderr.splitlines() if "not sent" in line] == [note]
    assert user_content(chat_bodies(fake_server)[-1]) == "what is in @shot.png?"
    monkeypatch.setenv("NANOHERMES_MODEL_VISION", "true")
    done = nh(fake_server, workspace, "--no-memory", "-p", "and @big.png?")
    assert done.returncode == 0, done.stderr
    note = "nanohermes: @big.png not sent: big.png is 50.0 MB, over the 5 MB limit"
    assert [line for line in done.stderr.splitlines() if "not sent" in line] == [note]
    assert user_content(chat_bodies(fake_server)[-1]) == "and @big.png?"


def test_view_image_sends_the_image_after_the_tool_results(
    fake_server: FakeServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "shot.png").write_bytes(PNG)
    (workspace / "fake.png").write_text("text")
    calls = [("view_image", {"path": path}) for path in ("shot.png", "fake.png", "../shot.png")]
    fake_server.push_tool_calls(calls)
    fake_server.push_text("No vision here.")
    done = nh(fake_server, workspace, "--no-memory", "-p", "look")
    assert done.returncode == 0, done.stderr
    assert tool_results(fake_server)[0] == (
        "ERROR: the model is not set up to see images (model_vision = false)"
    )
    monkeypatch.setenv("NANOHERMES_MODEL_VISION", "true")
    fake_server.push_tool_calls(calls)
    fake_server.push_text("A black square.")
    done = nh(fake_server, workspace, "--no-memory", "-p", "look again")
    assert done.returncode == 0, done.stderr
    messages = chat_bodies(fake_server)[-1]["messages"]
    shot, fake, outside = tool_results(fake_server)
    assert shot == "shot.png: the image follows"
    assert fake == "ERROR: fake.png is not a PNG, JPEG, GIF or WebP image"
    assert "outside the workspace" in outside
    assert messages[-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": IMAGES_SHOWN},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
        ],
    }


def test_session_search_finds_an_earlier_exchange_of_this_workspace_only(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    fake_server.push_text("We chose Postgres for the cache.")
    first = nh(
        fake_server, workspace, "--no-memory", "--session", "monday", "-p", "which database for the cache?"
    )
    assert first.returncode == 0, first.stderr
    other = tmp_path / "other"
    other.mkdir()
    fake_server.push_text("Redis, in this other project.")
    elsewhere = nh(fake_server, other, "--no-memory", "--session", "other", "-p", "cache database here?")
    assert elsewhere.returncode == 0, elsewhere.stderr
    (sessions_dir() / "broken.json").write_text('{"version": 2, "messages": [{"role"')
    fake_server.push_tool_calls([("session_search", {"query": "cache database"})])
    fake_server.push_text("You chose Postgres.")
    done = nh(fake_server, workspace, "--no-memory", "-p", "what did we decide about the cache?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You chose Postgres.\n"
    [found] = tool_results(fake_server)
    lines = found.splitlines()
    assert lines[0].startswith(f"skipped: session file {sessions_dir() / 'broken.json'} is not valid JSON")
    assert lines[1].startswith("monday · 20")
    assert lines[2:] == ["  you: which database for the cache?", "  answer: We chose Postgres for the cache."]


def test_the_first_request_offers_the_new_tools_and_stays_small(
    fake_server: FakeServer, workspace: Path
) -> None:
    fake_server.push_text("Hi.")
    done = nh(fake_server, workspace, "-p", "hi")
    assert done.returncode == 0, done.stderr
    body = chat_bodies(fake_server)[0]
    names = {tool["function"]["name"] for tool in body["tools"]}
    assert {"web_fetch", "view_image", "session_search"} <= names
    assert len(json.dumps(body, ensure_ascii=False).encode()) <= FIRST_REQUEST_MAX_BYTES
