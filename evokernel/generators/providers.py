"""Chat models for generator specs: EvoKernel's OpenAI-compatible providers and every provider of
LangChain's ``init_chat_model``.

* ``openai``, ``deepseek``, ``ollama``, ``vllm`` (:data:`PROVIDERS`): ``ChatOpenAI`` with the base URL and
  key from the environment (a missing key is an error naming the variable); ``ollama`` and ``vllm`` talk
  to the servers' OpenAI-compatible ``/v1`` endpoints.
* every other provider of ``langchain.chat_models.init_chat_model`` (:data:`LANGCHAIN_PROVIDERS`:
  anthropic, google_genai, google_vertexai, bedrock_converse, mistralai, groq, ...): built by
  ``init_chat_model(model, model_provider=...)`` from the provider's integration package, which is an
  optional install (``pip install langchain-anthropic`` or ``pip install 'evokernel[anthropic]'``).
* ``langchain:PROVIDER:MODEL``: ``init_chat_model`` for any provider, our own four included (e.g.
  ``langchain:ollama:qwen2.5-coder:7b`` is langchain-ollama's ``ChatOllama`` on Ollama's native API).

The run's options (temperature, timeout, max output tokens, ``max_retries=0``: EvoKernel retries itself,
:mod:`evokernel.generators.retry`) go to a chat model class only under the field name it declares
(``max_tokens``, ``max_output_tokens``, ``num_predict``...), so one spec syntax fits every class.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

__all__ = [
    "ALIASES",
    "LANGCHAIN_PROVIDERS",
    "PROVIDERS",
    "LangChainProvider",
    "Provider",
    "chat_openai",
    "credentials_hint",
    "init_provider_chat_model",
    "provider_names",
    "resolve_provider",
]


# -- OpenAI-compatible endpoints (ChatOpenAI) ---------------------------------------------------

@dataclass(frozen=True)
class Provider:
    base_url: str | None  # None: the OpenAI default (or OPENAI_BASE_URL)
    key_env: str | None  # env var holding the key; None: a local server that needs none
    base_url_env: str | None = None  # env var overriding base_url
    placeholder_key: str = "EMPTY"


PROVIDERS: dict[str, Provider] = {
    "openai": Provider(None, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "deepseek": Provider("https://api.deepseek.com", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL"),
    "ollama": Provider("http://127.0.0.1:11434/v1", None, "OLLAMA_BASE_URL", "ollama"),
    "vllm": Provider("http://127.0.0.1:8000/v1", None, "VLLM_BASE_URL"),
}


def chat_openai(provider_name: str, model: str, *, base_url: str | None, api_key: str | None,
                temperature: float | None, timeout: float | None, max_tokens: int | None,
                model_kwargs: dict[str, Any] | None = None) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    provider = PROVIDERS[provider_name]
    url = base_url or (os.environ.get(provider.base_url_env) if provider.base_url_env else None) or provider.base_url
    key = api_key or (os.environ.get(provider.key_env) if provider.key_env else None)
    if not key:
        if provider.key_env is None or (provider_name == "openai" and url):
            key = provider.placeholder_key  # local OpenAI-compatible servers (vLLM, Ollama) ignore it
        elif provider_name == "openai":
            raise ValueError(f"openai:{model}: no API key: set OPENAI_API_KEY (or OPENAI_BASE_URL to use a "
                             "local OpenAI-compatible server such as vLLM), or use --generator template offline")
        else:
            raise ValueError(f"{provider_name}:{model}: no API key: set {provider.key_env}")
    kwargs: dict[str, Any] = {"model": model, "api_key": key, "max_retries": 0, "use_responses_api": False}
    if url:
        kwargs["base_url"] = url
    if temperature is not None:
        kwargs["temperature"] = temperature
    if timeout is not None:
        kwargs["timeout"] = timeout
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    kwargs.update(model_kwargs or {})
    return ChatOpenAI(**kwargs)


# -- init_chat_model providers -------------------------------------------------------------------

@dataclass(frozen=True)
class LangChainProvider:
    """One ``init_chat_model`` provider: where its chat model class lives and how it authenticates."""

    module: str  # the module init_chat_model imports the class from
    class_name: str
    package: str  # the pip package that provides it
    keys: tuple[str, ...] = ()  # env vars any one of which holds its API key (checked when the model is built)
    auth: str = ""  # how it authenticates otherwise (cloud credentials), for hints and docs
    options: tuple[str, ...] | None = None  # run options it takes (None: whichever its class declares)
    defaults: dict[str, Any] = field(default_factory=dict)  # extra keyword arguments for init_chat_model


_AWS = ("AWS credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or an instance role) and a "
        "region (AWS_REGION / AWS_DEFAULT_REGION)")
_GCP = ("Google Cloud application default credentials (gcloud auth application-default login, or "
        "GOOGLE_APPLICATION_CREDENTIALS) and a project (GOOGLE_CLOUD_PROJECT)")

# Mirrors langchain 1.5's init_chat_model registry (langchain/chat_models/base.py, _BUILTIN_PROVIDERS); the
# key variables were read from each integration package's source. A provider that a newer langchain adds
# is still accepted (init_chat_model is asked), just without a key check or a package hint.
LANGCHAIN_PROVIDERS: dict[str, LangChainProvider] = {
    "anthropic": LangChainProvider("langchain_anthropic", "ChatAnthropic", "langchain-anthropic",
                                   ("ANTHROPIC_API_KEY",)),
    "anthropic_bedrock": LangChainProvider("langchain_aws", "ChatAnthropicBedrock", "langchain-aws", auth=_AWS),
    "azure_ai": LangChainProvider("langchain_azure_ai.chat_models", "AzureAIOpenAIApiChatModel",
                                  "langchain-azure-ai",
                                  auth="an Azure AI Foundry project endpoint (AZURE_AI_PROJECT_ENDPOINT) and "
                                       "Azure credentials"),
    "azure_openai": LangChainProvider("langchain_openai", "AzureChatOpenAI", "langchain-openai",
                                      auth="AZURE_OPENAI_API_KEY (or AZURE_OPENAI_AD_TOKEN), AZURE_OPENAI_ENDPOINT "
                                           "and OPENAI_API_VERSION; MODEL is the deployment name"),
    "baseten": LangChainProvider("langchain_baseten", "ChatBaseten", "langchain-baseten", ("BASETEN_API_KEY",)),
    "bedrock": LangChainProvider("langchain_aws", "ChatBedrock", "langchain-aws", auth=_AWS),
    "bedrock_converse": LangChainProvider("langchain_aws", "ChatBedrockConverse", "langchain-aws", auth=_AWS),
    "bedrock_mantle_anthropic": LangChainProvider("langchain_aws", "ChatAnthropicMantle", "langchain-aws", auth=_AWS),
    "bedrock_mantle_openai": LangChainProvider("langchain_aws", "ChatOpenAIMantle", "langchain-aws", auth=_AWS),
    "cohere": LangChainProvider("langchain_cohere", "ChatCohere", "langchain-cohere", ("COHERE_API_KEY", "CO_API_KEY")),
    "deepseek": LangChainProvider("langchain_deepseek", "ChatDeepSeek", "langchain-deepseek", ("DEEPSEEK_API_KEY",)),
    "fireworks": LangChainProvider("langchain_fireworks", "ChatFireworks", "langchain-fireworks",
                                   ("FIREWORKS_API_KEY",)),
    "google_anthropic_vertex": LangChainProvider("langchain_google_vertexai.model_garden", "ChatAnthropicVertex",
                                                 "langchain-google-vertexai", auth=_GCP),
    "google_genai": LangChainProvider("langchain_google_genai", "ChatGoogleGenerativeAI", "langchain-google-genai",
                                      ("GOOGLE_API_KEY", "GEMINI_API_KEY")),
    "google_vertexai": LangChainProvider("langchain_google_vertexai", "ChatVertexAI", "langchain-google-vertexai",
                                         auth=_GCP),
    "groq": LangChainProvider("langchain_groq", "ChatGroq", "langchain-groq", ("GROQ_API_KEY",)),
    # the hosted inference API (HuggingFaceEndpoint); backend="pipeline" in model_kwargs runs it locally instead.
    # Its kwargs reach two classes, so only the temperature (which both declare) is passed for the run.
    "huggingface": LangChainProvider("langchain_huggingface", "ChatHuggingFace", "langchain-huggingface",
                                     ("HF_TOKEN", "HUGGINGFACEHUB_API_TOKEN"), options=("temperature",),
                                     defaults={"backend": "endpoint", "task": "text-generation"}),
    "ibm": LangChainProvider("langchain_ibm", "ChatWatsonx", "langchain-ibm",
                             auth="WATSONX_APIKEY (or WATSONX_TOKEN), WATSONX_URL and WATSONX_PROJECT_ID"),
    "langsmith": LangChainProvider("langchain_openai", "ChatOpenAI", "langchain-openai",
                                   ("LANGSMITH_GATEWAY_API_KEY", "LANGSMITH_API_KEY")),
    "litellm": LangChainProvider("langchain_litellm", "ChatLiteLLM", "langchain-litellm",
                                 auth="the key of the provider LiteLLM routes to (e.g. OPENAI_API_KEY)"),
    "meta": LangChainProvider("langchain_meta", "ChatMetaModel", "langchain-meta", ("LLAMA_API_KEY", "META_API_KEY")),
    "mistralai": LangChainProvider("langchain_mistralai", "ChatMistralAI", "langchain-mistralai", ("MISTRAL_API_KEY",)),
    "nvidia": LangChainProvider("langchain_nvidia_ai_endpoints", "ChatNVIDIA", "langchain-nvidia-ai-endpoints",
                                ("NVIDIA_API_KEY",)),
    "ollama": LangChainProvider("langchain_ollama", "ChatOllama", "langchain-ollama",
                                auth="none (a local Ollama server; OLLAMA_HOST or base_url)"),
    "openai": LangChainProvider("langchain_openai", "ChatOpenAI", "langchain-openai", ("OPENAI_API_KEY",)),
    "openrouter": LangChainProvider("langchain_openrouter", "ChatOpenRouter", "langchain-openrouter",
                                    ("OPENROUTER_API_KEY",)),
    "perplexity": LangChainProvider("langchain_perplexity", "ChatPerplexity", "langchain-perplexity",
                                    ("PPLX_API_KEY", "PERPLEXITY_API_KEY")),
    "together": LangChainProvider("langchain_together", "ChatTogether", "langchain-together", ("TOGETHER_API_KEY",)),
    "upstage": LangChainProvider("langchain_upstage", "ChatUpstage", "langchain-upstage", ("UPSTAGE_API_KEY",)),
    "xai": LangChainProvider("langchain_xai", "ChatXAI", "langchain-xai", ("XAI_API_KEY",)),
}

# Short names people type, for init_chat_model's.
ALIASES: dict[str, str] = {
    "google": "google_genai", "gemini": "google_genai", "vertexai": "google_vertexai", "vertex": "google_vertexai",
    "mistral": "mistralai", "azure": "azure_openai", "aws": "bedrock_converse", "hf": "huggingface",
    "watsonx": "ibm",
}

# The run's options and the field names chat model classes use for them, most common first.
_OPTION_FIELDS: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature",),
    "timeout": ("timeout", "request_timeout", "default_request_timeout", "timeout_seconds"),
    "max_tokens": ("max_tokens", "max_output_tokens", "max_new_tokens", "num_predict", "max_completion_tokens"),
    "max_retries": ("max_retries",),
    "base_url": ("base_url", "endpoint_url", "api_base", "openai_api_base", "endpoint"),
    "api_key": ("api_key",),
}


def provider_names() -> list[str]:
    """Every provider a spec may name: ours, init_chat_model's, and the aliases."""
    return sorted(set(PROVIDERS) | set(LANGCHAIN_PROVIDERS) | set(ALIASES))


