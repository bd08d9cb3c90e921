"""The model's tokenizer, with the names of Hugging Face's (vLLM's get_tokenizer())."""
from __future__ import annotations

from typing import List, Sequence

from . import _lumen


class Tokenizer:
    """Text to token ids and back with the model's own tokenizer (from LLM.get_tokenizer())."""

    def __init__(self, engine: _lumen._Engine) -> None:
        self._engine = engine

    def encode(self, text: str, add_special_tokens: bool = True, split_special_tokens: bool = False) -> List[int]:
        """The token ids of `text`. add_special_tokens: BOS (and EOS) as the model's vocabulary
        says. Text that spells a control token ("<|im_end|>") becomes that token, as Hugging
        Face's tokenizers do, unless split_special_tokens is True (then it is plain text)."""
        return self._engine.tokenize(text, add_special_tokens, not split_special_tokens)

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """The text of the tokens; skip_special_tokens leaves control tokens' text out. Raises
        ValueError for an id outside the vocabulary."""
        return self._engine.detokenize(list(token_ids), skip_special_tokens)

    @property
    def vocab_size(self) -> int:
        """Tokens in the vocabulary."""
        return self._engine.vocab_size
