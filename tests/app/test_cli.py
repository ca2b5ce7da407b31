"""The real console script: every bad input ends in one line on stderr and exit code 2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_server import FakeServer
from fake_server import fake_server as fake_server

from nanohermes import __version__


def nanohermes_command() -> list[str]:
    script = Path(sys.executable).parent / "nanohermes"
    if script.exists():
        return [str(script)]
    found = shutil.which("nanohermes")
    return [found] if found else [sys.executable, "-m", "nanohermes"]


def run(
    args: list[str], home: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HOME": str(home), **(env or {})}
    return subprocess.run(
        [*nanohermes_command(), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("nanohermes: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_version(isolated_home: Path) -> None:
    result = run(["--version"], isolated_home)
    assert result.returncode == 0
    assert result.stdout.strip() == f"nanohermes {__version__}"


def test_python_dash_m_works(isolated_home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nanohermes", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    assert __version__ in result.stdout


def test_help_lists_every_flag(isolated_home: Path) -> None:
    result = run(["--help"], isolated_home)
    assert result.returncode == 0
    for flag in (
        "--session",
        "--continue",
        "--model",
        "--base-url",
        "--permission",
        "--no-memory",
        "--memory-dir",
        "--config",
        "-p",
        "--json",
        "--output-format",
        "--yes",
        "--local",
        "--verbose",
        "--version",
        "memory list",
    ):
        assert flag in result.stdout, flag


@pytest.mark.parametrize(
    ("args", "env", "fragments"),
    [
        (["--bogus"], {}, ["unrecognized arguments: --bogus", "(see nanohermes --help)"]),
        (["acp", "--bogus"], {}, ["unrecognized arguments: --bogus", "(see nanohermes acp --help)"]),
        (["acp", "--permission", "yolo"], {}, ["unknown permission mode 'yolo'", "nanohermes acp --help"]),
        (["undo", "--to", "0"], {}, ["--to needs a turn number", "(see nanohermes undo --help)"]),
        (["--permission", "yolo"], {}, ["unknown permission mode 'yolo'", "read-only, ask, auto"]),
        ([], {"NANOHERMES_MAX_RETRIES": "lots"}, ["NANOHERMES_MAX_RETRIES", "'lots'"]),
        ([], {"NANOHERMES_PERMISSION": "yolo"}, ["NANOHERMES_PERMISSION"]),
        (["--json"], {}, ["--json needs -p"]),
        (["--output-format", "stream-json"], {}, ["--output-format needs -p"]),
        (["-p", "x", "--output-format", "stream_json"], {}, ["'stream_json'", "did you mean stream-json?"]),
        (["-p", "x", "--output-format", "yaml"], {}, ["use text, json or stream-json"]),
        (["-p", "x", "--json", "--output-format", "text"], {}, ["--json means --output-format json"]),
        (["--session", "a", "--continue"], {}, ["--session or --continue"]),
        (["--config", "/nonexistent/nh.toml"], {}, ["/nonexistent/nh.toml", "does not exist"]),
        (["memory"], {}, ["memory needs an action"]),
        (["memory", "frobnicate"], {}, ["invalid choice"]),
        # an empty value ("$UNSET") used to mean the default memory dir, or the directory "."
        (["memory", "list", "--memory-dir", ""], {}, ["invalid value '' for --memory-dir"]),
        (["memory", "--memory-dir", "", "forget", "x"], {}, ["invalid value '' for --memory-dir"]),
        (["--mcp-config", ""], {}, ["--mcp-config needs a file path"]),
        (
            ["mcp", "list", "--mcp-config", " "],
            {},
            ["--mcp-config needs a file path", "nanohermes mcp --help"],
        ),
        # these used to pass, then end the first request in an internal error
        (
            ["--model", "m", "--base-url", "http://api..example.com/v1", "-p", "hi"],
            {},
            ["--base-url", "'..'"],
        ),
        (["--model", "m", "-p", "hi"], {"NANOHERMES_REQUEST_TIMEOUT": "1e12"}, ["at most 86,400"]),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(
    isolated_home: Path, args: list[str], env: dict[str, str], fragments: list[str]
) -> None:
    assert_one_line_error(run(args, isolated_home, env), *fragments)


def test_malformed_config_names_file_and_line(isolated_home: Path, tmp_path: Path) -> None:
    config = tmp_path / "broken.toml"
    config.write_text('model = "ok"\nmax_retries = = 3\n', encoding="utf-8")
    assert_one_line_error(run(["--config", str(config)], isolated_home), str(config), "line 2")


def test_bad_value_in_config_names_file_and_line(isolated_home: Path, tmp_path: Path) -> None:
    config = tmp_path / "values.toml"
    config.write_text('model = "ok"\n\nmax_retries = "lots"\n', encoding="utf-8")
    assert_one_line_error(run(["--config", str(config)], isolated_home), str(config), "line 3", "max_retries")


def test_unreadable_config_is_one_line(isolated_home: Path, tmp_path: Path) -> None:
    config = tmp_path / "dir.toml"
    config.mkdir()
    assert_one_line_error(run(["--config", str(config)], isolated_home), str(config))


def test_verbose_may_show_details_but_still_ends_with_the_line(isolated_home: Path) -> None:
    result = run(["--verbose"], isolated_home, {"NANOHERMES_MAX_RETRIES": "lots"})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("nanohermes: error: ")


def test_yes_means_auto_in_every_mode_and_never_widens_read_only(isolated_home: Path) -> None:
    from nanohermes.app.wiring import apply_yes
    from nanohermes.config.options import CliOptions
    from nanohermes.config.settings import load_settings
    from nanohermes.core.errors import ConfigError

    assert apply_yes(CliOptions(yes=True), load_settings({})).permission == "auto"  # the REPL too
    assert apply_yes(CliOptions(), load_settings({})).permission == "ask"
    with pytest.raises(ConfigError, match="--yes cannot widen permission read-only"):
        apply_yes(CliOptions(yes=True), load_settings({"permission": "read-only"}))
    assert_one_line_error(run(["--permission", "read-only", "--yes"], isolated_home), "--yes", "read-only")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_config_that_is_a_fifo_or_a_device_is_refused_unread(isolated_home: Path, tmp_path: Path) -> None:
    """A FIFO as --config (or ~/.nanohermes/config.toml) hung start-up for good; /dev/zero filled memory."""
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    for config in (str(fifo), "/dev/zero"):
        result = run(["--config", config, "--model", "m", "-p", "hi"], isolated_home, timeout=20)
        assert_one_line_error(result, config, "not a regular file")


def test_config_file_too_big_to_be_one_is_refused(isolated_home: Path, tmp_path: Path) -> None:
    config = tmp_path / "huge.toml"
    config.write_text("# padding\n" * 200_000, encoding="utf-8")
    assert_one_line_error(run(["--config", str(config)], isolated_home), str(config), "larger than")


def test_empty_config_path_is_a_usage_error_not_the_default_file(isolated_home: Path) -> None:
    """`--config "$UNSET"` silently read ~/.nanohermes/config.toml instead of the file meant."""
    for args in (["--config", ""], ["memory", "list", "--config", ""], ["undo", "--config", " "]):
        assert_one_line_error(run(args, isolated_home), "--config needs a file path")


def test_an_error_line_never_carries_an_escape_sequence(isolated_home: Path) -> None:
    """A flag's value is echoed in its error line: ESC reached the terminal (here: colour everything red)."""
    result = run(["--permission", "\x1b[31mred\x1b]0;title\x07"], isolated_home)
    assert_one_line_error(result, "unknown permission mode", "\\x1b[31mred")
    assert "\x1b" not in result.stderr
    assert "\x07" not in result.stderr


def test_version_into_a_closed_pipe_is_no_traceback(isolated_home: Path) -> None:
    """`nanohermes --version | true`: the reader is gone before the line is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [*nanohermes_command(), "--version"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "HOME": str(isolated_home)},
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 1
    assert result.stderr == ""


def test_request_timeout_too_long_for_the_clock_stops_before_any_request(
    isolated_home: Path, fake_server: FakeServer
) -> None:
    """request_timeout = 1e12 ended the run in "internal error: OverflowError: timestamp out of range
    for platform time_t" once the request was sent."""
    config = isolated_home / "config.toml"
    config.write_text(
        f'model = "m"\nbase_url = "{fake_server.url}"\nrequest_timeout = 1e12\n', encoding="utf-8"
    )
    result = run(["--config", str(config), "-p", "hi"], isolated_home)
    assert_one_line_error(result, "request_timeout in", "line 3", "must be at most 86,400")
    assert fake_server.requests == []
