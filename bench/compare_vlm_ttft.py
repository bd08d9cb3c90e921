#!/usr/bin/env python3
"""Time to first token of a chat request with one image, Lumen against llama.cpp's mtmd, on the
same two files, threads and machine, interleaved in one run. Prints JSON.

    python bench/compare_vlm_ttft.py --python /path/to/llama-cpp-python/bin/python [--threads 2] [--rounds 4]
        [--family llava|idefics3]

The model is LLaVA-1.5's layout at the size of small real parts, with seeded random weights
(f16): a CLIP-B/16 tower at 224 x 224 pixels (196 image tokens; 11 of its 12 layers run, as
LLaVA reads the second to last) with the MLP projector, written by scripts/vlm_tiny_mmproj.py's
LLaVA writer, onto a language model of SmolLM2-135M's shape (30 layers, 576 wide) written by
scripts/vlm_tiny_llava_text.py (the default model's vocabulary plus "<image>"). Random weights
make meaningless text, which does not change the time.

--family idefics3: SmolVLM-256M's layout instead: its SigLIP tower shape (512 px tiles of 16 px
patches, 12 layers, 768 wide) and pixel shuffle by 4 (64 tokens a tile), written by
vlm_tiny_mmproj.py's Idefics3 writer with a longest edge of 1024 (SmolVLM's is 2048), so the
640 x 480 image is cut into 2 x 2 tiles plus the global one: five encoder passes a side, and the
tiles' row/column markers in the prompt; the same SmolLM2-shaped text model with SmolVLM's image
tokens (vlm_tiny_idefics3_text.py's vocabulary).

Each round sends a new 640 x 480 PNG (noise, seeded: no cache can help) and times, on each side,
everything from the file's bytes to the first sampled token: decoding, preprocessing, the vision
encoder, the prompt's prefill (the same chat text around the image) and one token.
  Lumen: `lumen serve --mmproj`, one non-streaming request with max_tokens 1 over HTTP on
         localhost (the HTTP round trip is included: under a millisecond).
  mtmd:  llama-cpp-python's libmtmd in-process: mtmd_helper_bitmap_init_from_buf,
         mtmd_tokenize, mtmd_helper_eval_chunks, then one greedy token from the last logits.
A second Lumen figure sends the same image again (its features cached, its prompt blocks in the
prefix cache): what a follow-up question about an image costs.
"""
import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import vlm_tiny_idefics3_text as idefics3_text  # noqa: E402
import vlm_tiny_llava_text as text  # noqa: E402
import vlm_tiny_mmproj as tiny  # noqa: E402

CLIP_B16 = dict(tiny.LLAVA, seed=1516, name="clip-b16-224-llava-random", text_hidden=576, vision={
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
    "image_size": 224, "patch_size": 16, "num_channels": 3, "projection_dim": 512, "layer_norm_eps": 1e-5,
    "hidden_act": "quick_gelu"})
SMOLLM2_SHAPE = dict(text.TEXT, seed=135, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                     num_attention_heads=9, num_key_value_heads=3, rope_theta=100000.0, max_position_embeddings=2048)
SMOLVLM_256M_TOWER = {
    "seed": 256, "name": "SmolVLM-256M-vision-random",
    "vision": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
               "image_size": 512, "patch_size": 16, "num_channels": 3, "layer_norm_eps": 1e-6},
    "text_hidden": 576, "scale_factor": 4, "longest_edge": 1024,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
}
MODELS = {
    "llava": "LLaVA-1.5 layout: CLIP-B/16 224px tower + MLP projector, SmolLM2-135M-shaped text model; "
             "random f16 weights",
    "idefics3": "SmolVLM-256M layout: SigLIP 512px tiles (12 layers, 768 wide) + pixel shuffle 4 + linear, "
                "longest edge 1024 (2 x 2 tiles + global for 640x480), SmolLM2-135M-shaped text model; "
                "random f16 weights",
}
QUESTION = "Describe this image in one sentence."

