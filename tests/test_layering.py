"""The core never loads a UI library; memory never loads HTTP. Checked in a fresh interpreter."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import nanohermes

CORE_PACKAGES = ("memory", "llm", "tools", "checkpoints")
CORE_MODULES = (
    "types",
    "errors",
    "events",
    "cancel",
    "protocols",
    "settings",
    "compaction",
    "session",
    "session_files",
    "prompts",
    "agent",
    "agent_config",
    "markers",
    "turns",
    "distiller",
    "autosave",
    "options",
    "subagents",
    "localserver",
    "localserver_watch",
    "fileio",
)
UI_LIBRARIES = ("rich", "prompt_toolkit")
PACKAGE_DIR = Path(nanohermes.__file__).parent


def _loaded_after_import(modules: list[str], baseline: tuple[str, ...] = ()) -> set[str]:
    """Modules loaded by importing `modules`, minus those the `baseline` imports load on their own."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(baseline)!r}:\n"
        "    importlib.import_module(name)\n"
        "before = set(sys.modules)\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(result.stdout))


def _existing(names: tuple[str, ...]) -> list[str]:
    present = {info.name for info in pkgutil.iter_modules(nanohermes.__path__)}
    return [f"nanohermes.{name}" for name in names if name in present]


def test_core_modules_never_import_ui_libraries() -> None:
    modules = _existing(CORE_MODULES + CORE_PACKAGES)
    assert "nanohermes.settings" in modules
    # httpx itself pulls in rich (for its optional `httpx` CLI) when rich is installed: not our import.
    loaded = _loaded_after_import(modules, baseline=("httpx",))
    leaked = sorted(name for name in loaded if name.split(".")[0] in UI_LIBRARIES)
    assert leaked == []


def test_memory_never_imports_http() -> None:
    modules = _existing(("memory",))
    assert modules == ["nanohermes.memory"]
    loaded = _loaded_after_import(modules)
    assert not {"httpx", "httpcore", "rich", "prompt_toolkit"} & {name.split(".")[0] for name in loaded}


def test_version_imports_nothing_heavy() -> None:
    code = (
        "import sys, json\n"
        "from nanohermes.cli import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = {name.split(".")[0] for name in json.loads(result.stdout.splitlines()[-1])}
    assert not loaded & {"pydantic", "pydantic_settings", "httpx", "rich", "prompt_toolkit"}


def test_only_ui_code_names_ui_libraries() -> None:
    offenders = []
    for path in PACKAGE_DIR.rglob("*.py"):
        if path.relative_to(PACKAGE_DIR).parts[0] == "ui":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in UI_LIBRARIES]
    assert offenders == []


def _import_graph() -> dict[str, set[str]]:
    """Which top-level unit of nanohermes (a module, or a whole subpackage) imports which, counting
    every import statement anywhere in the file — lazy ones in functions and TYPE_CHECKING ones too."""
    units = {path.relative_to(PACKAGE_DIR).parts[0].removesuffix(".py") for path in PACKAGE_DIR.rglob("*.py")}
    graph: dict[str, set[str]] = {unit: set() for unit in units}
    for path in PACKAGE_DIR.rglob("*.py"):
        unit = path.relative_to(PACKAGE_DIR).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                if node.module == "nanohermes":
                    names = [f"nanohermes.{alias.name}" for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "nanohermes" and len(parts) > 1 and parts[1] in units and parts[1] != unit:
                    graph[unit].add(parts[1])
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one unit (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycles_between_modules_and_packages() -> None:
    graph = _import_graph()
    assert {"agent", "cli", "ui", "memory", "options"} <= set(graph)
    assert _cycles(graph) == []


def test_front_ends_never_import_the_command_line_layer() -> None:
    graph = _import_graph()
    upward = {
        unit: graph[unit] & {"cli", "cliargs", "wiring", "agent_wiring", "acp_wiring"}
        for unit in graph
        if unit not in ("cli", "cliargs", "wiring", "agent_wiring", "acp_wiring", "__main__")
    }
    assert {unit: names for unit, names in upward.items() if names} == {}


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
