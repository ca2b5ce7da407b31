"""The first-run message when no model is configured. Plain text, no terminal libraries."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from nanohermes.config.settings import Settings


def missing_model_message(settings: Settings) -> str:
    """Which settings to give, with examples for OpenAI, DeepSeek and a local server."""
    config = settings.state_dir / "config.toml"
    return "\n".join(
        [
            "nanohermes: no model configured. Give the settings `model` (and `base_url`, `api_key` when",
            "needed) as flags, environment variables (NANOHERMES_MODEL, NANOHERMES_BASE_URL,",
            f"NANOHERMES_API_KEY) or in {config}.",
            "Examples:",
            "  OpenAI     export OPENAI_API_KEY=sk-...      && nanohermes --model gpt-4o-mini",
            "  DeepSeek   export NANOHERMES_API_KEY=sk-...  && nanohermes --model deepseek-chat \\",
            "                 --base-url https://api.deepseek.com/v1",
            "  llama.cpp  nanohermes --base-url http://127.0.0.1:8080/v1 --model local",
            "  Ollama     nanohermes --base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder:7b",
            "  offline    nanohermes --local   (a bundled small model: the README's --local section)",
            f'Or put it in {config}:  model = "gpt-4o-mini"',
        ]
    )


def missing_key_message(settings: Settings) -> str | None:
    """One line when a remote https endpoint has no API key (local and plain http ones usually need none)."""
    parts = urlsplit(settings.base_url)
    if settings.api_key_value() or parts.scheme != "https" or _is_local(parts.hostname or ""):
        return None
    config = settings.state_dir / "config.toml"
    return (
        f"no API key set for {settings.base_url}: export OPENAI_API_KEY=… (or NANOHERMES_API_KEY), "
        f"or put api_key in {config}"
    )


def _is_local(host: str) -> bool:
    import ipaddress

    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
