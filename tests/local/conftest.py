"""Opt-in gate for tests marked `local_model` (they start the real SmolLM2 server).

They run only with `pytest -m local_model` or NANOHERMES_LOCAL_TESTS=1, and are skipped with a reason
when the optional extra 'local' is not installed. Other tests in this folder always run.
"""

from __future__ import annotations

import os

import pytest

from nanohermes.core.errors import ConfigError
from nanohermes.local.server import find_model_file

OPT_IN_ENV = "NANOHERMES_LOCAL_TESTS"


def _skip_reason(config: pytest.Config) -> str | None:
    expr = str(config.getoption("markexpr", "") or "")
    asked = ("local_model" in expr and "not local_model" not in expr) or os.environ.get(OPT_IN_ENV) == "1"
    if not asked:
        return f"starts a real model server: opt in with 'pytest -m local_model' or {OPT_IN_ENV}=1"
    try:
        find_model_file()
    except ConfigError as err:
        return f"optional extra 'local' not installed ({err.one_line()})"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [item for item in items if item.get_closest_marker("local_model") is not None]
    if not marked:
        return
    reason = _skip_reason(config)
    if reason is None:
        return
    for item in marked:
        item.add_marker(pytest.mark.skip(reason=reason))
