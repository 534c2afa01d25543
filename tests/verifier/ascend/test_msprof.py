"""msprof.py on msprof op output folders constructed from the recorded formats (fixtures/README.md)."""
import dataclasses
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend import diagnosis, msprof
from evokernel.verifier.backends.ascend_sim.latency_model import Estimate

FIX = Path(__file__).parent / "fixtures"


def test_single_kernel_layout_with_bom():
    p = msprof.parse(FIX / "msprof_single")
    assert p.task_duration_us == pytest.approx(21.5)
    assert p.block_dim == 8 and p.blocks == 8 and p.launches == 1 and p.passes == 1
    assert p.current_freq_mhz == 1650 and p.rated_freq_mhz == 1650
    assert p.op_names == ["AddCustom_1a2b3c"]
    # the critical core is block 7 (aiv_time 19.75)
    assert p.aiv_time_us == pytest.approx(19.75)
    assert p.mte2_us == pytest.approx(0.85 * 19.75, abs=1e-3)
    assert p.mte2_ratio == pytest.approx(0.85) and p.vec_ratio == pytest.approx(0.2)
    assert p.mte3_ratio == pytest.approx(0.4) and p.scalar_ratio == pytest.approx(0.1)


def test_nested_layout_means_over_passes():
    p = msprof.parse(FIX / "msprof_nested", kernel_name="AddCustom")
    assert p.launches == 2 and p.passes == 2 and p.blocks == 40
    assert p.task_duration_us == pytest.approx(11.0)
    assert p.task_durations_us == [10.0, 12.0]
    assert p.aiv_time_us == pytest.approx(9.0)
    assert p.vec_ratio == pytest.approx(0.65)
    with pytest.raises(msprof.ProfileError, match="no OpBasicInfo"):
        msprof.parse(FIX / "msprof_nested", kernel_name="MulCustom")


def test_diagnosis_has_the_latency_models_shape_and_vocabulary():
    d = msprof.diagnose(msprof.parse(FIX / "msprof_single"))
    est_keys = {f.name for f in dataclasses.fields(Estimate)} | {"profile"}
    assert set(d) <= est_keys
    assert {"bound", "aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio", "hints", "profile"} <= set(d)
    assert d["bound"] == "mte2" and d["bound"] in diagnosis.BOUNDS
    assert d["cores"] == 40 and d["cores_used"] == 8
    assert any("only 8 of 40 AIV cores" in h for h in d["hints"])
    assert "bound: MTE2 (GM->UB/L1 copies)" in d["profile"]
    assert d["profile"].startswith("measured 21.5 us")
    n = msprof.diagnose(msprof.parse(FIX / "msprof_nested"))
    assert n["bound"] == "vector" and not any("AIV cores used" in h for h in n["hints"])
    assert "vector-bound" in msprof.parse(FIX / "msprof_nested").profile_text()


def test_classify_bound_rules():
    assert diagnosis.classify_bound(1.0, 3.0, {"vector": 0.9}) == "launch"
    assert diagnosis.classify_bound(10.0, 3.0, {"vector": 0.9, "mte2": 0.3}) == "vector"
    assert diagnosis.classify_bound(10.0, 3.0, {"vector": 0.5, "mte2": 0.3}) == "latency"
    assert diagnosis.classify_bound(10.0, 3.0, {}, hbm_bound=True) == "hbm"
    assert diagnosis.core_use_hints(50, 40, "vector")[0].startswith("50 blocks on 40 cores = 2 waves")


def test_launch_bound_and_missing_pipe_file(tmp_path):
    d = tmp_path / "OPPROF_1_X"
    d.mkdir()
    (d / "OpBasicInfo.csv").write_text("Op Name,Op Type,Task Duration(us),Block Dim,Device Id,Pid,Current Freq,"
                                       "Rated Freq\nk,vector,2.4,40,0,1,1200,1650\n")
    p = msprof.parse(tmp_path)
    assert p.aiv_time_us is None and any("no PipeUtilization" in n for n in p.notes)
    out = msprof.diagnose(p)
    assert out["bound"] == "launch" and "pipe utilisation not collected" in out["profile"]
    assert any("1200 of 1650 MHz" in n for n in out["notes"])


def test_clear_errors(tmp_path):
    with pytest.raises(msprof.ProfileError, match="does not exist"):
        msprof.parse(tmp_path / "nope")
    with pytest.raises(msprof.ProfileError, match="no OpBasicInfo"):
        msprof.parse(tmp_path)
    (tmp_path / "OpBasicInfo.csv").write_text("")
    with pytest.raises(msprof.ProfileError, match="empty"):
        msprof.parse(tmp_path)
    (tmp_path / "OpBasicInfo.csv").write_text("Op Name,Duration\nk,3\n")
    with pytest.raises(msprof.ProfileError, match="no 'Task Duration\\(us\\)' column"):
        msprof.parse(tmp_path)
    (tmp_path / "OpBasicInfo.csv").write_text("Op Name,Task Duration(us)\nk,3,4,5\n")
    with pytest.raises(msprof.ProfileError, match="garbled"):
        msprof.parse(tmp_path)
    (tmp_path / "OpBasicInfo.csv").write_text("Op Name,Task Duration(us)\nk,abc\n")
    with pytest.raises(msprof.ProfileError, match="unreadable"):
        msprof.parse(tmp_path)
