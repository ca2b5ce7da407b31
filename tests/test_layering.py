"""The core never loads a UI library; memory never loads HTTP. Checked in a fresh interpreter."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import nanohermes

CORE_PACKAGES = ("memory", "llm", "tools")
CORE_MODULES = (
    "types",
    "errors",
    "events",
    "cancel",
    "protocols",
    "settings",
    "compaction",
    "session",
    "prompts",
    "agent",
    "subagents",
    "localserver",
)
UI_LIBRARIES = ("rich", "prompt_toolkit")


def _loaded_after_import(modules: list[str]) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
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
    loaded = _loaded_after_import(modules)
    leaked = sorted(name for name in loaded if name.split(".")[0] in UI_LIBRARIES)
    assert leaked == []


def test_memory_never_imports_http() -> None:
    modules = _existing(("memory",))
    if not modules:
        return
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
