"""`session/list`: the saved sessions (REPL ones too), newest first, a page at a time."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from acp import schema

from nanohermes.sessions.store import read_header

LIST_PAGE = 50


def session_list(sessions_dir: Path, cwd: str | None, start: int) -> schema.ListSessionsResponse:
    """Up to LIST_PAGE sessions after the first `start` (of `cwd` when given), and the cursor of the
    next page when more are left."""
    from nanohermes.sessions.paths import recent_session_files

    infos: list[schema.SessionInfo] = []
    matched = 0
    for path, mtime in recent_session_files(sessions_dir):
        header = read_header(path)
        if header is None or (cwd is not None and header.get("workspace") != cwd):
            continue
        matched += 1
        if matched <= start:
            continue
        if len(infos) == LIST_PAGE:
            return schema.ListSessionsResponse(sessions=infos, next_cursor=str(start + LIST_PAGE))
        updated = datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")
        workspace, title = str(header.get("workspace") or ""), str(header.get("title") or "") or None
        infos.append(schema.SessionInfo(session_id=path.stem, cwd=workspace, title=title, updated_at=updated))
    return schema.ListSessionsResponse(sessions=infos)
