"""`-p -` reads its prompt from stdin: bounded, and whatever the bytes are."""

from __future__ import annotations

import io
import signal

import pytest

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ConfigError
from nanohermes.ui.oneshot import _cancel_on_signal, read_prompt


def stdin_of(data: bytes) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")


def test_a_stdin_bigger_than_any_prompt_is_refused() -> None:
    """`nanohermes -p - < /dev/zero` read until memory ran out: `internal error: MemoryError`."""
    with pytest.raises(ConfigError, match="larger than 16 MB"):
        read_prompt("-", stdin_of(b"\0" * (17 * 1024 * 1024)))


def test_stdin_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    assert read_prompt("-", stdin_of(b"caf\xe9 \xed\xa0\x80!")) == "caf\ufffd \ufffd\ufffd\ufffd!"
    assert read_prompt("-", stdin_of("ok ✓\n".encode())) == "ok ✓\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_arriving_while_the_turn_holds_the_tokens_lock_does_not_deadlock(signum: int) -> None:
    # the handler runs on the thread it interrupted: cancelling right there would wait on a lock
    # that thread holds (here the token's own, as in the middle of on_cancel)
    token = CancelToken()
    handler = _cancel_on_signal(token)
    with token._lock:
        handler(signum, None)  # returns: the cancel waits on a thread of its own
        assert not token.cancelled
    assert token._event.wait(5)
