"""LLM(model, mmproj=...).chat with image parts, on the tiny LLaVA (scripts/vlm_tiny_llava_text.py,
scripts/vlm_tiny_mmproj.py; its logits are held to transformers' in unit_vlm). The greedy reply is
what `lumen run --image` gives for the rendered prompt (the CLI places the image from the raw
prompt's marker, a path of its own); a data: URL, bytes and a path are the same image; a batch
replies as each conversation alone; bad images are LumenErrors that leave the LLM as it was;
AsyncEngine.chat streams the same replies."""
import base64
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import lumen
from conftest import default_model, greedy

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))
import vlm_tiny_llava_text  # noqa: E402
import vlm_tiny_mmproj  # noqa: E402

IMAGE = REPO / "tests" / "golden" / "image" / "rgb_37x23.png"
OTHER = REPO / "tests" / "golden" / "image" / "palette_20x14.png"
OPTIONS = {"max_model_len": 512, "kv_cache_memory_bytes": 64 << 20}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import os
    folder = Path(os.environ.get("LUMEN_GENERATED_DIR") or tmp_path_factory.mktemp("vlm"))
    return (vlm_tiny_llava_text.golden_text_model(folder, default_model()),
            vlm_tiny_mmproj.golden_mmproj("llava", folder))


@pytest.fixture(scope="module")
def vlm(files):
    text, projector = files
    return lumen.LLM(model=text, mmproj=projector, **OPTIONS)


def data_url(path, media="image/png"):
    return f"data:{media};base64,{base64.b64encode(Path(path).read_bytes()).decode()}"


def ask(image_part, question="What is in the picture?"):
    return [{"role": "user", "content": [image_part, {"type": "text", "text": question}]}]


def url_part(path):
    return {"type": "image_url", "image_url": {"url": data_url(path)}}


def test_an_image_reply_is_what_lumen_run_image_gives(vlm, files, lumen_bin, tmp_path):
    [out] = vlm.chat(ask(url_part(IMAGE)), greedy(8))
    assert out.prompt.count("<image>") == 1  # the template's text, one marker for the image
    assert out.prompt_token_ids.count(vlm_tiny_llava_text.IMAGE_TOKEN_ID) > 1  # the image's positions
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(out.prompt, encoding="utf-8")
    text, projector = files
    run = subprocess.run([lumen_bin, "run", "-m", str(text), "--mmproj", str(projector), "--image", str(IMAGE),
                          "-f", str(prompt), "--temp", "0", "-n", "8"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert out.outputs[0].text == run.stdout.rstrip("\n") and out.outputs[0].text
    # The image matters: another picture, the same question, another answer.
    [other] = vlm.chat(ask(url_part(OTHER)), greedy(8))
    assert other.outputs[0].text != out.outputs[0].text


def test_a_data_url_bytes_and_a_path_are_the_same_image(vlm):
    forms = [url_part(IMAGE), {"type": "image", "image": IMAGE.read_bytes()}, {"type": "image", "image": IMAGE},
             {"type": "image", "image": str(IMAGE)}]
    outs = [vlm.chat(ask(part), greedy(8))[0] for part in forms]
    assert len({(o.outputs[0].text, tuple(o.prompt_token_ids)) for o in outs}) == 1


def test_a_batch_replies_as_each_conversation_alone(vlm):
    conversations = [ask(url_part(IMAGE)), [{"role": "user", "content": "No picture here."}],
                     [{"role": "user", "content": [url_part(IMAGE), url_part(OTHER),
                                                   {"type": "text", "text": "Which differs?"}]}]]
    batch = vlm.chat(conversations, greedy(8))
    alone = [vlm.chat(c, greedy(8))[0] for c in conversations]
    assert [o.outputs[0].text for o in batch] == [o.outputs[0].text for o in alone]
    assert batch[2].prompt.count("<image>") == 2


def huge_png():
    """A valid PNG header declaring 65535 x 65535 pixels (12 GiB of RGB) in under 100 bytes."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 65535, 65535, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("part, message", [
    ({"type": "image", "image": huge_png()}, "65535 x 65535"),
    ({"type": "image", "image": IMAGE.read_bytes()[:200]}, "image 0:"),
    ({"type": "image", "image": b"not an image"}, "not recognised"),
    ({"type": "image", "image": "/nonexistent/picture.png"}, "cannot read the image file"),
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@@"}}, "base64 is malformed"),
    ({"type": "image_url", "image_url": {"url": "data:text/plain;base64,aGk="}}, "media type"),
    ({"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}, "must be a data: URL"),
    ({"type": "image", "image": b"\x00" * ((20 << 20) + 1)}, "larger than 20 MiB"),
])
def test_a_bad_image_is_a_lumen_error_and_changes_nothing(vlm, part, message):
    [before] = vlm.chat(ask(url_part(IMAGE)), greedy(8))
    with pytest.raises(lumen.LumenError, match=message):
        vlm.chat([ask(url_part(IMAGE)), ask(part)], greedy(8))
    [after] = vlm.chat(ask(url_part(IMAGE)), greedy(8))
    assert after.outputs[0].text == before.outputs[0].text


def test_images_need_a_projector_and_a_user_message(files, vlm):
    text, _ = files
    plain = lumen.LLM(model=text, **OPTIONS)
    with pytest.raises(lumen.LumenError, match="no vision encoder.*mmproj"):
        plain.chat(ask(url_part(IMAGE)), greedy(1))
    with pytest.raises(lumen.LumenError, match="only a user message"):
        vlm.chat([{"role": "assistant", "content": [url_part(IMAGE)]}], greedy(1))
    with pytest.raises(lumen.LumenError, match="at most 8 images"):
        vlm.chat(ask({"type": "image", "image": IMAGE}) * 9, greedy(1))


def test_async_engine_chat_streams_the_same_image_reply(files, vlm):
    import asyncio
    text, projector = files
    [want] = vlm.chat(ask(url_part(IMAGE)), greedy(8))
    engine = lumen.AsyncEngine(model=text, mmproj=projector, **OPTIONS)

    async def last(messages):
        out = None
        async for out in engine.chat(messages, greedy(8)):
            pass
        return out

    async def both():
        # Two at once: the images are encoded off the loop, and the streams share the engine.
        return await asyncio.gather(last(ask(url_part(IMAGE))), last(ask(url_part(OTHER))))

    try:
        got, other = asyncio.run(both())
        assert got.outputs[0].text == want.outputs[0].text and got.prompt_token_ids == want.prompt_token_ids
        assert other.outputs[0].text == vlm.chat(ask(url_part(OTHER)), greedy(8))[0].outputs[0].text
        with pytest.raises(lumen.LumenError, match="65535 x 65535"):
            asyncio.run(last(ask({"type": "image", "image": huge_png()})))
    finally:
        engine.shutdown()
