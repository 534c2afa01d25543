"""Prompt templates (package data) and their rendering for drafting and refining, within bounds."""
import os
import re
from importlib import resources
from pathlib import Path

import pytest
from evokernel.prompts.render import (
    PromptOptions,
    backends,
    load_template,
    render_messages,
    render_prompt,
    truncate,
)
from langchain_core.messages import HumanMessage, SystemMessage

from evokernel.generators.base import ContextItem, GenerationError, GenerationRequest
from evokernel.tasks.load import load_task

ROOT = Path(__file__).resolve().parents[2]
GEMM_TASK = ROOT / "evokernel" / "suites" / "cpu_l2" / "01_gemm_bias_relu.py"
RELU_TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
RELU_CANDIDATE = (ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py").read_text()


@pytest.fixture(scope="module")
def task():
    return load_task(RELU_TASK, {"batch_size": 8})


def context_items():
    return [
        ContextItem("e1", "experience", "Fusing the bias add into the GEMM epilogue saved a memory pass.",
                    {"task": "l2_01_gemm_bias_relu", "feasible": True, "latency_ms": 3.25}),
        ContextItem("t1", "trace", RELU_CANDIDATE.replace("relu_forward", "relu_v1"),
                    {"task": "01_relu", "feasible": False, "failed_gate": "correctness",
                     "feedback": "output 0: 17 of 1024 elements outside atol=rtol=0.01", "summary": "unrolled by 8"}),
        ContextItem("t2", "trace", RELU_CANDIDATE.replace("relu_forward", "relu_v2"),
                    {"task": "01_relu", "feasible": "true", "latency_ms": "0.91", "summary": "simd pass"}),
        ContextItem("b1", "best_practice", "Call .contiguous() on every input before passing it to lib."),
        ContextItem("s1", "seed", "OpenMP: use schedule(static) for uniform loops.", {"title": "OpenMP"}),
    ]


def test_templates_are_package_data_per_backend():
    root = resources.files("evokernel.prompts")
    for name in ("system", "draft", "refine"):
        assert (root / "cpu" / f"{name}.md").is_file()
    assert "cpu" in backends()
    with pytest.raises(FileNotFoundError, match="backends with templates: .*cpu"):
        load_template("ascend-nonexistent", "system")
    with pytest.raises(ValueError, match="unknown prompt template"):
        load_template("cpu", "nope")


def test_system_prompt_teaches_the_candidate_format(task):
    system, _ = render_prompt(GenerationRequest(task=task, stage="draft"))
    for needle in ["class ModelNew(nn.Module)", "same arguments", "load_cpp", 'extern "C"', "const float*",
                   "int64_t", "double", "allocate", "torch.nn.functional", "try", "stdout",
                   "|out - ref| <= 0.01 + 0.01 * |ref|", "```python", "Summary:"]:
        assert needle in system, needle
    strict, _ = render_prompt(GenerationRequest(task=task, stage="draft"), PromptOptions(tolerance=1e-4))
    assert "0.0001 + 0.0001" in strict


def test_draft_prompt_shows_task_and_context_by_kind(task):
    req = GenerationRequest(task=task, stage="draft", context=context_items(),
                            knowledge=[ContextItem("k1", "knowledge", "load_cpp(src) returns lib with the "
                                                   "extern C functions.", {"title": "load_cpp"})],
                            last_feedback="line 12: [torch-compute] torch.relu is PyTorch compute in forward")
    messages = render_messages(req)
    assert isinstance(messages[0], SystemMessage) and isinstance(messages[1], HumanMessage)
    human = messages[1].content
    assert "# Task: 01_relu" in human and "sizes overridden: batch_size=8" in human
    assert "batch_size = 8" in human and "return torch.relu(x)" in human  # the reference, overrides applied
    # API knowledge opens the message, before the task: with the system prompt it is a prefix shared by
    # every task, which a local server's prompt cache reuses
    assert human.startswith("## API knowledge\n") and "**load_cpp**:" in human
    assert human.index("**load_cpp**:") < human.index("# Task: 01_relu") < human.index("### Reference notes")
    assert "### Reference notes" in human and "**OpenMP**:" in human
    assert "### Best practices" in human and ".contiguous() on every input" in human
    assert "[task l2_01_gemm_bias_relu; passed, 3.25 ms] Fusing the bias" in human
    assert "(failed at correctness)" in human and "17 of 1024 elements" in human and "unrolled by 8" in human
    assert "(passed, 0.91 ms)" in human and "relu_v2" in human
    assert "torch-compute" in human  # last feedback
    assert "refining" not in human.lower()
    assert "$" not in re.sub(r"\$\d", "", human.replace("$$", ""))  # no placeholder left


def test_refine_prompt_shows_start_point_children_profile_best(task):
    start = ContextItem("p", "trace", RELU_CANDIDATE, {"latency_ms": 1.234, "feasible": True})
    children = [
        ContextItem("c1", "trace", RELU_CANDIDATE.replace("relu_forward", "relu_child1"),
                    {"feasible": True, "latency_ms": 1.5, "summary": "unrolled inner loop"}),
        ContextItem("c2", "trace", RELU_CANDIDATE.replace("relu_forward", "relu_child2"),
                    {"feasible": False, "failed_gate": "hack", "feedback": "try/except is not allowed"}),
    ]
    req = GenerationRequest(task=task, stage="refine", context=context_items(), start_point=start,
                            children=children, best_latency_ms=1.1, profile="relu_forward: 97% of cycles, "
                            "memory bound")
    system, human = render_prompt(req)
    assert "class ModelNew" in system
    assert "## The kernel to improve" in human and "passed the verifier in 1.234 ms" in human
    assert "so far is\n1.1 ms" in human
    assert RELU_CANDIDATE.strip().splitlines()[-1].strip() in human
    assert "(passed, 1.5 ms)" in human and "unrolled inner loop" in human and "relu_child1" in human
    assert "(failed at hack)" in human and "try/except is not allowed" in human
    assert "97% of cycles" in human
    assert "Fusing the bias" in human  # retrieved context too
    # with nothing known yet
    bare_req = GenerationRequest(task=task, stage="refine", start_point=ContextItem("p", "trace", "x = 1"))
    bare = render_prompt(bare_req)[1]
    assert "not known yet" in bare and "Earlier refinements" not in bare and "Retrieved context" not in bare


def test_truncate_keeps_head_and_tail():
    text = "A" * 500 + "B" * 500
    cut = truncate(text, 200)
    assert len(cut) <= 200 and cut.startswith("A") and cut.endswith("B") and "cut" in cut
    assert truncate("short", 200) == "short"


def test_rendering_is_bounded(task):
    opts = PromptOptions(max_context_chars=6_000, max_item_chars=1_500, max_feedback_chars=300)
    huge_trace = ContextItem("t", "trace", "x = 1\n" * 20_000, {"feasible": False, "failed_gate": "compile",
                                                                "feedback": "error: " + "e" * 10_000})
    many = [ContextItem(f"e{i}", "experience", f"experience number {i}: " + "z" * 900) for i in range(40)]
    req = GenerationRequest(task=task, stage="refine", context=[huge_trace] + many,
                            children=[ContextItem(f"c{i}", "trace", "y = 2\n" * 5_000, {"feasible": True})
                                      for i in range(10)],
                            start_point=ContextItem("p", "trace", RELU_CANDIDATE), last_feedback="f" * 50_000,
                            profile="p" * 50_000)
    _, human = render_prompt(req, opts)
    fixed = len(render_prompt(GenerationRequest(task=task, stage="refine",
                                                start_point=ContextItem("p", "trace", RELU_CANDIDATE)), opts)[1])
    # context + children within their budget; feedback and profile cut to theirs (plus headings)
    assert len(human) - fixed <= opts.max_context_chars + 2 * opts.max_feedback_chars + 1_500
    assert "left out to keep the prompt short" in human
    # children do not starve the retrieved context, nor notes the traces
    assert "### Variant 1" in human and "experience number 0" in human and "#### Trace 1" in human
    assert "f" * 400 not in human and "p" * 400 not in human
    for block in re.findall(r"### Variant \d+.*?(?=\n### |\n## |\Z)", human, flags=re.DOTALL):
        assert len(block) <= opts.max_item_chars + 50


def test_unknown_kinds_and_odd_metadata_render(task):
    req = GenerationRequest(task=task, stage="draft", context=[
        ContextItem("x", "hint", "Some other note."),
        ContextItem("t", "trace", "", {"feasible": None, "latency_ms": "nan"}),
    ])
    human = render_prompt(req)[1]
    assert "### Other notes" in human and "Some other note." in human and "(no code kept)" in human


def test_l2_task_with_parameters(task):
    if not GEMM_TASK.exists():
        pytest.skip("no L2 gemm task")
    gemm = load_task(GEMM_TASK)
    human = render_prompt(GenerationRequest(task=gemm, stage="draft"))[1]
    assert "nn.Linear(in_features, out_features)" in human and "category: fusion" in human


def test_the_example_in_the_system_prompt_passes_the_static_rules(task):
    from evokernel.verifier.trusted.ast_allowlist import check_glue
    from evokernel.verifier.trusted.native_rules import check_native

    from evokernel.generators.extract import extract_candidate

    system, _ = render_prompt(GenerationRequest(task=task, stage="draft"))
    code = extract_candidate(system[system.index("```python"):])
    assert check_glue(code) == []
    cpp = code.split('CPP_SOURCE = r"""', 1)[1].split('"""', 1)[0]
    assert 'extern "C"' in cpp and check_native(cpp) == []


# --- the ascend family (ascend-sim and ascend share prompts/ascend/) --------------------------------

NPU_TASK = ROOT / "evokernel" / "suites" / "npu_l1" / "02_leaky_relu.py"


@pytest.fixture(scope="module")
def npu_task():
    return load_task(NPU_TASK)


def no_placeholders(text):
    return "$" not in re.sub(r"\$\d", "", text.replace("$$", ""))


def test_ascend_templates_are_package_data(npu_task):
    from evokernel.prompts.render import target_notes

    root = resources.files("evokernel.prompts")
    for name in ("system", "draft", "refine", "target-ascend-sim", "target-ascend"):
        assert (root / "ascend" / f"{name}.md").is_file()
    assert "ascend" in backends()
    for name in ("system", "draft", "refine"):  # both backends read the family's templates
        assert load_template("ascend-sim", name).template == load_template("ascend", name).template
    assert "emulator" in target_notes("ascend-sim") and "measured" in target_notes("ascend")
    assert target_notes("cpu") == ""


@pytest.mark.parametrize("backend", ["ascend-sim", "ascend"])
def test_ascend_system_prompt_teaches_the_candidate_format(npu_task, backend):
    system, _ = render_prompt(GenerationRequest(task=npu_task, stage="draft", backend=backend))
    for needle in ["project_json_src", "host_tiling_src", "host_operator_src", "kernel_src", "python_bind_src",
                   "model_src", "LeakyReluCustom", "leaky_relu_custom", "leaky_relu_custom_tiling.h",
                   "LeakyReluCustomTilingData", "aclnnLeakyReluCustom", "custom_ops_lib.leaky_relu_custom",
                   "GET_TILING_DATA", "DTYPE_", "EXEC_NPU_CMD", "GetCoreNumAiv", "DataCopyPad", "192 KiB",
                   "ub_alignment", "datacopy_tail_dropped", "ub_capacity", "queue_pairing", "uninitialised_read",
                   "block_write_overlap", "compare_granularity", "missing_sync", "|out - ref| <= 0.01 + 0.01 * |ref|",
                   "Summary:", "```python", f"backend `{backend}`"]:
        assert needle in system, needle
    assert no_placeholders(system)
    if backend == "ascend-sim":
        assert "modelled estimate" in system and "busy ratio" in system and "bounds the time" in system
    else:
        assert "modelled estimate" not in system and "measured on the NPU" in system


def test_the_ascend_example_passes_the_static_rules(npu_task, tmp_path):
    from evokernel.verifier.backends.ascend_sim.backend import AscendSimBackend

    from evokernel.generators.extract import extract_candidate

    system, _ = render_prompt(GenerationRequest(task=npu_task, stage="draft", backend="ascend-sim"))
    code = extract_candidate(system[system.index("```python"):])
    assert "project_json_src" in code and "model_src" in code
    assert AscendSimBackend(tmp_path).static_check(code) == []


def test_ascend_draft_and_refine_prompts(npu_task):
    knowledge = [ContextItem(i.id, i.kind, i.text, i.meta) for i in load_seed_items("ascend-sim")[:2]]
    draft = render_prompt(GenerationRequest(task=npu_task, stage="draft", backend="ascend-sim",
                                            knowledge=knowledge, last_feedback="[error] datacopy_tail_dropped"))[1]
    assert "# Task: 02_leaky_relu" in draft and "F.leaky_relu" in draft and "drafting" in draft
    assert draft.startswith("## API knowledge") and "Hardware rules the verifier enforces" in draft
    assert "datacopy_tail_dropped" in draft and no_placeholders(draft)
    start = ContextItem("p", "trace", "project_json_src = '...'", {"latency_ms": 0.0123, "feasible": True})
    refine = render_prompt(GenerationRequest(task=npu_task, stage="refine", backend="ascend-sim", start_point=start,
                                             profile="estimate 12.3 us; bound: MTE2 (busy mte2 0.93, vec 0.31)",
                                             best_latency_ms=0.011))[1]
    assert "passed the verifier in 0.0123 ms" in refine and "so far is\n0.011 ms" in refine
    assert "bound: MTE2" in refine and "one targeted change" in refine and "HBM, MTE2 or MTE3 bound" in refine
    assert no_placeholders(refine)


def load_seed_items(backend):
    from evokernel.memory.seed import load_seed

    return load_seed(backend)


def test_prompts_of_two_tasks_share_the_system_prompt_and_the_knowledge_as_a_prefix(task):
    """The llama.cpp server reuses the longest common token prefix of consecutive prompts."""
    from evokernel.tasks.load import load_task

    other = load_task(Path(task.path).parent / "11_softmax.py")
    core = [ContextItem("k1", "knowledge", "load_cpp(src) returns lib with the extern C functions.",
                        {"title": "load_cpp"})]
    a = render_messages(GenerationRequest(task=task, stage="draft", knowledge=core, context=context_items()))
    b = render_messages(GenerationRequest(task=other, stage="draft", knowledge=core))
    assert a[0].content == b[0].content
    prefix = os.path.commonprefix([a[1].content, b[1].content])
    assert "**load_cpp**:" in prefix and prefix.endswith("# Task: ")  # they differ from the task on


def _template_draft(task):
    from evokernel.generators.template import TemplateGenerator

    return TemplateGenerator().generate(GenerationRequest(task=task, stage="draft", backend="cpu")).source


def test_a_trace_of_another_operator_is_shown_without_its_shape_guard():
    """A 1.5B model copied a transferred template trace with its shape guard and failed on its own inputs
    (docs/results.md, section 5): a trace of another task says so and loses the guard; the task's own
    traces are shown as they are."""
    from evokernel.tasks.load import load_tasks

    tasks = {t.name: t for t in load_tasks("cpu-l1")}
    mean, total = tasks["10_mean_dim"], tasks["08_sum_dim"]
    code = _template_draft(mean)
    assert "this kernel was generated for x of shape" in code
    item = ContextItem("tr", "trace", code, {"task": mean.task_id, "feasible": True, "summary": "midreduce"})
    _, foreign = render_prompt(GenerationRequest(task=total, stage="draft", context=[item]))
    assert "this kernel was generated for" not in foreign
    assert "Task: cpu-l1/10_mean_dim (another operator: adapt what helps, do not copy it)" in foreign
    shape = re.search(r"if tuple\(x\.shape\) != (\([0-9, ]+\))", code)[1]
    assert f"written for that task's inputs (x {shape})" in foreign
    assert "lib.stage0(" in foreign  # the technique is still shown
    _, own = render_prompt(GenerationRequest(task=mean, stage="draft", context=[item]))
    assert "this kernel was generated for x of shape" in own and "another operator" not in own


def test_every_template_draft_loses_exactly_its_guards_and_stays_python():
    import ast

    from evokernel.prompts.render import adapt_foreign_code
    from evokernel.tasks.load import load_tasks

    checked = 0
    for t in load_tasks("cpu-l1") + load_tasks("cpu-l2"):
        try:
            code = _template_draft(t)
        except GenerationError:
            continue  # an operator the template generator does not handle has no template trace
        inputs = len(re.findall(r"^        if tuple\(\w+\.shape\) != ", code, re.M))
        adapted, shapes = adapt_foreign_code(code)
        assert inputs >= 1 and len(shapes) == inputs, t.name
        assert "was generated for" not in adapted and "raise ValueError" not in adapted, t.name
        ast.parse(adapted)
        assert len(code.splitlines()) - len(adapted.splitlines()) == 2 * inputs, t.name
        checked += 1
    assert checked >= 40  # 46 operators in the two suites; the template generator drafts each
