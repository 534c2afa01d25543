"""feedback.py on build/runtime logs constructed from the recorded formats (fixtures/README.md)."""
from pathlib import Path

from evokernel.verifier.backends.ascend import feedback as fb

FIX = Path(__file__).parent / "fixtures"


def read(rel):
    return (FIX / rel).read_bytes()  # bytes on purpose: logs hold binary junk


def kinds(ds):
    return [d.kind for d in ds]


def test_source_field_maps_generated_paths_to_candidate_strings():
    assert fb.source_field("/x/AddCustom/op_kernel/add_custom.cpp") == "kernel_src"
    assert fb.source_field("/x/AddCustom/op_host/add_custom.cpp") == "host_operator_src"
    assert fb.source_field("/x/AddCustom/op_host/add_custom_tiling.h") == "host_tiling_src"
    assert fb.source_field("CppExtension/csrc/op.cpp") == "python_bind_src"
    assert fb.source_field("/usr/local/Ascend/include/kernel_operator.h") is None


def test_kernel_compile_error_is_mapped_deduplicated_and_tbe_folded_in():
    ds = fb.analyze_build(2, read("build/kernel_compile_error.log"))
    assert kinds(ds) == ["compile_error"]  # the [ERROR] TBE marker adds nothing once errors are known
    d = ds[0]
    assert d.stage == "build" and not d.device_fault
    assert d.message == "compilation failed in kernel_src"
    assert d.lines == ["kernel_src:42:17: error: use of undeclared identifier 'tileLen'",
                       "kernel_src:57:5: error: no matching function for call to 'Add'"]
    assert "/home/user" not in d.text()


def test_at_most_twelve_errors_are_kept():
    ds = fb.analyze_build(2, read("build/many_errors.log"))
    assert len(ds[0].lines) == 12
    assert "(showing 12 of 20)" in ds[0].message
    assert ds[0].lines[0] == "kernel_src:10:3: error: unknown type name 'T0'"


def test_opbuild_failure_names_the_host_sources():
    ds = fb.analyze_build(2, "", read("build/opbuild_failed.log"))
    assert kinds(ds) == ["compile_error", "opbuild_failed"]
    assert set(ds[0].message.split(" in ")[1].split(", ")) == {"host_operator_src", "host_tiling_src"}
    assert any("host_operator_src:23:9" in ln for ln in ds[0].lines)
    assert "host_operator_src" in ds[1].message
    assert any("opbuild run failed" in ln for ln in ds[1].lines)
    # the trailing "No rule to make target 'package'" is a consequence, not reported on its own
    assert "no_package_target" not in kinds(ds)


def test_tbe_marker_and_missing_package_target_alone():
    ds = fb.analyze_build(2, "[ERROR] TBE(1,python3): ccec crashed\n")
    assert kinds(ds) == ["tbe_error"] and "ccec crashed" in ds[0].lines[0]
    ds = fb.analyze_build(2, "CMake Error at CMakeLists.txt:3\ngmake: *** No rule to make target 'package'.  Stop.\n")
    assert kinds(ds) == ["no_package_target"]
    assert fb.analyze_build(0, "all good") == []
    ds = fb.analyze_build(1, "something\nunexpected happened")
    assert kinds(ds) == ["build_failed"] and ds[0].lines[-1] == "unexpected happened"


def test_missing_artifacts(tmp_path):
    assert fb.check_build_artifacts(tmp_path).kind == "missing_artifact"
    (tmp_path / "build_out").mkdir()
    (tmp_path / "build_out" / "custom_opp_ubuntu_x86_64.run").write_text("")
    assert fb.check_build_artifacts(tmp_path) is None
    assert fb.installer_path(tmp_path).name == "custom_opp_ubuntu_x86_64.run"
    d = fb.check_install_artifacts(tmp_path / "inst")
    assert d.stage == "install" and "libcust_opapi.so" in d.message
    lib = tmp_path / "inst/vendors/customize/op_api/lib"
    lib.mkdir(parents=True)
    (lib / "libcust_opapi.so").write_text("")
    assert fb.check_install_artifacts(tmp_path / "inst") is None


def test_runtime_faults():
    cases = {
        "runtime/aivec_0x31.log": "vector_core_exception",
        "runtime/timeout_0x30.log": "vector_core_timeout",
        "runtime/aicore_0x25.log": "aicore_timeout",
        "runtime/fftsplus.log": "fftsplus_timeout",
    }
    for f, kind in cases.items():
        ds = fb.analyze_runtime(1, "", read(f))
        assert kinds(ds) == [kind], f
        assert ds[0].device_fault and fb.needs_health_check(ds)
        assert ds[0].lines, f
    ds = fb.analyze_runtime(1, "", read("runtime/aivec_0x31.log"))
    assert any("MPU address" in ln for ln in ds[0].lines)
    ds = fb.analyze_runtime(1, "EZ9999: Inner Error!\nthere is an exception of aivec error, core id is 3\n")
    assert kinds(ds) == ["aivec_error"] and ds[0].device_fault
    ds = fb.analyze_runtime(1, "EZ9999: Inner Error! something new\n")
    assert kinds(ds) == ["inner_error"] and ds[0].device_fault


def test_op_not_found_and_import_failure():
    ds = fb.analyze_runtime(1, read("runtime/ez3003.log"))
    assert kinds(ds) == ["op_not_found"] and not ds[0].device_fault
    assert "aclnnAddCustom" in ds[0].lines[0]
    ds = fb.analyze_runtime(1, "", read("runtime/import_libhccl.log"))
    assert kinds(ds) == ["cann_not_loaded"] and ds[0].stage == "import"
    assert "libhccl.so" in ds[0].message
    assert fb.analyze_import("plain output") is None
    assert fb.analyze_runtime(0, "ok") == []
    assert kinds(fb.analyze_runtime(3, "boom")) == ["run_failed"]


def test_timeout_and_formatting():
    d = fb.timeout_diagnosis("runtime", 30)
    assert d.device_fault and d.kind == "timeout"
    assert not fb.timeout_diagnosis("build", 600).device_fault
    text = fb.format_feedback(fb.analyze_build(2, read("build/many_errors.log")), max_chars=200)
    assert text.startswith("[build] compilation failed") and text.endswith("(truncated)")
