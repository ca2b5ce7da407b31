"""Command line: parse arguments, build Settings once, dispatch. Errors end in one line, never a traceback.
Only `sys` is imported up front: `--version` answers before argparse or pydantic load."""

from __future__ import annotations

import sys

from nanohermes import __version__
from nanohermes.core.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs ~10 ms at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TextIO

    from nanohermes.config.options import CliOptions
    from nanohermes.core.errors import NanoHermesError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        return _flush_stdout(f"nanohermes {__version__}\n")
    verbose = "--verbose" in args
    _escape_unencodable()
    from nanohermes.app.args import UsageError, parse_args

    try:
        try:
            options = parse_args(args)
        except SystemExit:  # --help was printed (errors raise UsageError): a full disk is no success
            return _flush_stdout()
        except OSError as err:  # older 3.11 releases' argparse lets the error of its own write escape
            return _stdout_failed(err)
        code = _dispatch(options)
    except UsageError as err:
        return _fail(f"{err} (see {err.command} --help)", EXIT_USAGE)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # stdout's reader left (`| head -1`): nothing went wrong worth a line
        return _stdout_closed()
    except Exception as err:  # the one place that turns any error into one line
        return _report(err, verbose)
    if argv is None and options.prompt is not None:
        _leave(code)
    return code


def _flush_stdout(text: str = "") -> int:
    """argparse drops the error of its own writes: --help > /dev/full exited 0."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as err:
        return _stdout_failed(err)
    return EXIT_OK


def _stdout_failed(err: OSError) -> int:
    """A closed pipe ends quietly; a full disk under `> file` is one line."""
    if isinstance(err, BrokenPipeError):
        return _stdout_closed()
    return _fail(_unwritable(sys.stdout, err).one_line(), EXIT_FAILURE)


def _escape_unencodable() -> None:
    """Under a locale that is not UTF-8, text it lacks (`—`, `中文`) is written as an escape (`\\u2014`):
    it ended the run in «internal error: UnicodeEncodeError», the answer lost."""
    from nanohermes.ui.safe_text import speaks_utf8

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not speaks_utf8(stream) and getattr(stream, "errors", "") == "strict":
            reconfigure(errors="backslashreplace")


class _GuardedStdout:
    """sys.stdout while a sub-command prints: a full disk is a NanoHermesError naming stdout, not an
    «internal error: OSError»; a closed pipe stays a BrokenPipeError (main ends quietly)."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        return int(self._checked(self._inner.write, text))

    def flush(self) -> None:
        self._checked(self._inner.flush)

    def _checked(self, action: Callable[..., Any], *args: str) -> Any:
        try:
            return action(*args)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise _unwritable(self._inner, err) from None

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding …: as the real one
        return getattr(self._inner, name)


def _unwritable(out: TextIO, err: OSError) -> NanoHermesError:
    """`out` goes to /dev/null first, so that what it still buffers does not fail the exit again."""
    from nanohermes.core.errors import NanoHermesError
    from nanohermes.ui.oneshot import drop_stdout

    drop_stdout(out)
    return NanoHermesError(f"cannot write to standard output: {err.strerror or err}")


def _guarded(command: Callable[..., int], *args: object) -> int:
    import contextlib

    with contextlib.redirect_stdout(_GuardedStdout(sys.stdout)):  # duck-typed: write, flush, the rest
        code = command(*args)
        sys.stdout.flush()
    return code


def _stdout_closed() -> int:
    """Exit non-zero, quietly, like other commands in a pipe."""
    from nanohermes.ui.oneshot import drop_stdout

    drop_stdout(sys.stdout)
    return EXIT_FAILURE


def _ctrl_c_while_leaving(code: int) -> None:
    """Ctrl-C while `_leave` joins the tools' threads (one may still be killing a command) printed a
    traceback and left the command running: now a first Ctrl-C only says so, a second quits at once."""
    import os
    import signal

    pressed: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if pressed:
            os._exit(code)
        pressed.append(signum)
        print("nanohermes: finishing: stopping the commands still running (Ctrl-C again to quit now)",
              file=sys.stderr, flush=True)  # fmt: skip

    signal.signal(signal.SIGINT, handler)


def _leave(code: int) -> None:
    """End a one-shot run now: everything is written and fsynced; after joining threads and running exit
    hooks, as the interpreter would, only tearing down every module is left (30–40 ms for nothing)."""
    import os
    import threading

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe: let the interpreter's own exit report it as usual
        return
    _ctrl_c_while_leaving(code)
    # as the interpreter does: join non-daemon threads, run threading's exit hooks (ThreadPoolExecutor's)
    threading._shutdown()  # type: ignore[attr-defined]
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)  # past the exit hooks there is no going back to the interpreter's own exit


def _dispatch(options: CliOptions) -> int:
    from nanohermes.config.settings import load_settings

    settings = load_settings(options.overrides, config_file=options.config, mcp_config=options.mcp_config)
    if options.mcp_action is not None:
        from nanohermes.ui.mcp_cmd import run_mcp_command

        return _guarded(run_mcp_command, options, settings)
    if options.memory is not None:
        from nanohermes.ui.memory_cmd import run_memory_command

        return _guarded(run_memory_command, options.memory, settings)
    if options.undo is not None:
        from nanohermes.ui.undo_cmd import run_undo_command

        return _guarded(run_undo_command, options.undo, settings)
    if options.acp:
        from nanohermes.app.wiring import run_acp

        return run_acp(options, settings)
    from nanohermes.app.wiring import run_chat

    return run_chat(options, settings)


def _report(err: Exception, verbose: bool) -> int:
    from nanohermes.core.errors import ConfigError, NanoHermesError, SessionInUse

    if verbose:
        import traceback

        traceback.print_exc()
    if isinstance(err, ConfigError | SessionInUse):
        return _fail(err.one_line(), EXIT_USAGE)
    if isinstance(err, NanoHermesError):
        return _fail(err.one_line(), EXIT_FAILURE)
    hint = "" if verbose else " (run with --verbose for details)"
    return _fail(f"internal error: {type(err).__name__}: {err}{hint}", EXIT_FAILURE)


def _fail(message: str, code: int) -> int:
    from nanohermes.ui.safe_text import fail  # a flag's value may hold escape sequences

    return fail(message, code)
