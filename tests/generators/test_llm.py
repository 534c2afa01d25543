"""The LLM generator over real HTTP: ChatOpenAI against a scripted OpenAI-compatible server on
127.0.0.1 (tests/fake_openai.py). Retries, token/cost accounting, errors, spec parsing."""
import sys
from pathlib import Path

import pytest

try:
    from fake_openai import FakeOpenAI
except ImportError:  # pytest did not put tests/ on sys.path (e.g. --import-mode=importlib)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fake_openai import FakeOpenAI

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_openai import ChatOpenAI

from evokernel.generators.base import (
    BudgetExceeded,
    ContextItem,
    GenerationError,
    GenerationRequest,
)
from evokernel.generators.ledger import TokenLedger
from evokernel.generators.llm import (
    LLMEndpointError,
    LLMGenerator,
    Price,
    Prices,
    make_generator,
)
from evokernel.tasks.load import load_task

ROOT = Path(__file__).resolve().parents[2]
RELU_TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
RELU_CANDIDATE = (ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py").read_text()
REPLY = "Summary: one vectorised pass.\n\n```python\n" + RELU_CANDIDATE + "```\n"

ENV_VARS = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "OLLAMA_BASE_URL",
            "VLLM_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    # never route test traffic through a proxy
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture(scope="module")
def request_draft():
    task = load_task(RELU_TASK)
    return GenerationRequest(task=task, stage="draft", context=[
        ContextItem("b1", "best_practice", "Call .contiguous() on every input before passing it to lib."),
    ])


def generator(server, model="gpt-4o-mini", **kw):
    chat = ChatOpenAI(model=model, base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=10,
                      use_responses_api=False)
    kw.setdefault("backoff_initial_s", 0.01)
    kw.setdefault("backoff_max_s", 0.05)
    return LLMGenerator(chat, name=f"openai:{model}", **kw)


def test_success_tokens_from_usage_and_cost(request_draft):
    with FakeOpenAI([REPLY]) as server:
        gen = generator(server).generate(request_draft)
        usage = server.responses[0]["usage"]
        sent = server.requests[0]["json"]
    assert gen.source.strip() == RELU_CANDIDATE.strip()
    assert gen.summary == "one vectorised pass."
    assert gen.reply == REPLY
    assert (gen.tokens_in, gen.tokens_out) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert gen.cost_usd == pytest.approx((gen.tokens_in * 0.15 + gen.tokens_out * 0.60) / 1e6)
    assert gen.model == "openai:gpt-4o-mini" and gen.calls == 1
    # what went over the wire: the model, a system prompt teaching the format, the task and context
    assert sent["model"] == "gpt-4o-mini"
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user"]
    assert "class ModelNew" in sent["messages"][0]["content"]
    assert "torch.relu(x)" in sent["messages"][1]["content"]
    assert "Call .contiguous() on every input" in sent["messages"][1]["content"]


@pytest.mark.parametrize("error", [(500, "boom"), (429, "slow down"), (503, "overloaded")])
def test_retry_after_endpoint_errors(request_draft, error):
    with FakeOpenAI([error, error, REPLY]) as server:
        g = generator(server)
        gen = g.generate(request_draft)
        assert server.calls == 3
    assert gen.calls == 3 and g.last_call["calls"] == 3
    assert "relu_forward" in gen.source


def test_retries_exhausted_is_an_endpoint_error(request_draft):
    with FakeOpenAI(default=(500, "down for maintenance")) as server:
        with pytest.raises(LLMEndpointError, match=r"after 3 call\(s\).*500.*down for maintenance") as info:
            generator(server, max_attempts=3).generate(request_draft)
        assert server.calls == 3
    assert info.value.retryable and info.value.status == 500 and info.value.calls == 3



def test_a_grammar_per_backend_goes_in_the_request_body_next_to_the_models_own_extra_body(request_draft):
    import dataclasses

    backends = []

    def grammar(backend):
        backends.append(backend)
        return f'root ::= "{backend}"'

    with FakeOpenAI([REPLY, REPLY]) as server:
        chat = ChatOpenAI(model="m", base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=10,
                          use_responses_api=False, extra_body={"max_tokens": 77})
        g = LLMGenerator(chat, grammar=grammar, backoff_initial_s=0.01)
        g.generate(request_draft)
        g.generate(dataclasses.replace(request_draft, backend="ascend-sim"))
        sent = [r["json"] for r in server.requests]
    assert backends == ["cpu", "ascend-sim"]
    assert [s["grammar"] for s in sent] == ['root ::= "cpu"', 'root ::= "ascend-sim"']
    assert all(s["max_tokens"] == 77 for s in sent)
    with FakeOpenAI([REPLY]) as server:  # no grammar: nothing extra in the body
        generator(server).generate(request_draft)
        assert "grammar" not in server.requests[0]["json"]

def test_a_stop_request_ends_retrying_and_is_not_an_endpoint_failure(request_draft):
    """Ctrl-C releases a local model's server, so the call in flight fails: that is the stop, not a failing
    endpoint to retry (nor a generate failure to record against the model)."""
    from evokernel.runtime import stop_request

    def fail_after_stop(_request):
        stop_request.request()
        return (500, "server going away")

    try:
        with FakeOpenAI([fail_after_stop, REPLY]) as server:
            with pytest.raises(stop_request.StopRequested, match="retrying"):
                generator(server, max_attempts=3).generate(request_draft)
            assert server.calls == 1
            with pytest.raises(stop_request.StopRequested, match="a model call"):  # no new call either
                generator(server).generate(request_draft)
            assert server.calls == 1
    finally:
        stop_request.clear()

@pytest.mark.parametrize("status,hint", [(401, "API key"), (400, "rejected"), (404, "model name")])
def test_no_retry_on_client_errors(request_draft, status, hint):
    with FakeOpenAI([(status, "nope"), REPLY]) as server:
        with pytest.raises(LLMEndpointError, match=rf"not retried.*HTTP {status}.*nope.*{hint}") as info:
            generator(server).generate(request_draft)
        assert server.calls == 1
    assert not info.value.retryable and info.value.status == status


def test_connection_refused_is_retried_then_reported(request_draft):
    with FakeOpenAI() as server:
        url = server.base_url
    chat = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key="sk-test", max_retries=0, timeout=2)
    g = LLMGenerator(chat, name="openai:gpt-4o-mini", max_attempts=2, backoff_initial_s=0.01, backoff_max_s=0.02)
    with pytest.raises(LLMEndpointError, match=r"after 2 call\(s\).*Connection"):
        g.generate(request_draft)


