"""The kernel-only candidate form: the trusted side declares the entry from the task and writes the glue; a reply
holding only the kernel becomes a candidate the real verifier accepts (elementwise, reduction, matmul, a linear layer
with parameters, a two-output reference), and a malformed reply is a clear `generate` failure."""
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from evokernel.generators.base import DRAFT, REFINE, ContextItem, GenerationError, GenerationRequest
from evokernel.generators.extract_kernel import extract_kernel
from evokernel.generators.kernel_form import KERNEL_MARK, KernelFormError, declare, kernel_of_candidate
from evokernel.generators.llm import LLMGenerator, make_generator
from evokernel.prompts.render import render_prompt
from evokernel.tasks.load import load_task
from evokernel.verifier.trusted.ast_allowlist import check_glue

RELU = '''Summary: one pass, max with zero.

```cpp
extern "C" void kernel(const float* x, float* out, int64_t batch_size, int64_t dim) {
    const int64_t n = batch_size * dim;
    #pragma omp parallel for simd
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
```'''

SUM_DIM = '''Summary: sum over the middle axis, row by row.

```cpp
extern "C" void kernel(const float* x, float* out, int64_t batch_size, int64_t dim1, int64_t dim2) {
    for (int64_t b = 0; b < batch_size; ++b) {
        float* o = out + b * dim2;
        for (int64_t j = 0; j < dim2; ++j) o[j] = 0.0f;
        for (int64_t i = 0; i < dim1; ++i) {
            const float* row = x + (b * dim1 + i) * dim2;
            for (int64_t j = 0; j < dim2; ++j) o[j] += row[j];
        }
    }
}
```'''

# the model also wrote a helper and left out extern "C" on the entry: both are fine
MATMUL = '''Summary: i-k-j loop order.

```cpp
static inline void zero(float* p, int64_t n) { for (int64_t i = 0; i < n; ++i) p[i] = 0.0f; }

void kernel(const float* a, const float* b, float* out, int64_t m, int64_t k, int64_t n) {
    for (int64_t i = 0; i < m; ++i) {
        float* o = out + i * n;
        zero(o, n);
        for (int64_t p = 0; p < k; ++p) {
            const float av = a[i * k + p];
            const float* br = b + p * n;
            for (int64_t j = 0; j < n; ++j) o[j] += av * br[j];
        }
    }
}
```'''

GEMM_BIAS_RELU = '''Summary: x @ W^T + b, then ReLU.

```cpp
extern "C" void kernel(const float* x, const float* w, const float* bias, float* out,
                       int64_t batch_size, int64_t in_features, int64_t out_features) {
    for (int64_t r = 0; r < batch_size; ++r)
        for (int64_t c = 0; c < out_features; ++c) {
            float acc = bias[c];
            for (int64_t k = 0; k < in_features; ++k) acc += x[r * in_features + k] * w[c * in_features + k];
            out[r * out_features + c] = acc > 0.0f ? acc : 0.0f;
        }
}
```'''

MAX_WITH_INDICES = '''Summary: the maximum of each row and where it is.

```cpp
extern "C" void kernel(const float* x, float* out0, int64_t* out1, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        int64_t best = 0;
        for (int64_t c = 1; c < cols; ++c) if (x[r * cols + c] > x[r * cols + best]) best = c;
        out0[r] = x[r * cols + best];
        out1[r] = best;
    }
}
```'''

