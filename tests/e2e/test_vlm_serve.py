"""A vision-language model served end to end: `lumen serve -m TEXT --mmproj PROJECTOR` with the
tiny LLaVA (scripts/vlm_tiny_llava_text.py, scripts/vlm_tiny_mmproj.py: seeded weights, the
default model's vocabulary; its logits are held to transformers' in unit_vlm). The official
`openai` SDK sends a real PNG as a base64 image part and streams the answer; a second turn about
the same image is served from the visual-feature cache and the prefix cache; another image
shares neither; hostile images are 400s and the server stays healthy."""
import base64
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from conftest import httpx, LumenServer, model_path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import vlm_tiny_llava_text  # noqa: E402
import vlm_tiny_mmproj  # noqa: E402

IMAGE = REPO / "tests" / "golden" / "image" / "rgb_37x23.png"
OTHER = REPO / "tests" / "golden" / "image" / "palette_20x14.png"


def data_url(data, media="image/png"):
    return f"data:{media};base64,{base64.b64encode(data).decode()}"


def image_part(data, media="image/png"):
    return {"type": "image_url", "image_url": {"url": data_url(data, media)}}


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def huge_png():
    """A valid PNG header declaring 65535 x 65535 pixels (12 GiB of RGB) in under 100 bytes."""
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 65535, 65535, 8, 2, 0, 0, 0))
            + png_chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + png_chunk(b"IEND", b""))


def gif(frames, frame_side=1):
    """A GIF of 1x1 frames of palette index 0 (each frame's LZW data is clear, 0, end); a larger
    frame_side declares that size in the first frame's descriptor with the same tiny data."""
    out = b"GIF89a" + struct.pack("<HHBBB", 1, 1, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    for i in range(frames):
        side = frame_side if i == 0 else 1
        out += b"\x2c" + struct.pack("<HHHHB", 0, 0, side, side, 0) + b"\x02\x02\x44\x01\x00"
    return out + b"\x3b"


@pytest.fixture(scope="module")
def files():
    """The tiny LLaVA's two files, written (or found, checked by sha256) in the build tree."""
    if not model_path().exists():
        pytest.skip("the default model (its vocabulary) is missing")
    folder = Path(os.environ.get("LUMEN_GENERATED_DIR", "/tmp/lumen-generated"))
    return vlm_tiny_llava_text.golden_text_model(folder), vlm_tiny_mmproj.golden_mmproj("llava", folder)


def image_question(data, question="What is in the picture?"):
    return {"role": "user", "content": [{"type": "text", "text": question}, image_part(data)]}


def test_vlm_serve_images_in_text_out(files):
    text, projector = files
    s = LumenServer("--mmproj", projector, "--max-body-size", "1M", model=text, kv_cache_memory="64M",
                    max_model_len=512)
    try:
        client = s.client()
        model = client.models.list().data[0].id
        png = IMAGE.read_bytes()
        # Turn one: the SDK streams an answer about the image.
        first = [image_question(png)]
        stream = client.chat.completions.create(model=model, messages=first, max_tokens=8, temperature=0,
                                                stream=True, stream_options={"include_usage": True})
        pieces, usage = [], None
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
            usage = chunk.usage or usage
        answer = "".join(pieces)
        assert answer and usage.completion_tokens == 8
        # 16 image positions plus the chat text: the image took its place in the prompt.
        assert usage.prompt_tokens > 16
        m1 = s.metrics()
        assert m1["lumen_image_feature_cache_misses_total"] == 1
        assert m1["lumen_image_feature_cache_hits_total"] == 0
        # Turn two about the same image: encoded once (a feature-cache hit), and the first turn's
        # blocks, image included, come from the prefix cache.
        second = first + [{"role": "assistant", "content": answer}, {"role": "user", "content": "And the colours?"}]
        r = client.chat.completions.create(model=model, messages=second, max_tokens=4, temperature=0)
        assert r.choices[0].message.content is not None
        m2 = s.metrics()
        assert m2["lumen_image_feature_cache_hits_total"] == 1
        assert m2["lumen_image_feature_cache_misses_total"] == 1
        assert m2["lumen_prefix_cache_hits_total"] > m1["lumen_prefix_cache_hits_total"]
        # The same conversation with another image: encoded anew, and no prefix block past the
        # text before the image is shared (the blocks holding image positions are keyed on it).
        other = [image_question(OTHER.read_bytes())] + second[1:]
        client.chat.completions.create(model=model, messages=other, max_tokens=4, temperature=0)
        m3 = s.metrics()
        assert m3["lumen_image_feature_cache_misses_total"] == 2
        assert m3["lumen_image_feature_cache_hits_total"] == 1
        hits_same = m2["lumen_prefix_cache_hits_total"] - m1["lumen_prefix_cache_hits_total"]
        hits_other = m3["lumen_prefix_cache_hits_total"] - m2["lumen_prefix_cache_hits_total"]
        print("prefix-cache hits: same image", hits_same, "other image", hits_other)
        assert hits_other < hits_same, (hits_same, hits_other)
        # Greedy answers to the two images differ from their first token's distribution on: the
        # model saw the pixels (the logits themselves are compared with transformers in unit_vlm).
        a = client.chat.completions.create(model=model, messages=first, max_tokens=6, temperature=0, logprobs=True,
                                           top_logprobs=3)
        b = client.chat.completions.create(model=model, messages=[image_question(OTHER.read_bytes())], max_tokens=6,
                                           temperature=0, logprobs=True, top_logprobs=3)
        assert a.choices[0].logprobs.content[0].top_logprobs != b.choices[0].logprobs.content[0].top_logprobs

        # Hostile images: each a 400 naming what is wrong; nothing else changes.
        def refused(data, media, expected):
            r = s.post("/v1/chat/completions", {"model": model, "max_tokens": 2, "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}, image_part(data, media)]}]})
            assert r.status_code == 400, r.text
            assert expected in r.json()["error"]["message"].lower(), r.json()["error"]["message"]

        refused(png[: len(png) // 2], "image/png", "png")
        refused(huge_png(), "image/png", "65535")
        refused(gif(1, frame_side=60000), "image/gif", "60000")
        refused(b"\x89PNG\r\n\x1a\n", "image/png", "png")
        # A GIF of 10 000 frames costs its first frame only: answered.
        r = s.post("/v1/chat/completions", {"model": model, "max_tokens": 2, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}, image_part(gif(10000), "image/gif")]}]})
        assert r.status_code == 200, r.text
        # Healthy: a text request and the image again (its features still cached) are answered.
        r = s.post("/v1/chat/completions", {"model": model, "max_tokens": 2,
                                             "messages": [{"role": "user", "content": "Hi"}]})
        assert r.status_code == 200, r.text
        r = s.post("/v1/chat/completions", {"model": model, "max_tokens": 2, "messages": first})
        assert r.status_code == 200, r.text
        assert s.metrics()["lumen_image_feature_cache_hits_total"] >= 2
        assert httpx.get(s.base_url + "/health", timeout=10).status_code == 200
    finally:
        assert s.stop() == 0, "".join(s.log)


def test_run_with_an_image(files):
    """`lumen run --mmproj P --image F` describes an image from the command line."""
    text, projector = files
    r = subprocess.run([os.environ["LUMEN_BIN"], "run", "-m", str(text), "--mmproj", str(projector), "--image",
                        str(IMAGE), "-p", "What is this?", "-n", "4", "--temp", "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()
