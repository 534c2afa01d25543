"""The LLM generator: any LangChain chat model behind the :class:`Generator` interface.

``LLMGenerator`` renders the request with :mod:`evokernel.prompts.render`, calls the model (retrying
transient endpoint failures only: connection errors, timeouts, HTTP 408, 429 and 5xx, whichever provider
SDK raised them (:mod:`evokernel.generators.retry`), with exponential backoff and jitter), extracts the
candidate with :mod:`evokernel.generators.extract`, and reports tokens (from the reply's LangChain
``usage_metadata``, with its cache-read and reasoning details; estimated at ~4 characters per token when
the endpoint gives none) and cost (from a price table, USD per million tokens: LangChain reports tokens,
not prices).

``make_generator("openai:gpt-4o-mini")`` or ``make_generator("anthropic:claude-sonnet-4-5")`` builds one
from a spec string (any provider of LangChain's ``init_chat_model``: :mod:`evokernel.generators.providers`);
see :func:`make_generator` and docs/generators.md.
"""
from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from evokernel.generators.base import (
    REFINE,
    Generation,
    GenerationError,
    GenerationRequest,
    Generator,
    utf8_text,
)
from evokernel.generators.extract import extract_candidate, extract_summary
from evokernel.generators.pricing import DEFAULT_PRICES, Price, Prices
from evokernel.generators.providers import (
    LANGCHAIN_PROVIDERS,
    PROVIDERS,
    Provider,
    chat_openai,
    credentials_hint,
    init_provider_chat_model,
    provider_names,
    resolve_provider,
)
from evokernel.generators.retry import classify, is_retryable
from evokernel.runtime import stop_request

__all__ = [
    "DEFAULT_PRICES",
    "LANGCHAIN_PROVIDERS",
    "PROVIDERS",
    "LLMEndpointError",
    "LLMGenerator",
    "Price",
    "Prices",
    "Provider",
    "from_spec",
    "is_retryable",
    "make_generator",
]

CHARS_PER_TOKEN = 4
# what the model writes: "auto" (kernel for local models, full for the others), "kernel" (one declared C++
# function on the cpu backend: evokernel.generators.kernel_form) or "full" (the whole candidate file)
CANDIDATE_FORMS = ("auto", "kernel", "full")


class LLMEndpointError(RuntimeError):
    """The endpoint failed: a non-retryable error (401, 400, 404, ...) or retries exhausted.

    This is an environment/configuration problem, not a bad candidate: the caller should stop or
    pause the run rather than charge a failed attempt.
    """

    def __init__(self, message: str, status: int | None = None, retryable: bool = False, calls: int = 1):
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.calls = calls


_STATUS_HINTS = {
    400: "the request was rejected (prompt too long for the model's context, or an unsupported parameter?)",
    401: "authentication failed: check the API key",
    403: "access denied: the key may not have access to this model",
    404: "not found: check the model name and the base URL (it usually ends in /v1)",
    422: "the request was rejected as invalid",
}


def _describe(exc: BaseException, status: int | None, provider: str = "") -> str:
    detail = getattr(exc, "message", None)
    detail = detail if isinstance(detail, str) and detail else (str(exc) or type(exc).__name__)
    if status is None:
        hint = ""
        if type(exc).__name__ in ("NoCredentialsError", "DefaultCredentialsError", "CredentialsError"):
            hint = f"no credentials: {credentials_hint(provider) or 'configure the provider'}"
        return f"{type(exc).__name__}: {detail}" + (f" ({hint})" if hint else "")
    hint = _STATUS_HINTS.get(status, "")
    if status in (401, 403) and (where := credentials_hint(provider)):
        hint += f" ({where})"
    return f"HTTP {status}: {detail}" + (f" ({hint})" if hint else "")


def _content_text(message: BaseMessage) -> str:
    """A message's text, as UTF-8 can hold it (`utf8_text`)."""
    return utf8_text(_joined_text(message))


