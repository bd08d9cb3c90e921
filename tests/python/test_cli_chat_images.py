"""`lumen chat --mmproj` with `/image PATH`: the tiny LLaVA (scripts/vlm_tiny_llava_text.py,
scripts/vlm_tiny_mmproj.py; its logits are held to transformers' in unit_vlm). A two-turn chat with
an image in each turn replies, greedy, exactly what `lumen run --image` replies to the same
conversation rendered by `lumen chat-template render` (an independent path: the raw prompt's
markers, not the chat's messages), so both images reach the model in the right places in every
turn. A missing, oversized, hostile or non-image file, and /image without --mmproj, are one line
on stderr each: the chat goes on and its replies are what they would have been without them."""
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from conftest import lumen_bin, real_model

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import vlm_tiny_llava_text  # noqa: E402
import vlm_tiny_mmproj  # noqa: E402

IMAGE = REPO / "tests" / "golden" / "image" / "rgb_37x23.png"
OTHER = REPO / "tests" / "golden" / "image" / "palette_20x14.png"
GREEDY = ["--temp", "0", "-n", "8", "-c", "1024"]


@pytest.fixture(scope="module")
def files():
    vocab = real_model("SmolLM2-135M-Instruct.Q4_1.gguf")
    folder = Path(os.environ.get("LUMEN_GENERATED_DIR", "/tmp/lumen-generated"))
    return vlm_tiny_llava_text.golden_text_model(folder, vocab), vlm_tiny_mmproj.golden_mmproj("llava", folder)


def chat(files, lines, mmproj=True):
    text, projector = files
    cmd = [lumen_bin(), "chat", "-m", str(text), *(["--mmproj", str(projector)] if mmproj else []), *GREEDY]
    r = subprocess.run(cmd, input="".join(line + "\n" for line in lines), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def run_rendered(files, messages, images, tmp_path):
    """`lumen run --image` on the conversation as the model's chat template renders it."""
    text, projector = files
    body = json.dumps({"messages": messages, "add_generation_prompt": True})
    rendered = subprocess.run([lumen_bin(), "chat-template", "render", "-m", str(text)], input=body,
                              capture_output=True, text=True, timeout=60, check=True).stdout
    assert rendered.count("<image>") == len(images)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(rendered, encoding="utf-8")
    cmd = [lumen_bin(), "run", "-m", str(text), "--mmproj", str(projector), "-f", str(prompt), *GREEDY]
    for image in images:
        cmd += ["--image", str(image)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("\n")
    return r.stdout[:-1]


def user(question, n_images):
    return {"role": "user", "content": [{"type": "image"}] * n_images + [{"type": "text", "text": question}]}


def test_chat_images_reach_the_model_as_run_image_places_them(files, tmp_path):
    r = chat(files, [f"/image {IMAGE}", "What is in the picture?", f"/image {OTHER}", "And in this one?"])
    assert r.stderr.count("(1 image attached to the next message)") == 2, r.stderr
    first = [user("What is in the picture?", 1)]
    reply1 = run_rendered(files, first, [IMAGE], tmp_path)
    second = first + [{"role": "assistant", "content": reply1}, user("And in this one?", 1)]
    reply2 = run_rendered(files, second, [IMAGE, OTHER], tmp_path)
    assert r.stdout == f"{reply1}\n{reply2}\n"
    # The image matters: the same question about the other picture is answered otherwise.
    assert chat(files, [f"/image {OTHER}", "What is in the picture?"]).stdout != f"{reply1}\n"


def huge_png():
    """A valid PNG header declaring 65535 x 65535 pixels (12 GiB of RGB) in under 100 bytes."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 65535, 65535, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


def test_bad_image_files_are_one_line_each_and_change_nothing(files, tmp_path):
    bomb = tmp_path / "huge.png"
    bomb.write_bytes(huge_png())
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(IMAGE.read_bytes()[:200])
    attempts = {
        f"/image {tmp_path / 'missing.png'}": "cannot read the image file",
        f"/image {tmp_path}": "is a directory",
        "/image /dev/zero": "larger than 20 MiB",
        f"/image {REPO / 'README.md'}": "format is not recognised",
        f"/image {bomb}": "65535 x 65535",
        f"/image {truncated}": "truncated.png:",
        "/image": "/image needs a file",
    }
    clean = chat(files, [f"/image {IMAGE}", "What is in the picture?"])
    r = chat(files, [*attempts, f"/image {IMAGE}", "What is in the picture?"])
    assert r.stdout == clean.stdout and r.stdout.strip()
    errors = [line for line in r.stderr.splitlines() if line.startswith("lumen chat: ")]
    assert len(errors) == len(attempts), r.stderr
    for error, expected in zip(errors, attempts.values()):
        assert expected in error, (expected, error)


def test_image_without_a_projector_is_refused_and_the_chat_goes_on(files):
    r = chat(files, [f"/image {IMAGE}", "Hello"], mmproj=False)
    assert "lumen chat: /image needs a vision-language model's projector file" in r.stderr
    assert r.stdout == chat(files, ["Hello"], mmproj=False).stdout and r.stdout.strip()


def test_a_conversation_holds_at_most_eight_images(files):
    r = chat(files, [f"/image {IMAGE}"] * 9 + ["/reset", f"/image {IMAGE}"])
    assert r.stderr.count("lumen chat: a conversation holds at most 8 images") == 1, r.stderr
    assert "(8 images attached to the next message)" in r.stderr
    assert r.stderr.rstrip().endswith("(1 image attached to the next message)"), r.stderr
