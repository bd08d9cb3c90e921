"""lumen.AsyncEngine: streaming generation and embeddings for asyncio programs (a server of your own).

One background thread drives the engine: it steps (with the GIL released), then hands what each
step produced to the event loop of the request's consumer with call_soon_threadsafe. The event
loop only submits, aborts and reads queues, so it never waits on the engine. Embeddings go the
same way: queued with the engine, their vectors set on an asyncio future after the step that
finished them.
"""
from __future__ import annotations

import asyncio
import atexit
import os
import threading
import uuid
from contextlib import aclosing
from typing import Any, AsyncGenerator, AsyncIterator, Dict, List, Mapping, Optional, Sequence, Union

from . import _lumen
from ._images import has_image_parts
from ._prompts import ChatMessage, Prompt, SinglePrompt, chat_prompt_with_images, one_prompt, prompt_batch
from .llm import load_engine
from .outputs import CompletionOutput, Decode, EmbeddingOutput, EmbeddingRequestOutput, PromptLogprobs, RequestOutput, \
    prompt_logprobs_of, sample_logprobs
from .sampling import SamplingParams
from .tokenizer import Tokenizer


# How long the loop thread sleeps when there is no work before it checks for shutdown (a new
# request wakes it at once).
_IDLE_WAIT_S = 0.05


class _Stream:
    """One request's state on the loop thread, and the queue its consumer reads."""

    def __init__(self, loop: asyncio.AbstractEventLoop, request_id: str, prompt: Prompt,
                 params: SamplingParams, decode: Decode) -> None:
        self.loop = loop
        self.decode = decode  # a token id's text, for Logprob.decoded_token
        self.queue: "asyncio.Queue[Union[RequestOutput, BaseException]]" = asyncio.Queue()
        self.request_id = request_id
        self.prompt = prompt
        self.params = params
        self.handles: List[_lumen._Request] = []
        self.outputs: List[CompletionOutput] = []
        self.prompt_logprobs: Optional[PromptLogprobs] = None

    def start(self, handles: List[_lumen._Request]) -> None:
        self.handles = handles
        want = self.params.logprobs is not None
        self.outputs = [CompletionOutput(index=h.index, text="", token_ids=[], cumulative_logprob=0.0 if want else None,
                                         logprobs=[] if want else None) for h in handles]

    def collect(self) -> Optional[Union[RequestOutput, BaseException]]:
        """What the engine produced since the last call, as one RequestOutput (None if nothing)."""
        changed = False
        deltas = [""] * len(self.handles)
        for i, handle in enumerate(self.handles):
            out = self.outputs[i]
            while (chunk := handle.try_next()) is not None:
                ids, text, logprobs, top, prompt_rows, finished, reason, error = chunk
                changed = True
                if finished and reason == "error":
                    return RuntimeError(f"the engine failed on request {self.request_id}: {error}")
                if prompt_rows and self.params.prompt_logprobs is not None:
                    self.prompt_logprobs = prompt_logprobs_of(prompt_rows, self.decode)
                out.token_ids.extend(ids)
                out.text += text
                deltas[i] += text
                if out.logprobs is not None and out.cumulative_logprob is not None:
                    out.logprobs.extend(sample_logprobs(ids, logprobs, top, self.decode))
                    out.cumulative_logprob += sum(logprobs)
                if finished:
                    out.finish_reason = reason
        if not changed:
            return None
        finished = all(o.finish_reason is not None for o in self.outputs)
        snapshot = [CompletionOutput(index=o.index, text=o.text, token_ids=list(o.token_ids),
                                     cumulative_logprob=o.cumulative_logprob,
                                     logprobs=list(o.logprobs) if o.logprobs is not None else None,
                                     finish_reason=o.finish_reason, delta=deltas[i])
                    for i, o in enumerate(self.outputs)]
        return RequestOutput(request_id=self.request_id, prompt=self.prompt[0], prompt_token_ids=self.prompt[1],
                             outputs=snapshot, finished=finished, prompt_logprobs=self.prompt_logprobs)

    def deliver(self, item: Union[RequestOutput, BaseException]) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:
            pass  # the consumer's event loop has closed: nobody is left to read it


