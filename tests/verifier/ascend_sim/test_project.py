"""The Ascend C candidate format: reading the six strings without running the file, the project JSON,
naming, and the binding reader (argument order, output allocation) -- pure text, no compiler."""
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend_sim.binding import TensorInfo, plan_call
from evokernel.verifier.backends.ascend_sim.project import (
    Binding, ProjectError, parse_bindings, parse_candidate, pascal_to_snake, read_strings)

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
    (["for (int i = 0; i < 3; ++i) x.size(0)", "return x"], "not supported by the emulator's binding reader"),
    (["EXEC_NPU_CMD(aclnnF, x, x)", "return x"], "no output tensor allocated"),
    (["at::Tensor y = at::empty_like(x)", "return y"], "no EXEC_NPU_CMD"),
    (["at::Tensor y = at::empty({x.size(5)}, x.options())", "EXEC_NPU_CMD(aclnnF, x, y)", "return y"], "size\\(5\\)"),
])
def test_binding_errors_name_the_statement(body, message):
    with pytest.raises(ProjectError, match=message):
        plan_call(_binding([("tensor", "x")], body), [TensorInfo((4,), "float32")])


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