def _joined_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in (None, "text") and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def _model_name(chat_model: BaseChatModel) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(chat_model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(chat_model).__name__


def _provider_of(name: str) -> str:
    """``anthropic`` of a generator named ``anthropic:claude-...`` (or ``langchain:anthropic:...``)."""
    parts = name.split(":")
    if parts[0] == "langchain" and len(parts) > 2:
        return parts[1]
    return parts[0] if len(parts) > 1 else ""


_MAX_TOKEN_FIELDS = ("max_tokens", "max_output_tokens", "max_new_tokens", "num_predict")


def _max_tokens_field(cls: type) -> str | None:
    """The field (its Python name) a chat model class keeps its output cap in; None when it has none."""
    fields = getattr(cls, "model_fields", None)
    if not isinstance(fields, dict):
        return None
    return next((name for name in _MAX_TOKEN_FIELDS if name in fields), None)


def _token_details(usage: Mapping[str, Any], key: str) -> dict[str, int]:
    """``input_token_details`` / ``output_token_details`` of LangChain's usage metadata (cache_read,
    cache_creation, reasoning, audio...), numbers only."""
    details = usage.get(key) or {}
    return {k: int(v) for k, v in details.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and v}


def _add_details(total: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    out = dict(total)
    for k, v in more.items():
        out[k] = out.get(k, 0) + v
    return out


class LLMGenerator:
    """A :class:`Generator` over a LangChain chat model.

    ``max_attempts`` bounds endpoint calls per request (retries included); ``repairs`` bounds the extra
    requests made when a reply holds no usable candidate (each shows the model its reply and the
    extraction's error; small models often fix the shape when shown it). ``before_call`` (e.g.
    ``ledger.check``) runs before every call, so a budget cap can stop a run between retries by
    raising :class:`BudgetExceeded`. After each :meth:`generate`, :attr:`last_call` holds details
    (``calls``, ``tokens_estimated``, ``prices_known``, ``response_model``, ``seconds``, ``repairs``, and
    ``input_token_details`` / ``output_token_details``: the usage metadata's cache reads and writes,
    reasoning and audio tokens, summed over the attempt's requests).
    """

    def __init__(self, chat_model: BaseChatModel, name: str | None = None, prices: Prices | None = None,
                 max_attempts: int = 4, *, backoff_initial_s: float = 1.0, backoff_max_s: float = 30.0,
                 prompt_options: Any = None, before_call: Callable[[], None] | None = None, repairs: int = 1,
                 send_seed: bool = False, grammar: Callable[[str], str | None] | None = None,
                 form: str = "full", context_tokens: int | None = None, writes_experiences: bool = True):
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if repairs < 0:
            raise ValueError("repairs must be at least 0")
        self.repairs = repairs
        # "kernel": on the cpu backend the model writes one declared C++ function and the trusted side writes the
        # glue (evokernel.generators.kernel_form); "full": the model writes the whole candidate file
        if form not in CANDIDATE_FORMS[1:]:
            raise ValueError(f"unknown candidate form {form!r} (one of {', '.join(CANDIDATE_FORMS[1:])})")
        self.form = form
        # the model's context window in tokens when known (a local server's n_ctx): a refinement's raised reply
        # cap must leave room for the prompt
        self.context_tokens = context_tokens
        # whether this model should write the per-attempt experience (nodes/update.py): a local model on shared
        # cores does not by default, the call took 23-300 s and broke the server's prefix cache (issue 32)
        self.writes_experiences = writes_experiences
        # the attempt's seed as the sampling seed of the request (llama.cpp honours it; without it the local
        # server sampled the same reply for the same prompt in every run, so run seeds changed nothing)
        self.send_seed = send_seed
        # backend -> a GBNF grammar of the reply, sent as the request's "grammar" (llama.cpp servers only;
        # evokernel.generators.grammar)
        self.grammar = grammar
        self.chat_model = chat_model
        self.model = _model_name(chat_model)
        self.name = name or f"chat:{self.model}"
        self.prices = prices if prices is not None else Prices()
        self.max_attempts = max_attempts
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.prompt_options = prompt_options
        self.before_call = before_call
        self.last_call: dict[str, Any] = {}

    @property
    def prices_known(self) -> bool:
        """Whether the price table knows this generator's model (else costs are reported as 0)."""
        return self.prices.lookup(self.model) is not None

    def _invoke(self, messages: list[BaseMessage], seed: int | None = None,
                grammar: str | None = None, *, max_tokens: int | None = None,
                attempts: int | None = None) -> tuple[AIMessage, int]:
        calls = 0
        extra: dict[str, Any] = {"seed": seed} if seed is not None else {}
        body: dict[str, Any] = {}
        chat_model = self.chat_model
        if grammar:  # merged into the model's own extra body (a local model's max_tokens is there)
            body["grammar"] = grammar
        if max_tokens is not None:  # a shorter reply than the generator's (side calls: summaries)
            cap = _max_tokens_field(type(chat_model))
            if cap in (None, "max_tokens"):
                extra["max_tokens"] = max_tokens
                if "max_tokens" in (getattr(chat_model, "extra_body", None) or {}):
                    body["max_tokens"] = max_tokens  # llama_cpp.server reads it there
            else:  # max_output_tokens (Gemini), num_predict (ChatOllama)...: a copy with the cap set
                chat_model = chat_model.model_copy(update={cap: max_tokens})
        if body:
            extra["extra_body"] = {**(getattr(self.chat_model, "extra_body", None) or {}), **body}

        def call() -> AIMessage:
            nonlocal calls
            stop_request.check("a model call")  # e.g. the repair request after a reply that did not parse
            if self.before_call is not None:
                self.before_call()
            calls += 1
            return chat_model.invoke(messages, **extra)  # type: ignore[return-value]

        retrying = Retrying(
            stop=stop_after_attempt(attempts or self.max_attempts),
            # initial * 2^n capped at max, plus up to `initial` of random jitter
            wait=wait_exponential(multiplier=self.backoff_initial_s, max=self.backoff_max_s)
            + wait_random(0, self.backoff_initial_s),
            retry=retry_if_exception(lambda e: is_retryable(e) and not stop_request.requested()),
            reraise=True,
        )
        try:
            reply = retrying(call)
        except Exception as exc:
            stop_request.check("retrying a call cut by the stop")  # the stop released the server: not its failure
            verdict = classify(exc)
            if not verdict.endpoint:  # a bug (ours or the integration's), not the endpoint's failure
                raise
            status, retryable = verdict.status, verdict.retryable
            what = _describe(exc, status, _provider_of(self.name))
            if retryable:
                msg = f"{self.name}: endpoint still failing after {calls} call(s): {what}"
            else:
                msg = f"{self.name}: endpoint error (not retried): {what}"
            raise LLMEndpointError(msg, status=status, retryable=retryable, calls=calls) from exc
        return reply, calls

    def _ask(self, messages: list[BaseMessage], seed: int | None = None,
             grammar: str | None = None, *, max_tokens: int | None = None,
             attempts: int | None = None) -> tuple[str, int, int, float, dict[str, Any]]:
        """One answered request: (text, tokens in, tokens out, cost, details)."""
        started = time.monotonic()
        reply_msg, calls = self._invoke(messages, seed, grammar, max_tokens=max_tokens, attempts=attempts)
        text = _content_text(reply_msg)
        usage = getattr(reply_msg, "usage_metadata", None) or {}
        response_model = (reply_msg.response_metadata or {}).get("model_name") or self.model
        input_details: dict[str, int] = {}
        output_details: dict[str, int] = {}
        if usage.get("input_tokens") or usage.get("output_tokens"):
            # LangChain's standard usage: input_tokens include cache reads and writes, output_tokens include
            # reasoning tokens; the details say how many of each
            tokens_in, tokens_out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
            input_details = _token_details(usage, "input_token_details")
            output_details = _token_details(usage, "output_token_details")
            estimated = False
        else:
            prompt_chars = sum(len(_content_text(m)) for m in messages)
            tokens_in = max(prompt_chars // CHARS_PER_TOKEN, 1)
            tokens_out = max(len(text) // CHARS_PER_TOKEN, 1) if text else 0
            estimated = True
        cache_read = input_details.get("cache_read", 0)
        cost, known = self.prices.cost(self.model, tokens_in, tokens_out, cache_read)
        if not known and response_model != self.model:
            cost, known = self.prices.cost(response_model, tokens_in, tokens_out, cache_read)
        return text, tokens_in, tokens_out, cost, {
            "calls": calls, "tokens_estimated": estimated, "prices_known": known, "response_model": response_model,
            "input_token_details": input_details, "output_token_details": output_details,
            "seconds": time.monotonic() - started, "finish_reason": (reply_msg.response_metadata or {}).get("finish_reason")}

    def ask(self, messages: list[BaseMessage], *, max_tokens: int | None = None,
            attempts: int = 1) -> tuple[str, int, int, float, dict[str, Any]]:
        """A side request outside candidate generation (an experience summary, distilled best practices):
        ``(text, tokens in, tokens out, cost, details)`` of one reply of at most ``max_tokens`` tokens, with at
        most ``attempts`` endpoint calls. The budget check (``before_call``) applies as for candidates."""
        return self._ask(messages, max_tokens=max_tokens, attempts=attempts)

    def generate(self, request: GenerationRequest) -> Generation:
        """One candidate for ``request``. A reply with no usable candidate gets ``repairs`` more requests
        (default 1) that show the model its own reply and what was wrong with it; tokens and cost of
        every request are summed into the attempt. Raises GenerationError when none yields a candidate."""
        from evokernel.prompts.render import render_messages

        spec = self._kernel_spec(request)
        messages = render_messages(request, self.prompt_options, kernel=spec)
        total_in = total_out = calls = 0
        total_cost, seconds = 0.0, 0.0
        input_details: dict[str, int] = {}
        output_details: dict[str, int] = {}
        estimated = False
        grammar = None
        if self.grammar is not None:
            if spec is not None:
                from evokernel.generators.grammar import kernel_grammar

                grammar = kernel_grammar(spec.signature)
            else:
                grammar = self.grammar(request.backend)
        cap = self.reply_cap(request, messages, spec)
        for round_ in range(self.repairs + 1):
            seed = (request.seed + round_) % 2**31 if self.send_seed else None
            text, tokens_in, tokens_out, cost, info = self._ask(messages, seed, grammar, max_tokens=cap)
            total_in, total_out, total_cost = total_in + tokens_in, total_out + tokens_out, total_cost + cost
            calls, seconds = calls + info["calls"], seconds + info["seconds"]
            input_details = _add_details(input_details, info["input_token_details"])
            output_details = _add_details(output_details, info["output_token_details"])
            estimated = estimated or info["tokens_estimated"]
            self.last_call = dict(info, calls=calls, seconds=seconds, repairs=round_, tokens_estimated=estimated,
                                  input_token_details=input_details, output_token_details=output_details,
                                  form="kernel" if spec is not None else "full", reply_cap=cap)
            try:
                if spec is not None:
                    from evokernel.generators.extract_kernel import extract_kernel

                    source = spec.candidate(extract_kernel(text, spec))
                else:
                    source = extract_candidate(text)
                break
            except GenerationError as exc:
                message = str(exc)
                if info["finish_reason"] == "length":
                    message += " [the reply hit the output token limit]"
                if round_ == self.repairs:
                    if round_:
                        message += f" (still, after {round_} repair request{'s' if round_ > 1 else ''})"
                    raise GenerationError(message, reply=text, tokens_in=total_in, tokens_out=total_out,
                                          cost_usd=total_cost) from None
                repair = KERNEL_REPAIR_REQUEST if spec is not None else REPAIR_REQUEST
                messages = messages + [AIMessage(content=text), HumanMessage(content=repair.format(error=message))]
        details = {k: v for k, v in (("input", input_details), ("output", output_details)) if v}
        return Generation(source=source, reply=text, summary=extract_summary(text, source),
                          tokens_in=total_in, tokens_out=total_out, cost_usd=total_cost, model=self.name, calls=calls,
                          usage_details=details or None)

    def own_reply_cap(self) -> int | None:
        """The chat model's own output cap (its ``max_tokens``-like field, or ``max_tokens`` in its extra body where
        llama_cpp.server reads it); None when it sets none (the provider's default applies)."""
        body = getattr(self.chat_model, "extra_body", None) or {}
        if isinstance(body.get("max_tokens"), int):
            return body["max_tokens"]
        field = _max_tokens_field(type(self.chat_model))
        value = getattr(self.chat_model, field, None) if field else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def reply_cap(self, request: GenerationRequest, messages: list[BaseMessage], spec: Any = None) -> int | None:
        """The output cap of this request when it must differ from the model's own: a refinement whose start point
        (what the model restates and changes: the kernel in the kernel-only form) needs more tokens than the cap
        gets room for it (its size, a quarter more, and 256 for the summary and the changes), within the context
        window when it is known. None: the model's own cap. Round 2: a 1,726-token start point under a 1,024-token
        cap could not even be restated."""
        own = self.own_reply_cap()
        if request.stage != REFINE or request.start_point is None or own is None:
            return None
        text = request.start_point.text or ""
        if spec is not None:
            from evokernel.generators.kernel_form import kernel_of_candidate

            text = kernel_of_candidate(text) or text
        need = (len(text) // CHARS_PER_TOKEN) * 5 // 4 + 256
        if need <= own:
            return None
        if self.context_tokens:
            prompt = sum(len(_content_text(m)) for m in messages) // CHARS_PER_TOKEN
            need = min(need, self.context_tokens - prompt - 256)
        return need if need > own else None

    def _kernel_spec(self, request: GenerationRequest) -> Any:
        """The declared kernel of the request's task when the kernel-only form applies (the cpu backend, a task
        it can express); None for the full-candidate form."""
        if self.form != "kernel" or (request.backend or "cpu") != "cpu":
            return None
        from evokernel.generators.kernel_form import KernelFormError, declare

        try:
            return declare(request.task)
        except KernelFormError:
            return None  # e.g. a scalar forward argument: the model writes the whole file for this task


REPAIR_REQUEST = ("Your reply above cannot be used: {error}\n\nReply again with the whole candidate file in one "
                  "```python block (nothing else inside the block; a one-line `Summary:` may follow it).")
KERNEL_REPAIR_REQUEST = ("Your reply above cannot be used: {error}\n\nReply again with the `Summary:` line and one "
                         "```cpp block holding the whole function (nothing after the block).")


# -- building generators from specs -------------------------------------------------------------

_chat_openai = chat_openai  # the name before providers.py


def make_generator(spec: str | BaseChatModel | Generator, *, temperature: float | None = None,
                   timeout: float | None = 300.0, base_url: str | None = None, api_key: str | None = None,
                   max_tokens: int | None = None, prices: Prices | None = None, max_attempts: int = 4,
                   name: str | None = None, model_kwargs: dict[str, Any] | None = None,
                   candidate_form: str = "auto", **kw: Any) -> Generator:
    """A generator from a spec.

    ``candidate_form`` (:data:`CANDIDATE_FORMS`): what an LLM writes on the cpu backend; ``auto`` is the
    kernel-only form for ``local:`` models (and the LLM of ``hybrid:local:...``) and the full file for the others.

    * ``"template"``: the offline template generator (``kw`` go to its constructor);
    * ``"openai:MODEL"`` or a bare ``"MODEL"``: ChatOpenAI with ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``
      (a base URL without a key uses a placeholder key: vLLM, Ollama, LM Studio...);
    * ``"deepseek:MODEL"``: https://api.deepseek.com with ``DEEPSEEK_API_KEY``;
    * ``"ollama:MODEL"``: http://127.0.0.1:11434/v1 (``OLLAMA_BASE_URL``), no key;
    * ``"vllm:MODEL"``: http://127.0.0.1:8000/v1 (``VLLM_BASE_URL``), no key;
    * ``"PROVIDER:MODEL"`` for any other provider of LangChain's ``init_chat_model`` (``anthropic``,
      ``google_genai``, ``google_vertexai``, ``bedrock_converse``, ``mistralai``, ``groq``, ``cohere``,
      ``fireworks``, ``together``, ``xai``, ``perplexity``, ``azure_openai``, ``huggingface``, ...; aliases such
      as ``google``, ``gemini``, ``mistral``; :data:`LANGCHAIN_PROVIDERS`), from its integration package;
    * ``"langchain:PROVIDER:MODEL"``: ``init_chat_model`` for any provider, ours included
      (``langchain:ollama:MODEL`` is langchain-ollama's ChatOllama);
    * ``"local:NAME"`` or ``"local:/path/model.gguf"``: a managed llama.cpp server on 127.0.0.1, price 0
      (:mod:`evokernel.generators.local.server`, docs/local-model.md);
    * ``"hybrid:<spec>"``: the template generator drafts, the LLM of ``<spec>`` refines
      (:mod:`evokernel.generators.hybrid`);
    * a LangChain ``BaseChatModel``: wrapped as is; an object with ``generate``: returned as is.

    A missing key for a remote provider raises ``ValueError`` naming the environment variable, and a missing
    integration package a ``ValueError`` naming the pip package. ``model_kwargs`` go to the chat model class
    as they are (``region_name`` for Bedrock, ``project`` for Vertex AI, ...). Remaining ``kw`` go to
    :class:`LLMGenerator` (``backoff_initial_s``, ``prompt_options``, ...).
    """
    if candidate_form not in CANDIDATE_FORMS:
        raise ValueError(f"unknown candidate form {candidate_form!r} (one of {', '.join(CANDIDATE_FORMS)})")
    if candidate_form != "auto":
        kw.setdefault("form", candidate_form)
    if isinstance(spec, BaseChatModel):
        return LLMGenerator(spec, name=name, prices=prices, max_attempts=max_attempts, **kw)
    if not isinstance(spec, str):
        if callable(getattr(spec, "generate", None)):
            return spec
        raise TypeError(f"cannot make a generator from {type(spec).__name__}")
    text = spec.strip()
    if not text:
        raise ValueError("empty generator spec: use 'template' or 'PROVIDER:MODEL' (e.g. openai:gpt-4o-mini)")
    if text == "template" or text.startswith("template:"):
        from evokernel.generators.template import TemplateGenerator

        return TemplateGenerator(**kw)
    provider, sep, model = text.partition(":")
    if not sep:
        provider, model = "openai", text
    provider = provider.lower()
    if provider == "hybrid":  # the template drafts, the LLM of the rest of the spec refines
        from evokernel.generators.hybrid import HybridGenerator
        from evokernel.generators.template import TemplateGenerator

        if not model.strip():
            raise ValueError(f"generator spec {spec!r} names no LLM (e.g. hybrid:openai:gpt-4o-mini)")
        return HybridGenerator(TemplateGenerator(), make_generator(
            model.strip(), temperature=temperature, timeout=timeout, base_url=base_url, api_key=api_key,
            max_tokens=max_tokens, prices=prices, max_attempts=max_attempts, name=name,
            model_kwargs=model_kwargs, candidate_form=candidate_form, **kw))
    if provider == "local" and model.strip():  # a llama.cpp server on 127.0.0.1, started or reused here
        from evokernel.generators.local.server import LOCAL_CONTEXT_CHARS, local_chat_model
        from evokernel.prompts.render import PromptOptions

        chat, prices = local_chat_model(model.strip(), temperature=temperature, timeout=timeout,
                                        max_tokens=max_tokens, prices=prices)
        # a small model on a few cores: a prompt that fits its window and its prompt-evaluation speed
        options = kw.get("prompt_options") or PromptOptions()
        chars = int(os.environ.get("EVOKERNEL_LOCAL_CONTEXT_CHARS") or LOCAL_CONTEXT_CHARS)
        kw["prompt_options"] = dataclasses.replace(options, max_context_chars=min(options.max_context_chars, chars))
        kw.setdefault("send_seed", True)
        kw.setdefault("form", "kernel")  # a weak model writes the kernel, the trusted side the glue (issue 32)
        server = getattr(chat, "_evokernel_server", None)
        if isinstance(getattr(server, "n_ctx", None), int):
            kw.setdefault("context_tokens", server.n_ctx)
        # the per-attempt experience by the template sentence: the model's call took 23-300 s on shared cores and
        # broke the server's prefix cache for the next draft (EVOKERNEL_LOCAL_EXPERIENCES=1: the model writes them)
        kw.setdefault("writes_experiences", os.environ.get("EVOKERNEL_LOCAL_EXPERIENCES", "0").strip().lower()
                      in ("1", "true", "yes", "on"))
        if os.environ.get("EVOKERNEL_LOCAL_GRAMMAR", "1").strip().lower() not in ("0", "false", "no", "off"):
            from evokernel.generators.grammar import grammar_for

            kw.setdefault("grammar", grammar_for)
        return LLMGenerator(chat, name=name or f"local:{model.strip()}", prices=prices,
                            max_attempts=max_attempts, **kw)
    via_langchain = provider == "langchain"
    if via_langchain:  # langchain:PROVIDER:MODEL: init_chat_model for any provider, ours included
        provider, sep, model = model.partition(":")
        if not sep or not provider.strip():
            raise ValueError(f"generator spec {spec!r}: expected langchain:PROVIDER:MODEL "
                             "(e.g. langchain:ollama:qwen2.5-coder:7b)")
    if not via_langchain and provider in PROVIDERS:
        if not model.strip():
            raise ValueError(f"generator spec {spec!r} names no model (e.g. {provider}:MODEL)")
        chat = chat_openai(provider, model.strip(), base_url=base_url, api_key=api_key, temperature=temperature,
                           timeout=timeout, max_tokens=max_tokens, model_kwargs=model_kwargs)
        return LLMGenerator(chat, name=name or f"{provider}:{model.strip()}", prices=prices,
                            max_attempts=max_attempts, **kw)
    provider = resolve_provider(provider)
    if not via_langchain and provider not in LANGCHAIN_PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} in generator spec {spec!r} "
                         f"(known: template, local:MODEL, hybrid:SPEC, langchain:PROVIDER:MODEL and PROVIDER:MODEL "
                         f"for {', '.join(provider_names())}; a model name with a colon needs its provider first, "
                         "e.g. ollama:qwen2.5-coder:7b)")
    if not model.strip():
        raise ValueError(f"generator spec {spec!r} names no model (e.g. {provider}:MODEL)")
    chat = init_provider_chat_model(provider, model.strip(), temperature=temperature, timeout=timeout,
                                    max_tokens=max_tokens, base_url=base_url, api_key=api_key,
                                    model_kwargs=model_kwargs)
    label = f"langchain:{provider}" if via_langchain else provider
    return LLMGenerator(chat, name=name or f"{label}:{model.strip()}", prices=prices,
                        max_attempts=max_attempts, **kw)


from_spec = make_generator
