"""The CANN command sequence (toolchain.py) against the fake toolchain: exact steps, environment,
per-candidate install, and the failing step of each scenario. Not run on a real CANN machine."""
import json
import os
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend.toolchain import (CannNotFound, ToolchainError, build_project, device_env,
                                                           locate_cann)
from evokernel.verifier.backends.ascend_sim.project import parse_candidate

ROOT = Path(__file__).resolve().parents[3]
FAKE = Path(__file__).resolve().parent / "fake_cann"
ADD = (ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text()


@pytest.fixture
def cann(tmp_path, monkeypatch):
    log = tmp_path / "cann.log"
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    env = {"PATH": f"{FAKE / 'bin'}:{os.environ['PATH']}", "HOME": str(tmp_path), "FAKE_CANN_LOG": str(log),
           "ASCEND_SET_ENV": str(FAKE / "set_env.sh"), "ASCEND_CUSTOM_OPP_PATH": "/should/be/unset"}
    c = locate_cann(env)
    c.env["ASCEND_OPP_PATH"] = str(opp)
    c.env["FAKE_CANN_LOG"] = str(log)
    return c, log


def calls(log: Path):
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def test_locate_cann_explains_a_missing_toolkit(tmp_path):
    with pytest.raises(CannNotFound, match="no CANN toolkit found"):
        locate_cann({"PATH": "/usr/bin", "ASCEND_SET_ENV": str(tmp_path / "none.sh")})


def test_success_builds_and_installs_per_candidate(tmp_path, cann):
    c, log = cann
    plan = build_project(parse_candidate(ADD), tmp_path / "cand1", c)
    assert [s.name for s in plan.steps] == ["msopgen", "build", "install"]
    assert plan.steps[0].argv[:2] == ["msopgen", "gen"] and "ai_core-Ascend910B2" in plan.steps[0].argv
    assert plan.run_file.name.startswith("custom_opp_") and plan.install_dir == tmp_path / "cand1" / "opp"
    tools = [x["tool"] for x in calls(log)]
    assert tools[0] == "msopgen" and "build.sh" in tools[1]
    assert all(not x["env"].get("ASCEND_CUSTOM_OPP_PATH") for x in calls(log))  # unset for every step
    kernel = (tmp_path / "cand1" / "AddCustom" / "op_kernel" / "add_custom.cpp").read_text()
    assert kernel == parse_candidate(ADD).sources["kernel_src"]
    env = device_env(plan, c)
    assert env["ASCEND_CUSTOM_OPP_PATH"] == str(plan.vendor_dir)
    assert env["LD_LIBRARY_PATH"].startswith(str(plan.vendor_dir / "op_api" / "lib"))
    assert not (Path(c.env["ASCEND_OPP_PATH"]) / "vendors" / "customize").exists()  # no global install


@pytest.mark.parametrize("scenario,step", [("compile_error", "build"), ("opbuild_fail", "build"),
                                           ("missing_run", "build")])
def test_failing_scenarios_stop_at_their_step(tmp_path, cann, scenario, step):
    c, _ = cann
    c.env["FAKE_CANN_SCENARIO"] = scenario
    with pytest.raises(ToolchainError) as info:
        build_project(parse_candidate(ADD), tmp_path / "cand", c)
    assert info.value.step.name == step
    assert info.value.step.output or scenario == "missing_run"
