"""No wasted calls (issue 32 item 4): a refinement's reply cap fits its start point; identical code is not judged
twice (nodes/verdict_cache.py; end to end in tests/graph/test_llm_run.py); a local model leaves the per-attempt
experience to the template."""
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from evokernel.generators.base import DRAFT, REFINE, ContextItem, GenerationRequest
from evokernel.generators.llm import LLMGenerator
from evokernel.nodes.verdict_cache import code_hash, earlier_verdict, record_verdict
from evokernel.tasks.load import load_task
from test_kernel_form import RELU

from pathlib import Path

RELU_TASK = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"


class Local(FakeListChatModel):
    """A chat model with its output cap where llama_cpp.server reads it, recording what each call was given."""

    extra_body: dict = {"max_tokens": 1024}
    seen: list = []

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.seen.append(kwargs)
        return super()._call(*args, **kwargs)


def _gen(form: str = "full", **kw: Any) -> tuple[LLMGenerator, Local]:
    chat = Local(responses=[RELU] * 8)
    chat.seen = []
    return LLMGenerator(chat, name="local:x", form=form, repairs=0, **kw), chat


def _start(chars: int) -> ContextItem:
    body = "\n".join(f"    y[{i}] = x[{i}] * 2.0f;  // unrolled" for i in range(chars // 40))
    source = f'import torch\nCPP_SOURCE = r"""\nextern "C" void f(const float* x, float* y) {{\n{body}\n}}\n"""\n'
    return ContextItem(id="t1", kind="trace", text=source, meta={"latency_ms": 1.0, "feasible": True})


def test_a_refinement_gets_a_reply_cap_that_fits_its_start_point():
    task = load_task(RELU_TASK, {"batch_size": 4, "dim": 100})
    gen, chat = _gen(form="kernel")  # a start point that is not a kernel-only candidate: shown (and sized) whole
    big = _start(8000)
    cap = gen.reply_cap(GenerationRequest(task=task, stage=REFINE, start_point=big), [])
    assert cap is not None and cap >= len(big.text) // 4 > 1024  # the start point can at least be restated
    gen.generate(GenerationRequest(task=task, stage=REFINE, start_point=big))
    assert chat.seen[-1]["max_tokens"] == cap and chat.seen[-1]["extra_body"]["max_tokens"] == cap
    # a draft, or a start point that fits: the model's own cap
    gen.generate(GenerationRequest(task=task, stage=DRAFT))
    assert "max_tokens" not in chat.seen[-1]
    assert gen.reply_cap(GenerationRequest(task=task, stage=REFINE, start_point=_start(800)), []) is None


def test_the_raised_cap_stays_inside_the_context_window():
    task = load_task(RELU_TASK, {"batch_size": 4, "dim": 100})
    gen, _ = _gen(context_tokens=3000)
    from langchain_core.messages import HumanMessage

    prompt = [HumanMessage(content="p" * 4000)]  # ~1000 tokens of prompt
    cap = gen.reply_cap(GenerationRequest(task=task, stage=REFINE, start_point=_start(16000)), prompt)
    assert cap is not None and 1024 < cap <= 3000 - 1000 - 256


def test_the_kernel_form_sizes_the_cap_by_the_kernel_not_the_glue():
    task = load_task(RELU_TASK, {"batch_size": 4, "dim": 100})
    from evokernel.generators.extract_kernel import extract_kernel
    from evokernel.generators.kernel_form import declare

    spec = declare(task)
    start = ContextItem(id="t1", kind="trace", text=spec.candidate(extract_kernel(RELU, spec)) + "#" * 6000,
                        meta={"latency_ms": 1.0})
    gen, _ = _gen(form="kernel")
    assert gen.reply_cap(GenerationRequest(task=task, stage=REFINE, start_point=start), [], spec) is None
    full, _ = _gen(form="full")
    assert full.reply_cap(GenerationRequest(task=task, stage=REFINE, start_point=start), []) is not None


def test_identical_code_gets_the_earlier_verdict_marked_as_reused():
    verifier, other = object(), object()
    verdict = {"feasible": True, "failed_gate": None, "feedback": "ok", "latency_ms": 1.5}
    record_verdict(verifier, "task-a", "source one", verdict, "relu#1")
    # a verdict is one sample: feasible code is judged once more (fresh seeds) before its verdict is reused
    assert earlier_verdict(verifier, "task-a", code_hash("source one")) is None
    record_verdict(verifier, "task-a", "source one", dict(verdict, latency_ms=1.7), "relu#2")
    got = earlier_verdict(verifier, "task-a", code_hash("source one"))
    assert got["latency_ms"] == 1.5 and got["reused_from"] == "relu#1" and "verdict is reused" in got["feedback"]
    assert earlier_verdict(verifier, "task-a", code_hash("source two")) is None  # other code
    assert earlier_verdict(verifier, "task-b", code_hash("source one")) is None  # another task
    assert earlier_verdict(other, "task-a", code_hash("source one")) is None  # another run's verifier
    # our failure to judge says nothing about the code: judged again
    record_verdict(verifier, "task-a", "source three", {"feasible": False, "failed_gate": "verifier"})
    assert earlier_verdict(verifier, "task-a", code_hash("source three")) is None
    # a failure is reused at once
    record_verdict(verifier, "task-a", "source four", {"feasible": False, "failed_gate": "compile"}, "relu#4")
    assert earlier_verdict(verifier, "task-a", code_hash("source four"))["failed_gate"] == "compile"


def test_the_worse_judgement_of_identical_code_stands():
    """Red-team round 5 (rt5_flaky_verdict_frozen): a kernel wrong in half its worker processes kept its one lucky
    feasible verdict for every resubmission. A failure of the same code, before or after, is the code's verdict."""
    v = object()
    ok = {"feasible": True, "failed_gate": None, "feedback": "ok", "latency_ms": 1.0}
    bad = {"feasible": False, "failed_gate": "correctness", "feedback": "trial 3 wrong"}
    record_verdict(v, "t", "flaky", ok, "a#1")
    record_verdict(v, "t", "flaky", bad, "a#2")
    record_verdict(v, "t", "flaky", ok, "a#3")
    got = earlier_verdict(v, "t", code_hash("flaky"))
    assert got["failed_gate"] == "correctness" and got["reused_from"] == "a#2"
    record_verdict(v, "t", "flaky2", bad, "b#1")
    record_verdict(v, "t", "flaky2", ok, "b#2")
    assert earlier_verdict(v, "t", code_hash("flaky2"))["reused_from"] == "b#1"


def test_a_verdict_the_llm_judge_gave_no_opinion_on_is_not_reused(tmp_path):
    """Red-team round 5 (rt5_unjudged_verdict_reused): with the judge on and its endpoint down, a feasible verdict
    without an opinion was kept and reused after a resume, so the judge never read that code."""
    from evokernel.runtime.run_dir import RunDir

    v = object()
    store = RunDir(tmp_path / "run", run_id="r")
    unjudged = {"feasible": True, "failed_gate": None, "feedback": "ok",
                "details": {"llm_judge": {"flagged": None, "error": "connection refused"}}}
    judged = {"feasible": True, "failed_gate": None, "feedback": "ok", "details": {"llm_judge": {"flagged": False}}}
    for i in range(3):
        record_verdict(v, "t", "kernel", unjudged, f"k#{i}", store=store)
        record_verdict(v, "t", "kernel2", judged, f"j#{i}", store=store)
    assert earlier_verdict(v, "t", code_hash("kernel")) is None
    assert earlier_verdict(object(), "t", code_hash("kernel"), store=RunDir(tmp_path / "run", run_id="r")) is None
    assert earlier_verdict(v, "t", code_hash("kernel2"))["reused_from"] == "j#0"


def test_the_reuse_key_names_every_setting_that_judges():
    from evokernel.graph.context import Context
    from evokernel.nodes.verdict_cache import reuse_key

    base = Context(run_id="r")
    keys = {reuse_key(c, "relu") for c in (base, Context(run_id="r", strict=True), Context(run_id="r", llm_judge="x"),
                                           Context(run_id="r", compile_baseline=True),
                                           Context(run_id="r", backend="ascend-sim"), Context(run_id="s"))}
    assert len(keys) == 6 and reuse_key(Context(run_id="r"), "relu") == reuse_key(base, "relu")


def test_llm_generators_write_experiences_unless_told_not_to():
    assert _gen()[0].writes_experiences is True
    assert _gen(writes_experiences=False)[0].writes_experiences is False


def test_a_resumed_run_reuses_the_verdicts_its_run_dir_kept(tmp_path, monkeypatch):
    from evokernel.nodes import verdict_cache
    from evokernel.runtime.run_dir import VERDICTS, RunDir

    before, after = object(), object()  # the stopped run's verifier, the resumed run's (another process)
    verdict = {"feasible": True, "failed_gate": None, "feedback": "ok", "latency_ms": 2.5, "details": {"x": [1, 2]}}
    store = RunDir(tmp_path / "run", run_id="r1")
    record_verdict(before, "r1|relu", "the kernel", verdict, "relu#3", store=store)
    record_verdict(before, "r1|relu", "the kernel", verdict, "relu#5", store=store)  # confirmed: reusable
    record_verdict(before, "r1|relu", "judge broke", {"feasible": False, "failed_gate": "verifier"}, store=store)
    record_verdict(before, "r1|relu", "not json", {"feasible": False, "failed_gate": "compile", "x": object()},
                   store=store)  # nothing written, nothing raised
    with (tmp_path / "run" / VERDICTS).open("ab") as f:
        f.write(b'{"task_key": "r1|relu", "code_hash": "torn')  # a crash mid-line
    resumed = RunDir(tmp_path / "run", run_id="r1")
    got = earlier_verdict(after, "r1|relu", code_hash("the kernel"), store=resumed)
    assert got is not None and got["latency_ms"] == 2.5 and got["details"] == {"x": [1, 2]}
    assert got["reused_from"] == "relu#3" and "verdict is reused" in got["feedback"]
    assert earlier_verdict(after, "r1|relu", code_hash("judge broke"), store=resumed) is None
    assert earlier_verdict(after, "r1|relu", code_hash("not json"), store=resumed) is None
    assert earlier_verdict(after, "r1|sigmoid", code_hash("the kernel"), store=resumed) is None  # another task
    # the code that judged it changed between stop and resume (an upgrade, a fix): judged again
    monkeypatch.setattr(verdict_cache, "_version", lambda: "another version")
    assert earlier_verdict(object(), "r1|relu", code_hash("the kernel"), store=resumed) is None
