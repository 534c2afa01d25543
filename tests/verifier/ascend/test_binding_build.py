"""binding_build.py: the generated CppExtension folder, the build command and its environment (with a fake
runner standing in for `python setup.py build_ext --inplace`), and failing builds as feedback.
Not run with a real torch_npu / CANN."""
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend import binding_build as bb
from evokernel.verifier.backends.ascend.toolchain import ToolchainError
from evokernel.verifier.backends.ascend_sim.project import parse_candidate

ROOT = Path(__file__).resolve().parents[3]
ADD = (ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text()


@pytest.fixture
def project():
    return parse_candidate(ADD)


@pytest.fixture
def helper(tmp_path):
    h = tmp_path / "my_helper.hpp"
    h.write_text("// stand-in helper\n#define EXEC_NPU_CMD(...)\n")
    return h


class FakeRunner:
    def __init__(self, rc=0, output="", make_module=True):
        self.rc, self.output, self.make_module, self.calls = rc, output, make_module, []

    def __call__(self, argv, cwd, env, timeout):
        self.calls.append((argv, Path(cwd), env, timeout))
        if self.rc == 0 and self.make_module:
            (Path(cwd) / "custom_ops_lib.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
        return self.rc, self.output


def test_generated_files(tmp_path, project, helper):
    b = bb.write_binding(project, tmp_path / "cand", helper=helper)
    assert b.op_cpp.read_text() == project.sources["python_bind_src"]
    assert (b.root / "csrc" / "pytorch_npu_helper.hpp").read_text() == helper.read_text()
    setup = b.setup_py.read_text()
    compile(setup, "setup.py", "exec")
    assert "from torch_npu.utils.cpp_extension import NpuExtension" in setup
    assert 'name="custom_ops_lib"' in setup
    assert 'sources=["csrc/op.cpp"]' in setup
    assert '"include", "third_party", "acl", "inc"' in setup
    assert "BuildExtension" in setup


def test_helper_defaults_to_shipped_header(tmp_path, project, monkeypatch):
    monkeypatch.delenv(bb.HELPER_ENV, raising=False)
    b = bb.write_binding(project, tmp_path / "c", environ={})
    assert (b.root / "csrc" / "pytorch_npu_helper.hpp").read_bytes() == bb.SHIPPED_HELPER.read_bytes()


def test_configured_helper_that_is_not_a_file_is_explained(tmp_path, project, monkeypatch):
    monkeypatch.delenv(bb.HELPER_ENV, raising=False)
    with pytest.raises(bb.HelperMissing, match="not a file"):
        bb.write_binding(project, tmp_path / "c", helper=tmp_path / "nope.hpp")
    with pytest.raises(bb.HelperMissing, match="EVOKERNEL_NPU_HELPER.*not a file"):
        bb.write_binding(project, tmp_path / "c", environ={bb.HELPER_ENV: str(tmp_path / "nope.hpp")})
    assert not (tmp_path / "c").exists()


def test_helper_from_environment(tmp_path, project, helper):
    b = bb.write_binding(project, tmp_path / "c", environ={bb.HELPER_ENV: str(helper)})
    assert (b.root / "csrc" / "pytorch_npu_helper.hpp").is_file()


def test_build_command_env_and_module(tmp_path, project, helper):
    run = FakeRunner()
    env = {"ASCEND_CUSTOM_OPP_PATH": "/x/opp/vendors/customize", "LD_LIBRARY_PATH": "/x/opp/vendors/customize/op_api/lib",
           "PATH": "/usr/bin"}
    b = bb.build_binding(project, tmp_path / "cand", env, helper=helper, python="/venv/bin/python", runner=run,
                         timeout=12)
    (argv, cwd, got_env, timeout), = run.calls
    assert argv == ["/venv/bin/python", "setup.py", "build_ext", "--inplace"]
    assert cwd == tmp_path / "cand" / "CppExtension"
    assert got_env == env and timeout == 12
    assert b.module_path == cwd / "custom_ops_lib.cpython-311-x86_64-linux-gnu.so"
    assert [s.name for s in b.steps] == ["binding"] and b.steps[0].ok


def test_failing_build_maps_to_python_bind_src(tmp_path, project, helper):
    out = ("building 'custom_ops_lib' extension\n"
           f"{tmp_path}/cand/CppExtension/csrc/op.cpp:9:5: error: use of undeclared identifier 'aclnnAddCustm'\n"
           "error: command '/usr/bin/g++' failed with exit code 1\n")
    with pytest.raises(ToolchainError) as ei:
        bb.build_binding(project, tmp_path / "cand", {}, helper=helper, runner=FakeRunner(1, out))
    diags = bb.binding_diagnoses(ei.value)
    assert diags[0].stage == "binding" and diags[0].kind == "compile_error"
    assert "python_bind_src" in diags[0].message
    assert any("aclnnAddCustm" in ln for ln in diags[0].lines)


def test_build_without_module_and_timeout(tmp_path, project, helper):
    with pytest.raises(ToolchainError, match="left no custom_ops_lib"):
        bb.build_binding(project, tmp_path / "a", {}, helper=helper, runner=FakeRunner(make_module=False))
    with pytest.raises(ToolchainError, match="timed out") as ei:
        bb.build_binding(project, tmp_path / "b", {}, helper=helper, runner=FakeRunner(rc=None), timeout=5)
    d, = bb.binding_diagnoses(ei.value)
    assert d.kind == "timeout" and d.stage == "binding" and "5 s" in d.message
