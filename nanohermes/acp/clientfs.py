"""File tools that read and write through the editor (`fs/read_text_file`, `fs/write_text_file`).

When the client offers them, the agent sees the editor's unsaved buffers and its edits land in them
(the editor saves, tracks and can undo them). Paths are still confined to the session's workspace
before anything is asked of the client; everything else (listing, grep, shell) stays on disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.files import (
    EDIT_MAX_BYTES,
    READ_DEFAULT_LIMIT,
    READ_MAX_LINE_CHARS,
    FileTools,
    apply_edit,
)
from nanohermes.tools.paths import Workspace


class ClientFiles(Protocol):
    """The editor's file access for one session. Both raise ToolError (with the client's reason)."""

    def read_text(self, path: Path, cancel: object | None = None) -> str: ...

    def write_text(self, path: Path, content: str, cancel: object | None = None) -> None: ...


class ClientFileTools(FileTools):
    """FileTools whose reads and/or writes go through the client; the tool schemas are unchanged."""

    def __init__(
        self, workspace: Workspace, client: ClientFiles, *, reads: bool, writes: bool, max_chars: int = 20_000
    ) -> None:
        super().__init__(workspace, max_chars=max_chars)
        self._client, self._reads, self._writes = client, reads, writes

    def read_file(
        self, path: str, offset: int = 1, limit: int = READ_DEFAULT_LIMIT, *, ctx: CallContext
    ) -> str:
        if not self._reads or offset < 1 or limit < 1:  # on disk, or the same argument errors
            return super().read_file(path, offset, limit, ctx=ctx)
        resolved = self.workspace.resolve(path, ctx.granted)
        lines = self._client.read_text(resolved, ctx.cancel).splitlines()
        shown: list[str] = []
        used, last = 0, offset - 1
        budget = max(200, self.max_chars - 200)
        for number in range(offset, min(len(lines), offset + limit - 1) + 1):
            if used > budget:
                break
            text = lines[number - 1]
            if len(text) > READ_MAX_LINE_CHARS:
                text = text[:READ_MAX_LINE_CHARS] + f" [… line cut at {READ_MAX_LINE_CHARS} characters]"
            entry = f"{number:6}\t{text}"
            shown.append(entry)
            used += len(entry) + 1
            last = number
        return self._footer(shown, path, offset, last, len(lines), True)

    def write_file(self, path: str, content: str, *, ctx: CallContext) -> str:
        if not self._writes:
            return super().write_file(path, content, ctx=ctx)
        resolved = self.workspace.resolve(path, ctx.granted)
        existed = resolved.exists()
        self._client.write_text(resolved, content, ctx.cancel)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        verb = "Overwrote" if existed else "Created"
        unit = "line" if lines == 1 else "lines"
        size = len(content.encode("utf-8"))
        return f"{verb} {self.workspace.relative(resolved)} ({lines} {unit}, {size} bytes)"

    def edit_file(self, path: str, old: str, new: str, replace_all: bool = False, *, ctx: CallContext) -> str:
        if not (self._reads or self._writes):
            return super().edit_file(path, old, new, replace_all, ctx=ctx)
        resolved = self.workspace.resolve(path, ctx.granted)
        text = self._editable_text(resolved, path)
        updated, count = apply_edit(text, old, new, replace_all, path)
        if self._writes:
            self._client.write_text(resolved, updated, ctx.cancel)
        else:
            self.workspace.replace_into(resolved, updated.encode("utf-8"))
        where = f"{count} occurrences" if count > 1 else "1 occurrence"
        return f"Edited {self.workspace.relative(resolved)}: replaced {where}"

    def _editable_text(self, resolved: Path, path: str) -> str:
        if not self._reads:
            return super()._editable_text(resolved, path)
        text = self._client.read_text(resolved)
        if len(text) > EDIT_MAX_BYTES:
            raise ToolError(f"{path} is larger than {EDIT_MAX_BYTES // (1024 * 1024)} MB; not edited")
        return text

    def _current_text(self, resolved: Path) -> str | None:
        if not self._reads or not resolved.exists():
            return super()._current_text(resolved)
        try:
            return self._client.read_text(resolved)
        except ToolError:
            return super()._current_text(resolved)