def test_reply_without_code_is_a_generation_error_with_tokens(request_draft):
    with FakeOpenAI(["I am sorry, I cannot write that kernel."]) as server:
        with pytest.raises(GenerationError, match="ModelNew") as info:
            generator(server, repairs=0).generate(request_draft)
        usage = server.responses[0]["usage"]
    err = info.value
    assert err.reply.startswith("I am sorry")
    assert (err.tokens_in, err.tokens_out) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert err.cost_usd > 0


def test_an_unusable_reply_gets_one_repair_request_showing_it_and_the_error(request_draft):
    broken = "Summary: relu\n" + RELU_CANDIDATE.replace("def forward(self, x):", "def forward(self, x)")
    with FakeOpenAI([f"```python\n{broken}```", REPLY]) as server:
        g = generator(server)
        gen = g.generate(request_draft)
        first, second = server.messages
        usage = [r["usage"] for r in server.responses]
    assert gen.source.strip() == RELU_CANDIDATE.strip() and g.last_call["repairs"] == 1 and gen.calls == 2
    # the repair request is the first conversation, the model's own reply, and what was wrong with it
    assert second[: len(first)] == first and second[len(first)]["role"] == "assistant"
    assert "def forward(self, x)" in second[len(first)]["content"]
    assert second[-1]["role"] == "user" and "does not parse as Python" in second[-1]["content"]
    assert gen.tokens_in == sum(u["prompt_tokens"] for u in usage)
    assert gen.tokens_out == sum(u["completion_tokens"] for u in usage)


