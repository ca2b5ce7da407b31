"""The start-up line about a missing API key (ui/setup_hint.py)."""

from __future__ import annotations

import os

import pytest

from nanohermes.config.settings import load_settings
from nanohermes.ui.setup_hint import missing_key_message


def _message(base_url: str, **environ: str) -> str | None:
    settings = load_settings(
        {"model": "m", "base_url": base_url}, environ={"HOME": os.environ["HOME"], **environ}
    )
    return missing_key_message(settings)


def test_a_remote_endpoint_without_a_key_is_named() -> None:
    assert (_message("https://api.example.com/v1") or "").startswith(
        "no API key set for https://api.example.com/v1"
    )


@pytest.mark.parametrize(
    "base_url",
    ["http://10.0.0.5:8000/v1", "https://localhost:8443/v1", "https://127.0.0.1/v1"],
)
def test_local_and_plain_http_endpoints_need_no_key(base_url: str) -> None:
    assert _message(base_url) is None


def test_a_key_set_says_nothing() -> None:
    assert _message("https://api.example.com/v1", OPENAI_API_KEY="sk-test-123456") is None
