"""Every error nanohermes raises on purpose. Stdlib only.

NanoHermesError              .hint: one short "how to fix it" phrase, or ""
├── ConfigError              bad flag, setting, config file or environment value
├── LLMError                 the model endpoint failed (after retries)
│   ├── EndpointUnreachable  connect error / DNS / refused
│   │   └── ServerStopped    the --local model server exited (its exit code and log)
│   ├── RateLimited          429 after every retry
│   ├── AuthError            401 / 403
│   ├── PaymentRequired      402
│   ├── ModelNotFound        404
│   ├── ContextOverflow      400/413 saying the prompt is too long
│   ├── IncompleteStream     the stream ended without finish reason or [DONE]
│   ├── EmptyAnswer          no text, no refusal, no tool call (even after a retry)
│   ├── ServerError          5xx after every retry
│   ├── BadResponse          4xx not listed above, or a body that is not a chat completion
│   └── StreamError          an {"error": ...} chunk inside an HTTP 200 stream
├── ToolError                a tool refused or failed (becomes an ERROR result for the model)
├── StoreError               memory.json could not be read or written
│   └── MemoryRejected       remember() refused a text (empty, injection, invisible/control chars)
├── SessionError             a session file is corrupt, unreadable or unwritable
│   └── SessionInUse         another running nanohermes holds the session (exit code 2)
└── Cancelled                the user pressed Ctrl-C
"""

from __future__ import annotations

# Process exit codes, shared by the command line, one-shot mode and the memory commands.
EXIT_OK = 0
EXIT_FAILURE = 1  # the model, a tool, a file: something failed
EXIT_USAGE = 2  # a bad flag, setting or config, or no model configured
EXIT_INTERRUPTED = 130  # Ctrl-C

LENGTH_NOTE = "the answer was cut at the output-token cap (finish_reason: length); raise max_output_tokens"
"""What a reply cut by the output cap ends with (REPL note, one-shot error line)."""
FILTER_NOTE = (
    "the provider's content filter stopped the answer (finish_reason: content_filter); rephrase the request"
)
"""What a reply the provider's filter stopped ends with; the turn ends as a refusal."""
CAPACITY_NOTE = (
    "the provider cut the answer short for lack of capacity "
    "(finish_reason: insufficient_system_resource); try again"
)
"""DeepSeek's reply interrupted on its side: the partial answer is kept, the turn is not completed."""

INTERRUPTED = "interrupted by user"
"""What Ctrl-C leaves behind: the result of every unanswered tool call, the mark on a cut reply."""
JSON_ERRORS = (ValueError, RecursionError)
"""What `json.loads` raises on text it cannot take: ValueError (not JSON, or a number over Python's
digit limit) and RecursionError (nesting too deep for the decoder: a few KB of `[[[[…`)."""


def json_problem(err: Exception) -> str:
    """A JSON_ERRORS error in a few words (the RecursionError's own text says nothing useful)."""
    return "nested too deeply" if isinstance(err, RecursionError) else str(err)


class NanoHermesError(Exception):
    """Base of every deliberate error. `str(err)` is one line meant for the user."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        message = " ".join(str(self).split())
        return f"{message} ({self.hint})" if self.hint else message


class ConfigError(NanoHermesError):
    pass


class LLMError(NanoHermesError):
    def __init__(self, message: str, hint: str = "", status: int | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


class EndpointUnreachable(LLMError):
    pass


class ServerStopped(EndpointUnreachable):
    pass


class RateLimited(LLMError):
    pass


class AuthError(LLMError):
    pass


class PaymentRequired(LLMError):
    pass


class ModelNotFound(LLMError):
    pass


class ContextOverflow(LLMError):
    pass


class IncompleteStream(LLMError):
    pass


class EmptyAnswer(LLMError):
    pass


class ServerError(LLMError):
    pass


class BadResponse(LLMError):
    pass


class StreamError(LLMError):
    pass


class ToolError(NanoHermesError):
    pass


class StoreError(NanoHermesError):
    pass


class MemoryRejected(StoreError):
    pass


class SessionError(NanoHermesError):
    pass


class SessionInUse(SessionError):
    """Another running nanohermes writes this session: a usage problem (exit 2), never a silent race."""


class Cancelled(NanoHermesError):
    def __init__(self, message: str = INTERRUPTED) -> None:
        super().__init__(message)
