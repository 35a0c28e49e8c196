"""``view_image`` and ``generate_image`` of ``builtins:files``.

``view_image`` gives the model an image file as an image (offered only to a vision-capable
model: ``files.vision_model``). ``generate_image`` asks an OpenAI-compatible images API
(``POST {image_base_url}/images/generations``, ``response_format: b64_json``) with the model
``plugins.builtins.files.image_model`` and the key in ``image_api_key_env``, and saves the
PNG atomically at a path that must not exist (offered only when ``image_model`` is set).
The images API is the user's own setting, like a search backend: it is not held to the web
address guard.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from typing import Any

from zpi_host.tools import ImageContent, ToolContext, ToolFailure, ToolResult

#: the largest image handed to the model
MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: the largest answer read from the images API (base64 of a few images)
MAX_ANSWER_BYTES = 64 * 1024 * 1024
_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
               (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))


def image_type(data: bytes) -> str | None:
    """The MIME type of an image by its first bytes (PNG, JPEG, GIF, WebP), else None."""
    for signature, kind in _SIGNATURES:
        if data.startswith(signature):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def view_image(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    from zpi_host.tools.read import read_target

    found = read_target(ctx, args["path"], "view_image", max_bytes=MAX_IMAGE_BYTES)
    assert found is not None
    kind = image_type(found.data)
    if kind is None:
        raise ToolFailure(f"{found.shown} is not a PNG, JPEG, GIF or WebP image",
                          {"path": str(found.path)})
    details = {"path": str(found.path), "mime_type": kind, "bytes": len(found.data)}
    return ToolResult((ImageContent.from_bytes(found.data, kind),), False, details)


async def generate_image(args: Mapping[str, Any], ctx: ToolContext,
                         config: Mapping[str, Any]) -> ToolResult:
    import httpx

    from zpi_host.fs import nofollow
    from zpi_host.tools.write import commit_one

    model = config["image_model"]
    if not model:
        raise ToolFailure("no image model is configured (setting "
                          "plugins.builtins.files.image_model)")
    raw = args["path"]
    try:
        real = ctx.target(raw).real
    except nofollow.UnusablePathError as exc:
        raise ToolFailure(str(exc), {"path": raw}) from None
    if os.path.lexists(real):
        raise ToolFailure(f"{raw} already exists; give a new path", {"path": raw})
    key_name = config["image_api_key_env"]
    key = (ctx.env or {}).get(key_name) or os.environ.get(key_name)
    if not key:
        raise ToolFailure(f"no key for the images API: set the variable {key_name} (setting "
                          "plugins.builtins.files.image_api_key_env)")
    body: dict[str, Any] = {"model": model, "prompt": args["prompt"], "n": 1,
                            "response_format": "b64_json"}
    if args.get("size"):
        body["size"] = args["size"]
    url = str(config["image_base_url"]).rstrip("/") + "/images/generations"
    try:
        async with httpx.AsyncClient(trust_env=False, timeout=300.0) as client, \
                client.stream("POST", url, json=body,
                              headers={"Authorization": f"Bearer {key}"}) as response:
            answer = bytearray()
            async for chunk in response.aiter_bytes():
                answer += chunk
                if len(answer) > MAX_ANSWER_BYTES:
                    raise ToolFailure(f"the images API at {url} answered more than "
                                      f"{MAX_ANSWER_BYTES} bytes")
    except httpx.HTTPError as exc:
        raise ToolFailure(f"the images API at {url} failed: {type(exc).__name__}: "
                          f"{exc}") from None
    data = _image_of(bytes(answer), response.status_code, url)
    commit_one(real, raw, data, None, ctx)
    kind = image_type(data) or "application/octet-stream"
    return ToolResult.text(f"Drew {raw} ({len(data)} bytes, {kind}) with {model}",
                           details={"path": str(real), "bytes": len(data), "model": model,
                                    "mime_type": kind})


def _image_of(answer: bytes, status: int, url: str) -> bytes:
    import json

    try:
        parsed = json.loads(answer)
    except ValueError:
        parsed = None
    if status != 200:
        message = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(message, dict):
            message = message.get("message")
        raise ToolFailure(f"the images API at {url} answered HTTP {status}"
                          + (f": {message}" if message else ""))
    items = parsed.get("data") if isinstance(parsed, dict) else None
    first = items[0] if isinstance(items, list) and items else None
    encoded = first.get("b64_json") if isinstance(first, dict) else None
    if not isinstance(encoded, str):
        raise ToolFailure(f"the images API at {url} gave no image (expected "
                          "data[0].b64_json)")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ToolFailure(f"the images API at {url} gave an image that is not base64"
                          ) from None
    if image_type(data) is None:
        raise ToolFailure(f"the images API at {url} gave data that is not an image")
    return data
