"""The candidate grammar against llama.cpp's own grammar engine (marker llm: needs llama-cpp-python and a fetched
model, whose vocabulary alone is loaded): every candidate we ship as an example must be a reply the grammar can
produce (a grammar that rejects valid programs would force the model into wrong ones), and the shapes that
made the 1.5B model's `generate` failures must be impossible."""
import ctypes
import math
import os
import re
from pathlib import Path

import pytest

from evokernel.generators.local import models as lm
from evokernel.generators.extract import extract_candidate
from evokernel.generators.grammar import CPU_CANDIDATE, ONE_PYTHON_BLOCK, kernel_grammar

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "evokernel" / "examples" / "cpu").glob("*.py"))


def _vocab_model():
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return None
    cache = Path(os.environ.get("EVOKERNEL_CACHE") or Path.home() / ".cache" / "evokernel")
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        path = cache / "models" / lm.MODELS[name].filename
        if path.exists() and path.stat().st_size == lm.MODELS[name].size:
            return path
    return None


MODEL = _vocab_model()
pytestmark = [pytest.mark.llm, pytest.mark.skipif(MODEL is None, reason="needs llama-cpp-python and a fetched model "
                                                                        "(evokernel model fetch qwen2.5-coder-0.5b)")]


@pytest.fixture(scope="module")
def accepts():
    from llama_cpp import Llama
    from llama_cpp import llama_cpp as C

    llm = Llama(model_path=str(MODEL), vocab_only=True, verbose=False)
    vocab = llm._model.vocab
    eos = C.llama_vocab_eos(vocab)

    def allowed(sampler, token: int) -> bool:
        data = (C.llama_token_data * 1)(C.llama_token_data(token, 0.0, 0.0))
        arr = C.llama_token_data_array(data, 1, -1, False)
        C.llama_sampler_apply(sampler, ctypes.byref(arr))
        return not math.isinf(data[0].logit)

    def check(grammar: str, text: str) -> tuple[bool, str]:
        """(whether the grammar lets the model write exactly ``text`` and then stop, where it refused)."""
        sampler = C.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
        try:
            tokens = llm.tokenize(text.encode(), add_bos=False, special=False)
            for i, t in enumerate(tokens):
                if not allowed(sampler, t):
                    done = llm.detokenize(tokens[:i]).decode(errors="replace")
                    return False, f"refused after {done[-80:]!r}"
                C.llama_sampler_accept(sampler, t)
            return (True, "") if allowed(sampler, eos) else (False, "cannot stop there")
        finally:
            C.llama_sampler_free(sampler)

    return check


def _reply(candidate: str) -> str:
    return f"Summary: one pass.\n\n```python\n{candidate.rstrip()}\n```"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_shipped_cpu_example_is_a_reply_the_grammar_allows(accepts, path):
    source = path.read_text()
    body = re.sub(r'\A""".*?"""\n', "", source, flags=re.S)  # the module docstring: not part of the skeleton
    if "load_inline" in body:
        pytest.skip("the load_inline variant of the format is outside the grammar's skeleton (load_cpp only)")
    ok, where = accepts(CPU_CANDIDATE, _reply(body))
    assert ok, where
    assert extract_candidate(_reply(body)).strip() == body.strip()  # and the extraction takes it whole
    assert accepts(ONE_PYTHON_BLOCK, _reply(body))[0]


def test_the_shapes_of_the_small_models_generate_failures_are_impossible(accepts):
    relu = re.sub(r'\A""".*?"""\n', "", (ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py").read_text())
    restated = _reply("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                      "        return torch.relu(x)\n")
    open_string = _reply(relu.split('"""\n\nlib = ')[0])  # the C++ raw string never closed
    prose_after = _reply(relu) + "\nThis kernel is fast because ..."
    two_blocks = _reply(relu) + "\n```cpp\nint main() {}\n```"
    no_summary = f"```python\n{relu}```"
    for text in (restated, open_string, prose_after, two_blocks, no_summary):
        assert not accepts(CPU_CANDIDATE, text)[0], text[:200]


def test_the_kernel_grammar_parses_in_llama_cpp_and_allows_a_kernel_reply(accepts):
    sig = 'extern "C" void kernel(const float* x, float* out, int64_t batch_size, int64_t dim)'
    reply = (f"Summary: one pass.\n\n```cpp\n{sig} {{\n    const int64_t n = batch_size * dim;\n"
             "    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;\n}\n```")
    ok, where = accepts(kernel_grammar(sig), reply)
    assert ok, where
    assert not accepts(kernel_grammar(sig), reply.replace("    const", "class ModelNew(nn.Module):\n    const"))[0]
