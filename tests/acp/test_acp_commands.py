"""End to end: the workspace's custom slash commands are offered to the editor as available commands,
and running one sends its expanded body; a file that is skipped is said in the next turn."""

from __future__ import annotations

from pathlib import Path

from acp_harness import RecordingClient, prompt_once
from fake_server import FakeServer
from fake_server import fake_server as fake_server


def test_custom_commands_are_available_commands_and_send_their_body(
    fake_server: FakeServer, workspace: Path
) -> None:
    commands = workspace / ".nanohermes" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: PATH\n---\nReview $1."
    )
    (commands / "reset.md").write_text("not the built-in")
    fake_server.push_text("Reviewed.")
    client = RecordingClient()

    sid, reply = prompt_once(fake_server.url, client, workspace, "/review src/a.py")
    assert reply.stop_reason == "end_turn"
    [update] = client.of_kind(sid, "available_commands_update")
    offered = {c.name: c for c in update.available_commands}
    assert set(offered) == {"compact", "memory", "reset", "review"}
    assert offered["review"].description == "Review a file"
    assert offered["review"].input.root.hint == "PATH"
    assert fake_server.bodies[0]["messages"][-1]["content"] == "Review src/a.py."
    said = client.texts(sid)
    assert "reset.md skipped: /reset is a built-in command" in said
    assert "Reviewed." in said  # the note comes before or after it: it is posted as the commands are sent
