"""Static anti-hack rules over candidate Python and native sources."""
import pytest

from evokernel.verifier.trusted.hack import check_python
from evokernel.verifier.trusted.native_rules import check_native

OK = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp
lib = load_cpp("extern \\"C\\" void f(const float* x, float* y, long n) {}")

class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, x):
        with torch.no_grad():
            y = torch.empty(x.shape[0], self.linear.weight.shape[0], dtype=torch.float32)
            lib.f(x.contiguous().view(-1), y, x.numel())
        return y.reshape(x.shape[0], -1)
'''


def rules(src):
    return sorted({f.rule for f in check_python(src)})


def test_clean_candidate_passes():
    assert check_python(OK) == []


@pytest.mark.parametrize("snippet, rule", [
    ("y = torch.relu(x)", "torch-compute"),
    ("y = torch.matmul(x, x)", "torch-compute"),
    ("y = torch._C._nn.gelu(x)", "torch-internals"),
    ("y = getattr(torch, 're' + 'lu')(x)", "forbidden-name"),
    ("y = eval('torch.relu(x)')", "forbidden-name"),
    ("exec('y = x')", "forbidden-name"),
    ("y = Model()(x)", "forbidden-name"),
    ("torch.allclose = lambda *a, **k: True", "monkeypatch"),
    ("x.__class__.__bases__", "dunder"),
    ("y = x.numpy()", "forbidden-attr"),
    ("y = x.tolist()", "forbidden-attr"),
    ("torch.set_num_threads(8)", "forbidden-attr"),
    ("p = x.data_ptr()", "forbidden-attr"),
    ("f = open('/tmp/cache.bin', 'wb')", "forbidden-name"),
    ("k = id(x)", "forbidden-name"),
    ("T = type('T', (), {})", "forbidden-name"),
])
def test_forbidden_expressions(snippet, rule):
    src = OK.replace("        return y.reshape", f"        {snippet}\n        return y.reshape")
    assert rule in rules(src), check_python(src)


@pytest.mark.parametrize("header, rule", [
    ("import torch.nn.functional as F", "import"),
    ("from torch.nn import functional", "torch-compute"),
    ("import os", "import"),
    ("import subprocess", "import"),
    ("import ctypes", "import"),
    ("import threading", "import"),
    ("import numpy as np", "import"),
    ("import gc", "import"),
    ("import inspect", "import"),
    ("import sys", "import"),
    ("from importlib import import_module", "import"),
    ("from evokernel.cpu import _BUILDER", "import"),
    ("from torch.utils.cpp_extension import load", "import"),
    ("import time", "import"),
])
def test_forbidden_imports(header, rule):
    assert rule in rules(header + "\n" + OK)


def test_try_except_fallback():
    src = OK.replace("            lib.f(", "            try:\n                lib.f(").replace(
        "x.numel())\n", "x.numel())\n            except Exception:\n                y = torch.relu(x)\n")
    assert {"try-except", "torch-compute"} <= set(rules(src))


def test_subclassing_model_and_tensor():
    assert "subclass" in rules(OK.replace("class ModelNew(nn.Module)", "class ModelNew(Model)"))
    assert "subclass" in rules(OK + "\nclass Fake(torch.Tensor):\n    pass\n")


def test_global_state_decorators_and_dunders():
    assert "global-state" in rules(OK + "\ndef g():\n    global lib\n")
    assert "decorator" in rules(OK + "\n@staticmethod\ndef g():\n    pass\n")
    assert "dunder" in rules(OK + "\nclass H:\n    def __torch_function__(self):\n        pass\n")


def test_missing_modelnew_and_syntax_error():
    assert "structure" in rules("import torch\n")
    with pytest.raises(SyntaxError):
        check_python("def f(:\n")


CPP_OK = '''
#include <cstdint>
#include <cmath>
#include <cstdio>
extern "C" void k(const float* x, float* y, int64_t n) {
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++) y[i] = std::tanh(x[i]);  // open( in a comment is fine
    if (n < 0) fprintf(stderr, "bad n\\n");
}
'''


def test_native_clean():
    assert check_native(CPP_OK) == []


@pytest.mark.parametrize("code, rule", [
    ("#include <torch/extension.h>", "cpp-torch"),
    ("#include <ATen/ATen.h>", "cpp-torch"),
    ("auto t = at::relu(a);", "cpp-torch"),
    ("void* h = dlopen(\"libtorch_cpu.so\", RTLD_NOW);", "cpp-dynamic-load"),
    ("void* s = dlsym(RTLD_DEFAULT, \"x\");", "cpp-dynamic-load"),
    ("int p = fork();", "cpp-process"),
    ("system(\"ls\");", "cpp-process"),
    ("std::thread t([]{});", "cpp-threads"),
    ("pthread_create(0, 0, 0, 0);", "cpp-threads"),
    ("FILE* f = fopen(\"/tmp/cache\", \"wb\");", "cpp-file"),
    ("_exit(0);", "cpp-exit"),
    ("asm volatile(\"nop\");", "cpp-syscall"),
    ("syscall(39);", "cpp-syscall"),
    ("printf(\"hi\");", "cpp-stdout"),
    ("const char* k = getenv(\"OPENAI_API_KEY\");", "cpp-env"),
    ("__attribute__((constructor)) static void init() {}", "cpp-static-init"),
])
def test_native_forbidden(code, rule):
    assert rule in {f.rule for f in check_native(CPP_OK + "\n" + code + "\n")}


def test_inline_sources_may_use_torch_but_not_bypass_dispatch():
    inline = "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) { return torch::empty_like(x); }"
    assert check_native(inline, "inline") == []
    bypass = inline + "\nauto y = at::native::relu(x);"
    assert "cpp-dispatch-bypass" in {f.rule for f in check_native(bypass, "inline")}
