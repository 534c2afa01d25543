"""`evokernel doctor`: the checks per backend, against the fake CANN and the fake torch_npu packages
(tests/verifier/ascend/). No NPU, no CANN here; the torch_npu probe runs in a subprocess like on a device."""
import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evokernel.cli import doctor
from evokernel.cli.app import app
from evokernel.cli.doctor import FAIL, OK, WARN, Check, chips_in, run_checks

ASCEND_TESTS = Path(__file__).resolve().parents[1] / "verifier" / "ascend"
FAKE_CANN = ASCEND_TESTS / "fake_cann"
FAKE_TORCH_NPU = ASCEND_TESTS / "fake_torch_npu"
FAKE_TORCH_NPU_NOCANN = ASCEND_TESTS / "fake_torch_npu_nocann"
FAKE_HAS_DEVICE_COUNT = "def device_count" in (FAKE_TORCH_NPU / "torch_npu" / "npu.py").read_text()

NPU_SMI_TABLE = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.rc3                 Version: 23.0.rc3                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     {chip}               | OK            | 90.1        36                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           310  / 15137      3160 / 65536         |
+===========================+===============+====================================================+
"""


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch, tmp_path):
    """The process environment of a developer machine must not leak into the checks."""
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_SET_ENV", "EVOKERNEL_NPU_HELPER",
                "EVOKERNEL_NPU_PYTHON", "EVOKERNEL_ASCEND_SOC", "EVOKERNEL_SANDBOX"):
        monkeypatch.delenv(var, raising=False)
    # the default CANN locations do not exist here; a real CANN machine would find its toolkit
    monkeypatch.setattr("evokernel.verifier.backends.ascend.toolchain.SET_ENV_CANDIDATES",
                        (str(tmp_path / "no-cann" / "set_env.sh"),))
    monkeypatch.setattr(doctor, "DEV", tmp_path / "dev")
    (tmp_path / "dev").mkdir()


@pytest.fixture
def helper(tmp_path):
    h = tmp_path / "pytorch_npu_helper.hpp"
    h.write_text("// fake helper\n#define EXEC_NPU_CMD(...)\n")
    return h


def fake_bin(tmp_path: Path, name: str, script: str) -> Path:
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text("#!/bin/sh\n" + script)
    p.chmod(0o755)
    return d


def ascend_env(tmp_path: Path, torch_npu: Path | None = FAKE_TORCH_NPU, helper: Path | None = None,
               extra_path: Path | None = None, **extra: str) -> dict[str, str]:
    """The fake CANN found through ASCEND_SET_ENV (as test_toolchain.py does), a fake torch_npu on PYTHONPATH."""
    path = f"{FAKE_CANN / 'bin'}:" + (f"{extra_path}:" if extra_path else "") + os.environ["PATH"]
    env = {"PATH": path, "HOME": str(tmp_path), "ASCEND_SET_ENV": str(FAKE_CANN / "set_env.sh"),
           "HF_HUB_OFFLINE": "1"}
    if torch_npu is not None:
        env["PYTHONPATH"] = str(torch_npu)
    if helper is not None:
        env["EVOKERNEL_NPU_HELPER"] = str(helper)
    env.update(extra)
    return env


# ---------------------------------------------------------------------------------------------------------
# cpu / ascend-sim
# ---------------------------------------------------------------------------------------------------------
def test_cpu_backend_rows():
    checks = run_checks("cpu")
    names = [c.name for c in checks]
    assert names == ["python", "torch", "bubblewrap", "g++", "ray"]
    rows = by_name(checks)
    assert rows["python"].status == OK
    assert rows["torch"].status in (OK, WARN) and "torch 2." in rows["torch"].detail
    assert rows["g++"].status == OK and "g++" in rows["g++"].detail
    assert rows["bubblewrap"].status in (OK, WARN) or rows["bubblewrap"].remedy  # FAIL: a broken bwrap here
    assert all(c.status in (OK, WARN, FAIL) for c in checks)



def test_ray_row_names_the_cluster_or_the_local_default():
    from evokernel.cli.doctor import check_ray

    local = check_ray({})
    assert local.status == OK and "private local Ray" in local.detail
    unreachable = check_ray({"RAY_ADDRESS": "127.0.0.2:1"})
    assert unreachable.status == WARN and "no Ray cluster answers at 127.0.0.2:1" in unreachable.detail
    assert "ray start --head" in unreachable.remedy


def test_missing_bwrap_warns_and_missing_gxx_fails(tmp_path):
    env = {"PATH": str(tmp_path)}  # an empty folder: neither bwrap nor g++
    rows = by_name(run_checks("cpu", env))
    assert rows["bubblewrap"].status == WARN and "rlimits" in rows["bubblewrap"].detail
    assert rows["g++"].status == FAIL and rows["g++"].remedy
    assert by_name(run_checks("cpu", {"PATH": os.environ["PATH"], "EVOKERNEL_SANDBOX": "rlimits"}))[
        "bubblewrap"].status == WARN


def test_broken_bwrap_fails(tmp_path):
    bindir = fake_bin(tmp_path, "bwrap", "echo 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    b = by_name(run_checks("cpu", {"PATH": f"{bindir}:{os.environ['PATH']}"}))["bubblewrap"]
    assert b.status == FAIL and "No permissions to create new namespace" in b.detail
    assert "EVOKERNEL_SANDBOX=rlimits" in b.remedy


def test_ascend_sim_checks_the_emulator_sources():
    rows = by_name(run_checks("ascend-sim"))
    assert "g++" in rows
    emu = rows["ascend-sim emulator"]
    assert emu.status == OK and emu.detail.endswith("include")


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        run_checks("cuda")
    r = CliRunner().invoke(app, ["doctor", "--backend", "cuda"])
    assert r.exit_code == 2 and "unknown backend" in r.output


def test_cli_json_parses():
    r = CliRunner().invoke(app, ["doctor", "--backend", "cpu", "--json"])
    data = json.loads(r.stdout)
    assert data["backend"] == "cpu" and [c["name"] for c in data["checks"]] == ["python", "torch", "bubblewrap", "g++", "ray"]
    assert set(data["checks"][0]) == {"name", "status", "detail", "remedy"}
    assert r.exit_code == (0 if data["ok"] else 1) and data["ok"] == (data["counts"]["FAIL"] == 0)


def test_cli_table():
    r = CliRunner().invoke(app, ["doctor", "--backend", "cpu"])
    assert "bubblewrap" in r.stdout and "g++" in r.stdout and "python" in r.stdout, r.output
    assert ("cpu: ready" in r.stdout) == (r.exit_code == 0) and ("cpu: cannot run" in r.stdout) == (r.exit_code == 1)


# ---------------------------------------------------------------------------------------------------------
# ascend
# ---------------------------------------------------------------------------------------------------------
def test_no_cann_fails_with_the_locate_message_and_exit_1(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_SET_ENV", str(tmp_path / "none.sh"))
    r = CliRunner().invoke(app, ["doctor", "--backend", "ascend", "--json"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout)
    cann = by_name([Check(**c) for c in data["checks"]])["CANN"]
    assert cann.status == FAIL and "no CANN toolkit found" in cann.detail and str(tmp_path / "none.sh") in cann.detail
    assert "set_env.sh" in cann.remedy and "ASCEND_SET_ENV" in cann.remedy
    # the table says the same
    r = CliRunner().invoke(app, ["doctor", "--backend", "ascend"])
    assert r.exit_code == 1 and "no CANN toolkit found" in r.stdout and "cannot run" in r.stdout


def test_fake_cann_and_fake_torch_npu(tmp_path, helper):
    checks = run_checks("ascend", ascend_env(tmp_path, helper=helper))
    rows = by_name(checks)
    assert rows["CANN"].status == OK and rows["CANN"].detail == str(FAKE_CANN)
    assert rows["CANN version"].status == WARN and "unknown" in rows["CANN version"].detail  # the fake has none
    assert rows["msopgen"].status == OK and rows["msopgen"].detail == str(FAKE_CANN / "bin" / "msopgen")
    assert rows["msprof"].status == OK and rows["msprof"].detail == str(FAKE_CANN / "bin" / "msprof")
    assert rows["bash"].status == OK
    assert rows["torch_npu"].status == OK and "0.0.fake" in rows["torch_npu"].detail
    assert rows["torch/torch_npu pairing"].status == WARN  # 0.0.fake is not named after torch's version
    if FAKE_HAS_DEVICE_COUNT:
        assert rows["NPU devices"].status == OK and "1 NPU" in rows["NPU devices"].detail
        assert "Ascend910B2" in rows["NPU devices"].detail
    else:
        assert rows["NPU devices"].status == WARN
    assert rows["EXEC_NPU_CMD helper"].status == OK and rows["EXEC_NPU_CMD helper"].detail == str(helper)
    assert rows["device nodes"].status == WARN  # no /dev/davinci* in the (fake) /dev
    assert rows["SoC"].status in (OK, WARN)  # npu-smi is absent here: a warning, never a FAIL
    assert all(c.remedy for c in checks if c.status == FAIL)
    assert not doctor.failed(checks), [c for c in checks if c.status == FAIL]
    assert "torch_npu" not in sys.modules  # probed in a subprocess only


@pytest.mark.skipif(not FAKE_HAS_DEVICE_COUNT, reason="the fake torch_npu has no device_count() yet")
def test_zero_devices_fail(tmp_path, helper):
    rows = by_name(run_checks("ascend", ascend_env(tmp_path, helper=helper, FAKE_NPU_DEVICE_COUNT="0")))
    assert rows["torch_npu"].status == OK
    assert rows["NPU devices"].status == FAIL and "0 NPUs" in rows["NPU devices"].detail and rows["NPU devices"].remedy


def test_torch_npu_without_cann_is_diagnosed(tmp_path, helper):
    rows = by_name(run_checks("ascend", ascend_env(tmp_path, torch_npu=FAKE_TORCH_NPU_NOCANN, helper=helper)))
    t = rows["torch_npu"]
    assert t.status == FAIL
    assert "could not load the CANN runtime" in t.detail and "libhccl.so" in t.detail
    assert "set_env.sh" in t.detail and "set_env.sh" in t.remedy
    assert "NPU devices" not in rows


def test_torch_npu_not_installed(tmp_path, helper):
    rows = by_name(run_checks("ascend", ascend_env(tmp_path, torch_npu=None, helper=helper)))
    assert rows["torch_npu"].status == FAIL and "not installed" in rows["torch_npu"].detail
    assert "evokernel[npu]" in rows["torch_npu"].remedy


def test_npu_python_that_does_not_exist(tmp_path, helper):
    env = ascend_env(tmp_path, helper=helper, EVOKERNEL_NPU_PYTHON=str(tmp_path / "no-python"))
    t = by_name(run_checks("ascend", env))["torch_npu"]
    assert t.status == FAIL and "cannot run" in t.detail and "EVOKERNEL_NPU_PYTHON" in t.remedy


def test_missing_helper_fails(tmp_path):
    env = ascend_env(tmp_path, EVOKERNEL_NPU_HELPER=str(tmp_path / "nowhere" / "pytorch_npu_helper.hpp"))
    checks = run_checks("ascend", env)
    h = by_name(checks)["EXEC_NPU_CMD helper"]
    assert h.status == FAIL and "nowhere" in h.detail and "EVOKERNEL_NPU_HELPER" in h.remedy
    assert doctor.failed(checks)


@pytest.mark.parametrize("chip,soc,status", [("910B2", None, OK), ("910B3", None, WARN),
                                             ("910B3", "Ascend910B3", OK), ("310P3", "Ascend910B2", WARN)])
def test_soc_from_npu_smi(tmp_path, helper, chip, soc, status):
    table = NPU_SMI_TABLE.format(chip=chip)
    bindir = fake_bin(tmp_path, "npu-smi", f"[ \"$1\" = info ] || exit 2\ncat <<'EOF'\n{table}EOF\n")
    extra = {"EVOKERNEL_ASCEND_SOC": soc} if soc else {}
    s = by_name(run_checks("ascend", ascend_env(tmp_path, helper=helper, extra_path=bindir, **extra)))["SoC"]
    assert s.status == status, s
    assert chip in s.detail
    if status == WARN:
        assert s.remedy == f"export EVOKERNEL_ASCEND_SOC=Ascend{chip}"


def test_npu_smi_absent_or_broken_warns(tmp_path):
    env = {"PATH": str(tmp_path)}
    assert doctor.check_soc(env).status == WARN and "npu-smi not found" in doctor.check_soc(env).detail
    bindir = fake_bin(tmp_path, "npu-smi", "echo 'dcmi module initialize failed' >&2\nexit 1\n")
    s = doctor.check_soc({"PATH": str(bindir)})
    assert s.status == WARN and "dcmi module initialize failed" in s.detail


def test_chips_in():
    assert chips_in(NPU_SMI_TABLE.format(chip="910B4")) == ["910B4"]  # "310 / 15137" MB is not a chip
    assert chips_in("Chip Name: Ascend910B2\nAscend310P3 ascend910b2") == ["910B2", "310P3"]
    assert chips_in("no chips 9100 310") == []


def test_cann_version(tmp_path):
    home = tmp_path / "latest"
    (home / "x86_64-linux").mkdir(parents=True)
    (home / "x86_64-linux" / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\n"
                                                                         "version=8.0.RC3\ninnerversion=V100\n")
    c = by_name(run_checks("ascend", {"PATH": os.environ["PATH"], "ASCEND_HOME_PATH": str(home)}))
    assert c["CANN"].status == OK and c["CANN"].detail == str(home)
    assert c["CANN version"].status == OK and c["CANN version"].detail.startswith("8.0.RC3 ")
    assert c["msopgen"].status == FAIL and c["msopgen"].remedy  # not on this PATH
    assert c["msprof"].status == WARN
    (home / "version.cfg").write_text("# comment\nVersion = 8.1.RC1\n")
    assert doctor.check_cann_version(home).detail.startswith("8.1.RC1 ")


def test_device_nodes(tmp_path):
    dev = tmp_path / "devnodes"
    dev.mkdir()
    assert doctor.check_device_nodes(dev).status == WARN
    for n in ("davinci_manager", "davinci0", "davinci1"):
        (dev / n).touch()
    d = doctor.check_device_nodes(dev)
    assert d.status == OK and "davinci0" in d.detail and "davinci1" in d.detail


def test_torch_npu_found_through_the_backends_own_pythonpath(tmp_path):
    # EVOKERNEL_NPU_PYTHONPATH: torch_npu for the backend's processes only (not this interpreter's path)
    env = ascend_env(tmp_path, torch_npu=None, EVOKERNEL_NPU_PYTHONPATH=str(FAKE_TORCH_NPU))
    rows = by_name(run_checks("ascend", env))
    assert rows["torch_npu"].status == OK and "0.0.fake" in rows["torch_npu"].detail
    assert by_name(run_checks("ascend", ascend_env(tmp_path, torch_npu=None)))["torch_npu"].status == FAIL