def resolve_provider(name: str) -> str:
    """A spec's provider name as init_chat_model spells it (``google-genai`` -> ``google_genai``, aliases)."""
    key = name.strip().lower().replace("-", "_")
    return ALIASES.get(key, key)


def credentials_hint(provider: str) -> str:
    """What to check when the provider refuses the credentials (401/403)."""
    if provider in PROVIDERS:
        env = PROVIDERS[provider].key_env
        return f"{env}" if env else "the server's own key setting"
    info = LANGCHAIN_PROVIDERS.get(resolve_provider(provider))
    if info is None:
        return ""
    return info.auth or " / ".join(info.keys)


def _field_for(cls: type, option: str) -> str | None:
    """The keyword under which ``cls`` takes the run option ``option``, or None when it declares none."""
    fields = getattr(cls, "model_fields", None)
    if not isinstance(fields, dict):
        return None
    by_name = bool((getattr(cls, "model_config", None) or {}).get("populate_by_name")) or bool(
        (getattr(cls, "model_config", None) or {}).get("validate_by_name"))
    candidates = _OPTION_FIELDS[option]
    if option == "api_key":  # openai_api_key, google_api_key, groq_api_key...
        candidates = candidates + tuple(sorted(n for n in fields if n.endswith("_api_key")))
    for candidate in candidates:
        for name, info in fields.items():
            alias = getattr(info, "alias", None)
            if candidate == alias:
                return candidate
            if candidate == name:
                return name if (by_name or not alias) else alias
    return None


