"""The Ascend C candidate format: reading the six strings without running the file, the project JSON,
naming, and the binding reader (argument order, output allocation) -- pure text, no compiler."""
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend_sim.binding import TensorInfo, plan_call
from evokernel.verifier.backends.ascend_sim.project import (
    Binding, ProjectError, _statements, parse_bindings, parse_candidate, pascal_to_snake, read_strings)

ROOT = Path(__file__).resolve().parents[3]
ADD = (ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text()


def test_example_parses():
    p = parse_candidate(ADD)
    assert (p.op_type, p.kernel_name, p.tiling_header) == ("AddCustom", "add_custom", "add_custom_tiling.h")
    assert [x.name for x in p.inputs] == ["x", "y"] and [x.name for x in p.outputs] == ["z"]
    assert p.macros(0) == ["-DDTYPE_X=float", "-DDTYPE_Y=float", "-DDTYPE_Z=float"]
    assert list(p.bindings) == ["add_custom"]


@pytest.mark.parametrize("name,snake", [("AddCustom", "add_custom"), ("LayerNormCustom", "layer_norm_custom"),
                                        ("GELUCustom", "gelu_custom"), ("Conv2dCustom", "conv2d_custom")])
def test_naming(name, snake):
    assert pascal_to_snake(name) == snake


def test_strings_are_read_not_run():
    src = 'import os\nos.system("touch /tmp/pwned")\n' + ADD
    assert read_strings(src)["kernel_src"] == parse_candidate(ADD).sources["kernel_src"]
    concatenated = ADD.replace('model_src = """', 'model_src = "import torch\\n" + """', 1)
    assert read_strings(concatenated)["model_src"].startswith("import torch\n")


@pytest.mark.parametrize("mutate,message", [
    (lambda s: s.replace("kernel_src =", "kernel_source ="), "does not define kernel_src"),
    (lambda s: s.replace('model_src = """', 'model_src = make_model() + """', 1), "must be a string literal"),
    (lambda s: s.replace('"op": "AddCustom"', '"op": "add_custom"'), "PascalCase"),
    (lambda s: s.replace('"type": ["float"]}', '"type": ["complex64"]}', 1), "unsupported type"),
    (lambda s: s.replace('"language": "cpp",', '"language": "cpp",,'), "not valid JSON"),
    (lambda s: s.replace("void add_custom(GM_ADDR x", "void addcustom(GM_ADDR x"), "kernel entry"),
    (lambda s: s.replace('m.def("add_custom"', 'm.fn("add_custom"'), "no `m.def"),
    (lambda s: s.replace("EXEC_NPU_CMD(aclnnAddCustom, self, other, result);", ""), "no EXEC_NPU_CMD"),
    (lambda s: s.replace("&add_custom_impl_npu, \"x + y\"", "&missing_fn, \"x + y\""), "no function `missing_fn`"),
])
def test_malformed_projects_are_named(mutate, message):
    with pytest.raises(ProjectError, match=message):
        parse_candidate(mutate(ADD))


def _binding(params, body):
    return Binding("f", params, body, 1)


def test_binding_plan_empty_like():
    p = parse_candidate(ADD)
    plan = plan_call(p.bindings["add_custom"], [TensorInfo((4, 5), "float32"), TensorInfo((4, 5), "float32")])
    assert plan.aclnn == "aclnnAddCustom"
    assert [t.arg for t in plan.inputs] == [0, 1]
    assert [(a.shape, a.dtype, a.fill) for a in plan.allocs] == [((4, 5), "float32", None)]
    assert plan.returns[0].alloc == 0


def test_binding_plan_shapes_attrs_and_tuples():
    b = _binding([("tensor", "x"), ("scalar", "eps")], [
        "auto s = x.sizes().vec()", "s[s.size() - 1] = 1",
        "int64_t rows = x.numel() / x.size(-1)",
        "at::Tensor y = at::empty(s, x.options().dtype(at::kFloat))",
        "at::Tensor z = at::zeros({rows * 2}, x.options())",
        'TORCH_CHECK(x.dim() == 2, "2-d input")',
        "EXEC_NPU_CMD(aclnnF, x, eps, true, y, z)",
        "return std::make_tuple(y, z)"])
    plan = plan_call(b, [TensorInfo((3, 10), "float16"), 1e-5])
    assert [(a.shape, a.dtype, a.fill) for a in plan.allocs] == [((3, 1), "float32", None), ((6,), "float16", 0.0)]
    assert plan.attrs == [1e-5, True]
    assert [t.alloc for t in plan.outputs] == [0, 1] and len(plan.returns) == 2


def test_binding_integer_division_truncates_like_cpp():
    b = _binding([("tensor", "x")], ["at::Tensor y = at::empty({(x.size(0) - 7) / 2}, x.options())",
                                     "EXEC_NPU_CMD(aclnnF, x, y)", "return y"])
    assert plan_call(b, [TensorInfo((10,), "float32")]).allocs[0].shape == (1,)


@pytest.mark.parametrize("body,message", [
    (["at::Tensor y = x.clone()", "EXEC_NPU_CMD(aclnnF, x, y)", "return y"], "unsupported tensor method"),
    (["while (true) { x.size(0); }", "return x"], "not supported by the emulator's binding reader"),
    (["for (int i = 0; i < 3; ++i) x.size(0)", "return x"], "not supported by the emulator's binding reader"),
    (["int64_t n = 0", "for (;;) { n += 1; }", "return x"], "more than 10000"),
    (["EXEC_NPU_CMD(aclnnF, x, x)", "return x"], "no output tensor allocated"),
    (["at::Tensor y = at::empty_like(x)", "return y"], "no EXEC_NPU_CMD"),
    (["at::Tensor y = at::empty({x.size(5)}, x.options())", "EXEC_NPU_CMD(aclnnF, x, y)", "return y"], "size\\(5\\)"),
])
def test_binding_errors_name_the_statement(body, message):
    with pytest.raises(ProjectError, match=message):
        plan_call(_binding([("tensor", "x")], body), [TensorInfo((4,), "float32")])


MATMUL_BINDING = """
at::Tensor matmul_add_impl_npu(const at::Tensor& A, const at::Tensor& B, const at::Tensor& bias) {
    auto A_sizes = A.sizes();
    auto B_sizes = B.sizes();
    // leading (batch) dims broadcast, then m x n
    std::vector<int64_t> output_shape;
    for (int i = 0; i < A.dim() - 2; ++i) {
        output_shape.push_back(std::max(A_sizes[i], B_sizes[i]));
    }
    int64_t m = A_sizes[A.dim() - 2];
    int64_t n = B_sizes[B.dim() - 1];
    output_shape.push_back(m);
    output_shape.push_back(n);
    at::Tensor result = at::empty(output_shape, A.options());
    EXEC_NPU_CMD(aclnnMatmulAddCustom, A, B, bias, result);
    return result;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("matmul_add_custom", &matmul_add_impl_npu, "matmul + bias"); }
"""


@pytest.mark.parametrize("a,b,out", [((4, 5), (5, 6), (4, 6)), ((2, 3, 4, 5), (1, 3, 5, 6), (2, 3, 4, 6))])
def test_binding_loops_over_dims(a, b, out):
    # MultiKernelBench's matmul_add example builds its output shape in a loop over the batch dims
    bind = parse_bindings(MATMUL_BINDING, "MatmulAddCustom")["matmul_add_custom"]
    plan = plan_call(bind, [TensorInfo(a, "float32"), TensorInfo(b, "float32"), TensorInfo((b[-1],), "float32")])
    assert plan.allocs[0].shape == out and plan.returns[0].alloc == 0 and len(plan.inputs) == 3


@pytest.mark.parametrize("rank,cols", [(1, 1), (2, 7), (3, 99)])
def test_binding_if_else_chains(rank, cols):
    b = _binding([("tensor", "x")], [
        "int64_t c = 0",
        "if (x.dim() == 1) { c = 1; } else if (x.dim() == 2) { c = x.size(1); } else { c = 99; }",
        "int64_t d = 0",
        "if (c > 5) d = c; else d = 2",
        "at::Tensor y = at::empty({c, d}, x.options())", "EXEC_NPU_CMD(aclnnF, x, y)", "return y"])
    plan = plan_call(b, [TensorInfo((4, 7, 3)[:rank], "float32")])
    assert plan.allocs[0].shape == (cols, cols if cols > 5 else 2)


def test_binding_return_inside_a_loop_ends_the_function():
    b = _binding([("tensor", "x")], ["at::Tensor y = at::empty_like(x)", "EXEC_NPU_CMD(aclnnF, x, y)",
                                     "for (int i = 0; i < 5; i++) { if (i == 2) { return y; } }",
                                     "at::Tensor z = x.clone()"])  # unreadable, never reached
    assert plan_call(b, [TensorInfo((4,), "float32")]).returns[0].alloc == 0


def test_statements_split_after_control_blocks():
    body = "for (int i = 0; i < 2; ++i) { v.push_back(i); } int64_t m = 1; if (m) { m = 2; } else { m = 3; } return y;"
    assert [x.strip() for x in _statements(body)] == [
        "for (int i = 0; i < 2; ++i) { v.push_back(i); }", "int64_t m = 1",
        "if (m) { m = 2; } else { m = 3; }", "return y"]


def test_binding_argument_checks():
    b = _binding([("tensor", "x"), ("scalar", "a")], ["at::Tensor y = at::empty_like(x)",
                                                      "EXEC_NPU_CMD(aclnnF, x, a, y)", "return y"])
    with pytest.raises(ProjectError, match="takes 2 argument"):
        plan_call(b, [TensorInfo((4,), "float32")])
    with pytest.raises(ProjectError, match="must be a number"):
        plan_call(b, [TensorInfo((4,), "float32"), TensorInfo((4,), "float32")])


def test_parse_bindings_finds_definitions_not_uses():
    text = """
    #include <torch/extension.h>
    at::Tensor my_op_impl(const at::Tensor& x, double alpha) {
        at::Tensor y = at::empty_like(x);  // output
        /* the op */ EXEC_NPU_CMD(aclnnMyOpCustom, x, alpha, y);
        return y;
    }
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("my_op_custom", &my_op_impl, "doc"); }
    """
    b = parse_bindings(text, "MyOpCustom")["my_op_custom"]
    assert b.cpp_name == "my_op_impl" and b.params == [("tensor", "x"), ("scalar", "alpha")]
    assert b.body[-1] == "return y"