TWO_OUTPUTS = '''"""The maximum of each row and its index: two outputs (values float32, indices int64)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        values, indices = torch.max(x, dim=1)
        return values, indices


rows = 32
cols = 48


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''


def _generate(task, reply, stage=DRAFT, start=None):
    gen = LLMGenerator(FakeListChatModel(responses=[reply] * 4), name="fake", form="kernel", repairs=0)
    return gen.generate(GenerationRequest(task=task, stage=stage, start_point=start))


@pytest.fixture
def two_outputs(tmp_path):
    path = tmp_path / "max_with_indices.py"
    path.write_text(TWO_OUTPUTS)
    return load_task(path)


CASES = [("cpu_l1/01_relu.py", {"batch_size": 4, "dim": 100}, RELU),
         ("cpu_l1/08_sum_dim.py", {"batch_size": 2, "dim1": 16, "dim2": 24}, SUM_DIM),
         ("cpu_l1/15_matmul.py", {"m": 24, "k": 16, "n": 40}, MATMUL),
         ("cpu_l2/01_gemm_bias_relu.py", {"batch_size": 8, "in_features": 32, "out_features": 24}, GEMM_BIAS_RELU)]


@pytest.mark.parametrize("path,sizes,reply", CASES, ids=[c[0].split("/")[1][:-3] for c in CASES])
def test_a_kernel_only_reply_becomes_a_feasible_candidate(verifier, suite_task, path, sizes, reply):
    task = suite_task(path, **sizes)
    out = _generate(task, reply)
    assert KERNEL_MARK in out.source
    assert check_glue(out.source) == []  # the generated glue passes the verifier's allow-list as it is
    verdict = verifier.verify(task, out.source)
    assert verdict.feasible, verdict.feedback


def test_a_two_output_reference_gets_two_output_pointers_and_a_tuple(verifier, two_outputs):
    spec = declare(two_outputs)
    assert spec.signature == 'extern "C" void kernel(const float* x, float* out0, int64_t* out1, int64_t rows, int64_t cols)'
    out = _generate(two_outputs, MAX_WITH_INDICES)
    assert "return out0, out1" in out.source and check_glue(out.source) == []
    verdict = verifier.verify(two_outputs, out.source)
    assert verdict.feasible, verdict.feedback


def test_a_wrong_kernel_is_judged_not_excused(verifier, suite_task):
    """The glue is generated, the kernel is not trusted: a kernel that skips the last element fails correctness."""
    task = suite_task("cpu_l1/01_relu.py", batch_size=4, dim=100)
    out = _generate(task, RELU.replace("i < n;", "i < n - 1;"))
    verdict = verifier.verify(task, out.source)
    assert not verdict.feasible and verdict.gates.get("correctness") is False


def test_sizes_are_named_after_the_task_constants_that_set_them(suite_task):
    conv = declare(suite_task("cpu_l1/29_conv2d.py", batch_size=2))
    names = [a.name for a in conv.args]
    assert names[:4] == ["x", "conv_weight", "conv_bias", "out"]
    shapes = {a.name: a.shape for a in conv.args if a.role != "size"}
    assert shapes["x"] == ("batch_size", "in_channels", "height", "width")
    assert shapes["conv_weight"] == ("out_channels", "in_channels", "kernel_size", "kernel_size")
    # the output's spatial sizes depend on height/width and kernel_size together: their own parameters
    assert shapes["out"][:2] == ("batch_size", "out_channels") and shapes["out"][2] not in ("height", "width")
    # equal values, different meanings: matmul's M and N stay two parameters even when both are 64
    mm = declare(suite_task("cpu_l1/15_matmul.py", m=64, k=32, n=64))
    assert mm.signature.endswith("int64_t m, int64_t k, int64_t n)")


def test_a_task_with_a_scalar_forward_argument_cannot_be_declared_and_falls_back_to_the_full_form(tmp_path):
    path = tmp_path / "scale.py"
    path.write_text(TWO_OUTPUTS.replace("def forward(self, x):", "def forward(self, x, k):")
                    .replace("return [torch.randn(rows, cols)]", "return [torch.randn(rows, cols), 3]"))
    task = load_task(path)
    with pytest.raises(KernelFormError, match="not a tensor"):
        declare(task)
    gen = LLMGenerator(FakeListChatModel(responses=["no code"]), name="fake", form="kernel", repairs=0)
    with pytest.raises(GenerationError, match="python"):  # the full form's message: it asked for the whole file
        gen.generate(GenerationRequest(task=task, stage=DRAFT))
    assert gen.last_call["form"] == "full"


@pytest.mark.parametrize("reply,message", [
    ("I am not sure how to do this.", "no C++ that defines `kernel`"),
    ("", "the reply is empty"),
    ('```cpp\nextern "C" void kernel(const float* x, float* out, int64_t n) {\n}\n```', "keep the declared parameters"),
    ('```cpp\nextern "C" void kernel(const float* x, float* out, int64_t b, int64_t d) {\n  for (;;) {\n', "do not balance"),
    ('```cpp\nextern "C" void kernel(const float* x, float* out, int64_t b, int64_t d);\n```', "never defines"),
    ('```cpp\nextern "C" float kernel(const float* x, float* out, int64_t b, int64_t d) { return 0; }\n```', "return void"),
    ('```cpp\nextern "C" void kernel(const float* x, float* out, int64_t b, int64_t d) {}\n'
     'extern "C" void kernel(const float* x, float* out, int64_t b, int64_t d) {}\n```', "defined 2 times"),
    ('```cpp\nextern "C" void kernel(const float* x, std::vector<float> out, int64_t b, int64_t d) {}\n```',
     "cannot be bound"),
])
def test_a_malformed_reply_is_a_clear_generate_failure(suite_task, reply, message):
    task = suite_task("cpu_l1/01_relu.py", batch_size=4, dim=100)
    with pytest.raises(GenerationError) as err:
        _generate(task, reply)
    assert message in str(err.value)
    # every message ends with what to write: the declared signature
    assert 'extern "C" void kernel(const float* x, float* out, int64_t batch_size, int64_t dim)' in str(err.value)


def test_a_whole_candidate_in_the_reply_still_gives_its_kernel(suite_task):
    task = suite_task("cpu_l1/01_relu.py", batch_size=4, dim=100)
    spec = declare(task)
    body = RELU.split("```cpp\n")[1].split("```")[0]
    whole = f'```python\nimport torch\nfrom evokernel.cpu import load_cpp\nCPP_SOURCE = r"""\n{body}"""\nlib = load_cpp(CPP_SOURCE)\n```'
    assert extract_kernel(whole, spec).strip() == body.strip()


def test_the_prompts_ask_for_the_kernel_only_and_a_refinement_shows_the_kernel_alone(suite_task):
    task = suite_task("cpu_l1/01_relu.py", batch_size=4, dim=100)
    spec = declare(task)
    system, human = render_prompt(GenerationRequest(task=task, stage=DRAFT), kernel=spec)
    assert "class ModelNew" not in system and "```cpp" in system
    assert spec.signature in human and "x: float[batch_size][dim]" in human
    start_source = spec.candidate(extract_kernel(RELU, spec))
    start = ContextItem(id="t1", kind="trace", text=start_source, meta={"latency_ms": 1.0, "feasible": True})
    _, refine = render_prompt(GenerationRequest(task=task, stage=REFINE, start_point=start), kernel=spec)
    assert "```cpp\nextern \"C\" void kernel" in refine
    assert "lib.kernel(" not in refine and "load_cpp" not in refine  # the glue is not the model's business
    assert kernel_of_candidate(start_source).strip() == extract_kernel(RELU, spec).strip()
    # a refinement of the kernel-only form is answered with a kernel too
    out = _generate(task, RELU, stage=REFINE, start=start)
    assert KERNEL_MARK in out.source


def test_local_models_default_to_the_kernel_form_and_others_to_the_full_form(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert make_generator("openai:gpt-4o-mini").form == "full"
    assert make_generator("openai:gpt-4o-mini", candidate_form="kernel").form == "kernel"
    with pytest.raises(ValueError, match="candidate form"):
        make_generator("openai:gpt-4o-mini", candidate_form="glue")


def test_the_kernel_form_leaves_out_the_full_files_format_item(suite_task):
    task = suite_task("cpu_l1/01_relu.py", batch_size=4, dim=100)
    core = ContextItem(id="seed:cpu:00", kind="seed", text="CPU candidate format: class ModelNew ...",
                       meta={"categories": ["*"], "title": "format"})
    simd = ContextItem(id="seed:cpu:03", kind="seed", text="omp simd idiom", meta={"categories": ["activation"],
                                                                                   "title": "SIMD"})
    request = GenerationRequest(task=task, stage=DRAFT, knowledge=[core, simd])
    _, kernel_human = render_prompt(request, kernel=declare(task))
    _, full_human = render_prompt(request)
    assert "omp simd idiom" in kernel_human and "CPU candidate format" not in kernel_human
    assert "CPU candidate format" in full_human


def test_declaring_leaves_the_process_random_state_and_default_dtype_alone(tmp_path):
    import torch

    path = tmp_path / "seeded.py"
    path.write_text(TWO_OUTPUTS.replace("import torch.nn as nn\n", "import torch.nn as nn\ntorch.manual_seed(7)\n"
                                        "torch.set_default_dtype(torch.float64)\n"))
    state, dtype = torch.random.get_rng_state(), torch.get_default_dtype()
    declare(load_task(path))
    assert torch.equal(torch.random.get_rng_state(), state) and torch.get_default_dtype() == dtype