def test_a_reply_still_unusable_after_the_repair_says_so_with_all_tokens(request_draft):
    with FakeOpenAI(["No code, sorry.", "Still no code."]) as server:
        with pytest.raises(GenerationError, match=r"ModelNew.*after 1 repair request") as info:
            generator(server).generate(request_draft)
        usage = [r["usage"] for r in server.responses]
    assert info.value.reply == "Still no code."
    assert info.value.tokens_in == sum(u["prompt_tokens"] for u in usage)


def test_cut_off_reply_mentions_the_token_limit(request_draft):
    cut = "```python\n" + RELU_CANDIDATE[: len(RELU_CANDIDATE) // 2]
    with FakeOpenAI([{"content": cut, "finish_reason": "length"}]) as server:
        with pytest.raises(GenerationError, match="output token limit"):
            generator(server, repairs=0).generate(request_draft)


def test_missing_usage_is_estimated_and_flagged(request_draft):
    with FakeOpenAI([{"content": REPLY, "usage": None}]) as server:
        g = generator(server)
        gen = g.generate(request_draft)
    assert g.last_call["tokens_estimated"] is True
    assert gen.tokens_out == len(REPLY) // 4
    assert gen.tokens_in > 500  # system prompt + task, ~4 chars per token


def test_unknown_model_costs_nothing_and_says_so(request_draft):
    with FakeOpenAI([REPLY]) as server:
        g = generator(server, model="my-local-coder")
        gen = g.generate(request_draft)
    assert gen.cost_usd == 0.0 and gen.tokens_in > 0
    assert g.prices_known is False and g.last_call["prices_known"] is False


def test_price_override_and_dated_model_names():
    prices = Prices({"my-local-coder": (1.0, 2.0)})
    assert prices.cost("my-local-coder", 1_000_000, 500_000) == (pytest.approx(2.0), True)
    assert prices.lookup("gpt-4o-mini-2024-07-18") == Price(0.15, 0.60)
    assert prices.lookup("openai:gpt-4o-2024-08-06") == Price(2.50, 10.00)
    assert prices.lookup("nothing") is None
    parsed = Prices.parse("gpt-4o-mini=1/2, x=0.5/0.5", include_defaults=False)
    assert parsed.lookup("gpt-4o-mini") == Price(1.0, 2.0) and parsed.lookup("gpt-4o") is None
    with pytest.raises(ValueError, match="MODEL=IN/OUT"):
        Prices.parse("gpt-4o-mini=1")
    with pytest.raises(ValueError, match="MODEL=IN/OUT"):
        Prices.parse("gpt-4o-mini=1/2/3/4")
    # a third number prices the input tokens read from the provider's prompt cache
    cached = Prices.parse("claude-x=3/15/0.3", include_defaults=False)
    assert cached.lookup("claude-x") == Price(3.0, 15.0, 0.3)
    assert cached.cost("claude-x", 1_000_000, 0, cache_read=800_000) == (pytest.approx(0.2 * 3 + 0.8 * 0.3), True)
    assert parsed.cost("x", 1_000_000, 0, cache_read=800_000) == (pytest.approx(0.5), True)  # no cached price


def test_before_call_can_stop_a_run_between_retries(request_draft):
    ledger = TokenLedger(None, max_tokens=100)
    calls = []

    def check():
        calls.append(1)
        if len(calls) > 1:
            ledger.record("other-worker", "m", 1000, 0, 0.0)  # the budget runs out meanwhile
        ledger.check()

    with FakeOpenAI([(500, "boom"), REPLY]) as server:
        with pytest.raises(BudgetExceeded, match="token cap"):
            generator(server, before_call=check).generate(request_draft)
        assert server.calls == 1


def test_streaming_chat_model_works_against_the_fake_server(request_draft):
    with FakeOpenAI([REPLY]) as server:
        chat = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0,
                          streaming=True, stream_usage=True, timeout=10)
        gen = LLMGenerator(chat, name="openai:gpt-4o-mini").generate(request_draft)
        assert server.requests[0]["json"]["stream"] is True
    assert "relu_forward" in gen.source and gen.tokens_out == len(REPLY) // 4


