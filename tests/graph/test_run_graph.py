"""The whole loop on a real task with real verdicts, a scripted generator and a fresh memory."""
import json
import sqlite3

import pytest

from langgraph.checkpoint.sqlite import SqliteSaver

from graph_helpers import RELU, RELU_BROKEN, RELU_KERNEL, RELU_SLOW, RELU_WRONG, SMALL, Scripted
from evokernel.graph import build_graph, resources
from evokernel.graph.context import Context
from evokernel.memory.store import MemoryItem


def _run(tmp_path, memory_dir, run_id, script, budget, **ctx_kw):
    gen = Scripted(script)
    resources.install(generator=gen)
    run_dir = tmp_path / run_id
    run_dir.mkdir()
    ctx = Context(budget=budget, memory_dir=str(memory_dir), run_dir=str(run_dir), run_id=run_id, **ctx_kw)
    conn = sqlite3.connect(str(run_dir / "checkpoints.sqlite"), check_same_thread=False)
    app = build_graph(checkpointer=SqliteSaver(conn))
    events = []
    for ns, mode, chunk in app.stream({"tasks": [str(RELU)], "overrides": SMALL},
                                      {"configurable": {"thread_id": run_id}}, context=ctx,
                                      stream_mode=["custom", "values"], subgraphs=True, durability="sync"):
        if mode == "custom":
            events.append(chunk)
        elif ns == ():
            final = chunk
    conn.close()
    return gen, run_dir, final, events


def test_drafting_then_refining_with_values_memory_and_run_log(tmp_path, memory_dir, wired):
    script = [RELU_BROKEN, RELU_WRONG, RELU_SLOW, RELU_KERNEL, RELU_BROKEN, RELU_KERNEL]
    gen, run_dir, final, events = _run(tmp_path, memory_dir, "r1", script, budget=6)

    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in lines] == list(range(6))
    assert [r["stage"] for r in lines] == ["draft"] * 3 + ["refine"] * 3
    assert [r["failed_gate"] for r in lines] == ["compile", "correctness", None, None, "compile", None]
    assert [r["reward"] for r in lines[:3]] == [-1.0, -1.0, 1.0]
    assert lines[4]["reward"] == -1.0 and lines[3]["start_point"] == lines[2]["trace_id"]
    assert all(r["code_hash"] for r in lines)
    assert [e["iteration"] for e in events if e.get("event") == "attempt"] == list(range(6))

    summary = json.loads((run_dir / "summary.json").read_text())
    (t,) = summary["tasks"]
    assert t["feasible"] and t["first_feasible_iteration"] == 2 and t["attempts"] == 6
    assert t["best_latency_ms"] <= t["first_latency_ms"] and t["speedup_vs_eager"] > 0
    assert summary["correctness"] == 1.0 and summary["compile_rate"] == 4 / 6
    assert final["results"][0]["task"] == t["task"] and final["feasible"]

    # the refining requests saw the start point, its children and the best-so-far latency
    refine_reqs = [r for r in gen.requests if r.stage == "refine"]
    assert len(refine_reqs) == 3 and all(r.start_point is not None for r in refine_reqs)
    assert refine_reqs[0].start_point.text == RELU_SLOW and refine_reqs[0].best_latency_ms == t["first_latency_ms"]
    for req in refine_reqs:  # children = the earlier refinements spawned from that start point
        expected = {r["trace_id"] for r in lines if r["start_point"] == req.start_point.id and r["iteration"] < req.iteration}
        assert {c.id for c in req.children} == expected
    assert any(req.children for req in refine_reqs) or len({r.start_point.id for r in refine_reqs}) == 3
    # drafting after a failure carries the verifier's feedback
    assert gen.requests[0].last_feedback is None and "error" in gen.requests[1].last_feedback.lower()

    # memory: one trace and one experience per attempt; the values moved and are mirrored
    store = resources.store(Context(memory_dir=str(memory_dir)))
    traces = store.find(kind="trace", task=t["task"])
    assert len(traces) == 6 and len(store.find(kind="experience", task=t["task"])) == 6
    ledger = store.values
    assert len(ledger.state.attempts) == 6
    # N=4 and a pool smaller than N. Drafting shows no failed trace: attempt 1 used attempt 0's experience
    # only (r1=-1), attempt 2 used it and attempt 1's (r1=+1): Q1 of exp 0 = 0 -> -0.1 -> -0.1 + 0.1 (1 + 0.1)
    e0, e1 = (ledger.state.items["exp:" + lines[i]["attempt_id"]] for i in (0, 1))
    assert (e0.n1, e1.n1) == (2, 1)
    assert e0.q1 == pytest.approx(0.01) and e1.q1 == pytest.approx(0.1)
    assert lines[1]["context"] == ["exp:" + lines[0]["attempt_id"]]
    assert not {lines[0]["trace_id"], lines[1]["trace_id"]} & set(lines[2]["context"])
    # a trace keeps code only when it built: the broken reply's trace has its outcome and no code
    tr0, tr1 = store.get([lines[0]["trace_id"], lines[1]["trace_id"]])
    assert tr0.text == "" and tr0.meta["code_kept"] is False and "compile" in tr0.key
    assert tr1.text == RELU_WRONG and tr1.meta["code_kept"] is True
    start = ledger.state.items[lines[2]["trace_id"]]
    assert start.n2 >= 1  # the start point's Q2 was updated by its refinements
    (sp,) = store.get([lines[2]["trace_id"]])
    assert sp.meta["n2"] == start.n2  # mirrored into Chroma metadata

    # the best kernel is a candidate `evokernel verify` accepts
    best = next((run_dir / "best").glob("*.py")).read_text()
    from evokernel.tasks.load import load_task
    assert resources.verifier(Context()).verify(load_task(RELU, SMALL), best).feasible

    # a second run with the same memory retrieves what the first one stored
    gen2, run_dir2, _, _ = _run(tmp_path, memory_dir, "r2", [RELU_KERNEL], budget=2)
    first_ctx = {i.id for i in gen2.requests[0].context}
    assert any(i.startswith(("trace:r1:", "exp:r1:")) for i in first_ctx)


