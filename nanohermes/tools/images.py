"""Images for a model that can see (`model_vision`): `@shot.png` in a user message and `view_image` send
a workspace file as a data URL, when its first bytes (not its name) say PNG, JPEG, GIF or WebP."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from nanohermes.core.errors import ToolError
from nanohermes.core.types import Shown
from nanohermes.tools.base import CallContext, Tool, tool_from_function
from nanohermes.tools.paths import Workspace

IMAGE_MAX_BYTES = 5 * 1024 * 1024
SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
NO_VISION = "the model is not set up to see images (model_vision = false)"
_TRAILING = ".,;:!?)]}'\""
_MAGIC = {b"\x89PNG\r\n\x1a\n": "png", b"\xff\xd8\xff": "jpeg", b"GIF87a": "gif", b"GIF89a": "gif"}


def image_kind(head: bytes) -> str | None:
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return next((kind for magic, kind in _MAGIC.items() if head.startswith(magic)), None)


def load_image(workspace: Workspace, path: str, granted: frozenset[Path] = frozenset()) -> str:
    with os.fdopen(workspace.open_file(workspace.resolve(path, granted)), "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > IMAGE_MAX_BYTES:
            raise ToolError(f"{path} is {size / 2**20:.1f} MB, over the {IMAGE_MAX_BYTES // 2**20} MB limit")
        data = handle.read(IMAGE_MAX_BYTES + 1)
    kind = image_kind(data[:12])
    if kind is None or len(data) > IMAGE_MAX_BYTES:
        raise ToolError(f"{path} is not a PNG, JPEG, GIF or WebP image")
    return f"data:image/{kind};base64,{base64.b64encode(data).decode('ascii')}"


def attached_images(text: str, workspace: Path, vision: bool) -> tuple[list[str], list[str]]:
    """The images `@path` words of a user message name, and a note for each that is not sent."""
    images: list[str] = []
    notes: list[str] = []
    named = dict.fromkeys(word[1:].rstrip(_TRAILING) for word in text.split() if word.startswith("@"))
    for path in (p for p in named if p.lower().endswith(SUFFIXES)):
        try:
            if not vision:
                raise ToolError(NO_VISION)
            images.append(load_image(Workspace(workspace), path))
        except ToolError as err:
            notes.append(f"@{path} not sent: {err}")
    return images, notes


def view_image_tool(workspace: Path, vision: bool) -> Tool:
    root = Workspace(workspace)

    def view_image(path: str, ctx: CallContext) -> Shown:
        """Look at a png, jpeg, gif or webp image in the workspace."""
        if not vision:
            raise ToolError(NO_VISION)
        return Shown(f"{path}: the image follows", (load_image(root, path, ctx.granted),))

    return tool_from_function(view_image)
