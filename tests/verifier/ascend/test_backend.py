"""The `ascend` backend end to end through the Verifier, against the FAKE toolchain (fake_cann/: msopgen,
build.sh, the .run installer, msprof) and the FAKE torch_npu (fake_torch_npu/: the API on the CPU, a fake
NpuExtension that builds a real C module, a fake device that runs installed operators and injects faults).

Every scenario asserts the verdict, its feedback and, where it matters, the exact commands and environment
the fake tools logged. Nothing here ran on an NPU or with real CANN / torch_npu."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from evokernel.tasks.load import load_task
from evokernel.verifier.backends.ascend.backend import AscendBackend, AscendSettings, BackendUnavailable, DeviceUnavailable
from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FAKE_CANN = HERE / "fake_cann"
TASK = load_task(ROOT / "evokernel" / "suites" / "npu_l1" / "11_elementwise_add.py", {"batch_size": 8, "dim": 256})
ADD = (ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text()
PASS = "FAKE_CANN_SCENARIO,FAKE_CANN_LOG,FAKE_NPU_SCENARIO,FAKE_NPU_REPLAY_AFTER,FAKE_TORCH_NPU_LOG,FAKE_NPU_BROKEN,FAKE_CANN_DURATION_US"


def variant(old: str, new: str) -> str:
    assert old in ADD
    return ADD.replace(old, new, 1)


def fake_env(tmp: Path, fake_torch: str = "fake_torch_npu") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "FAKE_"))}
    env.update({"ASCEND_SET_ENV": str(FAKE_CANN / "set_env.sh"), "EVOKERNEL_NPU_PYTHONPATH": str(HERE / fake_torch),
                "EVOKERNEL_ASCEND_DEVICE_TYPE": "cpu", "EVOKERNEL_ASCEND_PASS_ENV": PASS,
                "EVOKERNEL_ASCEND_CALLS": "5", "FAKE_CANN_LOG": str(tmp / "cann.log"),
                "FAKE_TORCH_NPU_LOG": str(tmp / "npu.log"), "FAKE_NPU_BROKEN": str(tmp / "broken"),
                "OPENAI_API_KEY": "sk-must-not-leak"})
    (tmp / "broken").mkdir(exist_ok=True)
    return env


def calls(tmp: Path) -> list[dict]:
    log = tmp / "cann.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One verifier for the module (start-up is the slow part); tests adjust its backend's environment."""
    tmp = tmp_path_factory.mktemp("ascend")
    mp = pytest.MonkeyPatch()
    for k, v in fake_env(tmp).items():
        mp.setenv(k, v)
    for k in [k for k in os.environ if k.startswith("ASCEND_") and k != "ASCEND_SET_ENV"]:
        mp.delenv(k)
    cfg = VerifyConfig(sandbox="rlimits", cache_dir=tmp / "cache", trials=2, perturbations=("scale",))
    v = Verifier("ascend", cfg).start()
    v.backend.settings.health_waits = (0.0,)
    yield v, tmp
    v.close()
    mp.undo()


@pytest.fixture
def w(world):
    """The module verifier with a clean slate of scenario variables and logs."""
    v, tmp = world
    for k in ("FAKE_CANN_SCENARIO", "FAKE_NPU_SCENARIO", "FAKE_CANN_DURATION_US"):
        v.backend.environ.pop(k, None)
    v.backend.settings.timing, v.backend.settings.profile = "events", True
    v.config.timing = True
    for f in ("cann.log", "npu.log"):
        (tmp / f).unlink(missing_ok=True)
    for f in (tmp / "broken").iterdir():
        f.unlink()
    return v, tmp


