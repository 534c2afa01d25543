"""`evokernel ascend import`: an msopgen op project becomes a candidate, its sources byte for byte."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evokernel.ascend_import import ImportError_, find_project, import_project, opdef_types
from evokernel.verifier.backends.ascend_sim.binding import TensorInfo, plan_call
from evokernel.verifier.backends.ascend_sim.project import parse_candidate, read_strings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py"


def project(tmp_path, desc_extra=None, opdef_out="", layout="sample"):
    """An op project in msopgen's layout, its sources taken from the shipped add_custom example."""
    strings = read_strings(EXAMPLE.read_text())
    desc = json.loads(strings["project_json_src"])
    desc[0].update(desc_extra or {})
    root = tmp_path / "FrameworkLaunch"
    op_dir = root / "AddCustom" if layout == "sample" else root
    (op_dir / "op_host").mkdir(parents=True)
    (op_dir / "op_kernel").mkdir()
    (root / "AddCustom.json").write_text(json.dumps(desc, indent=4))
    (op_dir / "op_host" / "add_custom_tiling.h").write_text(strings["host_tiling_src"])
    host = strings["host_operator_src"]
    if opdef_out:
        old = 'this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16})'
        assert old in host
        host = host.replace(old, f'this->Output("z").ParamType(REQUIRED).DataType({{{opdef_out}}})', 1)
    (op_dir / "op_host" / "add_custom.cpp").write_text(host)
    (op_dir / "op_kernel" / "add_custom.cpp").write_text(strings["kernel_src"])
    (root / "AclNNInvocation").mkdir()  # a sample's invocation folder is not the project
    (root / "AclNNInvocation" / "other.json").write_text("[]")
    return root, strings


@pytest.mark.parametrize("layout", ["sample", "flat"])
def test_the_sources_go_in_byte_for_byte_and_the_binding_plans(tmp_path, layout):
    root, strings = project(tmp_path, layout=layout)
    p, text = import_project(root, tmp_path / "cand.py")
    got = read_strings((tmp_path / "cand.py").read_text())
    for name in ("host_tiling_src", "host_operator_src", "kernel_src"):
        assert got[name] == strings[name]
    assert json.loads(got["project_json_src"]) == json.loads(strings["project_json_src"])
    cand = parse_candidate(text)
    assert cand.op_type == "AddCustom" and p.snake == "add_custom"
    plan = plan_call(cand.bindings["add_custom"], [TensorInfo((4, 8), "float32"), TensorInfo((4, 8), "float32")])
    assert [(o.shape, o.dtype) for o in plan.outputs] == [((4, 8), "float32")] and len(plan.inputs) == 2
    assert "custom_ops_lib.add_custom(x, y)" in got["model_src"]


def test_attributes_and_an_output_dtype_from_the_opdef(tmp_path):
    attrs = [{"name": "alpha", "param_type": "optional", "type": "float", "default_value": "0.5"},
             {"name": "steps", "param_type": "optional", "type": "int", "default_value": 3},
             {"name": "flip", "param_type": "optional", "type": "bool", "default_value": False}]
    root, _ = project(tmp_path, {"attr": attrs}, opdef_out="ge::DT_BOOL, ge::DT_BOOL")
    p, text = import_project(root)
    s = read_strings(text)
    assert "const at::Tensor& x, const at::Tensor& y, double alpha, int64_t steps, bool flip" in s["python_bind_src"]
    assert "EXEC_NPU_CMD(aclnnAddCustom, x, y, alpha, steps, flip, z)" in s["python_bind_src"]
    assert "at::empty(x.sizes(), x.options().dtype(at::kBool))" in s["python_bind_src"]
    assert "def __init__(self, alpha=0.5, steps=3, flip=False)" in s["model_src"]
    assert "custom_ops_lib.add_custom(x, y, self.alpha, self.steps, self.flip)" in s["model_src"]
    assert opdef_types(p.host, "Output", "z") == ["bool", "bool"] and opdef_types(p.host, "Input", "nope") is None
    # the emulator's binding reader understands what was generated: attributes in order, a bool output
    plan = plan_call(parse_candidate(text).bindings["add_custom"],
                     [TensorInfo((16,), "float32"), TensorInfo((16,), "float32"), 0.5, 3, False])
    assert plan.attrs == [0.5, 3, False] and [(o.shape, o.dtype) for o in plan.outputs] == [((16,), "bool")]
    compile(s["model_src"], "model_src", "exec")


def test_list_string_attributes_and_a_json_the_opdef_contradicts(tmp_path):
    """String and list attributes become binding parameters the binding reader plans (they were refused);
    a json whose inputs/outputs the OpDef contradicts loses to the OpDef, which is what CANN registers."""
    attrs = [{"name": "axes", "param_type": "optional", "type": "listInt", "default_value": "{0, -1}"},
             {"name": "reduction", "param_type": "optional", "type": "str", "default_value": "mean"},
             {"name": "dim", "param_type": "optional", "type": "int", "default_value": -1}]
    root, _ = project(tmp_path, {"attr": attrs})
    p, text = import_project(root)
    s = read_strings(text)
    assert "at::IntArrayRef axes, std::string reduction, int64_t dim" in s["python_bind_src"]
    assert "def __init__(self, axes=(0, -1), reduction='mean', dim=-1)" in s["model_src"]
    plan = plan_call(parse_candidate(text).bindings["add_custom"],
                     [TensorInfo((16,), "float32"), TensorInfo((16,), "float32"), [0, -1], "mean", -1])
    assert plan.attrs == [[0, -1], "mean", -1]
    # what the importer writes passes our own allow-list (a default of -1 was refused as "not a constant")
    from evokernel.verifier.trusted.ast_allowlist import ASCEND_NATIVE, check_glue
    assert not check_glue(s["model_src"], "model_src.py", native_modules=ASCEND_NATIVE, exported={"add_custom"})
    root2, _ = project(tmp_path / "b", {"output_desc": [{"name": "a", "type": ["float"]}, {"name": "b", "type": ["float"]}]})
    p2, _ = import_project(root2)
    assert p2.json_from_opdef and [o["name"] for o in p2.desc["output_desc"]] == ["z"]


