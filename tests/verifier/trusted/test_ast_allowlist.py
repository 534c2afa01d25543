"""The glue allow-list: what a candidate's Python may contain (issue 13, class 1 and the glue half of class 2).

Accepted: every golden-corpus candidate and glue written the way models and KernelBench files write it.
Refused, each with a message naming the construct: the aliasing that reached sys.modules, the operator
recorder and the worker through plain assignment (`T = torch`), PyTorch compute in forward, state across
calls, and everything the old deny-list caught."""
import pytest

from evokernel.verifier.trusted.ast_allowlist import ASCEND_NATIVE, check_glue

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

# glue in the styles models and KernelBench files use (our own code, written for these tests)
ACCEPTED = {
    "kernelbench load_inline": '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
torch::Tensor add_cpu(torch::Tensor a, torch::Tensor b) { auto o = torch::empty_like(a); return o; }
"""
cpp_decl = "torch::Tensor add_cpu(torch::Tensor a, torch::Tensor b);"

add_ext = load_inline(name="add_ext", cpp_sources=cpp_decl + source, functions=["add_cpu"], verbose=True,
                      extra_cflags=[""], extra_ldflags=[""])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super(ModelNew, self).__init__()
        self.add_ext = add_ext

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.add_ext.add_cpu(a.contiguous(), b.contiguous())
''',
    "shapes, asserts, loops and errors": '''
from __future__ import annotations
import math
from typing import List, Optional
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

SRC = r"""extern "C" void row(const float* x, float* y, long n, double s) {}"""
FLAGS = ["-O3", "-ffast-math"]
lib = load_cpp(SRC, extra_cflags=FLAGS)


class ModelNew(nn.Module):
    """Per-row kernel calls."""

    def __init__(self, dim, scale=0.5):
        super().__init__()
        self.dim = dim
        self.scale = scale / math.sqrt(dim)
        self.kernel = lib.row

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            raise ValueError(f"expected a 2-D input, got {tuple(x.shape)}")
        assert x.is_contiguous() or x.stride(-1) == 1, "rows must be dense"
        B, N = x.shape
        x = x.contiguous()
        out = torch.empty(B, N, device=x.device, dtype=x.dtype)
        sizes = [x.size(i) for i in range(x.dim())]
        for i in range(B):
            self.kernel(x[i], out[i], N, float(self.scale))
        n = 1
        for s in sizes:
            n *= s
        return out.view(*sizes) if n == x.numel() else out
''',
    "parameters mirroring Model": '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp('extern "C" void k(const float* x, const float* w, const float* b, float* y, long m, long n) {}')


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape, eps=1e-5):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)
        self.bn = nn.BatchNorm1d(out_features, eps=eps)
        self.register_buffer("offset", torch.zeros(out_features))
        self.blocks = nn.ModuleList([nn.Linear(out_features, out_features) for _ in range(2)])
        nn.init.zeros_(self.bias)
        with torch.no_grad():
            self.gemm.weight.copy_(0.5 * torch.randn(out_features, in_features))

    def forward(self, x):
        w = self.gemm.weight.contiguous()
        y = torch.empty(x.shape[0], w.shape[0], dtype=torch.float32)
        eps = self.bn.eps if not self.training else 0.0
        mean, var = self.bn.running_mean, self.bn.running_var
        lib.k(x.contiguous(), w, self.bias, y, x.shape[0], w.shape[0])
        return y
''',
    "tuple outputs and views": '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp('extern "C" void two(const float* x, float* a, float* b, long n) {}')


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        a = torch.empty_like(x, memory_format=torch.contiguous_format)
        b = x.new_empty(x.shape)
        lib.two(x.contiguous(), a, b, x.numel())
        first, second = a.unbind(0)[0], b.t()
        return a, b.transpose(0, 1).contiguous()
''',
}

MODEL_SRC = '''
import torch
import torch_npu
from custom_ops_lib import add_custom
import custom_ops_lib


class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x, y):
        if x.shape != y.shape:
            raise ValueError("shapes differ")
        return custom_ops_lib.add_custom(x, y) if x.numel() else add_custom(x, y)
'''


def rules(src, **kw):
    return sorted({f.rule for f in check_glue(src, **kw)})


def test_clean_candidate_passes():
    assert check_glue(OK) == []


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_glue_as_models_and_kernelbench_write_it_passes(name):
    assert check_glue(ACCEPTED[name]) == []


def test_ascend_model_src_passes_and_may_call_only_exported_functions():
    assert check_glue(MODEL_SRC, native_modules=ASCEND_NATIVE, exported={"add_custom"}) == []
    bad = MODEL_SRC.replace("custom_ops_lib.add_custom(x, y)", "custom_ops_lib.mul_custom(x, y)")
    assert "custom-ops" in rules(bad, native_modules=ASCEND_NATIVE, exported={"add_custom"})
    assert "glue-structure" in rules(MODEL_SRC.replace("return custom_ops_lib", "torch_npu.npu.synchronize()\n"
                                                       "        return custom_ops_lib"), native_modules=ASCEND_NATIVE)


def test_every_golden_candidate_passes():
    from evokernel.evals.bench.golden_corpus import corpus
    from evokernel.verifier.backends.ascend_sim.project import read_strings

    n = 0
    for item in corpus("cpu"):
        assert check_glue(item.source) == [], item.label
        n += 1
    for item in corpus("ascend-sim"):
        model = read_strings(item.source)["model_src"]
        assert check_glue(model, native_modules=ASCEND_NATIVE) == [], item.label
        n += 1
    assert n >= 700


def forward_with(snippet):
    return OK.replace("        return y.reshape", f"        {snippet}\n        return y.reshape")


@pytest.mark.parametrize("snippet, rule", [
    # aliasing the torch module by plain assignment: the door to sys.modules, the recorder and the worker
    ("T = torch", "glue-alias"),
    ("m = T.sys.modules", "glue-builtin"),
    ("t = torch.sys.modules['evokernel.verifier.sandboxed.worker']", "glue-torch"),
    ("F = torch.nn.functional", "glue-torch"),
    ("g = nn.modules.activation.F", "glue-torch"),
    ("r = torch.relu", "glue-torch"),
    ("y = torch.relu(x)", "glue-torch"),
    ("y = torch.matmul(x, x)", "glue-torch"),
    ("y = torch.ops.aten.relu(x)", "glue-torch"),
    ("y = torch._C._nn.gelu(x)", "glue-private"),
    ("y = torch.where(x > 0, x, 0.0)", "glue-torch"),
    # tensor compute in forward
    ("y = x + x", "glue-compute"),
    ("y = -x", "glue-compute"),
    ("y = x.relu()", "glue-compute"),
    ("y = x.sum()", "glue-compute"),
    ("y = x.to(torch.float16)", "glue-compute"),
    ("y = x.float()", "glue-compute"),
    ("y = x[x > 0]", "glue-compute"),
    ("y.copy_(x.clamp(min=0))", "glue-compute"),
    ("ok = bool(x.max() > 0)", "glue-compute"),
    ("s = sum(x)", "glue-compute"),
    ("y = self.linear(x)", "glue-layer"),
    ("y = self.linear.forward(x)", "glue-layer"),
    ("p = self.linear._parameters", "glue-private"),
    # state across calls (call counting, caches)
    ("self.calls = 1", "global-state"),
    ("self.cache = y", "global-state"),
    ("global lib", "global-state"),
    # the interpreter's doors
    ("y = getattr(torch, 're' + 'lu')(x)", "glue-builtin"),
    ("y = eval('torch.relu(x)')", "glue-builtin"),
    ("exec('y = x')", "glue-builtin"),
    ("m = __import__('os')", "glue-builtin"),
    ("k = id(x)", "glue-builtin"),
    ("T = type(x)", "glue-builtin"),
    ("v = vars(self)", "glue-builtin"),
    ("print(x.shape)", "glue-builtin"),
    ("f = open('/tmp/cache.bin', 'wb')", "glue-builtin"),
    ("c = self.__class__", "glue-private"),
    ("b = x.__class__.__bases__", "glue-private"),
    ("p = x.data_ptr()", "glue-compute"),
    ("n = x.numpy()", "glue-compute"),
    ("l = x.tolist()", "glue-compute"),
    ("torch.set_num_threads(8)", "glue-torch"),
    ("h = lib._dll", "glue-private"),
    ("y = Model()(x)", "glue-model"),
    ("y = super().forward(x)", "glue-builtin"),
    ("f = lambda t: t", "glue-structure"),
    ("del y", "glue-structure"),
    ("torch.allclose = 1", "monkeypatch"),
    ("with open('/tmp/x') as f:\n            pass", "glue-structure"),
])
def test_forbidden_in_forward(snippet, rule):
    assert rule in rules(forward_with(snippet)), check_glue(forward_with(snippet))


def test_init_may_not_store_namespaces_or_functions_into_self():
    for stored in ("torch", "nn", "torch.nn", "load_cpp", "torch.empty"):
        src = OK.replace("self.linear = nn.Linear(dim, dim)", f"self.linear = nn.Linear(dim, dim)\n        self.T = {stored}")
        assert "glue-alias" in rules(src) or "glue-torch" in rules(src), (stored, check_glue(src))


@pytest.mark.parametrize("header, rule", [
    ("import torch.nn.functional as F", "glue-import"),
    ("from torch.nn import functional", "glue-import"),
    ("import os", "glue-import"),
    ("import subprocess", "glue-import"),
    ("import ctypes", "glue-import"),
    ("import threading", "glue-import"),
    ("import numpy as np", "glue-import"),
    ("import gc", "glue-import"),
    ("import inspect", "glue-import"),
    ("import sys", "glue-import"),
    ("import functools", "glue-import"),
    ("from importlib import import_module", "glue-import"),
    ("from evokernel.cpu import _BUILDER", "glue-import"),
    ("import evokernel.cpu as c", "glue-import"),
    ("from torch.utils.cpp_extension import load", "glue-import"),
    ("import time", "glue-import"),
    ("from torch import *", "glue-import"),
])
def test_forbidden_imports(header, rule):
    assert rule in rules(header + "\n" + OK)


def test_try_except_fallback():
    src = OK.replace("            lib.f(", "            try:\n                lib.f(").replace(
        "x.numel())\n", "x.numel())\n            except Exception:\n                y = torch.relu(x)\n")
    assert {"try-except", "glue-torch"} <= set(rules(src))


@pytest.mark.parametrize("extra, rule", [
    ("\nclass Fake(torch.Tensor):\n    pass\n", "glue-structure"),
    ("\ndef helper(x):\n    return x\n", "glue-structure"),
    ("\n@staticmethod\ndef g():\n    pass\n", "glue-structure"),
    ("\nif __name__ == '__main__':\n    pass\n", "glue-structure"),
    ("\nfor _ in range(2):\n    pass\n", "glue-structure"),
])
def test_module_level_structure(extra, rule):
    assert rule in rules(OK + extra)


def test_class_level_structure():
    assert "glue-structure" in rules(OK.replace("    def __init__(self, dim: int):",
                                                "    act = torch.relu\n\n    def __init__(self, dim: int):"))
    assert "glue-structure" in rules(OK.replace("    def forward(self, x):",
                                                "    def helper(self):\n        return 1\n\n    def forward(self, x):"))
    assert "glue-structure" in rules(OK.replace("def forward(self, x):", "def forward(self, x, f=torch.relu):"))
    assert "structure" in rules(OK.replace("class ModelNew(nn.Module)", "class ModelNew(Model)"))


def test_super_of_model_is_refused_with_the_fix_named():
    src = OK.replace("super().__init__()", "super(Model, self).__init__()")
    [f] = [f for f in check_glue(src) if f.rule == "glue-model"]
    assert "super().__init__()" in f.message


def test_every_message_names_the_construct_and_what_to_do():
    for f in check_glue(forward_with("T = torch") + "\nimport os\n"):
        assert ":" in f.message and len(f.message.split(":", 1)[1].strip()) > 10, f


def test_missing_modelnew_and_syntax_error():
    assert rules("import torch\n") == ["structure"]
    with pytest.raises(SyntaxError):
        check_glue("def f(:\n")


def test_a_base_never_imported_is_named_in_the_structure_message():
    # a real 1.5B reply: `import torch` only, then `class ModelNew(nn.Module)`
    src = OK.replace("import torch.nn as nn\n", "")
    (f,) = [f for f in check_glue(src) if f.rule == "structure"]
    assert "the name 'nn' is not defined; add `import torch.nn as nn`" in f.message
    src2 = OK.replace("class ModelNew(nn.Module)", "class ModelNew(object)")
    (f2,) = [f for f in check_glue(src2) if f.rule == "structure"]
    assert f2.message == "ModelNew must derive from nn.Module (only)"  # object is bound: no import hint


def test_pointer_plumbing_is_refused_with_what_to_write_instead():
    # real 1.5B replies: lib.f(x.data_ptr(), out.data_ptr(), n) and a.numpy()
    src = OK.replace("lib.f(x.contiguous().view(-1), y, x.numel())", "lib.f(x.data_ptr(), y.data_ptr(), x.numel())")
    msgs = [f.message for f in check_glue(src) if "data_ptr" in f.message]
    assert len(msgs) == 2 and all("pass the tensor itself" in m and "PyTorch compute" not in m for m in msgs)
    src = OK.replace("lib.f(x.contiguous().view(-1), y, x.numel())", "lib.f(x.numpy(), y, x.numel())")
    assert any("no NumPy" in f.message for f in check_glue(src))


KIND_CONFUSION = {
    # torch.Tensor's methods hand tensors over as plain values, whose arithmetic was allowed
    "tensor_type_method": """
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp
lib = load_cpp('extern "C" void f(float* x, long n) {}')
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        a, b = torch.Tensor.split(x, x.shape[0] // 2)
        lib.f(x, 1)
        return a * 2 + b
""",
    # a string method's name on a value that is not a string
    "string_method_on_size": """
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp
lib = load_cpp('extern "C" void f(float* x, long n) {}')
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        s = x.shape
        parts = s.split(1)
        lib.f(x, 1)
        return x
""",
    "calling_torch_tensor": """
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp
lib = load_cpp('extern "C" void f(float* x, long n) {}')
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        y = torch.Tensor(x.shape[0])
        lib.f(y, 1)
        return y + 1
""",
}


@pytest.mark.parametrize("name", sorted(KIND_CONFUSION))
def test_kinds_cannot_be_confused(name):
    findings = check_glue(KIND_CONFUSION[name])
    assert findings, name


def test_strings_keep_their_methods_and_torch_tensor_can_be_named():
    src = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp
N = 4
HEAD = "#include <cstdint>\\n"
BODY = """extern "C" void f(float* x, int64_t n) {{ for (int64_t i = 0; i < n; i++) x[i] *= {k}; }}""".format(k=N)
SRC = (HEAD + BODY).replace("float*", "float *").strip()
FLAGS = " ".join(["-O3", "-DW=" + str(N)]).split()
lib = load_cpp(SRC, extra_cflags=FLAGS)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.Tensor(4)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert isinstance(x, torch.Tensor), f"expected a tensor, got {x.dtype}".upper()
        out = torch.empty_like(x)
        lib.f(out, out.numel())
        return out
'''
    assert check_glue(src) == [], check_glue(src)


FMT_GLUE = OK.replace("        return y.reshape(x.shape[0], -1)", "{line}\n        return y.reshape(x.shape[0], -1)")


@pytest.mark.parametrize("line, refused", [
    # red-team round 3 (rt3_format_field_path_leak): a format field walks its argument's attributes and items
    ("        raise ValueError('{0.__file__[0]}|{0.__file__[1]}'.format(torch))", "plain values"),
    ("        raise ValueError('{0.__class__}'.format(x.dim()))", "name an argument only"),
    ("        raise ValueError('{0:{1.__doc__}}'.format(1, 2))", "name an argument only"),
    ("        s = '{0.real}'\n        raise ValueError(s.format(1))", "literal format string"),
    ("        w = 3\n        raise ValueError(f'{w:{torch}}')", "f-string field"),
    ("        raise ValueError('{} rows, {n} cols, {0!r:>8}'.format(x.shape[0], n=x.shape[1]))", None),
    ("        raise ValueError(f'{x.shape[0]:d} rows {x.dim():>{4}}')", None),
])
def test_format_strings_name_arguments_only(line, refused):
    findings = check_glue(FMT_GLUE.replace("{line}", line))
    if refused is None:
        assert not findings, findings
    else:
        assert findings and refused in findings[0].message, findings


def test_what_native_code_returns_in_init_is_a_tensor():
    """red-team round 3 (rt3_value_kind_matmul_blind): a native call's result in __init__ was typed a plain value,
    so `self.a @ self.b` in forward passed as arithmetic on numbers."""
    src = OK.split("class ModelNew")[0] + """class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = lib.f(1)
        self.b = lib.f(2)

    def forward(self, x):
        return self.a @ self.b
"""
    findings = check_glue(src)
    assert findings and "tensor arithmetic" in findings[0].message, findings


def test_sublayers_of_torch_composites_are_read_as_layers():
    """A candidate for a Transformer or attention task reads the children torch.nn registers in its composite
    layers (KernelBench level3 28, 31, 32): the same rules as any layer, reached one level down."""
    from evokernel.verifier.trusted.nn_vocabulary import sublayer_attributes

    assert {"out_proj", "self_attn", "linear1", "norm2", "layers", "encoder"} <= sublayer_attributes()

    def with_encoder(src):
        return src.replace("self.linear = nn.Linear(dim, dim)", "self.linear = nn.Linear(dim, dim)\n        "
                           "self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 1, dim, dropout=0.0), 1)")

    ok = with_encoder(forward_with("w = self.enc.layers[0].self_attn.out_proj.weight\n"
                                   "        e = self.enc.layers[0].norm1.eps"))
    assert check_glue(ok) == [], check_glue(ok)
    # a child is still a layer: calling it, its forward or a name torch does not register is refused
    for snippet in ("y = self.enc.layers[0].self_attn.out_proj(x)", "y = self.enc.layers[0].linear1.forward(x)",
                    "f = self.enc.layers[0].activation", "y = self.enc(x)", "m = self.enc.layers[0].self_attn.forward"):
        bad = with_encoder(forward_with(snippet))
        assert "glue-layer" in rules(bad), (snippet, check_glue(bad))


def test_a_branch_on_requires_grad_is_refused():
    """Red team round 12 (requires_grad_branch): no trial holds an input that requires grad, so a forward that skipped
    its kernel's work where ``x.requires_grad`` held was never judged there. The attribute is not glue any more."""
    src = OK.replace("    def forward(self, x):\n", "    def forward(self, x):\n        if x.requires_grad:\n"
                     "            return x\n", 1)
    assert src != OK
    assert rules(src)
    assert check_glue(OK.replace("    def forward(self, x):\n", "    def forward(self, x):\n        if x.ndim != 2:\n"
                                 "            return x\n", 1)) == []
