"""The resource omnimem://units/{id}/raw: a unit's raw bytes with their own content type."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import McpSession
from fastmcp.exceptions import McpError
from PIL import Image, ImageDraw

from omnimem import Memory
from omnimem.mcp import Caller


def png(seed: int) -> bytes:
    """A real PNG: stripes and a circle, different per seed."""
    image = Image.new("RGB", (96, 64), (seed * 40 % 256, 120, 200))
    draw = ImageDraw.Draw(image)
    for x in range(0, 96, 12):
        draw.rectangle((x, 0, x + 5, 63), fill=(255, (x * seed) % 256, 0))
    draw.ellipse((30 + seed, 10, 70 + seed, 50), fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_the_template_is_listed_with_a_description(owner: McpSession) -> None:
    [template] = owner.templates()
    assert template.uri_template == "omnimem://units/{id}/raw"
    assert "content type" in template.description


def test_an_image_comes_back_byte_for_byte_as_image_png(owner: McpSession, memory: Memory) -> None:
    data = png(1)
    unit = memory.add_image(data, caption="A whiteboard sketch of the garden plan", user_id="ivy").id
    got = owner.call("get", unit_id=unit)
    assert got["raw_uri"] == f"omnimem://units/{unit}/raw" and got["modality"] == "image"
    hit = owner.call("search", query="garden plan sketch", user_id="ivy")["hits"][0]
    assert hit["id"] == unit and hit["raw_uri"] == got["raw_uri"]

    [content] = owner.read(got["raw_uri"])
    assert content.mime_type == "image/png"
    assert base64.b64decode(content.blob) == data
    assert Image.open(io.BytesIO(base64.b64decode(content.blob))).size == (96, 64)


def test_a_long_text_comes_back_whole_as_text(owner: McpSession, memory: Memory) -> None:
    body = " ".join(f"Paragraph {i} of the travel diary describes the coast near Porto." for i in range(80))
    unit = owner.call("add", text=body, user_id="ivy")["id"]
    uri = owner.call("get", unit_id=unit)["raw_uri"]
    [content] = owner.read(uri)
    assert content.mime_type == "text/plain; charset=utf-8"
    assert base64.b64decode(content.blob).decode("utf-8") == body


def not_found(session: McpSession, uri: str) -> dict[str, Any]:
    with pytest.raises(McpError) as caught:
        session.read(uri)
    body: dict[str, Any] = json.loads(str(caught.value))
    return body


def test_no_raw_content_unknown_ids_and_other_users_are_not_found(owner: McpSession, memory: Memory,
                                                                  as_caller: Callable[..., Any]) -> None:
    short = owner.call("add", text="A short note", user_id="ivy")["id"]
    assert not_found(owner, f"omnimem://units/{short}/raw")["error"] == "NotFoundError"
    assert not_found(owner, "omnimem://units/does-not-exist/raw")["error"] == "NotFoundError"

    image = memory.add_image(png(2), caption="Ivy's passport scan", user_id="ivy").id
    with as_caller(Caller("key:jack-bot", "read", user_id="jack")) as jack:
        assert not_found(jack, f"omnimem://units/{image}/raw") == {
            "error": "NotFoundError", "message": f"no unit with id {image!r}"}
    with as_caller(Caller("key:ivy-bot", "read", user_id="ivy")) as ivy:
        [content] = ivy.read(f"omnimem://units/{image}/raw")
        assert content.mime_type == "image/png"
