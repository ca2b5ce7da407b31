"""The core never loads a UI library; memory never loads HTTP. Checked in a fresh interpreter."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import nanohermes

# Everything below the front ends: it must run and be tested without a terminal library.
CORE_PACKAGES = ("core", "config", "memory", "llm", "tools", "checkpoints", "sessions", "agent", "local")
# Which layer each top-level package is in; a package may import only from layers at or below its own
# (the same layer is allowed where there is no cycle, checked separately).
LAYERS = {
    "core": 1,
    "config": 2,
    "memory": 2,
    "llm": 2,
    "tools": 2,
    "checkpoints": 2,
    "sessions": 2,
    "mcp": 2,
    "local": 2,
    "agent": 3,
    "ui": 4,
    "acp": 4,
    "app": 5,
    "__main__": 6,
    "__init__": 0,
}
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
    assert set(names) <= present
    modules = [f"nanohermes.{name}" for name in names]
    # Every module of these packages, not only their (mostly empty) __init__.
    for name in names:
        package_dir = PACKAGE_DIR / name
        if package_dir.is_dir():
            modules += [f"nanohermes.{name}.{info.name}" for info in pkgutil.iter_modules([str(package_dir)])]
    return modules


def test_core_modules_never_import_ui_libraries() -> None:
    modules = _existing(CORE_PACKAGES)
    assert "nanohermes.config.settings" in modules
    # httpx itself pulls in rich (for its optional `httpx` CLI) when rich is installed: not our import.
    loaded = _loaded_after_import(modules, baseline=("httpx",))
    leaked = sorted(name for name in loaded if name.split(".")[0] in UI_LIBRARIES)
    assert leaked == []


def test_memory_never_imports_http() -> None:
    modules = _existing(("memory",))
    loaded = _loaded_after_import(modules)
    assert not {"httpx", "httpcore", "rich", "prompt_toolkit"} & {name.split(".")[0] for name in loaded}


def test_version_imports_nothing_heavy() -> None:
    code = (
        "import sys, json\n"
        "from nanohermes.app.cli import main\n"
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


def _module_graph(package: str) -> dict[str, set[str]]:
    """Which module of one subpackage imports which other module of it (any import statement)."""
    folder = PACKAGE_DIR / package
    modules = {path.stem for path in folder.glob("*.py")}
    graph: dict[str, set[str]] = {module: set() for module in modules}
    prefix = f"nanohermes.{package}."
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                if node.module == f"nanohermes.{package}":
                    names = [prefix + alias.name for alias in node.names]
            for name in names:
                leaf = name.removeprefix(prefix).split(".")[0]
                if name.startswith(prefix) and leaf in modules and leaf != path.stem:
                    graph[path.stem].add(leaf)
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
    assert {"agent", "app", "ui", "memory", "core"} <= set(graph)
    assert _cycles(graph) == []


def test_packages_import_only_from_their_layer_or_below() -> None:
    graph = _import_graph()
    assert set(graph) == set(LAYERS), "a new top-level package needs a layer in LAYERS"
    upward = {
        f"{unit} -> {name}" for unit, names in graph.items() for name in names if LAYERS[name] > LAYERS[unit]
    }
    assert upward == set()


def test_no_import_cycles_between_modules_of_a_package() -> None:
    for package in sorted(p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").exists()):
        graph = _module_graph(package)
        assert _cycles(graph) == [], package


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
