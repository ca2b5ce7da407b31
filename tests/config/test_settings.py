"""Settings precedence: CLI > environment > config file > defaults, plus fallbacks and secrecy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nanohermes.config.setting_values import shown
from nanohermes.config.settings import SETTING_NAMES, load_settings
from nanohermes.core.errors import ConfigError


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_defaults_follow_the_spec(tmp_path: Path) -> None:
    settings = load_settings({}, environ={"HOME": str(tmp_path)})
    assert settings.model is None
    assert settings.base_url == "https://api.openai.com/v1"
    assert settings.request_timeout == 120
    assert settings.max_retries == 3
    assert settings.max_iterations == 50
    assert settings.permission == "ask"
    assert settings.memory is True
    assert settings.memory_dir == tmp_path / ".nanohermes"
    assert settings.sessions_dir == tmp_path / ".nanohermes" / "sessions"
    assert settings.compact_threshold_chars == 120_000
    assert settings.compact_keep_messages == 10
    assert settings.shell_timeout == 120
    assert settings.tool_output_chars == 20_000
    assert settings.language == "en"
    assert settings.send_reasoning is False
    assert settings.distill_model is None


def test_each_layer_overrides_the_next(tmp_path: Path) -> None:
    config = _config(tmp_path, 'model = "from-file"\nmax_retries = 1\nshell_timeout = 7\nlanguage = "zh"\n')
    environ = {"HOME": str(tmp_path), "NANOHERMES_MODEL": "from-env", "NANOHERMES_MAX_RETRIES": "2"}
    settings = load_settings({"model": "from-cli"}, config_file=config, environ={**environ, "LANG": "en_US"})
    assert settings.model == "from-cli"  # cli beats env
    assert settings.max_retries == 2  # env beats file
    assert settings.shell_timeout == 7  # file beats default
    assert settings.language == "zh"  # file beats the locale
    assert settings.max_iterations == 50  # default


def test_default_config_file_is_read_from_home(tmp_path: Path) -> None:
    (tmp_path / ".nanohermes").mkdir()
    (tmp_path / ".nanohermes" / "config.toml").write_text('model = "home-model"\n', encoding="utf-8")
    assert load_settings({}, environ={"HOME": str(tmp_path)}).model == "home-model"


def test_openai_variables_are_fallbacks_below_nanohermes_ones(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": "http://x:1/v1/"}
    settings = load_settings({}, environ=environ)
    assert settings.api_key_value() == "sk-openai"
    assert settings.base_url == "http://x:1/v1"
    environ |= {"NANOHERMES_API_KEY": "sk-own", "NANOHERMES_BASE_URL": "http://y:2/v1"}
    settings = load_settings({}, environ=environ)
    assert settings.api_key_value() == "sk-own"
    assert settings.base_url == "http://y:2/v1"


def test_openai_fallback_beats_the_config_file(tmp_path: Path) -> None:
    config = _config(tmp_path, 'api_key = "sk-file"\n')
    environ = {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-env"}
    assert load_settings({}, config_file=config, environ=environ).api_key_value() == "sk-env"


def test_api_key_is_never_shown(tmp_path: Path) -> None:
    settings = load_settings({}, environ={"HOME": str(tmp_path), "NANOHERMES_API_KEY": "sk-secret-123"})
    assert "sk-secret-123" not in repr(settings)
    assert "sk-secret-123" not in str(settings)
    assert "sk-secret-123" not in json.dumps(settings.model_dump(), default=str)


def test_bad_api_key_type_does_not_echo_the_value(tmp_path: Path) -> None:
    config = _config(tmp_path, "api_key = 12345678\n")
    with pytest.raises(ConfigError) as err:
        load_settings({}, config_file=config, environ={"HOME": str(tmp_path)})
    assert "12345678" not in str(err.value)


def test_distill_model_is_unset_or_set(tmp_path: Path) -> None:
    settings = load_settings({"model": "m1"}, environ={"HOME": str(tmp_path)})
    assert settings.distill_model is None  # the agent then uses `model`
    settings = load_settings({"model": "m1", "distill_model": "small"}, environ={"HOME": str(tmp_path)})
    assert settings.distill_model == "small"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [({"LANG": "zh_CN.UTF-8"}, "zh"), ({"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN"}, "en"), ({}, "en")],
)
def test_language_comes_from_the_locale(tmp_path: Path, environ: dict[str, str], expected: str) -> None:
    assert load_settings({}, environ={"HOME": str(tmp_path), **environ}).language == expected


def test_userprofile_is_used_without_home(tmp_path: Path) -> None:
    settings = load_settings({}, environ={"USERPROFILE": str(tmp_path)})
    assert settings.memory_dir == tmp_path / ".nanohermes"


def test_tilde_paths_expand_against_home(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "NANOHERMES_MEMORY_DIR": "~/mem"}
    assert load_settings({}, environ=environ).memory_dir == tmp_path / "mem"


def test_config_may_use_a_nanohermes_table(tmp_path: Path) -> None:
    config = _config(tmp_path, '[nanohermes]\nmodel = "tabled"\n')
    assert load_settings({}, config_file=config, environ={"HOME": str(tmp_path)}).model == "tabled"


@pytest.mark.parametrize(
    ("cli", "environ", "config_body", "fragment"),
    [
        ({}, {"NANOHERMES_MAX_RETRIES": "lots"}, None, "NANOHERMES_MAX_RETRIES"),
        ({"permission": "yolo"}, {}, None, "--permission"),
        ({}, {"NANOHERMES_MEMORY": "maybe"}, None, "NANOHERMES_MEMORY"),
        ({}, {"NANOHERMES_BASE_URL": "ftp://x"}, None, "http:// or https://"),
        ({}, {}, "max_iterations = 0\n", "line 1"),
        ({}, {}, 'model = "x"\nbogus = 1\n', "unknown setting 'bogus'"),
        ({}, {}, "model = \n", "not valid TOML"),
    ],
)
def test_bad_values_name_their_source(
    tmp_path: Path, cli: dict[str, str], environ: dict[str, str], config_body: str | None, fragment: str
) -> None:
    config = _config(tmp_path, config_body) if config_body is not None else None
    with pytest.raises(ConfigError) as err:
        load_settings(cli, config_file=config, environ={"HOME": str(tmp_path), **environ})
    assert fragment in err.value.one_line()
    assert "\n" not in err.value.one_line()


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings({}, config_file=tmp_path / "nope.toml", environ={"HOME": str(tmp_path)})


def test_with_changes_validates(tmp_path: Path) -> None:
    settings = load_settings({}, environ={"HOME": str(tmp_path)})
    assert settings.with_changes(permission="auto").permission == "auto"
    with pytest.raises(ConfigError, match="permission"):
        settings.with_changes(permission="sometimes")


def test_every_setting_is_documented_in_the_example_config() -> None:
    example = Path(__file__).resolve().parents[2] / "config" / "nanohermes.toml"
    text = example.read_text(encoding="utf-8")
    missing = [name for name in SETTING_NAMES if f"{name} =" not in text and f"# {name} =" not in text]
    assert missing == []


def test_max_output_tokens_reaches_the_client(tmp_path: Path) -> None:
    from nanohermes.llm import ChatClient

    settings = load_settings({}, environ={"HOME": str(tmp_path), "NANOHERMES_MAX_OUTPUT_TOKENS": "256"})
    client = ChatClient.from_settings(settings)
    try:
        assert client.max_tokens == 256
    finally:
        client.close()
    assert load_settings({}, environ={"HOME": str(tmp_path)}).max_output_tokens is None
    with pytest.raises(ConfigError, match="NANOHERMES_MAX_OUTPUT_TOKENS"):
        load_settings({}, environ={"HOME": str(tmp_path), "NANOHERMES_MAX_OUTPUT_TOKENS": "0"})


@pytest.mark.parametrize(
    ("variable", "raw", "name", "expected"),
    [
        ("NANOHERMES_MEMORY", "off", "memory", False),
        ("NANOHERMES_CHECKPOINTS", "No", "checkpoints", False),
        ("NANOHERMES_SEND_REASONING", "yes", "send_reasoning", True),
        ("NANOHERMES_SANDBOX_NETWORK", "1", "sandbox_network", True),
        ("NANOHERMES_REQUEST_TIMEOUT", "2.5", "request_timeout", 2.5),
        ("NANOHERMES_MAX_RETRIES", " 0 ", "max_retries", 0),
        ("NANOHERMES_MAX_OUTPUT_TOKENS", "256", "max_output_tokens", 256),
        ("NANOHERMES_PERMISSION", "read-only", "permission", "read-only"),
        ("NANOHERMES_SANDBOX", "off", "sandbox", "off"),
        ("NANOHERMES_LANGUAGE", "zh", "language", "zh"),
        ("NANOHERMES_DISTILL_MODEL", "  ", "distill_model", None),
        ("NANOHERMES_API_KEY", "sk-x", "api_key", None),  # checked through api_key_value below
    ],
)
def test_environment_strings_are_read_as_their_setting_type(
    tmp_path: Path, variable: str, raw: str, name: str, expected: object
) -> None:
    settings = load_settings({}, environ={"HOME": str(tmp_path), variable: raw})
    if name == "api_key":
        assert settings.api_key_value() == raw
    else:
        assert getattr(settings, name) == expected


def test_every_layer_for_a_path_and_a_boolean(tmp_path: Path) -> None:
    config = _config(tmp_path, 'memory_dir = "~/from-file"\nmemory = false\nsessions_dir = "~/s-file"\n')
    home = {"HOME": str(tmp_path)}
    assert load_settings({}, config_file=config, environ=home).memory_dir == tmp_path / "from-file"
    assert load_settings({}, config_file=config, environ=home).memory is False
    environ = {**home, "NANOHERMES_MEMORY_DIR": "~/from-env", "NANOHERMES_MEMORY": "true"}
    from_env = load_settings({}, config_file=config, environ=environ)
    assert (from_env.memory_dir, from_env.memory) == (tmp_path / "from-env", True)
    assert from_env.sessions_dir == tmp_path / "s-file"
    from_cli = load_settings(
        {"memory_dir": tmp_path / "cli", "memory": False}, config_file=config, environ=environ
    )
    assert (from_cli.memory_dir, from_cli.memory) == (tmp_path / "cli", False)
    assert load_settings({}, environ=home).memory_dir == tmp_path / ".nanohermes"  # the default


@pytest.mark.parametrize(
    ("cli", "environ", "config_body", "expected"),
    [
        (
            {},
            {},
            'model = "m"\nmemory = "maybe"\n',
            "invalid value 'maybe' for memory in {config}, line 2: must be true or false",
        ),
        (
            {},
            {},
            "request_timeout = 0\n",
            "invalid value 0 for request_timeout in {config}, line 1: must be greater than 0",
        ),
        ({}, {}, "model = 5\n", "invalid value 5 for model in {config}, line 1: must be a string"),
        (
            {},
            {},
            'sandbox = "docker"\n',
            "for sandbox in {config}, line 1: must be one of 'auto', 'bwrap', 'off'",
        ),
        (
            {},
            {},
            "max_retries = 21\n",
            "invalid value 21 for max_retries in {config}, line 1: must be at most 20",
        ),
        ({}, {}, "api_key = 123456789\n", "invalid value for api_key in {config}, line 1: must be a string"),
        ({"max_iterations": 0}, {}, None, "invalid value 0 for --max-iterations: must be at least 1"),
        (
            {},
            {"NANOHERMES_SHELL_TIMEOUT": "nan"},
            None,
            "for NANOHERMES_SHELL_TIMEOUT: must be a number of seconds",
        ),
        (
            {},
            {"NANOHERMES_TOOL_OUTPUT_CHARS": "2.5"},
            None,
            "for NANOHERMES_TOOL_OUTPUT_CHARS: must be a whole number",
        ),
        (
            {},
            {"OPENAI_BASE_URL": "ftp://x"},
            None,
            "for OPENAI_BASE_URL: must start with http:// or https://",
        ),
        (
            {},
            {"NANOHERMES_MCP_SERVERS": "x"},
            None,
            "for NANOHERMES_MCP_SERVERS: must be a table of MCP servers",
        ),
    ],
)
def test_each_bad_value_is_one_line_naming_its_layer(
    tmp_path: Path, cli: dict[str, object], environ: dict[str, str], config_body: str | None, expected: str
) -> None:
    config = _config(tmp_path, config_body) if config_body is not None else None
    with pytest.raises(ConfigError) as err:
        load_settings(cli, config_file=config, environ={"HOME": str(tmp_path), **environ})
    assert expected.format(config=config) in err.value.one_line()
    assert "123456789" not in err.value.one_line()


def test_settings_are_pydantic_settings_that_help_does_not_load() -> None:
    """SPEC §0 names pydantic-settings; `--help` answers without importing it (as `--version` does:
    tests/test_layering.py)."""
    from pydantic_settings import BaseSettings

    from nanohermes.config.settings import Settings

    assert issubclass(Settings, BaseSettings)
    code = (
        "import sys, contextlib, io\n"
        "from nanohermes.app.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'pydantic_settings'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://[::1/v1", "not a valid URL"),
        ("http://localhost:99999/v1", "not a valid URL"),
        ("http://localhost:8080/my models/v1", "spaces"),
        ("http://localhost:8080/\x1b]0;title\x07/v1", "control characters"),
        ("http://:8080/v1", "names no host"),
    ],
)
def test_base_url_that_no_request_could_use_is_refused_at_start(
    tmp_path: Path, url: str, fragment: str
) -> None:
    """They used to pass, then end the first turn in "internal error: ValueError: Invalid IPv6 URL"
    (or InvalidURL, or a refused connection to a URL with a space in it)."""
    with pytest.raises(ConfigError) as err:
        load_settings({"base_url": url}, environ={"HOME": str(tmp_path)})
    assert fragment in err.value.one_line()
    assert "--base-url" in err.value.one_line()


def test_base_url_with_a_password_is_refused_without_showing_it(tmp_path: Path) -> None:
    """Error lines quote the base URL ("cannot reach http://user:pw@…"): its password was printed."""
    environ = {"HOME": str(tmp_path), "NANOHERMES_BASE_URL": "https://bob:hunter2-pw@llm.example/v1"}
    with pytest.raises(ConfigError) as err:
        load_settings({}, environ=environ)
    line = err.value.one_line()
    assert "NANOHERMES_BASE_URL" in line
    assert "user name or password" in line
    assert "hunter2" not in line
    assert "bob" not in line


@pytest.mark.parametrize(
    "key", ["sk-abc\ndef-123456789", "sk-abc def-123456789", "sk-abcé-123456789", "sk-\x00-123456789"]
)
def test_api_key_that_cannot_travel_in_a_header_is_refused_without_echo(tmp_path: Path, key: str) -> None:
    """The HTTP library refused such a key only at the first request, quoting the whole header —
    `Illegal header value b'Bearer sk-…'` — on the terminal."""
    with pytest.raises(ConfigError) as err:
        load_settings({}, environ={"HOME": str(tmp_path), "NANOHERMES_API_KEY": key})
    line = err.value.one_line()
    assert "NANOHERMES_API_KEY" in line
    assert "123456789" not in line


def test_api_key_loses_the_blanks_copied_around_it(tmp_path: Path) -> None:
    config = _config(tmp_path, 'api_key = "  sk-copied-123\\n"\n')
    settings = load_settings({}, config_file=config, environ={"HOME": str(tmp_path)})
    assert settings.api_key_value() == "sk-copied-123"
    blank = load_settings({}, environ={"HOME": str(tmp_path), "OPENAI_API_KEY": " \t"})
    assert blank.api_key_value() is None


@pytest.mark.parametrize("name", ["gpt\x1b]0;pwned\x07", "gpt\u202e-4o", "gpt\x9b2J"])
def test_model_name_with_control_or_invisible_characters_is_refused(tmp_path: Path, name: str) -> None:
    """The banner printed the model name raw: an escape sequence in it retitled the terminal."""
    for setting, variable in (("model", "NANOHERMES_MODEL"), ("distill_model", "NANOHERMES_DISTILL_MODEL")):
        with pytest.raises(ConfigError, match=f"{variable}.*control or invisible"):
            load_settings({}, environ={"HOME": str(tmp_path), variable: name})
        with pytest.raises(ConfigError):
            load_settings({setting: name}, environ={"HOME": str(tmp_path)})


def test_request_timeout_past_a_day_is_refused_at_start(tmp_path: Path) -> None:
    """1e12 passed, then ended the first request in "internal error: OverflowError: timestamp out of
    range for platform time_t"."""
    with pytest.raises(ConfigError) as err:
        load_settings({}, environ={"HOME": str(tmp_path), "NANOHERMES_REQUEST_TIMEOUT": "1e12"})
    assert "NANOHERMES_REQUEST_TIMEOUT: must be at most 86,400" in err.value.one_line()
    assert load_settings({}, environ={"HOME": str(tmp_path), "NANOHERMES_REQUEST_TIMEOUT": "86400"})


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('memory_dir = "~/m"\nmemory = "maybe"\n', "for memory in {config}, line 2"),
        ('sandbox_network = false\nsandbox = "docker"\n', "for sandbox in {config}, line 2"),
        ('"model" = 5\n', "for model in {config}, line 1"),
        ('model = "m"\n\n[other]\nx = 1\n', "{config}, line 3: unknown setting 'other'"),
    ],
)
def test_the_line_named_is_the_setting_s_own(tmp_path: Path, body: str, fragment: str) -> None:
    """`memory = "maybe"` was said to be on the line of `memory_dir`, which starts with its name."""
    config = _config(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_settings({}, config_file=config, environ={"HOME": str(tmp_path)})
    assert fragment.format(config=config) in err.value.one_line()


def test_settings_outside_a_nanohermes_table_are_not_dropped(tmp_path: Path) -> None:
    """With a [nanohermes] table, the rest of the file was ignored: a `model` above it ("no model
    configured"), an [mcp_servers.x] table below it, and typos anywhere outside it."""
    home = {"HOME": str(tmp_path)}
    body = 'model = "m"\n[nanohermes]\nmax_retries = 2\n[mcp_servers.x]\ncommand = "srv"\n'
    settings = load_settings({}, config_file=_config(tmp_path, body), environ=home)
    assert (settings.model, settings.max_retries, list(settings.mcp_servers)) == ("m", 2, ["x"])
    typo = _config(tmp_path, 'modle = "m"\n[nanohermes]\nmax_retries = 2\n')
    with pytest.raises(ConfigError, match=r"line 1: unknown setting 'modle'"):
        load_settings({}, config_file=typo, environ=home)
    twice = _config(tmp_path, 'model = "a"\n[nanohermes]\nmodel = "b"\n')
    with pytest.raises(ConfigError, match=r"'model' is set both in \[nanohermes\] and outside it"):
        load_settings({}, config_file=twice, environ=home)


def test_config_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Windows Notepad's UTF-8 starts with a BOM: "not valid TOML: Invalid statement (at line 1,
    column 1)" for a file that looks right."""
    config = tmp_path / "config.toml"
    config.write_bytes(b'\xef\xbb\xbfmodel = "m"\r\nmax_retries = 2\r\n')
    settings = load_settings({}, config_file=config, environ={"HOME": str(tmp_path)})
    assert (settings.model, settings.max_retries) == ("m", 2)


