"""`-p -` reads its prompt from stdin: bounded, and whatever the bytes are."""

from __future__ import annotations

import io

import pytest

from nanohermes.core.errors import ConfigError
from nanohermes.ui.oneshot import read_prompt


def stdin_of(data: bytes) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")


def test_a_stdin_bigger_than_any_prompt_is_refused() -> None:
    """`nanohermes -p - < /dev/zero` read until memory ran out: `internal error: MemoryError`."""
    with pytest.raises(ConfigError, match="larger than 16 MB"):
        read_prompt("-", stdin_of(b"\0" * (17 * 1024 * 1024)))


def test_stdin_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    assert read_prompt("-", stdin_of(b"caf\xe9 \xed\xa0\x80!")) == "caf\ufffd \ufffd\ufffd\ufffd!"
    assert read_prompt("-", stdin_of("ok ✓\n".encode())) == "ok ✓\n"