def test_success_builds_installs_runs_times_and_profiles(w):
    v, tmp = w
    r = v.verify(TASK, ADD)
    assert r.feasible, r.feedback
    assert r.backend == "ascend" and r.latency_kind == "measured"
    assert r.gates == {"hack": True, "compile": True, "correctness": True}
    assert r.latency_ms > 0 and r.reference_ms > 0 and r.speedup == pytest.approx(r.reference_ms / r.latency_ms)
    assert r.details["trials"]["passed"] == 3
    assert "NPU events, 3 warm-up + 5 timed calls" in r.details["timing"]["protocol"]
    # the diagnosis the refining stage matches on, from the fake msprof's PipeUtilization (MTE2-bound)
    assert r.details["diagnosis"]["bound"] == "mte2" and "bound: MTE2" in r.details["profile"]
    assert "profile (measured by msprof)" in r.feedback
    log = calls(tmp)
    tools = [c["tool"] for c in log]
    assert tools == ["msopgen", "build.sh", "bisheng", "custom_opp.run", "msprof"]
    build_dir = _build_dir(v, r)
    assert log[0]["argv"][:2] == ["gen", "-i"] and log[0]["argv"][3:] == ["-c", "ai_core-Ascend910B2", "-lan", "cpp",
                                                                         "-out", "AddCustom"]
    assert log[0]["cwd"] == str(build_dir)
    assert log[1]["cwd"] == str(build_dir / "AddCustom")
    assert log[2]["argv"][0] == "--npu-arch=dav-2201"  # the kernel compiler, run by the build (Ascend910B2)
    assert log[2]["argv"][-3] == str(build_dir / "AddCustom" / "op_kernel" / "add_custom.cpp")
    assert log[3]["argv"] == [f"--install-path={build_dir / 'opp'}"]
    assert all(not c["env"]["ASCEND_CUSTOM_OPP_PATH"] for c in log[:4])  # unset for the build
    vendor = str(build_dir / "opp" / "vendors" / "customize")
    prof = log[4]
    assert prof["env"]["ASCEND_CUSTOM_OPP_PATH"] == vendor  # the device process finds the per-candidate install
    assert prof["env"]["LD_LIBRARY_PATH"].startswith(vendor + "/op_api/lib")
    assert prof["argv"][:2] == ["op", "--kernel-name=add_custom"]
    assert "--aic-metrics=PipeUtilization,Memory,ResourceConflictRatio" in prof["argv"]
    assert prof["argv"][prof["argv"].index("-m") + 1] == "evokernel.verifier.sandboxed.device_runner"
    assert not (FAKE_CANN / "opp" / "vendors" / "customize").exists()  # nothing installed globally
    npu = (tmp / "npu.log").read_text()
    assert "exec aclnnAddCustom" in npu and "set_device 0" in npu
    # a second verdict of the same source reuses the build
    (tmp / "cann.log").unlink()
    r2 = v.verify(TASK, ADD)
    assert r2.feasible and r2.details["ascend"]["build"]["cached"]
    assert [c["tool"] for c in calls(tmp)] == ["msprof"]


def test_tools_and_device_never_see_the_callers_secrets(w):
    v, _ = w
    env = v.backend.tool_env()
    assert "OPENAI_API_KEY" not in env and env["ASCEND_HOME_PATH"] == str(FAKE_CANN)
    assert env["FAKE_CANN_LOG"]  # configured pass-through (EVOKERNEL_ASCEND_PASS_ENV)


@pytest.mark.parametrize("source,expect", [
    (variant("__aicore__ inline void Init(", "__aicore__ inline void Init( FAKE_CANN_COMPILE_ERROR"),
     ["compilation failed in kernel_src", "kernel_src"]),
    (variant("TilingFunc(gert::TilingContext* context)\n{", "TilingFunc(gert::TilingContext* context)\n{ {"),
     ["host sources", "opbuild"]),
    (variant("#include <torch/library.h>", "#include <torch/library_typo.h>"),
     ["python_bind_src", "torch/library_typo.h"]),
], ids=["kernel-compile-error", "opbuild-failure", "binding-compile-error"])
def test_build_failures_are_compile_verdicts_with_located_feedback(w, source, expect):
    v, tmp = w
    r = v.verify(TASK, source)
    assert not r.feasible and r.failed_gate == "compile", r.feedback
    for e in expect:
        assert e in r.feedback
    assert r.gates["compile"] is False
    assert r.details["ascend"]["build_steps"][-1]["rc"] not in (0, None)
    from evokernel.verifier.backends.ascend_sim.project import parse_candidate

    assert not (v.backend.root / "builds" / v.backend.build_key(parse_candidate(source))).exists()  # not cached
    assert "npu.log" not in os.listdir(tmp)  # nothing ran on the device


@pytest.mark.parametrize("scenario,expect", [
    ("missing_run", "no build_out/custom_opp_*.run"), ("tbe_error", "[ERROR] TBE"),
    ("compile_error", "error: use of undeclared identifier"),
])
def test_toolchain_scenarios_are_compile_verdicts(w, scenario, expect):
    v, _ = w
    v.backend.environ["FAKE_CANN_SCENARIO"] = scenario
    source = variant('extern "C"', f'// scenario {scenario}\nextern "C"')  # a source not built before
    r = v.verify(TASK, source)
    assert r.failed_gate == "compile" and expect in r.feedback, r.feedback