def _strip_json(root):
    for js in root.rglob("*.json"):
        js.unlink()


def test_a_project_without_json_is_described_from_its_opdef(tmp_path):
    root, strings = project(tmp_path)
    _strip_json(root)
    host = root / "AddCustom" / "op_host" / "add_custom.cpp"
    host.write_text(host.read_text().replace(
        'this->Output("z")', 'this->Attr("mode").AttrType(OPTIONAL).String("fast");\n'
        '        this->Attr("shape").AttrType(OPTIONAL).ListInt({1, 2});\n'
        '        this->Attr("alpha").AttrType(OPTIONAL).Float(-0.5);\n        this->Output("w").ParamType(REQUIRED)'
        '.DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});\n        this->Output("z")', 1))
    p, text = import_project(root)
    assert p.json_from_opdef and "project_json_src" not in p.files
    desc = json.loads(read_strings(text)["project_json_src"])[0]
    assert [d["name"] for d in desc["input_desc"]] == ["x", "y"] and [d["name"] for d in desc["output_desc"]] == ["w", "z"]
    assert desc["attr"] == [{"name": "mode", "param_type": "optional", "type": "str", "default_value": "fast"},
                            {"name": "shape", "param_type": "optional", "type": "list_int", "default_value": [1, 2]},
                            {"name": "alpha", "param_type": "optional", "type": "float", "default_value": -0.5}]
    s = read_strings(text)
    assert "std::tuple<at::Tensor, at::Tensor> add_custom_impl_npu" in s["python_bind_src"]
    assert "return std::make_tuple(w, z);" in s["python_bind_src"]
    plan = plan_call(parse_candidate(text).bindings["add_custom"],
                     [TensorInfo((8,), "float32"), TensorInfo((8,), "float32"), "fast", [1, 2], -0.5])
    assert len(plan.outputs) == 2 and plan.attrs == ["fast", [1, 2], -0.5]
    for name in ("host_tiling_src", "host_operator_src", "kernel_src"):
        assert read_strings(text)[name] == (strings[name] if name != "host_operator_src" else host.read_text())


def test_dynamic_inputs_are_refused_by_name_and_an_acronym_op_is_spelt_as_the_verifier_does(tmp_path):
    root, _ = project(tmp_path)
    _strip_json(root)
    host = root / "AddCustom" / "op_host" / "add_custom.cpp"
    host.write_text(host.read_text().replace('this->Input("x").ParamType(REQUIRED)',
                                             'this->Input("x").ParamType(DYNAMIC)', 1))
    with pytest.raises(ImportError_, match="dynamic"):
        import_project(root)
    from evokernel.ascend_import import snake_case
    from evokernel.verifier.backends.ascend_sim.project import pascal_to_snake
    for op in ("GEMMCustom", "MatMulV2", "LayerNormCustom", "NLLLoss"):
        assert snake_case(op) == pascal_to_snake(op)


def test_a_folder_without_a_project_and_the_cli(tmp_path):
    with pytest.raises(ImportError_, match="no op project found"):
        find_project(tmp_path)
    root, _ = project(tmp_path)
    out = tmp_path / "c.py"
    r = subprocess.run([sys.executable, "-m", "evokernel", "ascend", "import", str(root), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "AddCustom (add_custom) ->" in r.stderr and "kernel_src" in r.stderr and out.exists()
    bad = subprocess.run([sys.executable, "-m", "evokernel", "ascend", "import", str(tmp_path / "nothing")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "not a directory" in bad.stderr


def test_an_op_project_below_its_json_with_the_tiling_in_op_kernel(tmp_path):
    # Ascend's 10_matmul_frameworklaunch keeps two op projects beside one json, the multi-core one with its
    # tiling struct in op_kernel/ (included from op_host/ as ../op_kernel/<op>_tiling.h)
    root, strings = project(tmp_path)
    op_dir = root / "AddCustom"
    tiling = (op_dir / "op_host" / "add_custom_tiling.h").read_text()
    (op_dir / "op_host" / "add_custom_tiling.h").unlink()
    (op_dir / "op_kernel" / "add_custom_tiling.h").write_text(tiling)
    p = find_project(op_dir)  # the folder of the op itself: its json is one level up
    assert p.op == "AddCustom" and p.files["host_tiling_src"] == op_dir / "op_kernel" / "add_custom_tiling.h"
    assert p.files["project_json_src"] == root / "AddCustom.json"


def test_out_shape_sizes_the_generated_binding(tmp_path):
    root, _ = project(tmp_path)
    _, text = import_project(root, out_shape="{x.size(0), y.size(1)}")
    bind = read_strings(text)["python_bind_src"]
    assert "at::empty({x.size(0), y.size(1)}, x.options())" in bind
    _, plain = import_project(root)
    assert "at::empty_like(x)" in read_strings(plain)["python_bind_src"]
