"""Argument parsing for the command line (SPEC §1). Imported only after the --version fast path."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, NoReturn

from nanohermes import __version__
from nanohermes.config.options import CliOptions, MemoryArgs, UndoArgs


class UsageError(Exception):
    """A bad command line; reported as one line with exit code 2, pointing at `command --help`."""

    def __init__(self, message: str, command: str = "nanohermes") -> None:
        super().__init__(message)
        self.command = command


OUTPUT_FORMATS = ("text", "json", "stream-json")
MEMORY_USAGE = (
    "list [--all] [--history] [--stale DAYS] | search QUERY [--explain] [--all] [--history] | forget ID"
    " | replace ID TEXT | stats | path | add KIND TEXT [--project | --team] | export | import FILE"
)
PROMPT_HINT = "give the prompt after -p (one that starts with '-' as -p=TEXT, or -p - with it on stdin)"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # no abbreviations: `--mode auto` was silently read as `--model auto` (an unknown model)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument -p/--prompt: expected one argument"):
            message = f"{message}: {PROMPT_HINT}"
        raise UsageError(message, self.prog)


def _parse(
    parser: argparse.ArgumentParser, argv: Sequence[str], commands: Sequence[str] = ()
) -> argparse.Namespace:
    """`parser.parse_args(argv)`, naming the closest option or sub-command: «did you mean --model?»."""
    ns, extras = parser.parse_known_args(list(argv))
    if extras:
        word = extras[0].split("=", 1)[0]
        hint = _closest(word, _option_names(parser) if word.startswith("-") else commands)
        parser.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    return ns


def _closest(word: str, known: Sequence[str], cutoff: float = 0.7) -> str:
    """«; did you mean X?» naming the one of `known` closest to `word`, or "" (only on error paths)."""
    import difflib

    bare = {name.lstrip("-"): name for name in known}  # the dashes they share would make `--bogus` close
    close = difflib.get_close_matches(word.lstrip("-"), list(bare), n=1, cutoff=cutoff)
    if not close or bare[close[0]] == word:  # `memory stats --explain`: another action's option
        return ""
    return f"; did you mean {bare[close[0]]}?"


def _option_names(parser: argparse.ArgumentParser) -> list[str]:
    names: list[str] = []
    for action in parser._actions:
        names += [option for option in action.option_strings if option.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                names += _option_names(sub)
    return sorted(set(names))


def _add_run_options(add: Callable[..., object], permission_help: str) -> None:
    """`nanohermes` and `nanohermes acp` take the same ones (read back by `_run_overrides`)."""
    add("--model", metavar="M", help="model name sent to the endpoint")
    add("--base-url", metavar="URL", help="OpenAI-compatible endpoint, e.g. http://localhost:8080/v1")
    add("--permission", metavar="MODE", help=permission_help)
    add("--no-memory", action="store_true", help="turn long-term memory off for this run")
    add("--memory-dir", metavar="DIR", help="directory holding memory.json (default: ~/.nanohermes)")


def _add_common_options(
    add: Callable[..., object], verbose_help: str = "show details", default: object = None
) -> None:
    add(
        "--config",
        metavar="FILE",
        default=default,
        help="config TOML file (default: ~/.nanohermes/config.toml)",
    )
    add("--verbose", action="store_true", default=False if default is None else default, help=verbose_help)


def _run_overrides(ns: argparse.Namespace, command: str) -> dict[str, object]:
    from nanohermes.config.settings import PERMISSION_MODES  # settings load right after parsing anyway

    if ns.model is not None and not ns.model.strip():  # `--model "$UNSET"`: not "no model configured"
        raise UsageError("--model needs a model name, not an empty one", command)
    if ns.permission is not None and ns.permission not in PERMISSION_MODES:
        modes = ", ".join(PERMISSION_MODES)
        raise UsageError(f"unknown permission mode '{ns.permission}'; use one of: {modes}", command)
    overrides = {name: getattr(ns, name) for name in ("model", "base_url", "permission", "memory_dir")}
    if ns.no_memory:
        overrides["memory"] = False
    return {name: value for name, value in overrides.items() if value is not None}


def build_parser() -> argparse.ArgumentParser:
    import textwrap

    memory = textwrap.fill(f"nanohermes memory {MEMORY_USAGE}", 88, subsequent_indent=" " * 8)
    parser = _Parser(
        prog="nanohermes",
        description="A coding agent for the terminal that remembers your preferences across sessions.",
        epilog=f"Memory: {memory}\n"
        "Undo:   nanohermes undo [--session S] [--list] [--to N] [--force]\n"
        "Editors: nanohermes acp (Agent Client Protocol on stdio)\n"
        "MCP:    nanohermes mcp list [--config FILE] [--mcp-config FILE]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--session", metavar="NAME|PATH", help="resume or create a session (a name, or a .json path)")
    add("--continue", dest="continue_last", action="store_true", help="resume the most recent session")
    _add_run_options(add, "read-only | ask | auto (default: ask)")
    add("--mcp-config", metavar="FILE", action="append", help='MCP servers as JSON {"mcpServers": {...}}')
    add("-p", "--prompt", metavar="PROMPT", help="run one turn non-interactively ('-' reads stdin)")
    add("--json", dest="json_output", action="store_true", help="with -p: print one JSON object")
    add(
        "--output-format",
        metavar="FORMAT",
        help="with -p: text (default) | json (= --json) | stream-json (a JSON object a line as it happens)",
    )
    add("--yes", action="store_true", help="allow writes and shell commands without asking (= auto)")
    add("--local", action="store_true", help="start the bundled small model offline (extra 'local')")
    _add_common_options(add, "show details: retries, distillation, tracebacks")
    add("--version", action="version", version=f"nanohermes {__version__}", help="print the version")
    return parser


def _add_memory_options(parser: argparse.ArgumentParser, default: object = None) -> None:
    parser.add_argument("--memory-dir", metavar="DIR", default=default, help="directory holding memory.json")
    _add_common_options(parser.add_argument, default=default)


def build_memory_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="nanohermes memory", description="Inspect and edit long-term memory.")
    _add_memory_options(parser)
    # what MemoryArgs reads; each action sets the few it takes (its positional: `argument`)
    parser.set_defaults(**{f.name: f.default for f in fields(MemoryArgs) if f.name != "action"})
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    listing = actions.add_parser("list", help="list the global memories and this project's")
    listing.add_argument("--stale", type=int, metavar="DAYS", help="only those unused for DAYS days")
    search = actions.add_parser("search", help="search memories with BM25")
    search.add_argument("argument", metavar="query", nargs="+", help="words to search for")
    search.add_argument("--explain", action="store_true", help="show each term's BM25 contribution")
    for sub in (listing, search):
        sub.add_argument("--all", dest="all_projects", action="store_true", help="every project's too")
        sub.add_argument("--history", action="store_true", help="replaced memories too")
    add = actions.add_parser("add", help="save a memory typed by you (global unless --project)")
    add.add_argument("kind", help="preference | correction | lesson | fact")
    add.add_argument("argument", metavar="text", nargs="+", help="the memory, one sentence")
    add.add_argument("--project", action="store_true", help="it belongs to this project only")
    add.add_argument("--team", action="store_true", help="into the repository's team memory")
    replace = actions.add_parser("replace", help="replace a memory; the old one is kept as history")
    replace.add_argument("target", metavar="id", help="the id shown by 'memory list'")
    replace.add_argument("argument", metavar="text", nargs="+", help="the new memory, one sentence")
    actions.add_parser("export", help="print every memory as Markdown, grouped by scope and kind")
    importing = actions.add_parser("import", help="read memories from an export (Markdown or JSON)")
    importing.add_argument("argument", metavar="file", help="the file to import ('-' reads stdin)")
    forget = actions.add_parser("forget", help="delete one memory by id")
    forget.add_argument("argument", metavar="id", help="the id shown by 'memory list'")
    actions.add_parser("stats", help="counts per kind, file size and path")
    actions.add_parser("path", help="print the path of memory.json")
    # every action takes the global options after its name too: `memory list --memory-dir X` as well
    # as `memory --memory-dir X list` (SUPPRESS: an option given before the action survives)
    for sub in actions.choices.values():
        _add_memory_options(sub, default=argparse.SUPPRESS)
    return parser


def parse_args(argv: Sequence[str]) -> CliOptions:
    argv = list(argv)
    at = _sub_command_at(argv)
    if at is not None:  # global options given before the sub-command are handed to it, after its own
        rest = argv[at + 1 :]
        end = rest.index("--") if "--" in rest else len(rest)
        return SUB_COMMANDS[argv[at]](rest[:end] + argv[:at] + rest[end:])
    ns = _parse(build_parser(), argv, tuple(SUB_COMMANDS))
    overrides = _run_overrides(ns, "nanohermes")
    output = _output_format(ns)
    if output != "text" and ns.prompt is None:
        raise UsageError(f"{'--json' if ns.json_output else '--output-format'} needs -p PROMPT")
    if ns.session is not None and ns.continue_last:
        raise UsageError("use either --session or --continue, not both")
    if ns.local and ns.base_url is not None:
        raise UsageError("--local starts its own endpoint; drop --base-url")
    return CliOptions(
        **_common(ns, "nanohermes"),
        session=ns.session,
        continue_last=ns.continue_last,
        prompt=ns.prompt,
        json_output=output == "json",
        stream_json=output == "stream-json",
        yes=ns.yes,
        local=ns.local,
        overrides=overrides,
    )


def _output_format(ns: argparse.Namespace) -> str:
    """`--output-format` (`--json` is its `json`); an unknown one names the closest."""
    given = ns.output_format
    if given is None:
        return "json" if ns.json_output else "text"
    if given not in OUTPUT_FORMATS:
        hint = _closest(given, OUTPUT_FORMATS, cutoff=0.6)
        raise UsageError(f"unknown output format '{given}': use text, json or stream-json{hint}")
    if ns.json_output and given != "json":
        raise UsageError(f"--json means --output-format json, not {given}; drop one of them")
    return str(given)


def _common(ns: argparse.Namespace, command: str) -> dict[str, Any]:
    """`--config`, `--verbose` and any `--mcp-config` as CliOptions fields. An empty FILE (`--config
    "$UNSET"`) is a mistake, not "none given": another file (or `.`) would be read than the one meant."""
    mcp_configs = getattr(ns, "mcp_config", None) or ()
    for flag, name in [("--config", ns.config), *(("--mcp-config", name) for name in mcp_configs)]:
        if name is not None and not name.strip():
            raise UsageError(f"{flag} needs a file path, not an empty one", command)
    config = Path(ns.config) if ns.config is not None else None
    return {"config": config, "verbose": ns.verbose, "mcp_config": tuple(map(Path, mcp_configs))}


def _sub_command_at(argv: list[str]) -> int | None:
    """Where a sub-command stands in `argv`, past global options and their values (or None)."""
    takes_value = {
        option: action.nargs != 0 for action in build_parser()._actions for option in action.option_strings
    }
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            return None
        if not token.startswith("-") or token == "-":
            return index if token in SUB_COMMANDS else None
        index += 2 if takes_value.get(token, False) else 1
    return None


def _parse_memory(argv: list[str]) -> CliOptions:
    ns = _parse(build_memory_parser(), argv)
    if ns.action is None:
        raise UsageError(f"memory needs an action: {MEMORY_USAGE}", "nanohermes memory")
    if not isinstance(ns.argument, str):  # nargs="+": words
        ns.argument = " ".join(ns.argument)
    memory = MemoryArgs(**{f.name: getattr(ns, f.name) for f in fields(MemoryArgs)})
    # `is not None`: an empty --memory-dir ("$UNSET") is refused by the settings, not read as the default
    overrides: dict[str, object] = {"memory_dir": ns.memory_dir} if ns.memory_dir is not None else {}
    return CliOptions(**_common(ns, "nanohermes memory"), memory=memory, overrides=overrides)


def _parse_undo(argv: list[str]) -> CliOptions:
    parser = _Parser(
        prog="nanohermes undo",
        description="Revert the file changes of an agent turn (the last one, or back to turn N).",
    )
    add = parser.add_argument
    add("--session", metavar="NAME|PATH", help="the session (default: the latest one in this workspace)")
    add("--list", dest="list_only", action="store_true", help="list the recorded turns and their files")
    add("--to", metavar="N", type=int, help="revert every turn from N on (back to before turn N)")
    add("--force", action="store_true", help="overwrite files that were edited after the turn")
    _add_common_options(add)
    ns = _parse(parser, argv)
    if ns.to is not None and ns.to < 1:
        raise UsageError("--to needs a turn number, 1 or more (undo --list shows them)", "nanohermes undo")
    if ns.list_only and (ns.to is not None or ns.force):
        raise UsageError("--list only lists; drop --to and --force", "nanohermes undo")
    undo = UndoArgs(ns.session, ns.list_only, ns.to, ns.force)
    return CliOptions(**_common(ns, "nanohermes undo"), undo=undo)


def _parse_acp(argv: list[str]) -> CliOptions:
    parser = _Parser(
        prog="nanohermes acp",
        description="Serve the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim).",
    )
    _add_run_options(
        parser.add_argument, "initial mode of new sessions: read-only | ask | auto (default: ask)"
    )
    _add_common_options(parser.add_argument, "log details to stderr")
    ns = _parse(parser, argv)
    return CliOptions(
        **_common(ns, "nanohermes acp"), acp=True, overrides=_run_overrides(ns, "nanohermes acp")
    )


def _parse_mcp(argv: list[str]) -> CliOptions:
    parser = _Parser(prog="nanohermes mcp", description="Inspect the configured MCP servers.")
    _add_common_options(parser.add_argument)
    parser.add_argument("--mcp-config", metavar="FILE", action="append", help="MCP servers as JSON")
    parser.add_argument(
        "action", nargs="?", choices=["list"], help="list: start the servers, show their state and tools"
    )
    ns = _parse(parser, argv)
    if ns.action is None:
        raise UsageError("mcp needs an action: list", "nanohermes mcp")
    return CliOptions(**_common(ns, "nanohermes mcp"), mcp_action=ns.action)


SUB_COMMANDS: dict[str, Callable[[list[str]], CliOptions]] = {
    "memory": _parse_memory,
    "undo": _parse_undo,
    "acp": _parse_acp,
    "mcp": _parse_mcp,
}
"""`nanohermes NAME …`: each sub-command parses the arguments around its name (global options included)."""