def test_a_binding_reaching_device_memory_is_stopped_before_anything_is_built(w):
    v, tmp = w
    source = variant("    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);",
                     "    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);\n"
                     "    aclrtMemcpy(result.data_ptr(), 0, self.data_ptr(), 0, 0);")
    r = v.verify(TASK, source)
    assert r.failed_gate == "hack" and "python_bind_src" in r.feedback and "binding-device" in r.feedback
    assert calls(tmp) == []  # no tool ran


def test_wrong_result_is_a_correctness_verdict(w):
    v, _ = w
    v.backend.environ["FAKE_NPU_SCENARIO"] = "wrong_result"
    r = v.verify(TASK, ADD)
    assert r.failed_gate == "correctness" and r.gates["compile"] is True
    assert "trial 1" in r.feedback and r.details["max_abs_err"] == pytest.approx(0.5, abs=1e-3)


def test_a_result_replayed_in_the_timed_calls_is_caught(w):
    # the device answers from a cache after the checked trials (3 here): each timed call gets fresh inputs
    # and its output is checked, so the replayed first result is wrong there
    v, _ = w
    v.backend.environ["FAKE_NPU_SCENARIO"] = "replay"
    v.backend.environ["FAKE_NPU_REPLAY_AFTER"] = "3"
    try:
        r = v.verify(TASK, ADD)
    finally:
        v.backend.environ.pop("FAKE_NPU_REPLAY_AFTER", None)
    assert r.failed_gate == "correctness" and "a timed call gave a wrong result" in r.feedback, r.feedback


def test_compute_outside_the_custom_op_is_a_hack_verdict(w):
    v, _ = w
    v.backend.environ["FAKE_NPU_SCENARIO"] = "aten"  # the binding computes with ATen (dispatcher sees aten::add)
    r = v.verify(TASK, ADD)
    assert r.failed_gate == "hack" and "aten::add" in r.feedback


def test_device_fault_is_a_runtime_verdict_and_the_device_is_checked_before_the_next(w):
    v, _ = w
    before = v.backend.health_checks
    v.backend.environ["FAKE_NPU_SCENARIO"] = "aivec_fault"
    r = v.verify(TASK, ADD)
    assert r.failed_gate == "runtime"
    assert "vector core exception" in r.feedback and "retCode=0x31" in r.feedback
    assert "health-checked" in r.feedback
    assert v.backend.device.suspect
    v.backend.environ.pop("FAKE_NPU_SCENARIO")
    r2 = v.verify(TASK, ADD)
    assert r2.feasible, r2.feedback  # the fault did not fail the next candidate
    assert v.backend.health_checks == before + 1 and not v.backend.device.suspect


def test_hang_is_killed_at_the_deadline_as_a_timeout(w):
    v, _ = w
    v.backend.environ["FAKE_NPU_SCENARIO"] = "hang"
    old = (v.config.load_timeout_s, v.config.run_timeout_s, v.config.timing)
    v.config.load_timeout_s, v.config.run_timeout_s, v.config.timing = 12.0, 1.0, False
    try:
        r = v.verify(TASK, ADD)
    finally:
        v.config.load_timeout_s, v.config.run_timeout_s, v.config.timing = old
    assert r.failed_gate == "timeout" and "killed" in r.feedback
    assert "timed out" in v.backend.device.suspect
    v.backend.environ.pop("FAKE_NPU_SCENARIO")
    assert v.verify(TASK, ADD).feasible


def _build_dir(v, r) -> Path:
    """The verdict names the build folder under `<cache>` (no host path in what a verdict says); the user's cache
    folder is theirs to resolve."""
    text = r.details["ascend"]["build"]["dir"]
    assert text.startswith("<cache>/"), text
    return Path(str(v.config.cache_dir) + text.removeprefix("<cache>"))


def test_op_missing_from_the_install_is_explained(w):
    v, tmp = w
    r = v.verify(TASK, ADD)
    lib = _build_dir(v, r) / "opp" / "vendors" / "customize" / "op_api" / "lib" / "libcust_opapi.so"
    lib.write_text("a library for some other operator\n")
    try:
        r2 = v.verify(TASK, ADD)
    finally:
        shutil.rmtree(_build_dir(v, r))  # the next test rebuilds it
    assert r2.failed_gate == "runtime" and "EZ3003" in r2.feedback and "not installed" in r2.feedback