def _import_class(provider: str, model: str, info: LangChainProvider) -> type:
    try:
        module = importlib.import_module(info.module)
    except ImportError as exc:
        raise ValueError(missing_package_message(provider, model, info.package)) from exc
    return getattr(module, info.class_name)


def missing_package_message(provider: str, model: str, package: str) -> str:
    extra = package.removeprefix("langchain-")
    return (f"{provider}:{model} needs the {package} package (LangChain's {provider} integration): "
            f"pip install {package}  (or pip install 'evokernel[{extra}]')")


def init_provider_chat_model(provider: str, model: str, *, temperature: float | None = None,
                             timeout: float | None = None, max_tokens: int | None = None,
                             base_url: str | None = None, api_key: str | None = None,
                             model_kwargs: dict[str, Any] | None = None) -> BaseChatModel:
    """``init_chat_model(model, model_provider=provider, ...)`` with the run's options under the names the
    provider's class declares and ``max_retries=0`` where it has one.

    Raises ``ValueError`` (never ImportError) when the integration package is missing (naming the pip
    package), when a provider that authenticates with one API key finds none (naming the variables), or
    when the class refuses the arguments.
    """
    from langchain.chat_models import init_chat_model

    provider = resolve_provider(provider)
    info = LANGCHAIN_PROVIDERS.get(provider)
    extra = dict(model_kwargs or {})
    kwargs: dict[str, Any] = dict(info.defaults) if info else {}
    options = {"temperature": temperature, "timeout": timeout, "max_tokens": max_tokens, "max_retries": 0,
               "base_url": base_url, "api_key": api_key}
    if info is not None:
        cls = _import_class(provider, model, info)
        for option, value in options.items():
            if value is None or (info.options is not None and option not in info.options):
                continue
            name = _field_for(cls, option)
            if name is not None:
                kwargs[name] = value
            elif option in ("base_url", "api_key"):
                raise ValueError(f"{provider}:{model}: {info.class_name} takes no {option}; pass the provider's "
                                 "own setting in model_kwargs or its environment variable")
        given = api_key or base_url or any(k.endswith("api_key") or k in ("base_url", "endpoint_url") for k in extra)
        if info.keys and not given and not any(os.environ.get(var) for var in info.keys):
            raise ValueError(f"{provider}:{model}: no API key: set {' or '.join(info.keys)}")
    else:  # a provider this table does not know (a newer langchain's): the common names only
        kwargs.update({k: v for k, v in options.items() if v is not None and k in ("temperature", "api_key", "base_url")})
    kwargs.update(extra)
    try:
        return init_chat_model(model, model_provider=provider, **kwargs)
    except ImportError as exc:
        package = info.package if info else _package_from(str(exc)) or f"langchain-{provider.replace('_', '-')}"
        raise ValueError(missing_package_message(provider, model, package)) from exc
    except ValueError as exc:
        if info is None and "Unsupported" in str(exc):
            raise ValueError(f"unknown provider {provider!r} (init_chat_model does not know it either); known: "
                             f"{', '.join(provider_names())}") from exc
        raise ValueError(f"{provider}:{model}: could not build the chat model: {exc}{_auth_suffix(info)}") from exc
    except Exception as exc:  # noqa: BLE001 - pydantic validation, SDK client set-up (credentials, regions)
        raise ValueError(f"{provider}:{model}: could not build the chat model: {type(exc).__name__}: {exc}"
                         f"{_auth_suffix(info)}") from exc


def _auth_suffix(info: LangChainProvider | None) -> str:
    if info is None:
        return ""
    need = info.auth or (" or ".join(info.keys) if info.keys else "")
    return f" (it needs {need})" if need else ""


def _package_from(message: str) -> str | None:
    # init_chat_model: "Initializing ChatX requires the langchain-x package. Please install it with `pip install langchain-x`"
    marker = "pip install "
    if marker in message:
        return message.split(marker, 1)[1].strip(" `'\".").split()[0] or None
    return None
