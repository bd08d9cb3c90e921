"""Lumen from Python: an LLM inference engine for GGUF models with vLLM's API.

    import lumen
    llm = lumen.LLM(model="SmolLM2-135M-Instruct.Q4_1.gguf")
    outputs = llm.generate(["The capital of France is"], lumen.SamplingParams(temperature=0, max_tokens=16))
    print(outputs[0].outputs[0].text)

LLM: batch generation, chat and embeddings (LLM.embed). AsyncEngine: streaming for asyncio. SamplingParams,
StructuredOutputsParams: what to generate. RequestOutput, CompletionOutput, Logprob: what comes
back. Tokenizer: from LLM.get_tokenizer(). Errors: lumen.LumenError (a ValueError) for anything
Lumen refuses (a file, a prompt, a parameter), with Lumen's message; lumen.UnknownArgumentError
(a LumenError and a TypeError) for a misspelled keyword, with the name meant; TypeError for a
wrong type; RuntimeError when the engine fails a request.
"""
from ._arguments import UnknownArgumentError
from ._lumen import LumenError, StructuredOutputsParams
from .async_engine import AsyncEngine
from .llm import LLM
from .outputs import CompletionOutput, EmbeddingOutput, EmbeddingRequestOutput, Logprob, RequestOutput
from .sampling import SamplingParams
from .tokenizer import Tokenizer

__all__ = ["LLM", "AsyncEngine", "SamplingParams", "StructuredOutputsParams", "RequestOutput",
           "CompletionOutput", "EmbeddingOutput", "EmbeddingRequestOutput", "Logprob", "Tokenizer", "LumenError",
           "UnknownArgumentError", "__version__"]
__version__ = "0.1.0"
