"""`session/list`: the saved sessions (REPL ones too), newest first, a page at a time."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from acp import schema

from nanohermes.core.errors import SessionError

LIST_PAGE = 50


def session_infos(sessions_dir: Path, cwd: str | None, start: int) -> tuple[list[schema.SessionInfo], bool]:
    """Up to LIST_PAGE sessions after the first `start` (of `cwd` when given), and whether more are left."""
    from nanohermes.sessions.paths import recent_session_files

    infos: list[schema.SessionInfo] = []
    matched = 0
    for path, mtime in recent_session_files(sessions_dir):
        header = _header(path)
        if header is None or (cwd is not None and header.get("workspace") != cwd):
            continue
        matched += 1
        if matched <= start:
            continue
        if len(infos) == LIST_PAGE:
            return infos, True
        updated = datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")
        workspace, title = str(header.get("workspace") or ""), str(header.get("title") or "") or None
        infos.append(schema.SessionInfo(session_id=path.stem, cwd=workspace, title=title, updated_at=updated))
    return infos, False


def _header(path: Path) -> dict[str, Any] | None:
    """A session file's workspace and title: from its header (version 2), else from the whole file."""
    from nanohermes.sessions.store import SessionFile, read_header, title_of

    header = read_header(path)
    if header is not None:
        return header
    try:
        data = SessionFile(path).load()
    except SessionError:
        return None
    return {"workspace": data.workspace, "title": title_of(data.messages)}
