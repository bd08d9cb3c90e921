"""Type stubs of lumen._lumen, the extension module (python/src). Use the lumen package."""
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

class LumenError(ValueError):
    """What Lumen refuses (a file, a prompt, a parameter), with Lumen's one-line message."""

class StructuredOutputsParams:
    """A constraint on the output: exactly one of json, json_object, regex, choice, grammar."""
    json: Optional[str]
    json_object: bool
    regex: Optional[str]
    choice: Optional[List[str]]
    grammar: Optional[str]
    disable_any_whitespace: bool
    def __init__(self, *, json: Union[str, Dict[str, Any], None] = None, json_object: bool = False,
                 regex: Optional[str] = None, choice: Optional[Sequence[str]] = None,
                 grammar: Optional[str] = None, disable_any_whitespace: bool = True) -> None: ...

class SamplingParams:
    """How tokens are chosen and when generation stops (vLLM's names; validated when made)."""
    n: int
    best_of: Optional[int]
    presence_penalty: float
    frequency_penalty: float
    repetition_penalty: float
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    typical_p: float
    penalty_last_n: int
    seed: Optional[int]
    stop: List[str]
    stop_token_ids: List[int]
    ignore_eos: bool
    max_tokens: int
    min_tokens: int
    logprobs: Optional[int]
    prompt_logprobs: Optional[int]
    skip_special_tokens: bool
    logit_bias: Dict[int, float]
    structured_outputs: Optional[StructuredOutputsParams]
    use_beam_search: bool
    length_penalty: float
    early_stopping: bool
    def __init__(self, *, n: int = 1, best_of: Optional[int] = None, presence_penalty: float = 0.0,
                 frequency_penalty: float = 0.0, repetition_penalty: float = 1.0, temperature: float = 1.0,
                 top_p: float = 1.0, top_k: int = 0, min_p: float = 0.0, typical_p: float = 1.0,
                 penalty_last_n: int = -1, seed: Optional[int] = None,
                 stop: Union[str, Sequence[str], None] = None, stop_token_ids: Optional[Sequence[int]] = None,
                 ignore_eos: bool = False, max_tokens: int = 16, min_tokens: int = 0,
                 logprobs: Optional[int] = None, prompt_logprobs: Optional[int] = None,
                 skip_special_tokens: bool = True, logit_bias: Optional[Dict[int, float]] = None,
                 structured_outputs: Optional[StructuredOutputsParams] = None, use_beam_search: bool = False,
                 length_penalty: float = 1.0, early_stopping: bool = False) -> None: ...

_Alternatives = List[Tuple[int, float]]
_PromptRow = Tuple[int, Optional[float], _Alternatives]
# (token_ids, text, logprobs, top_logprobs, prompt_logprobs, finished, finish_reason, error)
_Chunk = Tuple[List[int], str, List[float], List[_Alternatives], List[_PromptRow], bool, str, str]

class _Completion:
    request_id: int
    index: int
    tokens: List[int]
    text: str
    logprobs: List[float]
    top_logprobs: List[_Alternatives]
    prompt_logprobs: List[_PromptRow]
    finish_reason: str
    error: str

class _Request:
    id: int
    index: int
    def try_next(self) -> Optional[_Chunk]: ...

class _Embedding:
    def ready(self) -> bool: ...
    def get(self) -> List[List[float]]: ...

class _PlacedImages:
    def __len__(self) -> int: ...

class _Engine:
    max_model_len: int
    vocab_size: int
    architecture: str
    def __init__(self, model: str, options: Dict[str, Any]) -> None: ...
    def tokenize(self, text: str, add_special: bool, parse_special: bool) -> List[int]: ...
    def detokenize(self, tokens: Sequence[int], skip_special: bool) -> str: ...
    def token_text(self, token: int) -> str: ...
    def chat_prompt(self, messages_json: str, add_generation_prompt: bool, extra_context_json: str) -> List[int]: ...
    def place_images(self, prompt: Sequence[int], files: Sequence[bytes]) -> Tuple[List[int], _PlacedImages]: ...
    def submit(self, prompt: Sequence[int], params: SamplingParams,
               images: Optional[_PlacedImages] = ...) -> List[_Request]: ...
    def abort(self, request_id: int) -> None: ...
    def embed(self, inputs: Sequence[Sequence[int]]) -> List[List[float]]: ...
    def submit_embed(self, inputs: Sequence[Sequence[int]]) -> _Embedding: ...
    def step(self) -> bool: ...
    def wait_for_work(self, seconds: float) -> None: ...
    def has_unfinished(self) -> bool: ...
    def generate(self, prompts: Sequence[Sequence[int]],
                 params: Union[SamplingParams, Sequence[SamplingParams]],
                 images: Sequence[Optional[_PlacedImages]] = ...) -> List[List[_Completion]]: ...

_ENGINE_OPTION_NAMES: Tuple[str, ...]
def _resolve_model_path(given: str) -> str: ...
def _closest_name(typed: str, known: Sequence[str]) -> Optional[str]: ...
