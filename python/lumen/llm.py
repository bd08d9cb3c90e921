"""lumen.LLM: offline batch generation in vLLM's shape."""
from __future__ import annotations

import os
from typing import Any, List, Mapping, Optional, Sequence, Union

from . import _lumen
from ._arguments import check_keywords
from ._prompts import ChatMessage, Prompt, SinglePrompt, chat_prompt_with_images, is_conversation_batch, prompt_batch
from .outputs import EmbeddingOutput, EmbeddingRequestOutput, RequestOutput, completion_output, prompt_logprobs_of
from .sampling import SamplingParams
from .tokenizer import Tokenizer


def load_engine(owner: str, model: Union[str, "os.PathLike[str]"], engine_options: Mapping[str, Any]) -> _lumen._Engine:
    """The engine for LLM and AsyncEngine: option names checked, and `model` resolved as `lumen
    run -m` resolves it (a path, or a catalog name such as "smollm2" in the cache)."""
    check_keywords(owner, engine_options, _lumen._ENGINE_OPTION_NAMES)
    options = dict(engine_options)
    if isinstance(options.get("mmproj"), os.PathLike):
        options["mmproj"] = os.fspath(options["mmproj"])
    return _lumen._Engine(_lumen._resolve_model_path(os.fspath(model)), options)


