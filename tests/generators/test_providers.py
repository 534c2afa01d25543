"""Any LangChain chat model (issue 18, item 3): PROVIDER:MODEL specs through init_chat_model, retries keyed on
each provider's transient errors, usage from LangChain's usage metadata. No network: the one real non-OpenAI
integration (langchain-anthropic, installed with the test extra) talks to a scripted Anthropic Messages
endpoint on 127.0.0.1; other providers are fake classes behind the real init_chat_model, and their SDKs'
exceptions are stand-ins whose module, class names and attributes mirror the SDK versions named beside them."""
from __future__ import annotations

import json
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import ConfigDict, Field, SecretStr

from evokernel.generators.base import GenerationRequest
from evokernel.generators.llm import LLMEndpointError, LLMGenerator, Prices, make_generator
from evokernel.generators.providers import LANGCHAIN_PROVIDERS, init_provider_chat_model, resolve_provider
from evokernel.generators.retry import classify, is_retryable
from evokernel.tasks.load import load_task

ROOT = Path(__file__).resolve().parents[2]
RELU_TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
RELU_CANDIDATE = (ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py").read_text()
REPLY = "Summary: one vectorised pass.\n\n```python\n" + RELU_CANDIDATE + "```\n"

KEY_VARS = sorted({var for info in LANGCHAIN_PROVIDERS.values() for var in info.keys}
                  | {"OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY", "ANTHROPIC_BASE_URL",
                     "ANTHROPIC_AUTH_TOKEN"})


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    yield
    _forget_init_chat_model_classes()


def _forget_init_chat_model_classes():
    """init_chat_model caches the class it imported per provider: forget the fakes installed here."""
    from langchain.chat_models import base

    clear = getattr(getattr(base, "_get_chat_model_creator", None), "cache_clear", None)
    if clear:
        clear()


@pytest.fixture(scope="module")
def request_draft():
    return GenerationRequest(task=load_task(RELU_TASK), stage="draft")


# -- fake integration packages behind the real init_chat_model --------------------------------------

class FakeGemini(FakeListChatModel):
    """Fields as langchain-google-genai 4.4's ChatGoogleGenerativeAI declares them (_common.py)."""

    model_config = ConfigDict(populate_by_name=True)
    model: str = ""
    responses: list = [REPLY]
    max_output_tokens: int | None = Field(default=None, alias="max_tokens")
    max_retries: int = Field(default=6, alias="retries")
    timeout: float | None = Field(default=None, alias="request_timeout")
    temperature: float | None = 0.7
    google_api_key: SecretStr | None = Field(default=None, alias="api_key")


class FakeOllama(FakeListChatModel):
    """Fields as langchain-ollama 1.1's ChatOllama declares them: num_predict, no timeout, no max_retries."""

    model: str = ""
    responses: list = [REPLY]
    num_predict: int | None = None
    temperature: float | None = None
    base_url: str | None = None
    seen: list = []

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.seen.append(self.num_predict)
        return super()._call(*args, **kwargs)


@pytest.fixture
def fake_packages(monkeypatch):
    """langchain_google_genai and langchain_ollama as modules holding the fakes, and a record of what
    init_chat_model was asked."""
    from langchain import chat_models

    for module, cls in (("langchain_google_genai", FakeGemini), ("langchain_ollama", FakeOllama)):
        mod = types.ModuleType(module)
        setattr(mod, LANGCHAIN_PROVIDERS["google_genai" if "google" in module else "ollama"].class_name, cls)
        monkeypatch.setitem(sys.modules, module, mod)
    _forget_init_chat_model_classes()
    asked: list[dict] = []
    real = chat_models.init_chat_model

    def recording(model, **kwargs):
        asked.append(dict(kwargs, model=model))
        return real(model, **kwargs)

    monkeypatch.setattr(chat_models, "init_chat_model", recording)
    return asked


def test_a_provider_spec_goes_through_init_chat_model_with_the_run_options_under_the_classs_names(
        fake_packages, monkeypatch, request_draft):
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    g = make_generator("google_genai:gemini-2.5-pro", temperature=0.2, timeout=9, max_tokens=50)
    chat = g.chat_model
    assert isinstance(chat, FakeGemini) and g.name == "google_genai:gemini-2.5-pro" and chat.model == "gemini-2.5-pro"
    # max_tokens -> its max_output_tokens (alias max_tokens), timeout, and max_retries=0: EvoKernel retries
    assert (chat.max_output_tokens, chat.timeout, chat.max_retries, chat.temperature) == (50, 9, 0, 0.2)
    assert fake_packages[-1]["model_provider"] == "google_genai"
    assert "relu_forward" in g.generate(request_draft).source
    # aliases and hyphens name the same provider
    assert make_generator("gemini:gemini-2.5-flash").name == "google_genai:gemini-2.5-flash"
    assert isinstance(make_generator("google-genai:gemini-2.5-flash").chat_model, FakeGemini)
    assert resolve_provider("Mistral") == "mistralai" and resolve_provider("vertexai") == "google_vertexai"


def test_options_a_class_does_not_declare_are_not_passed_and_a_side_calls_cap_uses_its_own_field(fake_packages):
    g = make_generator("langchain:ollama:qwen2.5-coder:7b", temperature=0.1, timeout=30, max_tokens=400)
    chat = g.chat_model
    assert isinstance(chat, FakeOllama) and chat.model == "qwen2.5-coder:7b"
    assert g.name == "langchain:ollama:qwen2.5-coder:7b"
    sent = fake_packages[-1]
    assert sent["num_predict"] == 400 and sent["temperature"] == 0.1
    assert "timeout" not in sent and "max_retries" not in sent and "max_tokens" not in sent
    text, *_ = g.ask([HumanMessage(content="hi")], max_tokens=160)  # a copy capped at 160, the model unchanged
    assert text and chat.seen[-1] == 160 and chat.num_predict == 400


def test_our_ollama_stays_chat_openai_on_the_v1_endpoint():
    from langchain_openai import ChatOpenAI

    g = make_generator("ollama:qwen2.5-coder:7b")
    assert isinstance(g.chat_model, ChatOpenAI) and g.chat_model.openai_api_base == "http://127.0.0.1:11434/v1"


def test_a_missing_integration_package_names_the_pip_package(monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "k")
    monkeypatch.setitem(sys.modules, "langchain_groq", None)  # importing it raises ImportError
    with pytest.raises(ValueError, match=r"groq:llama-3.3-70b.*pip install langchain-groq.*evokernel\[groq\]"):
        make_generator("groq:llama-3.3-70b")
    monkeypatch.setitem(sys.modules, "langchain_google_vertexai", None)
    with pytest.raises(ValueError, match="pip install langchain-google-vertexai"):
        make_generator("vertexai:gemini-2.5-pro")


def test_init_chat_models_import_error_is_translated_for_a_provider_we_do_not_list(monkeypatch):
    from langchain import chat_models

    def missing(model, **kwargs):
        raise ImportError("Initializing ChatZed requires the langchain-zed package. Please install it with "
                          "`pip install langchain-zed`")

    monkeypatch.setattr(chat_models, "init_chat_model", missing)
    with pytest.raises(ValueError, match=r"zed:m needs the langchain-zed package"):
        make_generator("langchain:zed:m")


def test_unknown_providers_and_bad_specs():
    with pytest.raises(ValueError, match="unknown provider 'nosuch'.*init_chat_model does not know it"):
        make_generator("langchain:nosuch:model")
    with pytest.raises(ValueError, match="unknown provider 'nosuch'"):
        make_generator("nosuch:model")
    with pytest.raises(ValueError, match="langchain:PROVIDER:MODEL"):
        make_generator("langchain:justamodel")
    with pytest.raises(ValueError, match="names no model"):
        make_generator("anthropic:")


def test_every_listed_provider_is_one_init_chat_model_knows():
    from langchain.chat_models import base

    registry = getattr(base, "_BUILTIN_PROVIDERS", None)
    if registry is None:
        pytest.skip("this langchain keeps its provider registry elsewhere")
    assert set(LANGCHAIN_PROVIDERS) == set(registry)
    for name, info in LANGCHAIN_PROVIDERS.items():
        assert (info.module, info.class_name) == registry[name][:2], name


# -- a real integration: langchain-anthropic against a scripted Messages endpoint ------------------

class FakeAnthropic:
    """POST /v1/messages on 127.0.0.1: each scripted item is a reply text, a usage dict with "text", or a
    (status, error type, message) error."""

    def __init__(self, script):
        self.script, self.requests = list(script), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append({"path": self.path, "json": body, "headers": {k.lower(): v for k, v in self.headers.items()}})
                item = outer.script.pop(0) if outer.script else (500, "api_error", "script exhausted")
                if isinstance(item, tuple):
                    status, kind, message = item
                    payload = {"type": "error", "error": {"type": kind, "message": message}}
                else:
                    item = {"text": item} if isinstance(item, str) else item
                    status, payload = 200, {
                        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                        "content": [{"type": "text", "text": item["text"]}], "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": item.get("usage", {"input_tokens": 1200, "output_tokens": 300})}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def anthropic_generator(server, **kw):
    pytest.importorskip("langchain_anthropic")
    kw.setdefault("backoff_initial_s", 0.01)
    kw.setdefault("backoff_max_s", 0.02)
    return make_generator("anthropic:claude-test", base_url=server.base_url, api_key="sk-ant-test",
                          timeout=10, max_tokens=2000, **kw)


def test_anthropic_spec_builds_chat_anthropic_without_sdk_retries(monkeypatch):
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        make_generator("anthropic:claude-sonnet-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    g = make_generator("anthropic:claude-sonnet-4-5", temperature=0.3, timeout=7, max_tokens=99)
    chat = g.chat_model
    assert isinstance(chat, langchain_anthropic.ChatAnthropic) and g.name == "anthropic:claude-sonnet-4-5"
    assert (chat.model, chat.max_retries, chat.default_request_timeout, chat.max_tokens, chat.temperature) == (
        "claude-sonnet-4-5", 0, 7, 99, 0.3)
    assert chat.anthropic_api_key.get_secret_value() == "sk-ant-env"


def test_anthropic_usage_with_cache_reads_and_cost(request_draft):
    usage = {"input_tokens": 200, "output_tokens": 300, "cache_read_input_tokens": 1000,
             "cache_creation_input_tokens": 50}
    with FakeAnthropic([{"text": REPLY, "usage": usage}]) as server:
        g = anthropic_generator(server, prices=Prices.parse("claude-test=3/15/0.3"))
        gen = g.generate(request_draft)
        sent = server.requests[0]
    assert sent["path"] == "/v1/messages" and sent["json"]["max_tokens"] == 2000
    assert "sk-ant-test" in (sent["headers"].get("x-api-key", "") + sent["headers"].get("authorization", "")), sent["headers"]
    # langchain-anthropic's usage metadata: input tokens include the cache reads and writes
    assert (gen.tokens_in, gen.tokens_out) == (1250, 300) and g.last_call["tokens_estimated"] is False
    assert g.last_call["input_token_details"] == {"cache_read": 1000, "cache_creation": 50}
    assert gen.cost_usd == pytest.approx((250 * 3 + 1000 * 0.3 + 300 * 15) / 1e6)


@pytest.mark.parametrize("error", [(529, "overloaded_error", "Overloaded"), (429, "rate_limit_error", "slow down"),
                                   (500, "api_error", "boom")])
def test_anthropic_transient_errors_are_retried(request_draft, error):
    with FakeAnthropic([error, error, REPLY]) as server:
        g = anthropic_generator(server)
        gen = g.generate(request_draft)
        assert len(server.requests) == 3
    assert gen.calls == 3 and "relu_forward" in gen.source


@pytest.mark.parametrize("status,kind,hint", [(401, "authentication_error", "ANTHROPIC_API_KEY"),
                                              (403, "permission_error", "ANTHROPIC_API_KEY"),
                                              (400, "invalid_request_error", "rejected"),
                                              (404, "not_found_error", "model name")])
def test_anthropic_client_errors_are_endpoint_errors_not_retried(request_draft, status, kind, hint):
    with FakeAnthropic([(status, kind, "nope from anthropic"), REPLY]) as server:
        with pytest.raises(LLMEndpointError, match=rf"not retried.*HTTP {status}.*nope from anthropic.*{hint}") as info:
            anthropic_generator(server).generate(request_draft)
        assert len(server.requests) == 1
    assert info.value.status == status and not info.value.retryable


def test_anthropic_retries_exhausted(request_draft):
    with FakeAnthropic([(529, "overloaded_error", "Overloaded")] * 3) as server:
        with pytest.raises(LLMEndpointError, match=r"after 2 call\(s\).*529") as info:
            anthropic_generator(server, max_attempts=2).generate(request_draft)
    assert info.value.retryable and info.value.status == 529


# -- the classifier, provider by provider ------------------------------------------------------------

def _standin(module: str, name: str, bases: tuple = (Exception,), **attrs) -> type:
    cls = type(name, bases, dict(attrs))
    cls.__module__ = module
    return cls


def _openai_errors():
    request = httpx.Request("POST", "http://x/v1/chat/completions")

    def status(cls, code):
        return cls("m", response=httpx.Response(code, request=request), body=None)

    return {
        "connection": (openai.APIConnectionError(request=request), True, None),
        "timeout": (openai.APITimeoutError(request=request), True, None),
        "429": (status(openai.RateLimitError, 429), True, 429),
        "500": (status(openai.InternalServerError, 500), True, 500),
        "401": (status(openai.AuthenticationError, 401), False, 401),
        "400": (status(openai.BadRequestError, 400), False, 400),
    }


def _anthropic_errors():
    anthropic = pytest.importorskip("anthropic")
    import httpx2  # the transport anthropic 2.x uses

    request = httpx2.Request("POST", "http://x/v1/messages")

    def status(cls, code):
        return cls("m", response=httpx2.Response(code, request=request), body=None)

    return {
        "connection": (anthropic.APIConnectionError(request=request), True, None),
        "timeout": (anthropic.APITimeoutError(request=request), True, None),
        "429": (status(anthropic.RateLimitError, 429), True, 429),
        "529": (status(anthropic.OverloadedError, 529), True, 529),
        "503": (status(anthropic.APIStatusError, 503), True, 503),
        "401": (status(anthropic.AuthenticationError, 401), False, 401),
        "403": (status(anthropic.PermissionDeniedError, 403), False, 403),
        "404": (status(anthropic.NotFoundError, 404), False, 404),
    }


def _google_api_core_errors():
    # google-api-core 2.44.0, google/api_core/exceptions.py: GoogleAPICallError subclasses with an int class attribute
    # `code` (the HTTP status); ResourceExhausted < TooManyRequests < ClientError, DeadlineExceeded < GatewayTimeout
    m = "google.api_core.exceptions"
    base = _standin(m, "GoogleAPIError")
    call = _standin(m, "GoogleAPICallError", (base,), code=None)
    client, server = _standin(m, "ClientError", (call,)), _standin(m, "ServerError", (call,))
    too_many = _standin(m, "TooManyRequests", (client,), code=429)
    gateway = _standin(m, "GatewayTimeout", (server,), code=504)
    return {
        "ResourceExhausted": (_standin(m, "ResourceExhausted", (too_many,))("quota"), True, 429),
        "ServiceUnavailable": (_standin(m, "ServiceUnavailable", (server,), code=503)("down"), True, 503),
        "DeadlineExceeded": (_standin(m, "DeadlineExceeded", (gateway,))("slow"), True, 504),
        "InternalServerError": (_standin(m, "InternalServerError", (server,), code=500)("boom"), True, 500),
        "Unauthenticated": (_standin(m, "Unauthenticated", (_standin(m, "Unauthorized", (client,), code=401),))("x"),
                            False, 401),
        "InvalidArgument": (_standin(m, "InvalidArgument", (_standin(m, "BadRequest", (client,), code=400),))("x"),
                            False, 400),
    }


def _google_genai_errors():
    # google-genai 3.6.1, google/genai/errors.py: APIError(code, response_json) sets .code (int), .status (a string
    # such as "RESOURCE_EXHAUSTED") and .message; ClientError (4xx) and ServerError (5xx) subclass it
    m = "google.genai.errors"

    def init(self, code, response_json, response=None):
        self.code, self.status = code, response_json.get("status")
        self.message = response_json.get("message")
        Exception.__init__(self, f"{code} {self.status}. {response_json}")

    api = _standin(m, "APIError", __init__=init)
    client, server = _standin(m, "ClientError", (api,)), _standin(m, "ServerError", (api,))
    return {
        "429": (client(429, {"status": "RESOURCE_EXHAUSTED", "message": "quota"}), True, 429),
        "503": (server(503, {"status": "UNAVAILABLE", "message": "overloaded"}), True, 503),
        "400": (client(400, {"status": "INVALID_ARGUMENT", "message": "bad"}), False, 400),
        "403": (client(403, {"status": "PERMISSION_DENIED", "message": "key"}), False, 403),
    }


def _cohere_errors():
    # cohere 7.3.1: cohere.core.api_error.ApiError(*, headers, status_code, body); cohere.errors.* set status_code
    base = _standin("cohere.core.api_error", "ApiError",
                    __init__=lambda self, *, status_code=None, body=None: setattr(self, "status_code", status_code))

    def err(module, name, code):
        return _standin(f"cohere.errors.{module}", name, (base,))(status_code=code)

    return {
        "TooManyRequestsError": (err("too_many_requests_error", "TooManyRequestsError", 429), True, 429),
        "ServiceUnavailableError": (err("service_unavailable_error", "ServiceUnavailableError", 503), True, 503),
        "GatewayTimeoutError": (err("gateway_timeout_error", "GatewayTimeoutError", 504), True, 504),
        "UnauthorizedError": (err("unauthorized_error", "UnauthorizedError", 401), False, 401),
    }


def _mistral_errors():
    # langchain-mistralai 1.1.6 calls the API with httpx itself and raises httpx.HTTPStatusError (_raise_on_error);
    # the mistralai 3.7.0 SDK's MistralError sets status_code from its raw response, NoResponseError has none
    request = httpx.Request("POST", "https://api.mistral.ai/v1/chat/completions")

    def http(code):
        return httpx.HTTPStatusError("e", request=request, response=httpx.Response(code, request=request))

    sdk = _standin("mistralai.client.errors.mistralerror", "MistralError",
                   __init__=lambda self, message, code: (setattr(self, "status_code", code), Exception.__init__(self, message))[0])
    return {
        "httpx 429": (http(429), True, 429),
        "httpx 401": (http(401), False, 401),
        "SDKError 502": (_standin("mistralai.client.errors.sdkerror", "SDKError", (sdk,))("bad gateway", 502), True, 502),
        "NoResponseError": (_standin("mistralai.client.errors.no_response_error", "NoResponseError")("none"), True, None),
    }


def _groq_errors():
    # groq 1.7.0, groq/_exceptions.py (the same Stainless layout as openai): RateLimitError / InternalServerError <
    # APIStatusError (status_code), APITimeoutError < APIConnectionError < APIError < GroqError
    m = "groq._exceptions"
    api = _standin(m, "APIError", (_standin(m, "GroqError"),))
    conn = _standin(m, "APIConnectionError", (api,))
    status = _standin(m, "APIStatusError", (api,), __init__=lambda self, code: setattr(self, "status_code", code))
    return {
        "APITimeoutError": (_standin(m, "APITimeoutError", (conn,))("slow"), True, None),
        "RateLimitError": (_standin(m, "RateLimitError", (status,))(429), True, 429),
        "InternalServerError": (_standin(m, "InternalServerError", (status,))(500), True, 500),
        "AuthenticationError": (_standin(m, "AuthenticationError", (status,))(401), False, 401),
    }


def _bedrock_errors():
    # botocore 1.44.8, botocore/exceptions.py: ClientError(error_response, operation_name) keeps error_response as
    # .response ({"Error": {"Code", "Message"}, "ResponseMetadata": {"HTTPStatusCode"}}); connection errors are
    # BotoCoreError subclasses (EndpointConnectionError < ConnectionError, ReadTimeoutError)
    m = "botocore.exceptions"

    def init(self, error_response, operation_name):
        self.response, self.operation_name = error_response, operation_name
        Exception.__init__(self, f"An error occurred ({error_response['Error']['Code']}) when calling the "
                                 f"{operation_name} operation: {error_response['Error']['Message']}")

    client_error = _standin(m, "ClientError", __init__=init)

    def err(code, status):
        return client_error({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                            "Converse")

    boto = _standin(m, "BotoCoreError")
    return {
        "ThrottlingException": (err("ThrottlingException", 429), True, 429),
        "ServiceUnavailableException": (err("ServiceUnavailableException", 503), True, 503),
        "ModelNotReadyException": (err("ModelNotReadyException", 429), True, 429),
        "AccessDeniedException": (err("AccessDeniedException", 403), False, 403),
        "ValidationException": (err("ValidationException", 400), False, 400),
        "EndpointConnectionError": (_standin(m, "EndpointConnectionError", (_standin(m, "ConnectionError", (boto,)),))(),
                                    True, None),
        "NoCredentialsError": (_standin(m, "NoCredentialsError", (boto,))(), False, None),
    }


def _transport_errors():
    import aiohttp
    import requests

    request = httpx.Request("GET", "http://x")
    return {
        "httpx ConnectError": (httpx.ConnectError("refused", request=request), True, None),
        "httpx ReadTimeout": (httpx.ReadTimeout("slow", request=request), True, None),
        "httpx UnsupportedProtocol": (httpx.UnsupportedProtocol("ftp?", request=request), False, None),
        "requests ConnectionError": (requests.ConnectionError("refused"), True, None),
        "requests ReadTimeout": (requests.ReadTimeout("slow"), True, None),
        "aiohttp ServerDisconnectedError": (aiohttp.ServerDisconnectedError(), True, None),
        "builtin ConnectionResetError": (ConnectionResetError(), True, None),
        "builtin TimeoutError": (TimeoutError(), True, None),
    }


def _generic_errors():
    class Custom(Exception):
        pass

    def with_attr(attr, value):
        exc = Custom("x")
        setattr(exc, attr, value)
        return exc

    return {
        "status_code 503": (with_attr("status_code", 503), True, 503),
        "status 408": (with_attr("status", 408), True, 408),
        "http_status 429": (with_attr("http_status", 429), True, 429),
        "code 502": (with_attr("code", 502), True, 502),
        "status_code 401": (with_attr("status_code", 401), False, 401),
        # ollama 0.6.3: ResponseError(error, status_code=-1) when the server gave no status
        "ollama -1": (_standin("ollama._types", "ResponseError",
                               __init__=lambda self: setattr(self, "status_code", -1))(), False, None),
    }


def _langchain_errors():
    from langchain_core import exceptions as lc

    return {
        "ModelRateLimitError": (lc.ModelRateLimitError("slow"), True, None),
        "ModelAPIError": (lc.ModelAPIError("boom"), True, None),
        "ModelAuthenticationError": (lc.ModelAuthenticationError("key"), False, None),
        "ContextOverflowError": (lc.ContextOverflowError("too long"), False, None),
    }


PROVIDER_ERRORS = {
    "openai": _openai_errors, "anthropic": _anthropic_errors, "google.api_core": _google_api_core_errors,
    "google.genai": _google_genai_errors, "cohere": _cohere_errors, "mistral": _mistral_errors,
    "groq": _groq_errors, "bedrock": _bedrock_errors, "transports": _transport_errors, "generic": _generic_errors,
    "langchain_core": _langchain_errors,
}


@pytest.mark.parametrize("family", sorted(PROVIDER_ERRORS))
def test_transient_errors_by_provider(family):
    for label, (exc, retryable, status) in PROVIDER_ERRORS[family]().items():
        verdict = classify(exc)
        assert verdict.endpoint, (family, label)
        assert (verdict.retryable, verdict.status) == (retryable, status), (family, label, verdict)
        assert is_retryable(exc) is retryable


def test_a_wrapped_provider_error_is_classified_by_what_it_was_raised_from():
    # langchain-google-genai 4.4.3 raises ChatGoogleGenerativeAIError(msg) from the SDK's ClientError
    client_error, _, _ = _google_genai_errors()["400"]
    wrapper = _standin("langchain_google_genai.chat_models", "ChatGoogleGenerativeAIError")
    try:
        try:
            raise client_error
        except Exception as inner:
            raise wrapper("Error calling model 'gemini' (INVALID_ARGUMENT): bad") from inner
    except Exception as outer:
        verdict = classify(outer)
    assert verdict.endpoint and not verdict.retryable and verdict.status == 400
    # an integration's own error without a status is the endpoint's, not retried
    assert classify(wrapper("blocked")).endpoint and not classify(wrapper("blocked")).retryable
    # our own bugs are not the endpoint's
    assert not classify(KeyError("x")).endpoint and not classify(ValueError("x")).endpoint


class Raising(GenericFakeChatModel):
    """Raises the scripted exceptions, then answers."""

    errors: list = []

    def _generate(self, *args: Any, **kwargs: Any):
        if self.errors:
            raise self.errors.pop(0)
        return super()._generate(*args, **kwargs)


def _raising(errors, reply=REPLY):
    return Raising(messages=iter([AIMessage(content=reply)]), errors=list(errors))


def test_a_non_retryable_provider_error_stops_cleanly_as_an_endpoint_error(request_draft):
    denied, _, _ = _bedrock_errors()["AccessDeniedException"]
    g = LLMGenerator(_raising([denied]), name="bedrock_converse:anthropic.claude", backoff_initial_s=0.0)
    with pytest.raises(LLMEndpointError, match=r"not retried.*HTTP 403.*AccessDeniedException.*AWS credentials") as info:
        g.generate(request_draft)
    assert info.value.status == 403 and info.value.calls == 1
    no_creds, _, _ = _bedrock_errors()["NoCredentialsError"]
    with pytest.raises(LLMEndpointError, match="NoCredentialsError.*no credentials: AWS credentials"):
        LLMGenerator(_raising([no_creds]), name="bedrock_converse:m", backoff_initial_s=0.0).generate(request_draft)
    with pytest.raises(KeyError):  # not the endpoint's: raised as is
        LLMGenerator(_raising([KeyError("bug")]), backoff_initial_s=0.0).generate(request_draft)


def test_transient_provider_errors_are_retried_then_succeed(request_draft):
    errors = [_google_api_core_errors()["ResourceExhausted"][0], _bedrock_errors()["ThrottlingException"][0],
              _cohere_errors()["ServiceUnavailableError"][0]]
    g = LLMGenerator(_raising(errors), name="google_vertexai:gemini", backoff_initial_s=0.0, backoff_max_s=0.0)
    gen = g.generate(request_draft)
    assert gen.calls == 4 and "relu_forward" in gen.source


# -- usage details ------------------------------------------------------------------------------------

def test_usage_details_are_recorded_and_summed_over_repairs(request_draft):
    def reply(text, cache_read, reasoning):
        return AIMessage(content=text, response_metadata={"model_name": "gpt-4o-mini"}, usage_metadata={
            "input_tokens": 900, "output_tokens": 400, "total_tokens": 1300,
            "input_token_details": {"cache_read": cache_read, "cache_creation": 0},
            "output_token_details": {"reasoning": reasoning}})

    chat = GenericFakeChatModel(messages=iter([reply("no code", 500, 100), reply(REPLY, 800, 50)]))
    g = LLMGenerator(chat, name="openai:gpt-4o-mini", prices=Prices({"gpt-4o-mini": (1.0, 2.0, 0.5)}))
    gen = g.generate(request_draft)
    assert g.last_call["repairs"] == 1 and not g.last_call["tokens_estimated"]
    assert (gen.tokens_in, gen.tokens_out) == (1800, 800)
    assert g.last_call["input_token_details"] == {"cache_read": 1300}
    assert g.last_call["output_token_details"] == {"reasoning": 150}
    assert gen.cost_usd == pytest.approx(((1800 - 1300) * 1.0 + 1300 * 0.5 + 800 * 2.0) / 1e6)
    # the attempt carries them (generate -> the candidate -> tokens.jsonl, tests/nodes/test_update.py)
    assert gen.usage_details == {"input": {"cache_read": 1300}, "output": {"reasoning": 150}}


def test_no_usage_metadata_is_estimated_and_flagged(request_draft):
    g = LLMGenerator(FakeListChatModel(responses=[REPLY]), name="x:y")
    gen = g.generate(request_draft)
    assert g.last_call["tokens_estimated"] is True and gen.tokens_out == len(REPLY) // 4
    assert g.last_call["input_token_details"] == {} and g.last_call["output_token_details"] == {}
    assert gen.usage_details is None


def test_init_provider_chat_model_passes_model_kwargs_through(fake_packages, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")  # either of its key variables will do
    chat = init_provider_chat_model("google_genai", "gemini-2.5-pro", model_kwargs={"temperature": 0.9})
    assert chat.temperature == 0.9 and fake_packages[-1]["max_retries"] == 0
