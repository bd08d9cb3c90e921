"""What generation returns, in vLLM's shape: RequestOutput holds a prompt's CompletionOutputs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import _lumen


@dataclass
class Logprob:
    """A token's log-probability, its rank among the alternatives (1 = most likely) when it is
    one of them (None otherwise), and its text (decoded_token: the token's own bytes as text, as
    the server's decoded_token; a token holding part of a character shows U+FFFD), as vLLM's
    Logprob."""

    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


# Per position: the chosen token and the alternatives asked for, keyed by token id.
SampleLogprobs = List[Dict[int, Logprob]]
PromptLogprobs = List[Optional[Dict[int, Logprob]]]


@dataclass
class EmbeddingOutput:
    """One input's embedding: its final hidden states pooled as the model's pooling_type says
    (the last token for a decoder without one) and L2-normalised, as /v1/embeddings returns."""

    embedding: List[float]


@dataclass
class EmbeddingRequestOutput:
    """What LLM.embed returns per input (vLLM's shape): the prompt, its tokens and the vector."""

    request_id: str
    prompt: Optional[str]
    prompt_token_ids: List[int]
    outputs: EmbeddingOutput
    finished: bool = True


@dataclass
class CompletionOutput:
    """One completion of a prompt.

    text: the generated text (stop strings and, by default, control tokens left out);
    token_ids: the generated tokens; logprobs: per token, {token_id: Logprob} for the chosen
    token and the alternatives, or None when SamplingParams.logprobs was None;
    finish_reason: "stop" (end of generation, a stop string or stop token), "length"
    (max_tokens or the context), "abort", or None while it is still generating (streaming);
    delta: the text added since the previous output of a stream (the whole text otherwise).
    """

    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float]
    logprobs: Optional[SampleLogprobs]
    finish_reason: Optional[str] = None
    stop_reason: Optional[str] = None
    delta: str = ""

    def finished(self) -> bool:
        """Whether the completion has ended."""
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    """A prompt and its completions (vLLM's RequestOutput).

    prompt: the prompt text (None when it was given as token ids); prompt_token_ids: the
    tokens the model saw; outputs: params.n completions; finished: whether all have ended.
    """

    request_id: str
    prompt: Optional[str]
    prompt_token_ids: List[int]
    outputs: List[CompletionOutput]
    finished: bool
    prompt_logprobs: Optional[PromptLogprobs] = None


# A token id's text (the engine's token_text).
Decode = Callable[[int], str]


def _entry(token: int, logprob: float, alternatives: Sequence[Tuple[int, float]], decode: Decode) -> Dict[int, Logprob]:
    """The chosen token's Logprob and the alternatives', by token id."""
    entry = {t: Logprob(lp, rank, decode(t)) for rank, (t, lp) in enumerate(alternatives, start=1)}
    if token not in entry:
        entry[token] = Logprob(logprob, None, decode(token))
    return entry


def sample_logprobs(chosen: Sequence[int], logprobs: Sequence[float],
                    top: Sequence[Sequence[Tuple[int, float]]], decode: Decode) -> SampleLogprobs:
    """Per generated token: the chosen token's Logprob and the alternatives', by token id."""
    return [_entry(token, logprob, alternatives, decode) for token, logprob, alternatives in zip(chosen, logprobs, top)]


def prompt_logprobs_of(rows: Sequence[Tuple[int, Optional[float], Sequence[Tuple[int, float]]]],
                       decode: Decode) -> PromptLogprobs:
    """Per prompt token (None for the first, which has no context): as sample_logprobs."""
    return [None if logprob is None else _entry(token, logprob, alternatives, decode)
            for token, logprob, alternatives in rows]


def completion_output(result: _lumen._Completion, want_logprobs: bool, decode: Decode) -> CompletionOutput:
    """A finished engine completion as vLLM's CompletionOutput."""
    logprobs = sample_logprobs(result.tokens, result.logprobs, result.top_logprobs, decode) if want_logprobs else None
    return CompletionOutput(
        index=result.index,
        text=result.text,
        token_ids=list(result.tokens),
        cumulative_logprob=sum(result.logprobs) if want_logprobs else None,
        logprobs=logprobs,
        finish_reason=result.finish_reason,
        delta=result.text,
    )
