"""Non-contiguous trial inputs, through a real reference worker and candidate worker (red team round 10,
c9_values/rt10_noncontig_input_ignored): the ``scale`` trial passes floating inputs of >= 2 dimensions as a
transposed copy's transpose, the ``negate`` trial as slices of a wider buffer (sandboxed/trial_inputs.py
`STRIDED_IN`). A kernel that reads an input's memory linearly is refused; so is one that handles only one of the
two layouts (each would pass a rule that showed the other one only); one that reads both strides, or makes the
input contiguous first, passes. A reference that refuses a view keeps that input contiguous. `load_cpp` hands its
kernels a contiguous copy of a view (evokernel/cpu.py), judged like the glue's own copies."""
import textwrap

import pytest
import torch

from evokernel.tasks.load import load_task
from evokernel.verifier.trusted import regions

ADD = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(16, 96), torch.randn(16, 96)]


def get_init_inputs():
    return []
'''

# one C++ source for every kernel below (built once): add_fwd reads b in the way MODE says
KERNEL = '''
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor add_fwd(torch::Tensor a, torch::Tensor b, int64_t mode) {
    TORCH_CHECK(a.is_contiguous() && a.dim() == 2 && b.dim() == 2, "2-d inputs, a contiguous");
    torch::Tensor out = torch::empty({a.size(0), a.size(1)}, a.options());
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int64_t rows = a.size(0), cols = a.size(1);
    int64_t rs = cols, cs = 1;                       // mode 0: b's memory read linearly, its strides ignored
    if (mode == 1) { rs = b.stride(0); }             // the row pitch only (unit column stride assumed)
    if (mode == 2 && b.stride(0) == 1) { rs = 1; cs = b.stride(1); }  // a transposed layout only
    if (mode == 3) { rs = b.stride(0); cs = b.stride(1); }            // both strides
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) po[i * cols + j] = pa[i * cols + j] + pb[i * rs + j * cs];
    return out;
}
"""

ext = load_inline(name="strided_add_modes", cpp_sources=[CPP_SOURCE], functions=["add_fwd"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add_fwd(a.contiguous(), GLUE, MODE)
'''

RELU_VIEW = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x.view(-1)).view(x.shape)


def get_inputs():
    return [torch.randn(16, 96)]


def get_init_inputs():
    return []
'''

RELU_CPP = '''
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
""")


class ModelNew(nn.Module):
    def forward(self, x):
        x = GLUE
        y = torch.empty(x.shape, dtype=x.dtype)
        lib.relu(x, y, x.numel())
        return y
