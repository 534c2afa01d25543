"""The verifier as LangChain tools run by LangGraph's ToolNode: what generate submits, what the tool node writes,
the same tools bound to a chat model, and the run's dependencies taken from the runtime context."""
from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from evokernel.generators.base import Generation, GenerationError
from evokernel.graph import resources
from evokernel.graph.context import Context, Resources
from evokernel.nodes.generate import generate
from evokernel.nodes.verify import RULES_TOOL, VERIFIER_TOOLS, VERIFY_TOOL, run_once, submission

RELU = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"


class Fixed:
    name = "fixed"

    def __init__(self, result):
        self.result = result

    def generate(self, request):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_generate_submits_the_candidate_as_a_verify_kernel_call(env):
    resources.install(generator=Fixed(Generation(source="SRC")))
    out = generate(env.state(RELU, iteration=3), env.runtime())
    (msg,) = out["messages"]
    assert isinstance(msg, AIMessage) and "verdict" not in out
    (call,) = msg.tool_calls
    assert call["name"] == VERIFY_TOOL and call["args"] == {"source": "SRC"} and call["id"].endswith("#3")


def test_an_attempt_without_a_candidate_gets_its_verdict_from_generate_and_no_tool_call(env):
    resources.install(generator=Fixed(GenerationError("no code block in the reply")))
    out = generate(env.state(RELU), env.runtime())
    assert out["messages"] == [] and out["verdict"]["failed_gate"] == "generate"
    assert out["verdict"]["feedback"] == "no code block in the reply" and env.verifier.calls == []
    from evokernel.graph.drafting import _after_generate

    assert _after_generate(dict(out)) == "update"  # straight past the tool node
    assert _after_generate({"messages": [submission("SRC", "c")]}) == "verify"


def test_the_tool_node_answers_with_a_tool_message_and_writes_the_verdict(env):
    st = env.state(RELU, candidate={"source": "SRC"}, messages=[submission("SRC", "call-7")])
    out = run_once(st, env.ctx)
    assert env.verifier.calls == ["SRC"] and out["verdict"]["feasible"]
    (answer,) = out["messages"]  # the exchange is replaced, not appended: one attempt's messages in the state
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == "call-7" and answer.name == VERIFY_TOOL
    assert answer.content.startswith("FEASIBLE")


def test_rules_tool_runs_the_static_rules_only(env):
    hack = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    call = {"name": RULES_TOOL, "args": {"source": hack}, "id": "r1", "type": "tool_call"}
    out = run_once(env.state(RELU, messages=[AIMessage(content="", tool_calls=[call])]), env.ctx)
    (answer,) = out["messages"]
    assert "torch.relu" in answer.content and env.verifier.calls == []  # found, nothing ran
    assert "verdict" not in out or out["verdict"] == {}
    broken = dict(call, args={"source": "def (:"})
    out = run_once(env.state(RELU, messages=[AIMessage(content="", tool_calls=[broken])]), env.ctx)
    assert "error" in out["messages"][0].content


def test_a_model_call_with_bad_arguments_comes_back_as_a_message(env):
    call = {"name": VERIFY_TOOL, "args": {"code": "SRC"}, "id": "b1", "type": "tool_call"}  # no "source"
    out = run_once(env.state(RELU, messages=[AIMessage(content="", tool_calls=[call])]), env.ctx)
    (answer,) = out["messages"]
    assert answer.status == "error" and "source" in answer.content and env.verifier.calls == []


def test_the_same_tools_bind_to_a_chat_model_with_only_the_source_argument():
    from langchain_openai import ChatOpenAI

    bound = ChatOpenAI(model="m", api_key="x", base_url="http://127.0.0.1:9/v1").bind_tools(VERIFIER_TOOLS)
    tools = {t["function"]["name"]: t["function"] for t in bound.kwargs["tools"]}
    assert set(tools) == {VERIFY_TOOL, RULES_TOOL}
    for spec in tools.values():  # the task, the verifier and the state come from the graph, not the model
        assert set(spec["parameters"]["properties"]) == {"source"} and spec["parameters"]["required"] == ["source"]
        assert "runtime" not in str(spec)


def test_an_agent_graph_drives_the_tools_with_a_chat_model(env):
    """A model that calls verify_kernel itself (a ReAct-style loop a user could build on these tools)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    class AgentState(MessagesState):
        task: dict
        verdict: dict

    model = GenericFakeChatModel(messages=iter([
        AIMessage(content="", tool_calls=[{"name": VERIFY_TOOL, "args": {"source": "MODEL SRC"}, "id": "a1",
                                           "type": "tool_call"}]),
        AIMessage(content="done: the kernel is feasible")]))
    g = StateGraph(AgentState, context_schema=Context)
    g.add_node("model", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode(VERIFIER_TOOLS))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", tools_condition)
    g.add_edge("tools", "model")
    out = g.compile().invoke({"messages": [("user", "write a relu kernel")], "task": env.state(RELU)["task"]},
                             context=env.ctx)
    assert env.verifier.calls == ["MODEL SRC"] and out["verdict"]["feasible"]
    assert [type(m).__name__ for m in out["messages"]] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]


def test_dependencies_come_from_the_runtime_context(env, tmp_path):
    """Nothing installed process-wide: a whole drafting run uses the objects of its context."""
    import dataclasses
    import json

    from evokernel.graph.drafting import builder

    resources.install(store=None, verifier=None, generator=None)
    mine = type(env.verifier)()  # another scripted verifier, known only to this run's context
    ctx = dataclasses.replace(env.ctx, budget=1, resources=Resources(
        verifier=mine, store=env.store, generator=Fixed(Generation(source="SRC", summary="relu"))))
    out = builder().compile().invoke({"task": env.state(RELU)["task"]}, context=ctx)
    assert mine.calls == ["SRC"] and env.verifier.calls == []
    assert out["feasible"] and out["iteration"] == 1 and out["best_id"]
    assert env.store.get([out["best_id"]])[0].text == "SRC"  # the context's store holds the trace
    attempts = (tmp_path / "run" / "attempts.jsonl").read_text().splitlines()
    assert len(attempts) == 1 and json.loads(attempts[0])["feasible"]


def test_a_json_context_cannot_carry_objects():
    with pytest.raises(ValueError, match="Resources"):
        Context.coerce({"resources": {"verifier": "mine"}})
    ctx = Context(resources=Resources(generator=object()))
    assert "resources" not in ctx.settings() and ctx.settings()["budget"] == ctx.budget


def test_a_tool_call_source_is_read_as_utf8(env):
    # a model's tool-call arguments can decode to a lone surrogate (rt7_lone_surrogate_kills_tool_node): the tool
    # judges and records the text as UTF-8 holds it, and the run's verdict store does not raise
    st = env.state(RELU, candidate={"source": "SRC"}, messages=[submission("SRC # \ud800", "call-8")])
    out = run_once(st, env.ctx)
    assert env.verifier.calls == ["SRC # \ufffd"] and out["verdict"]["feasible"]