# Runs in the llama-cpp-python interpreter: reads PNG paths on stdin, one per line; prints one
# JSON line of seconds per image.
MTMD_SNIPPET = r"""
import ctypes, json, sys, time
import numpy as np
import llama_cpp, llama_cpp.mtmd_cpp as mtmd
text_model, mmproj, threads, prompt = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
quiet = llama_cpp.llama_log_callback(lambda *a: None)  # kept referenced: llama.cpp calls it later
llama_cpp.llama_log_set(quiet, None)
llama_cpp.llama_backend_init()
model = llama_cpp.llama_model_load_from_file(text_model.encode(), llama_cpp.llama_model_default_params())
cp = llama_cpp.llama_context_default_params()
cp.n_ctx, cp.n_batch, cp.n_threads, cp.n_threads_batch = 1024, 512, threads, threads
lctx = llama_cpp.llama_init_from_model(model, cp)
mp = mtmd.mtmd_context_params_default()
mp.use_gpu, mp.n_threads, mp.print_timings = False, threads, False
ctx = mtmd.mtmd_init_from_file(mmproj.encode(), model, mp)
assert ctx, "mtmd_init_from_file failed"
vocab = llama_cpp.llama_model_get_vocab(model)
n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
marker = mtmd.mtmd_default_marker()
prompt = prompt.replace("<image>", marker.decode() if isinstance(marker, bytes) else marker)
for line in sys.stdin:
    data = open(line.strip(), "rb").read()
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(lctx), True)
    t = time.perf_counter()
    buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    bitmap = mtmd.mtmd_helper_bitmap_init_from_buf(ctx, buf, len(data), False)
    assert bitmap, "mtmd could not read the image"
    chunks = mtmd.mtmd_input_chunks_init()
    inp = mtmd.mtmd_input_text()
    enc = prompt.encode()
    inp.text, inp.text_len, inp.add_special, inp.parse_special = enc, len(enc), False, True
    bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
    assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(inp), bitmaps, 1) == 0, "mtmd_tokenize failed"
    tokenized = time.perf_counter()
    n_past = llama_cpp.llama_pos(0)
    assert mtmd.mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 512, True, ctypes.byref(n_past)) == 0
    logits = llama_cpp.llama_get_logits_ith(lctx, -1)
    best = int(np.ctypeslib.as_array(logits, (n_vocab,)).argmax())
    seconds = time.perf_counter() - t
    n_tokens = mtmd.mtmd_helper_get_n_tokens(chunks)
    mtmd.mtmd_input_chunks_free(chunks)
    mtmd.mtmd_bitmap_free(bitmap)
    print(json.dumps({"s": seconds, "decode_preprocess_s": tokenized - t, "prompt_tokens": n_tokens, "token": best}),
          flush=True)
"""


def png(seed: int, width=640, height=480) -> bytes:
    """A PNG of seeded noise (smoothed a little, as photos are), written with zlib alone."""
    rng = np.random.RandomState(seed)
    pixels = rng.randint(0, 256, size=(height, width, 3)).astype(np.uint8)
    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))


def files(folder: Path, family: str) -> tuple:
    folder.mkdir(parents=True, exist_ok=True)
    if family == "idefics3":
        model, mmproj = folder / "bench-idefics3-smollm2-shape.gguf", folder / "bench-idefics3-smolvlm256m.mmproj.gguf"
        if not model.exists():
            text.write_text_model(model, text.DEFAULT_VOCAB, SMOLLM2_SHAPE, idefics3_text.ADDED, "bench-idefics3-text")
        if not mmproj.exists():
            tiny.write_idefics3(mmproj, SMOLVLM_256M_TOWER)
        return model, mmproj
    model, mmproj = folder / "bench-llava-smollm2-shape.gguf", folder / "bench-llava-clip-b16.mmproj.gguf"
    if not model.exists():
        text.write_text_model(model, text.DEFAULT_VOCAB, SMOLLM2_SHAPE)
    if not mmproj.exists():
        tiny.write_llava(mmproj, spec=CLIP_B16)
    return model, mmproj