def test_policy_none_gives_no_context_and_touches_no_values(tmp_path, memory_dir, wired):
    gen, run_dir, final, _ = _run(tmp_path, memory_dir, "n1", [RELU_BROKEN, RELU_KERNEL, RELU_KERNEL], budget=3,
                                  policy="none")
    assert all(not r.context for r in gen.requests)
    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert [r["context"] for r in lines] == [[], [], []]
    assert lines[2]["stage"] == "refine"


def test_generation_error_is_a_failed_attempt_not_a_crash(tmp_path, memory_dir, wired):
    from evokernel.generators.base import GenerationError

    gen, run_dir, final, _ = _run(tmp_path, memory_dir, "g1", [GenerationError("reply had no code block"),
                                                                 RELU_KERNEL], budget=2)
    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert lines[0]["failed_gate"] == "generate" and not lines[0]["compiled"]
    assert lines[1]["feasible"] and "no code block" in gen.requests[1].last_feedback


def test_runs_without_a_run_id_take_the_thread_id(tmp_path, memory_dir, wired, monkeypatch):
    """Studio/SDK callers give no run id: each thread is its own run, nothing is deduplicated away."""
    from langgraph.checkpoint.memory import InMemorySaver

    monkeypatch.chdir(tmp_path)
    resources.install(generator=Scripted([RELU_KERNEL]))
    app = build_graph(checkpointer=InMemorySaver())
    ctx = Context(budget=2, memory_dir=str(memory_dir))
    for thread in ("a", "b"):
        app.invoke({"tasks": [str(RELU)], "overrides": SMALL}, {"configurable": {"thread_id": thread}}, context=ctx)
    for thread in ("a", "b"):
        recs = [json.loads(x) for x in (tmp_path / "runs" / thread / "attempts.jsonl").read_text().splitlines()]
        assert [r["attempt_id"].split(":")[0] for r in recs] == [thread, thread]
    assert len(resources.store(ctx).values.state.attempts) == 4


def test_passk_draws_independent_samples_without_memory(tmp_path, memory_dir, wired):
    gen, run_dir, final, _ = _run(tmp_path, memory_dir, "p1", [RELU_KERNEL, RELU_BROKEN, RELU_SLOW], budget=3,
                                  method="passk")
    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in lines] == ["draft"] * 3  # no refining, even after a feasible kernel
    assert [r["failed_gate"] for r in lines] == [None, "compile", None]
    assert all(r.context == [] and r.last_feedback is None and r.start_point is None for r in gen.requests)
    assert all(len(r.knowledge) == 1 and "load_cpp" in r.knowledge[0].text for r in gen.requests)  # one demonstration
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["tasks"][0]["feasible_kernels"] == 2
    assert not memory_dir.exists()  # the shared memory was never opened
    assert (run_dir / "memory").is_dir()


def test_refinement_repairs_then_hill_climbs_from_the_fastest(tmp_path, memory_dir, wired):
    gen, run_dir, final, _ = _run(tmp_path, memory_dir, "f1", [RELU_BROKEN, RELU_SLOW, RELU_KERNEL, RELU_KERNEL],
                                  budget=4, method="refinement")
    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in lines] == ["draft", "draft", "refine", "refine"]
    assert "error" in gen.requests[1].last_feedback.lower()  # repair with the verifier's feedback
    fastest = min((r for r in lines[:3] if r["feasible"]), key=lambda r: r["latency_ms"])
    assert gen.requests[3].start_point.id == fastest["trace_id"]  # hill-climbing from the best so far
    assert all(not r.children and not r.context for r in gen.requests)
    assert not memory_dir.exists()


