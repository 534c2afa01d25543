"""Which chat-model failures are the endpoint's, and which of those are worth retrying.

:func:`classify` looks at an exception and the exceptions it was raised from (``__cause__`` /
``__context__``: LangChain integrations often wrap the SDK's error) and answers
:class:`ErrorVerdict`: whether it is an endpoint failure at all (else it is a bug to raise as is), whether
it is transient, and its HTTP status when one is known. No SDK is imported: rules match an exception
class's module and name along its MRO, and the status attributes SDKs set, so an SDK that is not
installed costs nothing and a LangChain wrapper that subclasses the SDK's class is still recognised.

The rules, in order, for each exception in the chain (the first that gives a verdict decides):

1. ``langchain_core.exceptions.ModelError`` (LangChain's provider-neutral classes, raised by recent
   integrations): its ``is_retryable``.
2. Transient classes by SDK: openai, anthropic, groq, together (``APIConnectionError``, ``APITimeoutError``,
   ``RateLimitError``, ``InternalServerError``; anthropic's ``OverloadedError`` (529) and
   ``ServiceUnavailableError`` / ``GatewayTimeoutError`` subclass it), google.api_core (``TooManyRequests``,
   ``ResourceExhausted``, ``InternalServerError``, ``BadGateway``, ``ServiceUnavailable``, ``GatewayTimeout``,
   ``DeadlineExceeded``), google.genai (``ServerError``, and any ``APIError`` with code 429),
   cohere (``TooManyRequestsError``, ``InternalServerError``, ``ServiceUnavailableError``,
   ``GatewayTimeoutError``), mistralai (``NoResponseError``), botocore (connection and read timeouts),
   huggingface_hub (``OverloadedError``, ``InferenceTimeoutError``), and the transports: httpx / httpx2
   (``TimeoutException``, ``NetworkError``, ``RemoteProtocolError``), requests (``ConnectionError``,
   ``Timeout``, ``ChunkedEncodingError``), urllib3, aiohttp (``ClientConnectionError``,
   ``ServerTimeoutError``, ``ClientPayloadError``).
3. botocore ``ClientError`` (Bedrock): the error code in ``response["Error"]["Code"]``
   (``ThrottlingException``, ``ServiceUnavailableException``, ``InternalServerException``,
   ``ModelNotReadyException``, ``ModelTimeoutException``, ...).
4. The generic rule: an HTTP status in ``status_code`` / ``http_status`` / ``status`` / ``code`` or on
   ``response`` (``status_code``, ``status``, botocore's ``ResponseMetadata.HTTPStatusCode``) of 408, 429
   or 5xx is transient; any other status is a non-retryable endpoint error (401, 403, 400, 404, ...).
5. Python's own ``ConnectionError`` and ``TimeoutError``: transient.

Any other exception raised by a provider SDK or a LangChain integration package (``langchain_*``) is an
endpoint error that is not retried (a missing credential, a refused request...). Everything else (a
``KeyError`` in our code, ``BudgetExceeded``, ``StopRequested``) is not the endpoint's and is raised as is.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ErrorVerdict", "classify", "http_status", "is_endpoint_error", "is_retryable", "is_transient_status"]


@dataclass(frozen=True)
class ErrorVerdict:
    endpoint: bool  # the endpoint's failure (wrap it in LLMEndpointError), not a bug
    retryable: bool  # transient: worth another call
    status: int | None = None  # the HTTP status, where one is known


NOT_ENDPOINT = ErrorVerdict(False, False)

_STAINLESS = frozenset({"APIConnectionError", "APITimeoutError", "RateLimitError", "InternalServerError"})
# (module prefix, class names anywhere in the MRO that mean "transient")
_TRANSIENT_CLASSES: tuple[tuple[str, frozenset[str]], ...] = (
    ("openai", _STAINLESS),
    ("anthropic", _STAINLESS | {"OverloadedError", "ServiceUnavailableError", "GatewayTimeoutError"}),
    ("groq", _STAINLESS),
    ("together", _STAINLESS),
    ("google.api_core", frozenset({"TooManyRequests", "ResourceExhausted", "InternalServerError", "BadGateway",
                                   "ServiceUnavailable", "GatewayTimeout", "DeadlineExceeded"})),
    ("google.genai", frozenset({"ServerError"})),
    ("google.auth", frozenset({"TransportError"})),
    ("cohere", frozenset({"TooManyRequestsError", "InternalServerError", "ServiceUnavailableError",
                          "GatewayTimeoutError"})),
    ("mistralai", frozenset({"NoResponseError"})),
    ("botocore", frozenset({"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError",
                            "ConnectionClosedError"})),
    ("huggingface_hub", frozenset({"OverloadedError", "InferenceTimeoutError", "InferenceEndpointTimeoutError"})),
    ("httpx", frozenset({"TimeoutException", "NetworkError", "RemoteProtocolError"})),
    ("httpx2", frozenset({"TimeoutException", "NetworkError", "RemoteProtocolError"})),
    ("requests", frozenset({"ConnectionError", "Timeout", "ChunkedEncodingError"})),
    ("urllib3", frozenset({"ProtocolError", "NewConnectionError", "TimeoutError"})),
    ("aiohttp", frozenset({"ClientConnectionError", "ServerTimeoutError", "ClientPayloadError"})),
)

# Modules whose exceptions are the endpoint's (or the client's) even when they carry no status.
_ENDPOINT_MODULES = ("openai", "anthropic", "groq", "together", "fireworks", "google", "cohere", "mistralai",
                     "botocore", "boto3", "ollama", "huggingface_hub", "xai_sdk", "ibm_watsonx_ai", "litellm",
                     "httpx", "httpx2", "httpcore", "httpcore2", "requests", "urllib3", "aiohttp")

# Bedrock / AWS error codes worth another call (botocore ClientError.response["Error"]["Code"]).
BOTO_TRANSIENT_CODES = frozenset({
    "ThrottlingException", "Throttling", "ThrottledException", "TooManyRequestsException", "RequestLimitExceeded",
    "ServiceUnavailable", "ServiceUnavailableException", "InternalServerException", "InternalFailure",
    "InternalServerError", "ModelNotReadyException", "ModelTimeoutException", "RequestTimeout",
    "RequestTimeoutException", "SlowDown",
})


def is_transient_status(status: int) -> bool:
    """408 (request timeout), 429 (rate limit) and 5xx (the server's failure, incl. Anthropic's 529)."""
    return status in (408, 429) or 500 <= status < 600


def _as_status(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and 100 <= value < 600:
        return value
    return None


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries, if any (None for SDK placeholders such as ollama's -1)."""
    for attr in ("status_code", "http_status", "status", "code"):
        status = _as_status(getattr(exc, attr, None))
        if status is not None:
            return status
    response = getattr(exc, "response", None)
    if isinstance(response, dict):  # botocore ClientError
        return _as_status((response.get("ResponseMetadata") or {}).get("HTTPStatusCode"))
    if response is not None:
        for attr in ("status_code", "status"):
            try:
                status = _as_status(getattr(response, attr, None))
            except Exception:  # noqa: BLE001 - an odd response object must not break the verdict
                status = None
            if status is not None:
                return status
    return None