def _settle(future: "asyncio.Future[Any]", outcome: Any) -> None:
    """On the future's loop: its result or exception, unless its awaiter was cancelled."""
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


class _PendingEmbedding:
    """One embed() call's queued inputs and the future its caller awaits."""

    def __init__(self, loop: asyncio.AbstractEventLoop, future: "asyncio.Future[Any]", job: _lumen._Embedding) -> None:
        self.loop, self.future, self.job = loop, future, job

    def deliver(self, outcome: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(_settle, self.future, outcome)
        except RuntimeError:
            pass  # the caller's event loop has closed


class AsyncEngine:
    """Lumen's engine for asyncio (vLLM's AsyncLLM): many concurrent streaming requests, batched
    by the engine step by step.

    AsyncEngine(model=PATH, **engine_options) takes LLM's engine options. Use it as
    `async for out in engine.generate(prompt, params, request_id="r1")`: each RequestOutput
    carries the text so far (outputs[i].text) and what is new (outputs[i].delta); the last has
    finished=True. Leaving the loop early, or cancelling the task, aborts the request;
    `await engine.abort(request_id)` aborts it from elsewhere (its stream then ends with
    finish_reason "abort"). `await engine.embed(prompts)` gives LLM.embed's vectors, computed
    between the generation steps. Call shutdown() (or use `async with`) when done.
    """

    def __init__(self, model: Union[str, "os.PathLike[str]"], **engine_options: Any) -> None:
        self._engine = load_engine("AsyncEngine", model, engine_options)
        self._streams: Dict[str, _Stream] = {}
        self._embeddings: List[_PendingEmbedding] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lumen-engine", daemon=True)
        self._thread.start()
        # Stop the loop thread before the interpreter goes away under it.
        atexit.register(self.shutdown)

    def get_tokenizer(self) -> Tokenizer:
        """The model's tokenizer."""
        return Tokenizer(self._engine)

    async def generate(self, prompt: SinglePrompt, sampling_params: Optional[SamplingParams] = None,
                       request_id: Optional[str] = None) -> AsyncIterator[RequestOutput]:
        """Streams one prompt's generation (a str, token ids, or vLLM's prompt dicts). Raises
        ValueError for a refused prompt or parameters, or a request_id already running."""
        # aclosing: when this generator is closed or cancelled, the inner one is closed at once
        # (which aborts the request), not whenever it is collected.
        async with aclosing(self._stream(one_prompt(self._engine, prompt), sampling_params, request_id)) as stream:
            async for out in stream:
                yield out

    async def chat(self, messages: Sequence[ChatMessage], sampling_params: Optional[SamplingParams] = None,
                   request_id: Optional[str] = None, *, add_generation_prompt: bool = True,
                   chat_template_kwargs: Optional[Mapping[str, Any]] = None) -> AsyncIterator[RequestOutput]:
        """Streams the reply to a conversation, rendered as LLM.chat renders it, image parts
        included (with mmproj=...: see LLM.chat); the images are decoded and encoded on a worker
        thread, so the event loop goes on meanwhile."""
        if has_image_parts(messages):
            prompt, placed = await asyncio.get_running_loop().run_in_executor(
                None, chat_prompt_with_images, self._engine, messages, add_generation_prompt, chat_template_kwargs)
        else:
            prompt, placed = chat_prompt_with_images(self._engine, messages, add_generation_prompt,
                                                     chat_template_kwargs)
        async with aclosing(self._stream(prompt, sampling_params, request_id, placed)) as stream:
            async for out in stream:
                yield out

    async def embed(self, prompts: Union[SinglePrompt, Sequence[SinglePrompt]]) -> List[EmbeddingRequestOutput]:
        """LLM.embed for asyncio: one vector per prompt, in order, pooled and L2-normalised as
        /v1/embeddings computes them. The engine runs the inputs one pass per step, between the
        streams' steps, so generation goes on meanwhile. Raises LumenError (a ValueError) for a
        refused prompt. Cancelling the await drops the answer; the inputs' passes still run."""
        if self._closed.is_set():
            raise RuntimeError("the AsyncEngine was shut down")
        batch = prompt_batch(self._engine, prompts, parse_special=False)
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[List[List[float]]]" = loop.create_future()
        with self._lock:
            job = self._engine.submit_embed([ids for _, ids in batch])  # checks the inputs, then queues them
            self._embeddings.append(_PendingEmbedding(loop, future, job))
        vectors = await future
        return [EmbeddingRequestOutput(request_id=str(i), prompt=text, prompt_token_ids=ids,
                                       outputs=EmbeddingOutput(embedding=vector))
                for i, ((text, ids), vector) in enumerate(zip(batch, vectors))]

    async def abort(self, request_id: str) -> None:
        """Ends the request at the engine's next step; an unknown id is ignored."""
        with self._lock:
            stream = self._streams.get(request_id)
        if stream is not None and stream.handles:
            self._engine.abort(stream.handles[0].id)

    def shutdown(self) -> None:
        """Aborts every request and stops the loop thread (their streams end with "abort")."""
        if self._closed.is_set():
            return
        atexit.unregister(self.shutdown)
        with self._lock:
            ids = [s.handles[0].id for s in self._streams.values() if s.handles]
        for engine_id in ids:
            self._engine.abort(engine_id)
        # The thread finishes the aborted requests (so their consumers see the end) and exits.
        self._closed.set()
        self._thread.join()
        with self._lock:
            left, self._embeddings = self._embeddings, []
        for pending in left:
            pending.deliver(RuntimeError("the AsyncEngine was shut down"))

    async def __aenter__(self) -> "AsyncEngine":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.shutdown()

    async def _stream(self, prompt: Prompt, sampling_params: Optional[SamplingParams],
                      request_id: Optional[str],
                      images: Optional[_lumen._PlacedImages] = None) -> AsyncGenerator[RequestOutput, None]:
        if self._closed.is_set():
            raise RuntimeError("the AsyncEngine was shut down")
        params = SamplingParams() if sampling_params is None else sampling_params
        if not isinstance(params, SamplingParams):
            raise TypeError("sampling_params must be a SamplingParams")
        rid = uuid.uuid4().hex if request_id is None else request_id
        if not isinstance(rid, str):
            raise TypeError("request_id must be a str")
        stream = _Stream(asyncio.get_running_loop(), rid, prompt, params, self._engine.token_text)
        with self._lock:
            if rid in self._streams:
                raise ValueError(f"request id {rid!r} is already running")
            stream.start(self._engine.submit(prompt[1], params, images))  # quick: the engine's inbox only
            self._streams[rid] = stream
        finished = False
        try:
            while not finished:
                item = await stream.queue.get()
                if isinstance(item, BaseException):
                    finished = True  # the engine already ended it
                    raise item
                finished = item.finished
                yield item
        finally:
            if not finished:  # cancelled, or the consumer stopped reading
                self._engine.abort(stream.handles[0].id)
            with self._lock:
                self._streams.pop(rid, None)

    def _run(self) -> None:
        while True:
            try:
                busy = self._engine.step()
            except Exception as error:  # the engine itself failed: every stream learns why
                busy = False
                with self._lock:
                    streams = list(self._streams.values())
                for s in streams:
                    s.deliver(RuntimeError(f"the engine failed: {error}"))
            self._deliver()
            if not busy:
                if self._closed.is_set() and not self._engine.has_unfinished() and not self._embeddings:
                    return
                self._engine.wait_for_work(_IDLE_WAIT_S)

    def _deliver(self) -> None:
        with self._lock:
            streams = list(self._streams.values())
        for s in streams:
            item = s.collect()
            if item is not None:
                s.deliver(item)
        with self._lock:
            ready = [p for p in self._embeddings if p.job.ready()]
            self._embeddings = [p for p in self._embeddings if p not in ready]
        for pending in ready:
            try:
                outcome: Any = pending.job.get()
            except Exception as error:  # the engine refused them (no room in the KV cache)
                outcome = error
            pending.deliver(outcome)