def test_config_not_in_utf8_names_the_line(tmp_path: Path) -> None:
    """It said "'utf-8' codec can't decode byte 0xe9 in position 18": a byte offset, not a line."""
    config = tmp_path / "config.toml"
    config.write_bytes(b'model = "m"\n# caf\xe9\n')
    with pytest.raises(ConfigError) as err:
        load_settings({}, config_file=config, environ={"HOME": str(tmp_path)})
    assert f"config file {config} is not UTF-8 text (line 2: byte 0xe9)" in err.value.one_line()


def test_config_nested_too_deeply_is_a_config_error(tmp_path: Path) -> None:
    """tomllib recurses per nested array: a RecursionError became an "internal error"."""
    config = _config(tmp_path, "model = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="not valid TOML: nested too deeply"):
        load_settings({}, config_file=config, environ={"HOME": str(tmp_path)})


def test_default_config_that_links_nowhere_is_an_error_not_no_config(tmp_path: Path) -> None:
    """A dotfiles link whose target moved: every setting in it was silently not read."""
    (tmp_path / ".nanohermes").mkdir()
    (tmp_path / ".nanohermes" / "config.toml").symlink_to(tmp_path / "dotfiles" / "nanohermes.toml")
    with pytest.raises(ConfigError, match="links to a file that does not exist"):
        load_settings({}, environ={"HOME": str(tmp_path)})


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("https://api..openai.com/v1", "look for '..'"),
        ("http://" + "a" * 64 + ".example/v1", "over 63 characters"),
        ("http://256.1.1.1:8080/v1", "not a valid IPv4 address"),
        ("http://xn--/v1", "not a valid international domain name"),
        ("http://\u2603.example/v1", "not a valid international domain name"),
    ],
)
def test_base_url_host_the_http_library_refuses_is_refused_at_start(
    tmp_path: Path, url: str, fragment: str
) -> None:
    """Each passed, then ended the first turn in "internal error: UnicodeError: encoding with 'idna'
    codec failed" (or IDNAError, or InvalidURL)."""
    with pytest.raises(ConfigError) as err:
        load_settings({"base_url": url}, environ={"HOME": str(tmp_path)})
    assert "--base-url" in err.value.one_line()
    assert fragment in err.value.one_line()


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com/v1",
        "http://[::1]:8080/v1",
        "http://xn--fiqs8s.example/v1",
        "http://中国.example/v1",
    ],
)
def test_base_url_hosts_that_work_still_pass(tmp_path: Path, url: str) -> None:
    assert load_settings({"base_url": url}, environ={"HOME": str(tmp_path)}).base_url == url


@pytest.mark.parametrize(
    ("body", "environ", "expected"),
    [
        ("max_iterations = true\n", {}, "invalid value true for max_iterations"),
        ("model = 1979-05-27\n", {}, "invalid value 1979-05-27 for model"),
        ("", {"NANOHERMES_MAX_ITERATIONS": "9" * 5000}, "invalid value '" + "9" * 60 + "'… for"),
    ],
)
def test_a_bad_value_is_quoted_as_written_and_cut_short(
    tmp_path: Path, body: str, environ: dict[str, str], expected: str
) -> None:
    """The line quoted Python (`True`, `datetime.date(1979, 5, 27)`), and a 5,000-digit value whole."""
    config = _config(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_settings({}, config_file=config, environ={"HOME": str(tmp_path), **environ})
    line = err.value.one_line()
    assert expected in line
    assert len(line) < 300


def test_a_number_too_long_to_read_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'model = "m"\nmax_iterations = {"9" * 5_000}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="holds a number too long to read"):
        load_settings({}, config_file=config, environ={"HOME": str(tmp_path)})
    assert shown(10**5_000) == "a number of about 5,000 digits"