def _in(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _mro(exc: BaseException) -> list[tuple[str, str]]:
    return [(cls.__module__ or "", cls.__name__) for cls in type(exc).__mro__]


def _is_model_error(exc: BaseException) -> bool:
    try:
        from langchain_core.exceptions import ModelError
    except ImportError:  # pragma: no cover - langchain-core is a dependency
        return False
    return isinstance(exc, ModelError)


def _verdict(exc: BaseException) -> ErrorVerdict | None:
    """The verdict of one exception of the chain, or None when it says nothing."""
    status = http_status(exc)
    if _is_model_error(exc):
        return ErrorVerdict(True, bool(getattr(exc, "is_retryable", False)), status)
    mro = _mro(exc)
    for prefix, names in _TRANSIENT_CLASSES:
        if any(_in(module, prefix) and name in names for module, name in mro):
            return ErrorVerdict(True, True, status)
    if any(_in(module, "google.genai") and name == "APIError" for module, name in mro) and status == 429:
        return ErrorVerdict(True, True, status)
    if any(_in(module, "botocore") and name == "ClientError" for module, name in mro):
        response = getattr(exc, "response", None) or {}
        code = (response.get("Error") or {}).get("Code") if isinstance(response, dict) else None
        transient = code in BOTO_TRANSIENT_CODES or (status is not None and is_transient_status(status))
        return ErrorVerdict(True, transient, status)
    if status is not None:
        return ErrorVerdict(True, is_transient_status(status), status)
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return ErrorVerdict(True, True, None)
    if any(_in(module, prefix) for module, _ in mro for prefix in _ENDPOINT_MODULES) or any(
            module.startswith("langchain_") and not _in(module, "langchain_core") for module, _ in mro):
        return ErrorVerdict(True, False, None)
    return None


def _chain(exc: BaseException, depth: int = 6) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < depth and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return seen


def classify(exc: BaseException) -> ErrorVerdict:
    """The verdict on ``exc``: the first exception of its chain (itself, then what it was raised from) that
    the rules recognise decides; a status found anywhere in the chain is reported with it."""
    chain = _chain(exc)
    for link in chain:
        verdict = _verdict(link)
        if verdict is not None:
            if verdict.status is None:
                status = next((s for s in map(http_status, chain) if s is not None), None)
                if status is not None:
                    verdict = ErrorVerdict(verdict.endpoint, verdict.retryable, status)
            return verdict
    return NOT_ENDPOINT


def is_retryable(exc: BaseException) -> bool:
    """Endpoint errors worth retrying: connection problems, timeouts, rate limits (429), 408 and 5xx."""
    return classify(exc).retryable


def is_endpoint_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the endpoint's failure (retryable or not) rather than a bug."""
    return classify(exc).endpoint