'''

# a load_inline relu that reads its input's memory linearly (strides ignored): wrong on a view
RELU_INLINE = '''
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor relu_fwd(torch::Tensor x) {
    torch::Tensor y = torch::empty(x.sizes(), x.options());
    const float* px = x.data_ptr<float>();
    float* py = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = px[i] > 0.0f ? px[i] : 0.0f;
    return y;
}
"""

ext = load_inline(name="strided_relu_linear", cpp_sources=[CPP_SOURCE], functions=["relu_fwd"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_fwd(x)
'''


def _task(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return load_task(path)


def _kernel(mode: int, glue: str = "b") -> str:
    return KERNEL.replace("GLUE", glue).replace("MODE", str(mode))


@pytest.fixture(scope="module")
def add_task(tmp_path_factory):
    return _task(tmp_path_factory.mktemp("strided"), "add.py", ADD)


def test_the_scale_and_negate_trials_send_views_and_the_reference_answers_on_them(verifier, add_task):
    ref = verifier._pool.get(add_task)
    ref.init(0)
    # the second draw of a kind of trial takes the reference's decision from the first (no check forwards again)
    for seed, (perturb, strides) in [(s, p) for s in (11, 12) for p in (("scale", (1, 16)), ("negate", None),
                                                                        ("none", None))]:
        metas = ref.make_inputs(seed, perturb)
        got = [regions.tensor(ref.handle, m) for m in metas]
        torch.manual_seed(seed)
        drawn = [t * 4.0 if perturb == "scale" else -t if perturb == "negate" else t for t in
                 [torch.randn(16, 96), torch.randn(16, 96)]]
        for m, t, want in zip(metas, got, drawn):
            assert torch.equal(t, want)  # the same values, whatever the layout
            if perturb == "none":
                assert m.strides is None and t.is_contiguous()
            elif perturb == "scale":
                assert m.strides == strides and m.nbytes == t.numel() * 4
            else:  # a row pitch of 96 + pad, 1 <= pad <= 16; the span ends at the last element
                assert m.strides[1] == 1 and 97 <= m.strides[0] <= 112
                assert m.nbytes == (15 * m.strides[0] + 96) * 4
        out_metas, _ = ref.run()
        assert torch.equal(regions.tensor(ref.handle, out_metas[0]), drawn[0] + drawn[1])


def test_a_kernel_must_read_both_layouts_through_their_strides(verifier, add_task):
    # mode 0: strides ignored (the attack); refused in the first strided trial, the transposed one
    v = verifier.verify(add_task, _kernel(0))
    assert not v.feasible and v.failed_gate == "correctness", v.feedback
    assert "(scale inputs)" in v.feedback and "transposed copy's transpose" in v.feedback
    # mode 1: the row pitch only -- would pass a rule that showed padded slices only; the transposed view refuses it
    v = verifier.verify(add_task, _kernel(1))
    assert not v.feasible and "(scale inputs)" in v.feedback, v.feedback
    # mode 2: the transposed layout only -- would pass a rule that showed transposes only; the padded slice refuses it
    v = verifier.verify(add_task, _kernel(2))
    assert not v.feasible and "(negate inputs)" in v.feedback and "slices of a wider buffer" in v.feedback, \
        v.feedback
    # both strides read, or b made contiguous first (allowed glue: data_movement.py): feasible
    for source in (_kernel(3), _kernel(0, "b.contiguous()")):
        v = verifier.verify(add_task, source)
        assert v.feasible, v.feedback


def test_a_reference_that_refuses_a_view_keeps_that_input_contiguous(verifier, tmp_path):
    task = _task(tmp_path, "relu_view.py", RELU_VIEW)
    ref = verifier._pool.get(task)
    ref.init(0)
    for seed, perturb in ((3, "scale"), (3, "negate"), (4, "scale"), (4, "negate")):
        assert all(m.strides is None for m in ref.make_inputs(seed, perturb))
    # so a kernel that reads its input linearly is judged on contiguous inputs there and passes
    v = verifier.verify(task, RELU_INLINE)
    assert v.feasible, v.feedback
    # where the reference accepts views, the same kernel is refused
    plain = _task(tmp_path, "relu.py", RELU_VIEW.replace("torch.relu(x.view(-1)).view(x.shape)", "torch.relu(x)"))
    v = verifier.verify(plain, RELU_INLINE)
    assert not v.feasible and "(scale inputs)" in v.feedback, v.feedback


def test_load_cpp_gives_its_kernel_a_contiguous_copy_of_a_view(verifier, tmp_path):
    task = _task(tmp_path, "relu.py", RELU_VIEW.replace("torch.relu(x.view(-1)).view(x.shape)", "torch.relu(x)"))
    # the input passed as it came: the binding copies it for the call (a copy of the input as given is glue)
    v = verifier.verify(task, RELU_CPP.replace("GLUE", "x"))
    assert v.feasible, v.feedback
    # through a pointer to non-const data: the copy is also written back into the input view (unchanged: feasible)
    v = verifier.verify(task, RELU_CPP.replace("GLUE", "x").replace("const float* x", "float* x"))
    assert v.feasible, v.feedback
    # an output allocated with the input's strides (empty_like of a transposed view) and returned as it is: the
    # binding's copies of it and the returned view are PyTorch transposing for the kernel, findings
    v = verifier.verify(task, RELU_CPP.replace("GLUE", "x").replace("torch.empty(x.shape, dtype=x.dtype)",
                                                                    "torch.empty_like(x)"))
    assert not v.feasible and v.failed_gate == "hack" and "(scale inputs)" in v.feedback, v.feedback
    assert "aten::clone read a view" in v.feedback and "use torch.empty(x.shape)" in v.feedback, v.feedback