def test_a_connection_reset_in_the_memory_is_retried_not_a_lost_run(tmp_path, memory_dir, wired):
    """retrieve, q_filter, update and select_start run again after a transient failure of the memory (a
    Chroma server or the ledger's owner restarting: graph/retry.py); the attempt is logged and its value
    update applied once. Anything else stops the run."""
    import httpx

    from evokernel.graph.retry import transient
    from evokernel.memory.embeddings import HashEmbedder
    from evokernel.memory.store import MemoryStore

    store = MemoryStore(memory_dir, embedder=HashEmbedder())
    resources.install(store=store)
    failures = {"query_ids": [ConnectionResetError("chroma restarting")],
                "record": [httpx.ConnectError("owner restarting")]}
    calls = {"query_ids": 0, "record": 0}

    def flaky(obj, name):
        real = getattr(obj, name)

        def wrapper(*a, **k):
            calls[name] += 1
            if failures[name]:
                raise failures[name].pop(0)
            return real(*a, **k)
        setattr(obj, name, wrapper)

    flaky(store, "query_ids")
    flaky(store.values, "record")
    store.add([MemoryItem("e0", "experience", "relu activation", "relu: use simd", {"backend": "cpu", "task": "x"})])
    gen, run_dir, final, _ = _run(tmp_path, memory_dir, "rt", [RELU_KERNEL, RELU_SLOW], budget=2)
    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["feasible"] and not failures["query_ids"] and not failures["record"]
    assert calls["record"] == 3 and len(store.values.state.attempts) == 2  # one retry, each attempt applied once
    assert transient(ConnectionResetError()) and transient(httpx.ReadTimeout("t"))
    assert not transient(ValueError("bad task")) and not transient(KeyError("x"))
    # not transient: the run stops with it
    failures["query_ids"] = [ValueError("a broken store")]
    with pytest.raises(ValueError, match="a broken store"):
        _run(tmp_path, memory_dir, "rt2", [RELU_KERNEL], budget=1, recall=False)  # (a recall would not query)
    store.close()


def test_the_python_example_of_docs_loop_runs_a_kernelbench_file_as_written(tmp_path, memory_dir, wired):
    """docs/loop.md's example (build_graph + Context(), the template generator) on KernelBench's ReLU in place:
    4096 x 393216 floats, 12 GiB as written. The default context fits it to the machine (it used to die inside
    the verify node: "the reference failed (make_inputs): OSError: Cannot allocate memory"); with the sizes as
    written it is refused when the tasks are loaded, naming its size and the setting that fits it."""
    from kernelbench_files import KB

    if KB is None:
        pytest.skip("KernelBench not found (set EVOKERNEL_KERNELBENCH)")
    from evokernel.tasks.task import TaskError

    relu = str(KB / "level1" / "19_ReLU.py")
    conn = sqlite3.connect(str(tmp_path / "ck.sqlite"), check_same_thread=False)
    app = build_graph(checkpointer=SqliteSaver(conn))
    ctx = Context(generator="template", budget=1, memory_dir=str(memory_dir), run_dir=str(tmp_path / "a"), run_id="a")
    final = app.invoke({"tasks": [relu]}, {"configurable": {"thread_id": "a"}}, context=ctx, durability="sync")
    [result] = final["results"]
    assert result["task"] == "19_ReLU" and result["feasible"] and result["attempts"] == 1
    [spec] = final["queue"] or [final["task"]]
    assert spec["fit"]["mode"] == "auto" and spec["overrides"]["batch_size"] < 4096
    with pytest.raises(TaskError, match=r"19_ReLU: its tensors .* take 12\.0 GiB.*fit = auto"):
        app.invoke({"tasks": [relu]}, {"configurable": {"thread_id": "b"}}, durability="sync",
                   context=Context(fit="none", memory_dir=str(memory_dir), run_dir=str(tmp_path / "b"), run_id="b"))
    conn.close()


def test_a_task_given_to_drafting_directly_is_fitted_like_the_stream(tmp_path):
    """Studio's drafting graph takes {"task": {"path": ...}}: the spec is fitted by the run's fit, as prepare does."""
    from evokernel.tasks.task import TaskError

    big = tmp_path / "19_ReLU.py"
    big.write_text(RELU.read_text().replace("batch_size = 160", "batch_size = 4096").replace("dim = 65536", "dim = 393216"))
    spec = resources.fitted_spec({"path": str(big)}, Context())
    assert spec["fit"]["mode"] == "auto" and spec["overrides"]["batch_size"] < 4096
    assert resources.fitted_spec(spec, Context()) is spec  # a spec with a fit record is kept as it is
    small = resources.fitted_spec({"path": str(RELU), "overrides": SMALL}, Context(fit="none"))
    assert small["fit"] == {"mode": "none", "changed": {}} and small["overrides"] == SMALL
    with pytest.raises(TaskError, match="fit = auto"):
        resources.fitted_spec({"path": str(big)}, Context(fit="none"))


def test_fit_in_the_input_is_refused_as_a_run_setting(tmp_path, memory_dir):
    app = build_graph()
    with pytest.raises(ValueError, match="'fit' is a run setting"):
        app.invoke({"tasks": [str(RELU)], "fit": "none"}, context=Context(memory_dir=str(memory_dir),
                                                                           run_dir=str(tmp_path), run_id="f"))
