"""File tools that read the editor's unsaved buffers and write into them (the editor can undo it).
Paths are still confined to the workspace; listing, grep and the shell stay on disk."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext
from nanohermes.tools.files import EDIT_MAX_BYTES, READ_DEFAULT_LIMIT, READ_MAX_LINE_CHARS, FileTools
from nanohermes.tools.paths import Workspace

if TYPE_CHECKING:
    from nanohermes.acp.session import AcpSession


def client_file_tools(
    root: Path, max_chars: int, client: AcpSession, *, reads: bool, writes: bool
) -> FileTools:
    workspace = EditorWorkspace(root, client) if writes else Workspace(root)
    return ClientReadTools(workspace, client, max_chars) if reads else FileTools(workspace, max_chars)


class EditorWorkspace(Workspace):
    """A workspace whose files are written (write_file, edit_file) into the editor's buffers."""

    def __init__(self, root: Path, client: AcpSession) -> None:
        super().__init__(root)
        self._client = client

    def replace_into(self, resolved: Path, data: bytes) -> None:
        self._client.write_text(resolved, data.decode("utf-8"))


class ClientReadTools(FileTools):
    """FileTools reading the editor's buffers: read_file, and the text an edit or its diff starts from."""

    def __init__(self, workspace: Workspace, client: AcpSession, max_chars: int) -> None:
        super().__init__(workspace, max_chars=max_chars)
        self._client = client

    def read_file(
        self, path: str, offset: int = 1, limit: int = READ_DEFAULT_LIMIT, *, ctx: CallContext
    ) -> str:
        if offset < 1 or limit < 1:  # the same argument errors
            return super().read_file(path, offset, limit, ctx=ctx)
        resolved = self.workspace.resolve(path, ctx.granted)
        lines = self._client.read_text(resolved, ctx.cancel).splitlines()
        shown: list[str] = []
        used, budget = 0, max(200, self.max_chars - 200)
        for number, text in enumerate(lines[offset - 1 : offset - 1 + limit], offset):
            if used > budget:
                break
            if len(text) > READ_MAX_LINE_CHARS:
                text = text[:READ_MAX_LINE_CHARS] + f" [… line cut at {READ_MAX_LINE_CHARS} characters]"
            shown.append(f"{number:6}\t{text}")
            used += len(shown[-1]) + 1
        return self._footer(shown, path, offset, offset - 1 + len(shown), len(lines), True)

    def _editable_text(self, resolved: Path, path: str) -> str:
        text = self._client.read_text(resolved)
        if len(text) > EDIT_MAX_BYTES:
            raise ToolError(f"{path} is larger than {EDIT_MAX_BYTES // (1024 * 1024)} MB; not edited")
        return text

    def _current_text(self, resolved: Path) -> str | None:
        if not resolved.exists():
            return super()._current_text(resolved)
        try:
            return self._client.read_text(resolved)
        except ToolError:
            return super()._current_text(resolved)
