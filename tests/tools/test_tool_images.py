"""Images: the kind from the first bytes, the size cap, workspace confinement, `@path` in a message."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ToolError
from nanohermes.core.types import Shown
from nanohermes.tools.base import CallContext
from nanohermes.tools.images import IMAGE_MAX_BYTES, attached_images, image_kind, load_image, view_image_tool
from nanohermes.tools.paths import Workspace

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (PNG, "png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "jpeg"),
        (b"GIF89a\x01\x00", "gif"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "webp"),
        (b"not an image at all", None),
        (b"RIFF\x10\x00\x00\x00WAVEfmt ", None),
    ],
)
def test_the_kind_comes_from_the_first_bytes(head: bytes, kind: str | None) -> None:
    assert image_kind(head[:12]) == kind


def test_an_image_becomes_a_data_url_of_its_real_kind(workspace: Path) -> None:
    (workspace / "shot.jpg").write_bytes(PNG)  # the name says jpeg, the bytes png
    url = load_image(Workspace(workspace), "shot.jpg")
    assert url == "data:image/png;base64," + base64.b64encode(PNG).decode()


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("fake.png", b"just text, named .png", "fake.png is not a PNG, JPEG, GIF or WebP image"),
        ("missing.png", None, "no such file or directory"),
    ],
)
def test_what_is_not_an_image_is_refused(
    workspace: Path, name: str, content: bytes | None, says: str
) -> None:
    if content is not None:
        (workspace / name).write_bytes(content)
    with pytest.raises(ToolError, match=says):
        load_image(Workspace(workspace), name)


def test_a_50_mb_image_is_refused_in_one_line_without_reading_it(workspace: Path) -> None:
    big = workspace / "big.png"
    with big.open("wb") as handle:
        handle.write(PNG)
        handle.truncate(50 * 1024 * 1024)  # sparse: nothing to read if it were read
    with pytest.raises(ToolError) as caught:
        load_image(Workspace(workspace), "big.png")
    assert str(caught.value) == f"big.png is 50.0 MB, over the {IMAGE_MAX_BYTES // 2**20} MB limit"


def test_a_path_outside_the_workspace_is_refused(workspace: Path, outside: Path) -> None:
    (outside / "x.png").write_bytes(PNG)
    (workspace / "link.png").symlink_to(outside / "x.png")
    for path in (str(outside / "x.png"), "../outside/x.png", "link.png"):
        with pytest.raises(ToolError, match="outside the workspace"):
            load_image(Workspace(workspace), path)


def test_at_paths_in_a_message_attach_images_or_say_why_not(workspace: Path) -> None:
    (workspace / "a.png").write_bytes(PNG)
    (workspace / "notes.txt").write_text("@ words")
    text = "compare @a.png, and @a.png again; see @notes.txt and mail me@x.png or @gone.webp."
    images, notes = attached_images(text, workspace, vision=True)
    assert images == [load_image(Workspace(workspace), "a.png")]  # once, the trailing comma not part of it
    assert notes == ["@gone.webp not sent: " + str(_error(workspace, "gone.webp"))]
    images, notes = attached_images(text, workspace, vision=False)
    assert images == []
    assert notes == [
        f"@{name} not sent: the model is not set up to see images (model_vision = false)"
        for name in ("a.png", "gone.webp")
    ]


def _error(workspace: Path, path: str) -> ToolError:
    with pytest.raises(ToolError) as caught:
        load_image(Workspace(workspace), path)
    return caught.value


def test_view_image_shows_the_image_or_refuses_without_vision(workspace: Path) -> None:
    (workspace / "a.gif").write_bytes(b"GIF89a" + b"\x00" * 20)
    context = CallContext(CancelToken())
    shown = view_image_tool(workspace, vision=True).func(path="a.gif", ctx=context)
    assert isinstance(shown, Shown)
    assert shown.text == "a.gif: the image follows"
    assert shown.images[0].startswith("data:image/gif;base64,")
    with pytest.raises(ToolError, match="model_vision = false"):
        view_image_tool(workspace, vision=False).func(path="a.gif", ctx=context)
    assert view_image_tool(workspace, vision=True).path_arg == "path"