def test_msprof_protocol_mean_task_duration_and_reference_kernel_sum(w):
    v, tmp = w
    v.backend.settings.timing = "msprof"
    v.backend.environ["FAKE_CANN_DURATION_US"] = "20"
    r = v.verify(TASK, ADD)
    assert r.feasible, r.feedback
    # the fake writes launch n with 20 + n us: the candidate's 3 passes -> mean 21 us; the reference (one
    # aten::add per forward recorded -> --launch-count 4*1*3 = 12 launches of 20..31 us) -> 306 us / 3 forwards
    assert r.latency_ms == pytest.approx(0.021) and r.reference_ms == pytest.approx(0.102)
    assert r.speedup == pytest.approx(102 / 21)
    assert "msprof op, mean Task Duration over 3" in r.details["timing"]["protocol"]
    profs = [c for c in calls(tmp) if c["tool"] == "msprof"]
    assert any("--launch-count=12" in c["argv"] and not any(a.startswith("--kernel-name") for a in c["argv"])
               for c in profs)


def test_unreadable_profile_keeps_a_feasible_verdict_and_says_why(w):
    v, _ = w
    v.backend.environ["FAKE_CANN_SCENARIO"] = "garbled_profile"
    r = v.verify(TASK, ADD)
    assert r.feasible and "diagnosis" not in r.details and "profile" not in r.details
    assert "OpBasicInfo.csv" in r.details["profile_error"] and "garbled" in r.details["profile_error"]


def test_unreadable_profile_fails_the_msprof_protocol(w):
    v, _ = w
    v.backend.environ["FAKE_CANN_SCENARIO"] = "garbled_profile"
    v.backend.settings.timing = "msprof"
    r = v.verify(TASK, ADD)
    assert r.failed_gate == "runtime" and "profiling with msprof failed" in r.feedback


