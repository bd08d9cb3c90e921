"""Image parts of chat messages, as LLM.chat takes them: OpenAI's {"type": "image_url",
"image_url": {"url": "data:image/png;base64,..."}}, and for a program's own files
{"type": "image", "image": bytes or a path}. Each becomes the part Hugging Face's chat templates
take ({"type": "image"}: the template writes the model's image marker) and its file's bytes,
which the engine decodes within the same limits as the server (lumen serve's image parts)."""
from __future__ import annotations

import base64
import binascii
import os
from typing import Any, List, Mapping, Sequence, Tuple

from . import _lumen

# The server's default bounds (--max-image-bytes, --max-images-per-request): a bad argument is
# told before anything large is read or decoded.
MAX_IMAGE_BYTES = 20 << 20
MAX_IMAGES = 8
_MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")


def _data_url_bytes(url: str) -> bytes:
    head, comma, payload = url.partition(",")
    media = head[len("data:"):].split(";")[0].strip().lower()
    if not comma or not head.endswith(";base64"):
        raise _lumen.LumenError("an image data: URL must be base64 (data:image/png;base64,...)")
    if media not in _MEDIA_TYPES:
        raise _lumen.LumenError(f"an image data: URL's media type must be one of {', '.join(_MEDIA_TYPES)}, "
                                f"not '{media}'")
    if len(payload) > (MAX_IMAGE_BYTES + 2) // 3 * 4:
        raise _lumen.LumenError(f"an image is larger than {MAX_IMAGE_BYTES >> 20} MiB")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise _lumen.LumenError("an image data: URL's base64 is malformed") from None


def _file_bytes(image: Any) -> bytes:
    if isinstance(image, (bytes, bytearray, memoryview)):
        data = bytes(image)
    elif isinstance(image, (str, os.PathLike)):
        path = os.fspath(image)
        if os.path.isdir(path):
            raise _lumen.LumenError(f"the image file '{path}' is a directory")
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_IMAGE_BYTES + 1)
        except OSError as e:
            raise _lumen.LumenError(f"cannot read the image file '{path}': {e.strerror}") from None
    else:
        raise TypeError(f"an image part's 'image' must be bytes or a path, not {type(image).__name__}")
    if len(data) > MAX_IMAGE_BYTES:
        raise _lumen.LumenError(f"an image is larger than {MAX_IMAGE_BYTES >> 20} MiB")
    return data


def _part_bytes(part: Mapping[str, Any]) -> bytes:
    if part.get("type") == "image":
        return _file_bytes(part.get("image"))
    image_url = part.get("image_url")
    url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
    if not isinstance(url, str):
        raise _lumen.LumenError('an image_url part needs {"image_url": {"url": "data:image/...;base64,..."}}')
    if url.startswith("data:"):
        return _data_url_bytes(url)
    # The package reads no network: a remote image is the caller's to fetch (lumen serve can,
    # from the domains its operator allows).
    raise _lumen.LumenError("an image_url must be a data: URL (give a local file as {'type': 'image', 'image': PATH})")


def has_image_parts(messages: Any) -> bool:
    """Whether any message's content holds an image part (AsyncEngine then encodes off the loop)."""
    return isinstance(messages, (list, tuple)) and any(
        isinstance(m, Mapping) and isinstance(m.get("content"), list)
        and any(isinstance(p, Mapping) and p.get("type") in ("image_url", "image") for p in m["content"])
        for m in messages)


def split_images(messages: Sequence[Mapping[str, Any]]) -> Tuple[List[Mapping[str, Any]], List[bytes]]:
    """The messages with each image part replaced by {"type": "image"}, and the images' bytes in
    order. Messages without image parts come back as they were."""
    out: List[Mapping[str, Any]] = []
    images: List[bytes] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or not any(
                isinstance(p, Mapping) and p.get("type") in ("image_url", "image") for p in content):
            out.append(message)
            continue
        if message.get("role") != "user":
            raise _lumen.LumenError("only a user message may hold images")
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in ("image_url", "image"):
                if len(images) >= MAX_IMAGES:
                    raise _lumen.LumenError(f"at most {MAX_IMAGES} images in a conversation")
                images.append(_part_bytes(part))
                parts.append({"type": "image"})
            else:
                parts.append(part)
        out.append({**message, "content": parts})
    return out, images
