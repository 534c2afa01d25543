"""The reply grammars without llama.cpp (issue 32 item 3): our GBNF grammars are regular, so each is checked as one
regular expression (gbnf_regex.py). A shipped candidate must be a reply the grammar allows; the runaway replies of
the round-2 experiment must not even be a prefix of one ("inside the C++ raw string it accepts a fence, `class
ModelNew` and unlimited blank lines, so replies never closed the string and ran to the token cap").
tests/generators/test_grammar.py checks the same grammars against llama.cpp's own engine where it is installed."""
import re
from pathlib import Path

import pytest

from evokernel.generators.extract import extract_candidate
from evokernel.generators.extract_kernel import extract_kernel
from evokernel.generators.grammar import CPU_CANDIDATE, ONE_PYTHON_BLOCK, kernel_grammar
from evokernel.generators.kernel_form import declare
from gbnf_regex import to_regex

regex = pytest.importorskip("regex")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "evokernel" / "examples" / "cpu").glob("*.py"))
SIG = 'extern "C" void kernel(const float* x, float* out, int64_t batch_size, int64_t dim)'

# the grammar's C++ before issue 32: any character but a quote, quotes closed on their line
OLD_CPU_CANDIDATE = CPU_CANDIDATE.replace('cpp-lines "\\"\\"\\"', 'cpp "\\"\\"\\"') + \
    'cpp ::= ([^"] | "\\"" [^"\\n]* "\\"")*\n'


def _compiled(grammar: str):
    return regex.compile(to_regex(grammar), regex.S)


def allows(grammar: str, text: str) -> bool:
    return _compiled(grammar).fullmatch(text) is not None


def could_continue(grammar: str, text: str) -> bool:
    """Whether ``text`` is a prefix of some reply the grammar allows (else llama.cpp would not have sampled it)."""
    return _compiled(grammar).fullmatch(text, partial=True) is not None


def _reply(candidate: str) -> str:
    return f"Summary: one pass.\n\n```python\n{candidate.rstrip()}\n```"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_shipped_cpu_example_is_a_reply_the_grammar_allows(path):
    body = re.sub(r'\A""".*?"""\n', "", path.read_text(), flags=re.S)
    if "load_inline" in body:
        pytest.skip("the load_inline variant is outside the grammar's skeleton (load_cpp only)")
    reply = _reply(body)
    assert allows(CPU_CANDIDATE, reply)
    assert extract_candidate(reply).strip() == body.strip()


HEAD = ('Summary: relu.\n\n```python\nimport torch\nimport torch.nn as nn\n\nfrom evokernel.cpu import load_cpp\n\n'
        'CPP_SOURCE = r"""\n#include <cstdint>\n\nextern "C" void relu(const float* x, float* y, int64_t n) {\n')

RUNAWAYS = {
    # the model opened a second block inside the raw string and wrote the file again
    "a fence inside the C++": HEAD + "    for (int64_t i = 0; i < n; ++i) y[i] = x[i];\n}\n```python\n",
    # the Python of the candidate written into the raw string: the string never closes
    "class ModelNew inside the C++": HEAD + "}\n\nclass ModelNew(nn.Module):\n",
    "an import inside the C++": HEAD + "}\nimport torch\n",
    "lib = load_cpp inside the C++": HEAD + "}\nlib = load_cpp(CPP_SOURCE)\n",
    "def forward inside the C++": HEAD + "    def forward(self, x):\n",
    # blank runs: how replies ran to the token cap
    "three empty lines": HEAD + "    int64_t i = 0;\n\n\n\n",
    "a whitespace-only line": HEAD + "    int64_t i = 0;\n        \n",
}


@pytest.mark.parametrize("name", list(RUNAWAYS))
def test_the_runaway_shapes_of_round_two_cannot_be_sampled(name):
    text = RUNAWAYS[name]
    assert not could_continue(CPU_CANDIDATE, text), name
    assert could_continue(OLD_CPU_CANDIDATE, text), name  # the grammar before issue 32 let each of them through


def test_the_full_grammar_still_lets_the_cpp_close_and_the_class_follow():
    text = HEAD + "    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;\n}\n"
    assert could_continue(CPU_CANDIDATE, text)
    done = text + ('"""\n\nlib = load_cpp(CPP_SOURCE)\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n'
                   '        out = torch.empty_like(x)\n        lib.relu(x.contiguous(), out, x.numel())\n'
                   '        return out\n```')
    assert allows(CPU_CANDIDATE, done)
    assert not could_continue(CPU_CANDIDATE, done + "\nMore text after the block")
    # blank runs in the Python are bounded too
    assert not could_continue(CPU_CANDIDATE, done.replace("    def forward", "\n\n\n    def forward")[:-3])


def test_the_python_block_grammar_bounds_blank_runs_and_ends_at_the_fence():
    assert allows(ONE_PYTHON_BLOCK, "Summary: s.\n\n```python\nx = 1\n\ny = 2\n```")
    assert not could_continue(ONE_PYTHON_BLOCK, "Summary: s.\n\n```python\nx = 1\n\n\n\n")


KERNEL_REPLY = ("Summary: one pass.\n\n```cpp\nstatic inline float relu(float v) { return v > 0.0f ? v : 0.0f; }\n\n"
                f"{SIG} {{\n    const int64_t n = batch_size * dim;\n    #pragma omp parallel for simd\n"
                "    for (int64_t i = 0; i < n; ++i) out[i] = relu(x[i]);\n}\n```")


def test_the_kernel_grammar_is_the_declared_function_and_nothing_else(suite_task):
    g = kernel_grammar(SIG)
    assert allows(g, KERNEL_REPLY)
    spec = declare(suite_task("cpu_l1/01_relu.py", batch_size=4, dim=100))
    assert spec.signature == SIG
    assert "relu(x[i])" in extract_kernel(KERNEL_REPLY, spec)  # what the grammar allows, extraction takes
    # the signature is the grammar's: another one cannot be written, nor a second entry
    assert not could_continue(g, "Summary: s.\n\n```cpp\nextern \"C\" void kernel(const float* x, float* out, int64_t n)")
    other = 'extern "C" void kernel(const float* x, float* out, int64_t n)'
    assert not allows(g, KERNEL_REPLY.replace(SIG, other)) and not allows(g, KERNEL_REPLY.replace(SIG, "void kernel()"))
    assert not could_continue(g, KERNEL_REPLY.replace("    const int64_t n", 'extern "C" void kernel2() {}\n    const'))
    # nothing after the fence; no Python class, fence or blank run inside the function
    assert not could_continue(g, KERNEL_REPLY + "\n")
    body = KERNEL_REPLY.split("{\n    const")[0] + "{\n"
    for runaway in ("```\n", "class ModelNew(nn.Module):\n", "    x = 1;\n\n\n\n", "import torch\n", "   \n"):
        assert not could_continue(g, body + runaway), runaway
    assert could_continue(g, body + "    int64_t i = 0;\n\n")