def test_verify_cli_on_the_ascend_backend(tmp_path):
    import subprocess
    import sys

    env = fake_env(tmp_path)
    env.update(HF_HUB_OFFLINE="1", EVOKERNEL_CACHE=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-m", "evokernel", "verify", str(TASK.path),
                        str(ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py"), "--backend", "ascend",
                        "--trials", "1"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert r.stdout.startswith("FEASIBLE") and "profile (measured):" in r.stdout and "bound: MTE2" in r.stdout
    env["ASCEND_SET_ENV"] = str(tmp_path / "no" / "set_env.sh")
    r = subprocess.run([sys.executable, "-m", "evokernel", "verify", str(TASK.path),
                        str(ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py"), "--backend", "ascend"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 2 and "no CANN toolkit found" in r.stderr


def test_a_device_fault_while_timing_the_reference_is_an_environment_error(w):
    v, tmp = w
    real = v.backend.run_device

    def run_device(req, job, timeout, build=None, name="run", profiler=None):
        if name == "reference":  # the device dies between the candidate's run and the reference's
            (tmp / "broken" / f"npu{v.backend.device.index}").write_text("")
        return real(req, job, timeout, build, name, profiler)

    v.backend.run_device = run_device
    v.backend._ref_timing.clear()
    try:
        with pytest.raises(BackendUnavailable, match="timing the eager reference .* device fault"):
            v.verify(TASK, ADD)  # not a verdict against the candidate, not a broken task
    finally:
        del v.backend.run_device
        for f in (tmp / "broken").iterdir():
            f.unlink()
        v.backend.device.suspect = ""


def test_dead_device_is_marked_bad_and_never_fails_later_candidates(w, tmp_path):
    v, tmp = w
    v.backend.environ["FAKE_NPU_SCENARIO"] = "aivec_fault"
    assert v.verify(TASK, ADD).failed_gate == "runtime"
    (tmp / "broken" / f"npu{v.backend.device.index}").write_text("")  # the fault outlived its process
    v.backend.environ.pop("FAKE_NPU_SCENARIO")
    with pytest.raises(DeviceUnavailable, match="no usable NPU left"):
        v.verify(TASK, ADD)  # a broken device is an environment error, not an infeasible candidate
    bad = v.backend.root / "devices" / "npu0.bad"
    assert bad.exists() and "unhealthy" in bad.read_text()
    bad.unlink()
    (tmp / "broken" / "npu0").unlink()
    v.backend.device = v.backend._claim_device()


def test_a_second_npu_takes_over_from_a_dead_one(tmp_path, monkeypatch):
    for k, val in fake_env(tmp_path).items():
        monkeypatch.setenv(k, val)
    monkeypatch.setenv("EVOKERNEL_NPU_DEVICES", "0,1")
    be = AscendBackend(tmp_path / "cache")
    be.settings.health_waits = (0.0,)
    be.start("rlimits")
    other = AscendBackend(tmp_path / "cache")
    try:
        assert be.device.index == 0
        other.start("rlimits")
        assert other.device.index == 1  # one NPU per verifier (lock files)
        other.close()
        (tmp_path / "broken" / "npu0").write_text("")
        be.mark_suspect("test fault")
        be.ensure_healthy()
        assert be.device.index == 1 and (be.root / "devices" / "npu0.bad").exists()
    finally:
        be.close()
        other.close()


def test_without_cann_the_backend_says_what_is_missing(tmp_path, monkeypatch):
    for k in [k for k in os.environ if k.startswith("ASCEND_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("ASCEND_SET_ENV", str(tmp_path / "nowhere" / "set_env.sh"))
    with pytest.raises(BackendUnavailable, match="no CANN toolkit found"):
        AscendBackend(tmp_path / "cache").start("rlimits")


def test_torch_npu_without_a_loadable_cann_is_an_environment_error(tmp_path, monkeypatch):
    for k, val in fake_env(tmp_path, "fake_torch_npu_nocann").items():
        monkeypatch.setenv(k, val)
    cfg = VerifyConfig(sandbox="rlimits", cache_dir=tmp_path / "cache", trials=1, perturbations=(), timing=False)
    with Verifier("ascend", cfg) as v:
        with pytest.raises(BackendUnavailable, match="set_env.sh"):
            v.verify(TASK, ADD)


@pytest.mark.skipif(not shutil.which("bwrap"), reason="bubblewrap not installed")
def test_success_inside_bubblewrap(tmp_path, monkeypatch):
    for k, val in fake_env(tmp_path).items():
        monkeypatch.setenv(k, val)
    cfg = VerifyConfig(sandbox="bwrap", cache_dir=tmp_path / "cache", trials=1, perturbations=())
    with Verifier("ascend", cfg) as v:
        r = v.verify(TASK, ADD)
    assert r.feasible, r.feedback
    assert r.details["ascend"]["sandbox"] == "bwrap" and r.details["diagnosis"]["bound"] == "mte2"


def test_settings_from_the_environment():
    s = AscendSettings.from_env({"EVOKERNEL_ASCEND_SOC": "Ascend910B3", "EVOKERNEL_NPU_DEVICES": "2, 3",
                                 "EVOKERNEL_ASCEND_TIMING": "msprof", "EVOKERNEL_ASCEND_PROFILE": "0"})
    assert (s.soc, s.devices, s.timing, s.profile) == ("Ascend910B3", [2, 3], "msprof", False)
    with pytest.raises(BackendUnavailable, match="EVOKERNEL_ASCEND_TIMING"):
        AscendSettings.from_env({"EVOKERNEL_ASCEND_TIMING": "stopwatch"})


def test_offline_run_on_the_ascend_backend_drafts_refines_and_stores_the_measured_bottleneck(tmp_path):
    """`evokernel run --backend ascend --generator template` end to end on the fakes: drafts and refinements
    measured (not estimated), and the trace of a feasible kernel stores the bottleneck msprof diagnosed
    (what the refining stage matches on)."""
    import subprocess
    import sys

    env = fake_env(tmp_path)
    env.update(HF_HUB_OFFLINE="1", EVOKERNEL_CACHE=str(tmp_path / "cache"))
    run = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "evokernel", "run", "npu-l1/11_elementwise_add", "--backend", "ascend",
                        "--generator", "template", "--budget", "2", "--memory", str(tmp_path / "mem"),
                        "--run-dir", str(run)], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    records = [json.loads(x) for x in (run / "attempts.jsonl").read_text().splitlines() if x.strip()]
    assert len(records) == 2 and all(x["feasible"] for x in records), [x["failed_gate"] for x in records]
    assert {x["stage"] for x in records} == {"draft", "refine"}
    assert all(x["latency_kind"] == "measured" and x["latency_ms"] > 0 for x in records)
    assert "LATENCIES ARE ESTIMATES" not in r.stdout
    from evokernel.memory.store import MemoryStore

    store = MemoryStore(tmp_path / "mem")
    try:
        traces = store.get(store.ids("trace"))
    finally:
        store.close()
    assert len(traces) == 2 and all(t.meta.get("bound") == "mte2" for t in traces)