class LLM:
    """A model loaded with Lumen's engine, for batch generation (vLLM's LLM).

    LLM(model=PATH_OR_NAME, **engine_options) loads a GGUF file: a path, or a catalog name as
    `lumen run -m` takes (LLM(model="smollm2") loads the model `lumen pull smollm2` put in the
    cache; one that is not there raises LumenError saying to run `lumen pull NAME`). Engine
    options take vLLM's names:
    max_num_seqs, max_num_batched_tokens, max_model_len, block_size, enable_prefix_caching,
    kv_cache_dtype ("f16", "bf16", "q8_0", "q4_0", "fp8_e4m3"), kv_cache_rotation (Lumen's: a
    quantized cache's heads Hadamard-rotated, default True), kv_cache_memory_bytes,
    gpu_memory_utilization, swap_space (GiB), scheduling_policy ("fcfs", "priority"),
    preemption_mode ("recompute", "swap"), speculative_config (a dict, as the CLI's
    --speculative-config JSON), seed (requests without their own seed draw from seed, seed + 1,
    ...; -1: random), and Lumen's max_itl_ms, threads, device ("cpu", "cuda:N"), chat_template (a
    built-in template's name), mmproj (a vision-language model's projector file, llama.cpp's mmproj
    GGUF: chat() then takes image parts). An unknown option raises UnknownArgumentError (a LumenError and a
    TypeError) with the closest name; a wrong type raises TypeError; a bad value or a file Lumen
    cannot load raises ValueError (lumen.LumenError).
    """

    def __init__(self, model: Union[str, "os.PathLike[str]"], **engine_options: Any) -> None:
        self._engine = load_engine("LLM", model, engine_options)

    def get_tokenizer(self) -> Tokenizer:
        """The model's tokenizer."""
        return Tokenizer(self._engine)

    def generate(self, prompts: Union[SinglePrompt, Sequence[SinglePrompt]],
                 sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
                 ) -> List[RequestOutput]:
        """Generates for every prompt in one run of the engine (continuous batching: a list of
        prompts is far faster than one call per prompt) and returns one RequestOutput per
        prompt, in order. prompts: a str, a list of token ids, {"prompt": ...} /
        {"prompt_token_ids": ...}, or a list of those. sampling_params: one SamplingParams for
        all, one per prompt, or None for SamplingParams(). The GIL is released while the engine
        runs; Ctrl-C aborts the batch (KeyboardInterrupt). Raises ValueError when a prompt or
        parameter is refused (nothing runs then), RuntimeError when the engine fails a request.
        """
        return self._run(prompt_batch(self._engine, prompts), sampling_params)

    def chat(self, messages: Union[Sequence[ChatMessage], Sequence[Sequence[ChatMessage]]],
             sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
             *, add_generation_prompt: bool = True,
             chat_template_kwargs: Optional[Mapping[str, Any]] = None) -> List[RequestOutput]:
        """Replies to a conversation, or a list of conversations, of OpenAI-style messages
        ([{"role": "user", "content": "Hi"}]) rendered by the model's chat template, as
        `lumen chat` and the server render them: text in the messages is always plain text,
        never control tokens. A role is one of system, developer, user, assistant and tool, as
        the server checks it (anything else raises LumenError naming it). chat_template_kwargs:
        extra template variables. Returns one RequestOutput per conversation (its prompt is the
        rendered text).

        With a projector (LLM(model, mmproj=...)) a user message's content may be a list of parts
        holding images: OpenAI's {"type": "image_url", "image_url": {"url":
        "data:image/png;base64,..."}} (PNG, JPEG, WebP, GIF; no remote URLs) or {"type": "image",
        "image": bytes or a path}, with {"type": "text", "text": ...} parts; at most 8 images a
        conversation, 20 MiB each. Each is decoded and encoded as `lumen serve` does (the same
        limits; an image met before is not encoded again) and stands where the chat template puts
        its marker; prompt_token_ids then hold each image's positions. A file the decoder refuses,
        or images without a projector, raise LumenError naming it; nothing runs then."""
        conversations = messages if is_conversation_batch(messages) else [messages]
        prompts, images = [], []
        for c in conversations:
            prompt, placed = chat_prompt_with_images(self._engine, c, add_generation_prompt,  # type: ignore[arg-type]
                                                     chat_template_kwargs)
            prompts.append(prompt)
            images.append(placed)
        return self._run(prompts, sampling_params, images if any(p is not None for p in images) else None)

    def embed(self, prompts: Union[SinglePrompt, Sequence[SinglePrompt]]) -> List[EmbeddingRequestOutput]:
        """The embedding of every prompt, in order, from one batched run of the engine (as
        /v1/embeddings and `lumen embed` compute it): the final hidden states pooled as the GGUF's
        pooling_type says (mean, cls or last; the last token for a decoder without one) and
        L2-normalised. prompts: as generate() takes them, but text is tokenized as the server
        tokenizes embedding inputs: BOS/EOS as the vocabulary says, control tokens spelled in it
        stay text. Raises ValueError (lumen.LumenError) for an empty prompt, a token outside the
        vocabulary or an input longer than max_model_len."""
        batch = prompt_batch(self._engine, prompts, parse_special=False)
        vectors = self._engine.embed([ids for _, ids in batch])
        return [EmbeddingRequestOutput(request_id=str(i), prompt=text, prompt_token_ids=ids,
                                       outputs=EmbeddingOutput(embedding=vector))
                for i, ((text, ids), vector) in enumerate(zip(batch, vectors))]

    def _run(self, prompts: List[Prompt],
             sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]],
             images: Optional[List[Optional[_lumen._PlacedImages]]] = None) -> List[RequestOutput]:
        if not prompts:
            return []
        params: Union[SamplingParams, List[SamplingParams]]
        if sampling_params is None:
            params = SamplingParams()
        elif isinstance(sampling_params, SamplingParams):
            params = sampling_params
        elif isinstance(sampling_params, (list, tuple)) and all(isinstance(p, SamplingParams) for p in sampling_params):
            params = list(sampling_params)
        else:
            raise TypeError("sampling_params must be a SamplingParams or a list of them")
        results = self._engine.generate([ids for _, ids in prompts], params, images or [])
        outputs = []
        for i, ((text, ids), completions) in enumerate(zip(prompts, results)):
            p = params[i] if isinstance(params, list) else params
            for c in completions:
                if c.finish_reason == "error":
                    raise RuntimeError(f"the engine failed on prompt {i}: {c.error}")
            first = completions[0]
            outputs.append(RequestOutput(
                request_id=str(first.request_id),
                prompt=text,
                prompt_token_ids=ids,
                outputs=[completion_output(c, p.logprobs is not None, self._engine.token_text) for c in completions],
                finished=True,
                prompt_logprobs=(prompt_logprobs_of(first.prompt_logprobs, self._engine.token_text)
                                 if p.prompt_logprobs is not None else None),
            ))
        return outputs
