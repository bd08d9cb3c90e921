#!/usr/bin/env python3
"""One prompt with images through llama.cpp's libmtmd (llama-cpp-python's bindings) to the top
log-probabilities of every prompt position; run by make_vlm_mtmd_logits_golden.py under an
interpreter that has llama-cpp-python (CI has none).

    python mtmd_prompt_logprobs.py TEXT_GGUF MMPROJ_GGUF SPEC_JSON OUT_JSON

SPEC_JSON holds {"segments": [{"text": [ids]} | {"image": path}, ...], "top": k}, an image as an
.npy of height x width x 3 bytes (decoded by the caller with Pillow, as the transformers goldens'
processors decode, so JPEG decoders' rounding is not part of the comparison). Text ids are
decoded as given (the golden's ids, so both sides see the same tokens); each image is tokenized
by mtmd itself from its marker, so what mtmd writes around an image (Gemma 3's
"<start_of_image>", Idefics3's tile markers) and how it tiles are mtmd's own. Chunks are decoded
as mtmd_helper_decode_image_chunk does (one batch per image chunk, non-causal where
mtmd_decode_use_non_causal says so) but with logits requested at every position, which the
helper does not ask for. OUT_JSON gets the flattened ids (image positions as -1, with each image
chunk's span) and each position's top-k tokens and log-probabilities.
"""
import ctypes
import json
import sys

import llama_cpp
import llama_cpp.mtmd_cpp as mtmd
import numpy as np


def decode(lctx, n_vocab, batch_fill, n, pos0):
    """One llama_decode of n positions from pos0 with logits everywhere; returns their rows."""
    batch = batch_fill(n)
    for i in range(n):
        batch.pos[i] = pos0 + i
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = 0
        batch.logits[i] = 1
    batch.n_tokens = n
    rc = llama_cpp.llama_decode(lctx, batch)
    if rc != 0:
        raise SystemExit(f"llama_decode failed: {rc}")
    rows = [np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(lctx, i), shape=(n_vocab,)).astype(np.float64)
            for i in range(n)]
    llama_cpp.llama_batch_free(batch)
    return rows


def main() -> None:
    text_model, mmproj, spec_file, out_file = sys.argv[1:5]
    spec = json.load(open(spec_file))
    llama_cpp.llama_backend_init()
    model = llama_cpp.llama_model_load_from_file(text_model.encode(), llama_cpp.llama_model_default_params())
    assert model, text_model
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_ctx = cparams.n_batch = cparams.n_ubatch = 512
    cparams.n_threads = cparams.n_threads_batch = 2
    # f32 keys and values and no flash attention: llama.cpp's defaults (an f16 cache; on the CPU
    # flash attention, which rounds to f16 inside) move the tiny Llamas' rows by about 0.01 in
    # log-probability, as much as the tolerance the goldens hold Lumen to; its other attention
    # path at f32 is still llama.cpp's own computation.
    cparams.type_k = cparams.type_v = llama_cpp.GGML_TYPE_F32
    cparams.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    lctx = llama_cpp.llama_init_from_model(model, cparams)
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    width = llama_cpp.llama_model_n_embd(model)
    mparams = mtmd.mtmd_context_params_default()
    mparams.use_gpu = False
    mparams.n_threads = 2
    ctx = mtmd.mtmd_init_from_file(mmproj.encode(), model, mparams)
    assert ctx, mmproj
    marker = mtmd.mtmd_default_marker()

    ids, spans, rows, non_causal = [], [], [], []

    def text(tokens):
        if not tokens:
            return

        def fill(n):
            b = llama_cpp.llama_batch_init(n, 0, 1)
            for i, t in enumerate(tokens):
                b.token[i] = t
            return b
        rows.extend(decode(lctx, n_vocab, fill, len(tokens), len(ids)))
        ids.extend(tokens)

    for seg in spec["segments"]:
        if "text" in seg:
            text(seg["text"])
            continue
        rgb = np.ascontiguousarray(np.load(seg["image"]), dtype=np.uint8)
        h, w, _ = rgb.shape
        bitmap = mtmd.mtmd_bitmap_init(w, h, rgb.ctypes.data_as(ctypes.POINTER(ctypes.c_ubyte)))
        chunks = mtmd.mtmd_input_chunks_init()
        prompt = mtmd.mtmd_input_text()
        prompt.text, prompt.text_len, prompt.add_special, prompt.parse_special = marker, len(marker), False, True
        assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(prompt), (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap), 1) == 0
        for k in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, k)
            if mtmd.mtmd_input_chunk_get_type(chunk) == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t()
                p = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                text([p[i] for i in range(n.value)])
                continue
            n = mtmd.mtmd_input_chunk_get_n_tokens(chunk)
            assert mtmd.mtmd_input_chunk_get_n_pos(chunk) == n, "M-RoPE positions are not used here"
            assert mtmd.mtmd_encode_chunk(ctx, chunk) == 0
            embd = np.ctypeslib.as_array(mtmd.mtmd_get_output_embd(ctx), shape=(n * width,)).copy()

            def fill(m, embd=embd):
                b = llama_cpp.llama_batch_init(m, width, 1)
                ctypes.memmove(b.embd, embd.ctypes.data, embd.nbytes)
                return b
            causal = not mtmd.mtmd_decode_use_non_causal(ctx, chunk)
            non_causal.append(not causal)
            llama_cpp.llama_set_causal_attn(lctx, causal)
            rows.extend(decode(lctx, n_vocab, fill, n, len(ids)))
            llama_cpp.llama_set_causal_attn(lctx, True)
            spans.append([len(ids), n])
            ids.extend([-1] * n)
        mtmd.mtmd_input_chunks_free(chunks)
        mtmd.mtmd_bitmap_free(bitmap)

    top = spec["top"]
    out = {"ids": ids, "image_spans": spans, "image_chunks_non_causal": non_causal, "top_tokens": [],
           "top_logprobs": []}
    for r in rows:
        lp = r - (r.max() + np.log(np.exp(r - r.max()).sum()))
        order = np.argsort(-lp, kind="stable")[:top]
        out["top_tokens"].append([int(t) for t in order])
        out["top_logprobs"].append([round(float(lp[t]), 6) for t in order])
    json.dump(out, open(out_file, "w"))
    mtmd.mtmd_free(ctx)
    llama_cpp.llama_free(lctx)
    llama_cpp.llama_model_free(model)


if __name__ == "__main__":
    main()
