"""Settings precedence: CLI > environment > config file > defaults, plus fallbacks and secrecy."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from nanohermes.errors import ConfigError
from nanohermes.settings import SETTING_NAMES, load_settings


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
    settings = load_settings({"model": "from-cli"}, config_file=config, environ=environ)
    assert settings.model == "from-cli"  # cli beats env
    assert settings.max_retries == 2  # env beats file
    assert settings.shell_timeout == 7  # file beats default
    assert settings.language == "zh"
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
    assert "sk-secret-123" not in json.dumps(dataclasses.asdict(settings), default=str)


def test_bad_api_key_type_does_not_echo_the_value(tmp_path: Path) -> None:
    config = _config(tmp_path, "api_key = 12345678\n")
    with pytest.raises(ConfigError) as err:
        load_settings({}, config_file=config, environ={"HOME": str(tmp_path)})
    assert "12345678" not in str(err.value)


def test_distill_model_is_passed_to_the_agent_unset_or_set(tmp_path: Path) -> None:
    from nanohermes.agent import AgentConfig

    settings = load_settings({"model": "m1"}, environ={"HOME": str(tmp_path)})
    assert AgentConfig.from_settings(settings).distill_model is None  # the agent then uses `model`
    settings = load_settings({"model": "m1", "distill_model": "small"}, environ={"HOME": str(tmp_path)})
    assert AgentConfig.from_settings(settings).distill_model == "small"


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
    example = Path(__file__).resolve().parents[1] / "config" / "nanohermes.toml"
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