def test_any_langchain_chat_model(request_draft):
    g = make_generator(FakeListChatModel(responses=[REPLY]), name="fake")
    gen = g.generate(request_draft)
    assert gen.model == "fake" and "relu_forward" in gen.source and gen.calls == 1


# -- make_generator specs -----------------------------------------------------------------------

def test_spec_openai_and_bare_model(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    g = make_generator("openai:gpt-4o-mini", temperature=0.2, timeout=12)
    assert g.name == "openai:gpt-4o-mini" and g.chat_model.model_name == "gpt-4o-mini"
    assert g.chat_model.max_retries == 0 and g.chat_model.temperature == 0.2
    assert g.chat_model.openai_api_key.get_secret_value() == "sk-from-env"
    bare = make_generator("gpt-4o")
    assert bare.name == "openai:gpt-4o" and bare.prices_known


def test_spec_openai_missing_key_names_the_variable():
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_generator("openai:gpt-4o-mini")


def test_spec_openai_base_url_without_key_uses_placeholder(monkeypatch, request_draft):
    with FakeOpenAI([REPLY]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        g = make_generator("Qwen/Qwen2.5-Coder-7B-Instruct")
        gen = g.generate(request_draft)
        assert server.models == ["Qwen/Qwen2.5-Coder-7B-Instruct"]
        assert server.requests[0]["headers"]["authorization"] == "Bearer EMPTY"
    assert "relu_forward" in gen.source and gen.cost_usd == 0.0


def test_spec_base_url_argument(request_draft):
    with FakeOpenAI([REPLY]) as server:
        gen = make_generator("openai:gpt-4o-mini", base_url=server.base_url, api_key="k").generate(request_draft)
        assert server.calls == 1
    assert gen.cost_usd > 0


def test_spec_deepseek(monkeypatch):
    with pytest.raises(ValueError, match="DEEPSEEK_API_KEY"):
        make_generator("deepseek:deepseek-chat")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")  # not used for deepseek
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds")
    g = make_generator("deepseek:deepseek-chat")
    assert g.name == "deepseek:deepseek-chat" and g.prices_known
    assert str(g.chat_model.openai_api_base).startswith("https://api.deepseek.com")
    assert g.chat_model.openai_api_key.get_secret_value() == "sk-ds"


def test_spec_ollama_and_vllm_need_no_key(monkeypatch):
    g = make_generator("ollama:qwen2.5-coder:7b")
    assert g.chat_model.model_name == "qwen2.5-coder:7b"
    assert g.chat_model.openai_api_base == "http://127.0.0.1:11434/v1"
    assert not g.prices_known
    monkeypatch.setenv("VLLM_BASE_URL", "http://127.0.0.1:9999/v1")
    assert make_generator("vllm:some/model").chat_model.openai_api_base == "http://127.0.0.1:9999/v1"


def test_spec_errors():
    with pytest.raises(ValueError, match="unknown provider 'nosuchcloud'.*anthropic.*google_genai"):
        make_generator("nosuchcloud:claude")
    with pytest.raises(ValueError, match="names no model"):
        make_generator("openai:")
    with pytest.raises(ValueError, match="empty generator spec"):
        make_generator(" ")
    with pytest.raises(TypeError):
        make_generator(42)


def test_spec_passes_generators_through():
    class Mine:
        name = "mine"

        def generate(self, request):
            raise NotImplementedError

    mine = Mine()
    assert make_generator(mine) is mine


def test_spec_template_is_imported_lazily(monkeypatch):
    import types

    made = []

    class StubTemplateGenerator:
        name = "template"

        def __init__(self, **kw):
            made.append(kw)

        def generate(self, request):
            raise NotImplementedError

    stub = types.ModuleType("evokernel.generators.template")
    stub.TemplateGenerator = StubTemplateGenerator
    monkeypatch.setitem(sys.modules, "evokernel.generators.template", stub)
    g = make_generator("template", seed_knobs=3)
    assert isinstance(g, StubTemplateGenerator) and made == [{"seed_knobs": 3}]


def test_hybrid_spec_drafts_with_the_template_and_refines_with_the_llm(request_draft, tmp_path):
    from evokernel.generators.base import GenerationRequest
    from evokernel.generators.hybrid import HybridGenerator
    from evokernel.generators.llm import make_generator

    with FakeOpenAI([REPLY]) as server:
        gen = make_generator("hybrid:openai:gpt-4o-mini", base_url=server.base_url, api_key="sk-test",
                             backoff_initial_s=0.01)
        assert isinstance(gen, HybridGenerator) and gen.name == "hybrid:openai:gpt-4o-mini"
        draft = gen.generate(request_draft)
        assert draft.model == "template" and not server.requests  # no LLM call to draft
        refine = GenerationRequest(task=request_draft.task, stage="refine", start_point=None)
        out = gen.generate(refine)
        assert out.model == "openai:gpt-4o-mini" and len(server.requests) == 1 and gen.last_route == "llm"
    # an operator the template cannot lower is drafted by the LLM, and the route says why
    task = tmp_path / "t.py"
    task.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                    "        return torch.fft.fft(x).real\n\ndef get_inputs():\n    return [torch.randn(4, 8)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    from evokernel.tasks.load import load_task

    with FakeOpenAI([REPLY]) as server:
        gen = make_generator("hybrid:openai:gpt-4o-mini", base_url=server.base_url, api_key="sk-test")
        out = gen.generate(GenerationRequest(task=load_task(task), stage="draft"))
        assert out.model == "openai:gpt-4o-mini" and gen.last_route.startswith("llm (template: ")
    with pytest.raises(ValueError, match="names no LLM"):
        make_generator("hybrid:")


def test_ask_is_one_bounded_side_call_and_overrides_a_local_models_max_tokens():
    """LLMGenerator.ask (experience summaries, distillation: memory/learn.py): one endpoint call at most, with its
    own output cap, also where llama_cpp.server reads it (the chat model's extra_body)."""
    from typing import Any

    import httpx
    import openai
    from langchain_core.messages import HumanMessage

    class Local(FakeListChatModel):
        extra_body: dict = {"max_tokens": 1024, "top_k": 40}
        seen: list = []

        def _call(self, *args: Any, **kwargs: Any) -> str:
            self.seen.append(kwargs)
            if len(self.seen) == 1:
                raise openai.APIConnectionError(request=httpx.Request("POST", "http://x"))
            return super()._call(*args, **kwargs)

    chat = Local(responses=["a short summary of the attempt"])
    g = LLMGenerator(chat, name="local:x", max_attempts=4, backoff_initial_s=0.0)
    with pytest.raises(LLMEndpointError, match="after 1 call"):
        g.ask([HumanMessage(content="hi")], max_tokens=160)  # no retry for a side call
    text, tokens_in, tokens_out, cost, info = g.ask([HumanMessage(content="hi")], max_tokens=160, attempts=1)
    assert text == "a short summary of the attempt" and info["calls"] == 1 and tokens_out > 0
    kw = chat.seen[-1]
    assert kw["max_tokens"] == 160 and kw["extra_body"] == {"max_tokens": 160, "top_k": 40}
