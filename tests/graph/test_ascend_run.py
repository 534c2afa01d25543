"""The loop on the ascend-sim backend with an LLM over HTTP (scripted endpoint on 127.0.0.1): Ascend C
prompts and seed knowledge, emulator verdicts, modelled latencies labelled as estimates, a refine
prompt that carries the latency model's profile."""
import json
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from fake_openai import FakeOpenAI
from evokernel.graph import build_graph, resources
from evokernel.graph.context import Context

ROOT = Path(__file__).resolve().parents[2]
ADD = (ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text()
TASK = ROOT / "evokernel" / "suites" / "npu_l1" / "11_elementwise_add.py"
# a refinement: single buffering (the model charges it; a different kernel either way)
ADD_SINGLE = ADD.replace("constexpr int32_t BUFFER_NUM = 2;", "constexpr int32_t BUFFER_NUM = 1;")


@pytest.fixture
def ascend_wired(ascend_verifier, memory_dir):
    resources.install(verifier=ascend_verifier)
    yield
    resources.install(verifier=None, generator=None, store=None)
    resources.close_all()


def _fenced(code: str) -> str:
    return f"Plan: split over the vector cores.\n\n```python\n{code}\n```\nSummary: tiled add\n"


def test_llm_drafts_and_refines_ascend_c(tmp_path, monkeypatch, ascend_wired):
    assert ADD_SINGLE != ADD
    with FakeOpenAI([_fenced(ADD), _fenced(ADD_SINGLE)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        run_dir = tmp_path / "run"
        ctx = Context(generator="openai:gpt-4o-mini", backend="ascend-sim", budget=2, llm_experiences=False,
                      memory_dir=str(tmp_path / "mem"), run_dir=str(run_dir), run_id="asc")  # 2 scripted replies
        run_dir.mkdir()
        conn = sqlite3.connect(str(run_dir / "ck.sqlite"), check_same_thread=False)
        final = build_graph(checkpointer=SqliteSaver(conn)).invoke(
            {"tasks": [str(TASK)], "overrides": {"batch_size": 4, "dim": 1003}},
            {"configurable": {"thread_id": "asc"}}, context=ctx, durability="sync")
        conn.close()
        requests = list(server.requests)
    assert len(requests) == 2
    draft = "\n".join(str(m["content"]) for m in requests[0]["json"]["messages"])
    assert "project_json_src" in draft and "kernel_src" in draft  # the Ascend C format is taught
    assert "torch" in draft and "a + b" in draft.replace("a+b", "a + b")  # the reference is shown
    refine = "\n".join(str(m["content"]) for m in requests[1]["json"]["messages"])
    assert "bound:" in refine and "modelled" in refine  # the latency model's profile reaches refining

    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in lines] == ["draft", "refine"]
    assert all(r["feasible"] and r["latency_kind"] == "estimate" and r["latency_ms"] > 0 for r in lines)
    assert any(c.startswith("seed:ascend:") for c in lines[0]["knowledge"] + lines[0]["context"])
    summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else None
    best = next((run_dir / "best").glob("*.py")).read_text()
    assert "estimated by the ascend-sim latency model" in best and "--backend ascend-sim" in best
    assert final["results"][0]["feasible"]
    store = resources.store(ctx)  # the traces carry the bottleneck the latency model named (bottleneck-first retrieval)
    traces = store.get(store.ids("trace"))
    assert len(traces) == 2 and all(t.meta.get("bound") in ("mte2", "mte3", "vector", "scalar", "hbm", "latency",
                                                             "launch") for t in traces), [t.meta for t in traces]
    if summary is not None:
        assert summary["latency_kind"] == "estimate"
