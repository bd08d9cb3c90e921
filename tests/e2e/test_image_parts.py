"""Image content parts in chat requests (OpenAI's {"type": "image_url"}): each is checked and
bounded before anything is decoded (payload size, images per request, media type, base64,
remote URLs only from domains the operator allows), and the default model, which has no vision
encoder, refuses images with a 400 that says how to serve one. The server stays healthy after
every refusal. The `openai` SDK sends the parts as users' programs do."""
import base64
import struct
import subprocess
import os
import zlib

import openai
import pytest

from conftest import httpx, LumenServer, MODEL_NAME


def png_bytes(width=2, height=2):
    """A real (tiny, grey) PNG file, made here so the test needs no image library."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def data_url(data, media="image/png"):
    return f"data:{media};base64,{base64.b64encode(data).decode()}"


def image_part(url):
    return {"type": "image_url", "image_url": {"url": url}}


def chat(server, *parts):
    return server.post("/v1/chat/completions", {
        "model": MODEL_NAME, "max_tokens": 2,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, *parts]}]})


def refused(server, expected, *parts):
    r = chat(server, *parts)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == "messages"
    assert expected in error["message"], error["message"]
    return error["message"]


def assert_healthy(server):
    r = server.post("/v1/chat/completions", {"model": MODEL_NAME, "max_tokens": 2,
                                              "messages": [{"role": "user", "content": "Hi"}]})
    assert r.status_code == 200, r.text
    assert httpx.get(server.base_url + "/health", timeout=10).status_code == 200


def test_image_parts_are_bounded_and_refused_without_a_vision_encoder():
    s = LumenServer("--max-image-bytes", "1K", "--max-images-per-request", "2", "--max-body-size", "64K",
                    "--allowed-media-domains", "images.example.org")
    try:
        good = image_part(data_url(png_bytes()))
        # Each bound, before the model is even asked.
        refused(s, "--max-image-bytes", image_part(data_url(b"\x00" * 2048)))
        refused(s, "at most 2 images", good, good, good)
        refused(s, "image/png, image/jpeg", image_part(data_url(png_bytes(), "image/svg+xml")))
        refused(s, "must be base64", image_part("data:image/png,rawbytes"))
        refused(s, "not valid base64", image_part("data:image/png;base64,iVBO!!!="))
        refused(s, "not valid base64", image_part("data:image/png;base64,abc"))
        refused(s, "--allowed-media-domains", image_part("https://elsewhere.example.com/cat.png"))
        refused(s, "--allowed-media-domains", image_part("https://images.example.org@evil.test/cat.png"))
        refused(s, "data: URL", image_part("file:///etc/passwd"))
        r = chat(s, {"type": "image_url", "image_url": {"url": data_url(png_bytes()), "detail": "huge"}})
        assert r.status_code == 400 and "detail" in r.json()["error"]["message"]
        # Well-formed images, on a model without a vision encoder: the 400 names the fix.
        refused(s, "no vision encoder; start lumen serve with --mmproj", good)
        refused(s, "no vision encoder", good, good)
        refused(s, "no vision encoder", image_part("https://cdn.images.example.org/cat.png"))
        # An image in an assistant turn is not OpenAI's shape either.
        r = s.post("/v1/chat/completions", {"model": MODEL_NAME, "messages": [
            {"role": "assistant", "content": [good]}, {"role": "user", "content": "hi"}]})
        assert r.status_code == 400, r.text
        # The official SDK's request gets the same answer.
        client = openai.OpenAI(base_url=s.base_url + "/v1", api_key="none")
        with pytest.raises(openai.BadRequestError, match="no vision encoder"):
            client.chat.completions.create(model=MODEL_NAME, max_tokens=2, messages=[
                {"role": "user", "content": [{"type": "text", "text": "Describe it."}, good]}])
        assert_healthy(s)
        # Nothing was encoded: the feature cache's counters are exported, and still zero.
        metrics = s.metrics()
        assert metrics["lumen_image_feature_cache_hits_total"] == 0
        assert metrics["lumen_image_feature_cache_misses_total"] == 0
    finally:
        assert s.stop() == 0


def test_a_file_that_is_no_projector_is_refused(tmp_path):
    projector = tmp_path / "mmproj.gguf"
    projector.write_bytes(b"GGUF")
    for command in (["serve", "--port", "0"], ["run", "-p", "hi", "-n", "1"]):
        r = subprocess.run([os.environ["LUMEN_BIN"], *command, "--mmproj", str(projector)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0
        assert str(projector) in r.stderr, r.stderr
