"""The tools beyond the workspace's text files: `web_fetch`, `view_image`, `session_search`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.core.errors import ToolError
from nanohermes.sessions.search import format_hits, search_sessions
from nanohermes.tools.base import Tool, tool_from_function
from nanohermes.tools.images import view_image_tool
from nanohermes.tools.web import web_fetch_tool

if TYPE_CHECKING:
    from nanohermes.config.settings import Settings


def extra_tools(settings: Settings, workspace: Path) -> list[Tool]:
    return [
        web_fetch_tool(settings.web_fetch_private),
        view_image_tool(workspace, settings.model_vision),
        session_search_tool(settings.sessions_dir, workspace),
    ]


def session_search_tool(sessions_dir: Path, workspace: Path) -> Tool:
    def session_search(query: str) -> str:
        """Search earlier conversations in this workspace (what was asked, answered, decided)."""
        if not query.strip():
            raise ToolError("query is empty")
        hits, notes = search_sessions(sessions_dir, workspace, query)
        return format_hits(hits, notes, query)

    return tool_from_function(session_search)
