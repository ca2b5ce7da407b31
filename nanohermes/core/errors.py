"""Every error nanohermes raises on purpose; `str(err)` is one line for the user. Stdlib only."""

from __future__ import annotations

# Process exit codes, shared by the command line, one-shot mode and the memory commands.
EXIT_OK = 0
EXIT_FAILURE = 1  # the model, a tool, a file: something failed
EXIT_USAGE = 2  # a bad flag, setting or config, or no model configured
EXIT_INTERRUPTED = 130  # Ctrl-C

# How a reply cut short ends its turn
LENGTH_NOTE = "the answer was cut at the output-token cap (finish_reason: length); raise max_output_tokens"
FILTER_NOTE = (
    "the provider's content filter stopped the answer (finish_reason: content_filter); rephrase the request"
)
CAPACITY_NOTE = (
    "the provider cut the answer short for lack of capacity "
    "(finish_reason: insufficient_system_resource); try again"
)

INTERRUPTED = "interrupted by user"
"""What Ctrl-C leaves: the result of every unanswered tool call, the mark on a cut reply."""
JSON_ERRORS = (ValueError, RecursionError)
"""What `json.loads` raises: ValueError (not JSON, a number over Python's digit limit) and
RecursionError (a few KB of `[[[[…`)."""


def reason(err: BaseException) -> str:
    return err.strerror if isinstance(err, OSError) and err.strerror else str(err)


def json_problem(err: Exception) -> str:
    """A JSON_ERRORS error in a few words (a RecursionError's own text says nothing useful)."""
    return "nested too deeply" if isinstance(err, RecursionError) else str(err)


class NanoHermesError(Exception):
    """Base of every deliberate error; `hint` is one short "how to fix it" phrase, or ""."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        message = " ".join(str(self).split())
        return f"{message} ({self.hint})" if self.hint else message


class ConfigError(NanoHermesError):
    """Bad flag, setting, config file or environment value."""


class LLMError(NanoHermesError):
    """The model endpoint failed (after retries); `status` is the HTTP status when there was one."""

    def __init__(self, message: str, hint: str = "", status: int | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


class EndpointUnreachable(LLMError):
    """Connect error / DNS / refused."""


class ServerStopped(EndpointUnreachable):
    """The --local model server exited (its exit code and log)."""


class RateLimited(LLMError):
    """429 after every retry."""


class ContextOverflow(LLMError):
    """400/413 saying the prompt is too long."""


class IncompleteStream(LLMError):
    """The stream ended without finish reason or [DONE]."""


class ServerError(LLMError):
    """5xx after every retry."""


class BadResponse(LLMError):
    """A refused request (4xx), a body that is not a chat completion, or an error inside an HTTP 200."""


class ToolError(NanoHermesError):
    """A tool refused or failed (becomes an ERROR result for the model)."""


class StoreError(NanoHermesError):
    """`memory.json` could not be read or written."""


class MemoryRejected(StoreError):
    """`remember()` refused a text (empty, injection, invisible/control chars)."""


class SessionError(NanoHermesError):
    """A session file is corrupt, unreadable or unwritable."""


class SessionInUse(SessionError):
    """Another running nanohermes writes this session: a usage problem (exit 2), never a silent race."""


class Cancelled(NanoHermesError):
    """The user pressed Ctrl-C."""

    def __init__(self, message: str = INTERRUPTED) -> None:
        super().__init__(message)
