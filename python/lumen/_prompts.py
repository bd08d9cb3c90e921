"""Prompts as the engine takes them: text, token ids or a conversation, to (text, token ids).
Shared by LLM and AsyncEngine so both read prompts alike."""
from __future__ import annotations

import json
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from . import _lumen
from ._images import split_images

# vLLM's prompt forms: text, token ids, {"prompt": text} or {"prompt_token_ids": ids}.
SinglePrompt = Union[str, Sequence[int], Mapping[str, Any]]
Prompt = Tuple[Optional[str], List[int]]  # (the text, or None for token ids; the tokens)

ChatMessage = Mapping[str, Any]  # OpenAI's {"role": ..., "content": ...}


def _is_token_ids(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(t, int) and not isinstance(t, bool) for t in value)


def one_prompt(engine: _lumen._Engine, prompt: SinglePrompt, parse_special: bool = True) -> Prompt:
    """Text is tokenized as `lumen run` and the server's completions do: BOS as the model wants
    it, and text that spells a control token becomes it (as vLLM's tokenizer does) unless
    parse_special is False (embedding inputs, as the server reads them); give token ids to
    control exactly what the model sees."""
    if isinstance(prompt, str):
        return prompt, engine.tokenize(prompt, True, parse_special)
    if isinstance(prompt, Mapping):
        if "prompt_token_ids" in prompt:
            return one_prompt(engine, list(prompt["prompt_token_ids"]))
        if "prompt" in prompt:
            return one_prompt(engine, prompt["prompt"], parse_special)
        raise TypeError("a prompt dict needs 'prompt' (text) or 'prompt_token_ids'")
    if _is_token_ids(prompt) and len(prompt) > 0:
        return None, list(prompt)
    raise TypeError(f"a prompt is a str, a list of token ids or a dict, not {type(prompt).__name__}")


def prompt_batch(engine: _lumen._Engine, prompts: Union[SinglePrompt, Sequence[SinglePrompt]],
                 parse_special: bool = True) -> List[Prompt]:
    """One prompt or a list of them (a list of ints is one prompt of token ids)."""
    if isinstance(prompts, (str, Mapping)) or (_is_token_ids(prompts) and len(prompts) > 0):
        return [one_prompt(engine, prompts, parse_special)]  # type: ignore[arg-type]
    if not isinstance(prompts, (list, tuple)):
        raise TypeError(f"prompts must be a str, a list of token ids, or a list of those, not {type(prompts).__name__}")
    return [one_prompt(engine, p, parse_special) for p in prompts]


def chat_prompt_with_images(engine: _lumen._Engine, messages: Sequence[ChatMessage], add_generation_prompt: bool,
                            chat_template_kwargs: Optional[Mapping[str, Any]]
                            ) -> Tuple[Prompt, Optional[_lumen._PlacedImages]]:
    """A conversation through the model's chat template (Model::chat_prompt, as `lumen chat` and
    the server): the template's markers become control tokens, the messages' text never does. And
    the conversation's images (_images.py) encoded and placed where the
    template wrote their markers (None when it has none). The prompt's text is the template's,
    one marker per image; its token ids are what the model sees, each image's positions included."""
    if not isinstance(messages, (list, tuple)) or not all(isinstance(m, Mapping) for m in messages):
        raise TypeError("messages must be a list of {'role': ..., 'content': ...} dicts")
    template_messages, images = split_images(messages)
    extra = dict(chat_template_kwargs or {})
    ids = engine.chat_prompt(json.dumps(list(template_messages), ensure_ascii=False), add_generation_prompt,
                             json.dumps(extra, ensure_ascii=False))
    text = engine.detokenize(ids, False)
    if not images:
        return (text, ids), None
    ids, placed = engine.place_images(ids, images)
    return (text, ids), placed


def is_conversation_batch(messages: Any) -> bool:
    """Whether llm.chat got a list of conversations rather than one."""
    return isinstance(messages, (list, tuple)) and len(messages) > 0 and all(
        isinstance(m, (list, tuple)) for m in messages)