def lumen_server(lumen: Path, model: Path, mmproj: Path, threads: int):
    proc = subprocess.Popen([str(lumen), "serve", "-m", str(model), "--mmproj", str(mmproj), "--port", "0",
                             "--threads", str(threads), "--kv-cache-memory", "256M", "--max-model-len", "1024",
                             "--max-body-size", "8M", "--served-model-name", "m"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    for line in proc.stderr:
        m = re.search(r"on http://[^:]+:(\d+)", line)
        if m:
            return proc, f"http://127.0.0.1:{m.group(1)}"
    raise SystemExit("lumen serve did not start")


def lumen_ttft(base: str, data: bytes) -> tuple:
    import base64
    import urllib.request
    body = {"model": "m", "max_tokens": 1, "temperature": 0, "messages": [{"role": "user", "content": [
        {"type": "text", "text": QUESTION},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(data).decode()}}]}]}
    request = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as r:
        answer = json.loads(r.read())
    return time.perf_counter() - t, answer["usage"]["prompt_tokens"]


def summary(xs: list) -> dict:
    return {"median_s": statistics.median(xs), "mean_s": statistics.fmean(xs),
            "stdev_s": statistics.stdev(xs) if len(xs) > 1 else 0.0, "samples": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--python", required=True, help="a Python with llama-cpp-python 0.3.x (it ships libmtmd)")
    ap.add_argument("--lumen", type=Path, default=REPO / "build/release/src/cli/lumen")
    ap.add_argument("--folder", type=Path, default=REPO / "build/release/tests/generated")
    ap.add_argument("--family", choices=sorted(MODELS), default="llava")
    args = ap.parse_args()
    model, mmproj = files(args.folder, args.family)
    images = []
    for i in range(args.rounds + 1):  # the first of each side is a warm-up
        path = args.folder / f"bench-noise-{i}.png"
        path.write_bytes(png(1000 + i))
        images.append(path)
    # The chat text both sides prefill around the image (the model's ChatML template).
    prompt = f"<|im_start|>user\n{QUESTION}<image><|im_end|>\n<|im_start|>assistant\n"
    peer = subprocess.Popen([args.python, "-c", MTMD_SNIPPET, str(model), str(mmproj), str(args.threads), prompt],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    server, base = lumen_server(args.lumen, model, mmproj, args.threads)
    lumen, again, mtmd, mtmd_pre, tokens = [], [], [], [], {}
    try:
        for i, path in enumerate(images):
            order = ("lumen", "mtmd") if i % 2 == 0 else ("mtmd", "lumen")
            for who in order:
                if who == "lumen":
                    s, n = lumen_ttft(base, path.read_bytes())
                    s2, _ = lumen_ttft(base, path.read_bytes())
                    tokens["lumen"] = n
                    if i > 0:
                        lumen.append(s)
                        again.append(s2)
                else:
                    peer.stdin.write(f"{path}\n")
                    peer.stdin.flush()
                    res = json.loads(peer.stdout.readline())
                    tokens["mtmd"] = res["prompt_tokens"]
                    if i > 0:
                        mtmd.append(res["s"])
                        mtmd_pre.append(res["decode_preprocess_s"])
    finally:
        server.terminate()
        server.wait(timeout=60)
        peer.stdin.close()
        peer.wait(timeout=60)
    result = {
        "model": MODELS[args.family],
        "threads": args.threads, "image": "640x480 PNG of noise, a new one each round",
        "prompt_tokens": tokens,
        "lumen_ttft": summary(lumen), "llama_cpp_mtmd_ttft": summary(mtmd),
        "llama_cpp_mtmd_decode_and_preprocess": summary(mtmd_pre),
        "lumen_same_image_again_ttft": summary(again),
        "lumen_over_mtmd_speed": statistics.median(mtmd) / statistics.median(lumen),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
