"""The fake CANN toolchain (fake_cann/, see its README) run the way the ascend backend will run the real one
(ascend-toolchain.md §1.1, §8), and the parsers of feedback.py / msprof.py on what it writes."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend import feedback as fb
from evokernel.verifier.backends.ascend import msprof
from evokernel.verifier.backends.ascend_sim.project import read_strings

ROOT = Path(__file__).resolve().parents[3]
FAKE = Path(__file__).parent / "fake_cann"
EXAMPLE = ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py"


@pytest.fixture
def env(tmp_path):
    """The environment `source fake_cann/set_env.sh` produces, plus a private log and opp dir."""
    out = subprocess.run(["bash", "-c", f"source {FAKE}/set_env.sh && env -0"], capture_output=True, check=True,
                         env={"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": "/usr/lib/x"})
    e = dict(kv.split("=", 1) for kv in out.stdout.decode().split("\0") if "=" in kv)
    e["FAKE_CANN_LOG"] = str(tmp_path / "cann.log")
    e.pop("ASCEND_CUSTOM_OPP_PATH", None)
    return e


def log(env):
    p = Path(env["FAKE_CANN_LOG"])
    return [json.loads(ln) for ln in p.read_text().splitlines()] if p.exists() else []


def run(cmd, env, cwd, **kw):
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, **kw)


def gen_project(tmp_path, env, **replace):
    src = read_strings(EXAMPLE.read_text())
    for k, v in replace.items():
        src[k] = v(src[k]) if callable(v) else v
    work = tmp_path / "ops"
    work.mkdir()
    (work / "add_custom.json").write_text(src["project_json_src"])
    r = run(["msopgen", "gen", "-i", "add_custom.json", "-c", "ai_core-Ascend910B2", "-lan", "cpp",
             "-out", "AddCustom"], env, work)
    assert r.returncode == 0, r.stderr
    proj = work / "AddCustom"
    (proj / "op_host" / "add_custom_tiling.h").write_text(src["host_tiling_src"])
    (proj / "op_host" / "add_custom.cpp").write_text(src["host_operator_src"])
    (proj / "op_kernel" / "add_custom.cpp").write_text(src["kernel_src"])
    return proj


def test_set_env_points_into_the_fake_tree(env):
    assert env["ASCEND_HOME_PATH"] == str(FAKE) == env["ASCEND_TOOLKIT_HOME"]
    assert env["ASCEND_OPP_PATH"] == str(FAKE / "opp")
    assert env["LD_LIBRARY_PATH"] == f"{FAKE}/lib64:/usr/lib/x"
    assert env["PATH"].startswith(f"{FAKE}/bin:")
    assert shutil.which("msopgen", path=env["PATH"]) == str(FAKE / "bin" / "msopgen")


def test_full_success_flow_and_logged_commands(tmp_path, env):
    proj = gen_project(tmp_path, env)
    for rel in ("CMakeLists.txt", "CMakePresets.json", "build.sh", "cmake/func.cmake", "framework",
                "op_host/CMakeLists.txt", "op_kernel/CMakeLists.txt", "scripts/install.sh"):
        assert (proj / rel).exists(), rel
    r = run(["./build.sh"], env, proj)
    assert r.returncode == 0, r.stdout + r.stderr
    assert fb.analyze_build(r.returncode, r.stdout, r.stderr) == []
    assert fb.check_build_artifacts(proj) is None
    assert (proj / "build_out" / "autogen" / "aclnn_add_custom.h").is_file()
    inst = tmp_path / "opp_inst"
    r = run([str(fb.installer_path(proj)), f"--install-path={inst}"], env, proj)
    assert r.returncode == 0, r.stderr
    assert fb.check_install_artifacts(inst) is None
    assert "ASCEND_CUSTOM_OPP_PATH=" in (inst / "vendors/customize/bin/set_env.bash").read_text()
    prof = tmp_path / "prof"
    renv = dict(env, ASCEND_CUSTOM_OPP_PATH=str(inst / "vendors/customize"))
    r = run(["msprof", "op", "--kernel-name=AddCustom", "--warm-up=10", "--launch-count=1", f"--output={prof}",
             sys.executable, "-c", "print('app ran')"], renv, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "app ran" in r.stdout
    p = msprof.parse(prof, kernel_name="AddCustom")
    assert p.task_duration_us == pytest.approx(20.0) and p.block_dim == 8 and p.op_names == ["AddCustom"]
    assert msprof.diagnose(p)["bound"] == "mte2"

    recs = log(env)
    assert [r["tool"] for r in recs] == ["msopgen", "build.sh", "bisheng", "custom_opp.run", "msprof"]
    assert recs[0]["argv"] == ["gen", "-i", "add_custom.json", "-c", "ai_core-Ascend910B2", "-lan", "cpp",
                               "-out", "AddCustom"]
    assert recs[1]["cwd"] == str(proj) and recs[1]["env"]["ASCEND_CUSTOM_OPP_PATH"] is None
    bisheng = recs[2]["argv"]
    assert bisheng[:4] == ["--npu-arch=dav-2201", "-xasc", "-std=c++17", "-fPIC"]
    assert bisheng[-4:] == ["-c", str(proj / "op_kernel" / "add_custom.cpp"), "-o",
                            str(proj / "build_out" / "op_kernel" / "add_custom.o")]
    assert recs[3]["argv"] == [f"--install-path={inst}"]
    assert recs[4]["env"]["ASCEND_CUSTOM_OPP_PATH"] == str(inst / "vendors/customize")


def test_msopgen_rejects_bad_input(tmp_path, env):
    (tmp_path / "bad.json").write_text('{"op": "AddCustom"}')
    r = run(["msopgen", "gen", "-i", "bad.json", "-c", "ai_core-Ascend910B2", "-lan", "cpp", "-out", "X"],
            env, tmp_path)
    assert r.returncode != 0 and "JSON list" in r.stderr
    r = run(["msopgen", "gen", "-i", "bad.json", "-c", "Ascend910B2", "-out", "X"], env, tmp_path)
    assert r.returncode != 0 and "ai_core-" in r.stderr


def test_build_refuses_custom_opp_path(tmp_path, env):
    proj = gen_project(tmp_path, env)
    r = run(["./build.sh"], dict(env, ASCEND_CUSTOM_OPP_PATH="/x"), proj)
    assert r.returncode != 0 and "ASCEND_CUSTOM_OPP_PATH" in r.stdout


@pytest.mark.parametrize("how", ["scenario", "marker", "syntax"])
def test_kernel_compile_error(tmp_path, env, how):
    if how == "scenario":
        proj, e = gen_project(tmp_path, env), dict(env, FAKE_CANN_SCENARIO="compile_error")
    elif how == "marker":
        proj, e = gen_project(tmp_path, env, kernel_src=lambda s: s + "\nint x = FAKE_CANN_COMPILE_ERROR;\n"), env
    else:
        proj, e = gen_project(tmp_path, env, kernel_src=lambda s: s + "\nvoid broken() {\n"), env
    r = run(["./build.sh"], e, proj)
    assert r.returncode != 0
    ds = fb.analyze_build(r.returncode, r.stdout, r.stderr)
    assert [d.kind for d in ds] == ["compile_error"]
    assert ds[0].lines[0].startswith("kernel_src:")
    assert fb.check_build_artifacts(proj) is not None


@pytest.mark.parametrize("how", ["scenario", "syntax"])
def test_host_error_is_opbuild_failure(tmp_path, env, how):
    if how == "scenario":
        proj, e = gen_project(tmp_path, env), dict(env, FAKE_CANN_SCENARIO="opbuild_fail")
    else:
        proj, e = gen_project(tmp_path, env, host_tiling_src=lambda s: s.replace("END_TILING_DATA_DEF;", "}")), env
    r = run(["./build.sh"], e, proj)
    assert r.returncode != 0
    ds = fb.analyze_build(r.returncode, r.stdout, r.stderr)
    assert "opbuild_failed" in [d.kind for d in ds]
    assert ds[0].lines[0].startswith("host_tiling_src:" if how == "syntax" else "host_operator_src:")


def test_tbe_error_and_missing_run(tmp_path, env):
    proj = gen_project(tmp_path, env)
    r = run(["./build.sh"], dict(env, FAKE_CANN_SCENARIO="tbe_error"), proj)
    assert [d.kind for d in fb.analyze_build(r.returncode, r.stdout, r.stderr)] == ["tbe_error"]
    r = run(["./build.sh"], dict(env, FAKE_CANN_SCENARIO="missing_run"), proj)
    assert r.returncode == 0
    assert fb.check_build_artifacts(proj).kind == "missing_artifact"


def test_installer_without_install_path_uses_opp_vendors(tmp_path, env):
    proj = gen_project(tmp_path, env)
    assert run(["./build.sh"], env, proj).returncode == 0
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("load_priority=other\n")
    r = run([str(fb.installer_path(proj))], dict(env, ASCEND_OPP_PATH=str(opp)), proj)
    assert r.returncode == 0, r.stderr
    assert (opp / "vendors/customize/op_api/lib/libcust_opapi.so").is_file()
    assert (opp / "vendors/config.ini").read_text() == "load_priority=customize,other\n"
    r = run([str(fb.installer_path(proj)), "--install-path=relative"], env, proj)
    assert r.returncode != 0


def test_msprof_runtime_scenarios(tmp_path, env):
    cmd = ["msprof", "op", "--kernel-name=AddCustom", f"--output={tmp_path / 'p'}", sys.executable, "-c", "pass"]
    r = run(cmd, dict(env, FAKE_CANN_SCENARIO="runtime_fault"), tmp_path)
    ds = fb.analyze_runtime(r.returncode, r.stdout, r.stderr)
    assert [d.kind for d in ds] == ["vector_core_exception"] and fb.needs_health_check(ds)
    r = run(cmd, dict(env, FAKE_CANN_SCENARIO="op_not_found"), tmp_path)
    assert [d.kind for d in fb.analyze_runtime(r.returncode, r.stdout, r.stderr)] == ["op_not_found"]
    with pytest.raises(subprocess.TimeoutExpired):
        run(cmd, dict(env, FAKE_CANN_SCENARIO="timeout"), tmp_path, timeout=2)
    r = run(cmd, dict(env, FAKE_CANN_SCENARIO="timeout", FAKE_CANN_HANG_S="0"), tmp_path)
    assert [d.kind for d in fb.analyze_runtime(r.returncode, r.stdout, r.stderr)] == ["vector_core_timeout"]
    # the application's own failure is passed through
    r = run(cmd[:-3] + [sys.executable, "-c", "import sys; sys.exit(3)"], env, tmp_path)
    assert r.returncode == 3
    with pytest.raises(msprof.ProfileError):
        msprof.parse(tmp_path / "p")


def test_msprof_nested_and_garbled(tmp_path, env):
    out = tmp_path / "p"
    r = run(["msprof", "op", "--kernel-name=AddCustom", "--launch-count=3", f"--output={out}",
             sys.executable, "-c", "pass"], dict(env, FAKE_CANN_SCENARIO="nested_profile", FAKE_CANN_BLOCK_DIM="40"),
            tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(list(out.glob("OPPROF_*/AddCustom/*/OpBasicInfo_*.csv"))) == 3
    p = msprof.parse(out, kernel_name="AddCustom")
    assert p.launches == 3 and p.passes == 3 and p.blocks == 40
    assert p.task_duration_us == pytest.approx(21.0)
    d = msprof.diagnose(p)
    assert d["cores_used"] == 40 and not any("AIV cores used" in h for h in d["hints"])
    r = run(["msprof", "op", "--warm-up=999", sys.executable, "-c", "pass"], env, tmp_path)
    assert r.returncode != 0 and "--warm-up" in r.stderr
    g = tmp_path / "g"
    run(["msprof", "op", f"--output={g}", sys.executable, "-c", "pass"], dict(env, FAKE_CANN_SCENARIO="garbled_profile"),
        tmp_path)
    with pytest.raises(msprof.ProfileError):
        msprof.parse(g)
