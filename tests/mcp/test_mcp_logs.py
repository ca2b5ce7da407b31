"""Stdio servers' stderr: in a log file per server, rotated when it grew too big, its last line shown."""

from __future__ import annotations

from pathlib import Path

from nanohermes.mcp.logs import MAX_LOG_BYTES, ServerLogs


def test_a_log_grown_too_big_moves_aside_at_the_next_start(tmp_path: Path) -> None:
    logs = ServerLogs(tmp_path)
    path = tmp_path / "my_server.log"
    path.write_text("old line\n" * (MAX_LOG_BYTES // 9 + 10), encoding="utf-8")
    log = logs.open("my.server")
    log.write("fresh start failed\n")
    logs.close()
    assert path.stat().st_size < 1000
    assert "starting my.server" in path.read_text(encoding="utf-8")
    assert (tmp_path / "my_server.log.old").stat().st_size > MAX_LOG_BYTES


def test_tail_is_the_last_line_since_the_start_even_after_much_output(tmp_path: Path) -> None:
    logs = ServerLogs(tmp_path)
    log = logs.open("s")
    assert logs.tail("s") == ""  # nothing written since it started
    log.write("noise " * 100_000 + "\n\n  Error: token expired  \n")
    assert logs.tail("s") == "Error: token expired"
    assert logs.hint("s") == f" (its stderr is in {tmp_path / 's.log'})"
    log = logs.open("s")  # a restart: the earlier lines no longer count
    assert logs.tail("s") == ""
    logs.close()
    nowhere = ServerLogs(None)
    nowhere.open("s").write("lost\n")
    assert (nowhere.tail("s"), nowhere.hint("s")) == ("", "")
    nowhere.close()
