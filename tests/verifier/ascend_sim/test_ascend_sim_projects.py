"""Hand-written operator projects in the MultiKernelBench candidate layout (tiling header, host TilingFunc +
InferShape + OpDef, kernel), run through the registry -> TilingFunc -> per-block kernel flow: correct kernels
match numpy with no violation at all; the host side sees real shapes, dtypes, attributes and platform figures."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import describe, list_ops

HERE = Path(__file__).resolve().parent
PROJECTS = HERE / "projects"
rng = np.random.default_rng(7)
C_TYPES = {np.float32: "float", np.float16: "half"}


def build(sim, tmp_path_factory, name, op, dtypes):
    src = PROJECTS / name
    d = tmp_path_factory.mktemp(f"{name}-{'-'.join(dtypes.values())}")
    exe = sim.op_project(d, op=op, kernel_name=name, kernel_src=(src / f"{name}_kernel.cpp").read_text(),
                         host_src=(src / f"{name}.cpp").read_text(), tiling_src=(src / f"{name}_tiling.h").read_text(),
                         tiling_header=f"{name}_tiling.h", dtypes=dtypes,
                         label=f"{name} ({', '.join(dtypes.values())}): kernel + host + launcher")
    return exe, d


@pytest.fixture(scope="module")
def add_f32(sim, tmp_path_factory):
    return build(sim, tmp_path_factory, "add_custom", "AddCustom", {"x": "float", "y": "float", "z": "float"})


@pytest.fixture(scope="module")
def add_f16(sim, tmp_path_factory):
    return build(sim, tmp_path_factory, "add_custom", "AddCustom", {"x": "half", "y": "half", "z": "half"})


@pytest.fixture(scope="module")
def softmax(sim, tmp_path_factory):
    return {dt: build(sim, tmp_path_factory, "softmax_custom", "SoftmaxCustom", {"x": C_TYPES[dt], "y": C_TYPES[dt]})
            for dt in (np.float32, np.float16)}


@pytest.fixture(scope="module")
def layer_norm(sim, tmp_path_factory):
    return build(sim, tmp_path_factory, "layer_norm_custom", "LayerNormCustom",
                 {"x": "float", "gamma": "float", "beta": "float", "y": "float"})


@pytest.fixture(scope="module")
def probe(sim, tmp_path_factory):
    return build(sim, tmp_path_factory, "probe_custom", "ProbeCustom", {"x": "float", "y": "float"})


def assert_clean(res):
    assert res.rc == 0, res.stderr
    assert res.report["status"] == "ok"
    assert res.violations == [], res.violations
    assert {b["status"] for b in res.report["blocks"]} == {"ok"}
    assert res.report["gm_protection"] == "unbacked-window"
    for b in res.report["blocks"]:  # every block carries its modelled schedule (an estimate)
        t = b["timing_estimate"]
        assert t["cycles"] >= max(t["busy_cycles"].values()) > 0
        assert t["busy_cycles"]["scalar"] >= res.report["hw_model"]["block_start_cycles"]
        assert t["gm_bytes"]["mte2"] >= b["counters"]["mte2_bytes"] and t["copies"]["mte2"] == b["counters"]["mte2_calls"]


@pytest.mark.parametrize("shape", [(8, 2048), (5,), (3, 1001), (1, 100000)])
def test_add_float_double_buffered(add_f32, sim, shape):
    exe, d = add_f32
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    res = sim.run_op(exe, d, "AddCustom", [("x", x), ("y", y)], [("z", shape, np.float32)])
    assert_clean(res)
    np.testing.assert_array_equal(res.outputs["z"], x + y)
    n = x.size
    assert res.report["block_dim"] == min(40, (n + 7) // 8)
    tot = res.report["totals"]
    assert tot["mte2_bytes"] == 2 * 4 * n and tot["mte3_bytes"] == 4 * n
    assert tot["vector"][0]["op"] == "Add" and tot["vector"][0]["elements"] == n
    q = res.report["blocks"][0]["queues"]
    assert [(x["position"], x["num"]) for x in q] == [("VECIN", 2), ("VECIN", 2), ("VECOUT", 2)]
    assert res.report["infer_shape"] == {"ran": True, "ok": True, "outputs": [list(shape)]}


@pytest.mark.parametrize("shape", [(3, 1001), (16, 16)])
def test_add_half_with_unaligned_tail(add_f16, sim, shape):
    exe, d = add_f16
    x = rng.standard_normal(shape).astype(np.float16)
    y = rng.standard_normal(shape).astype(np.float16)
    res = sim.run_op(exe, d, "AddCustom", [("x", x), ("y", y)], [("z", shape, np.float16)])
    assert_clean(res)
    np.testing.assert_array_equal(res.outputs["z"], x + y)  # one rounding to half, like numpy


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("dtype,shape", [(np.float32, (37, 203)), (np.float32, (100, 64)), (np.float32, (2, 3, 8)),
                                         (np.float16, (20, 77))])
def test_tiled_softmax(softmax, sim, dtype, shape):
    exe, d = softmax[dtype]
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    res = sim.run_op(exe, d, "SoftmaxCustom", [("x", x)], [("y", shape, dtype)])
    assert_clean(res)
    rows = int(np.prod(shape[:-1]))
    assert res.report["block_dim"] == min(40, rows)
    got = res.outputs["y"].astype(np.float64)
    if dtype == np.float32:
        np.testing.assert_allclose(got, softmax_ref(x), rtol=1e-5, atol=1e-7)
    else:
        np.testing.assert_allclose(got, softmax_ref(x), rtol=2e-3, atol=2e-4)
    # per-row work is counted per block
    vec = {v["op"] for v in res.report["totals"]["vector"]}
    assert {"ReduceMax", "ReduceSum", "Exp", "Adds", "Muls"} <= vec


@pytest.mark.parametrize("eps", [1e-5, 0.1, None])
def test_layer_norm_with_epsilon_attribute(layer_norm, sim, eps):
    exe, d = layer_norm
    x = (rng.standard_normal((24, 300)) * 2 + 1).astype(np.float32)
    gamma = rng.standard_normal(300).astype(np.float32)
    beta = rng.standard_normal(300).astype(np.float32)
    attrs = {} if eps is None else {"epsilon": eps}
    res = sim.run_op(exe, d, "LayerNormCustom", [("x", x), ("gamma", gamma), ("beta", beta)],
                     [("y", x.shape, np.float32)], attrs=attrs)
    assert_clean(res)
    e = 1e-5 if eps is None else eps
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + e) * gamma + beta
    np.testing.assert_allclose(res.outputs["y"], want, rtol=1e-4, atol=2e-5)
    assert res.report["tiling"]["workspace_bytes"] == 16 * 1024 * 1024  # GetLibApiWorkSpaceSize()


def probe_run(probe, sim, attrs, x=None, options=None):
    exe, d = probe
    x = np.zeros((2, 3, 4), np.float32) if x is None else x
    return sim.run_op(exe, d, "ProbeCustom", [("x", x)], [("y", (16,), np.float32)], attrs=attrs, options=options)


def test_host_sees_shapes_attrs_platform(probe, sim):
    res = probe_run(probe, sim, {"alpha": 0.25, "count": -3, "flag": True, "dims": [4, 5, 6]})
    assert_clean(res)
    v = res.outputs["y"]
    assert list(v[:14]) == [40, 196608, 3, 2, 3, 4, 0, 0.25, -3, 1, 15, 2, 1, 1]
    rep = res.report
    assert rep["block_dim"] == 2 and rep["tiling_key"] == 7 and rep["blocks_run"] == 2
    assert rep["tiling"]["workspace_sizes"] == [1024] and rep["tiling"]["data_size"] == 77
    assert rep["infer_shape"]["outputs"] == [[16]]
    assert rep["platform"] == {"soc": "Ascend910B", "core_num_aiv": 40, "ub_bytes": 196608, "half_overflow": "inf"}


def test_host_defaults_and_options(probe, sim):
    res = probe_run(probe, sim, {"count": 9}, options={"core_num_aiv": 48})
    assert_clean(res)
    v = res.outputs["y"]
    assert v[0] == 48 and v[7] == 0.5 and v[8] == 9 and v[9] == 0 and v[10] == 3  # OpDef defaults


def test_host_checks_against_the_opdef(probe, sim):
    res = probe_run(probe, sim, {"alpha": 1.0})  # required attribute `count` missing
    assert "opdef_mismatch" in res.rules("error")
    res = probe_run(probe, sim, {"count": 1, "beta": 2.0})  # not declared: ignored with a warning
    assert [v["message"] for v in res.find("opdef_mismatch")] == ["attribute 'beta' is not declared by the OpDef (ignored)"]
    res = probe_run(probe, sim, {"count": 1}, x=np.zeros((2, 3), np.int32))  # int32 is not declared
    assert any("DataType" in v["message"] for v in res.find("opdef_mismatch"))


@pytest.mark.parametrize("mode,rule", [(1, "block_dim"), (2, "tiling_failed"), (4, "tiling_failed")])
def test_tiling_failures_stop_before_the_kernel(probe, sim, mode, rule):
    res = probe_run(probe, sim, {"count": 1, "mode": mode})
    assert res.rc == 10
    assert res.report["status"] == "tiling_failed" and res.report["blocks_run"] == 0
    assert rule in res.rules("fatal")
    if mode == 4:
        assert "tiling_context" in res.rules()  # the nullptr from GetInputShape(5) is explained


def test_tiling_data_not_saved_is_caught_in_the_kernel(probe, sim):
    res = probe_run(probe, sim, {"count": 1, "mode": 3})  # SetDataSize forgotten
    v = res.find("tiling_size")
    assert v and v[0]["line"] > 0 and v[0]["file"].endswith("op_kernel/probe_custom.cpp")


def test_registry_describes_the_op(probe):
    exe, _ = probe
    assert list_ops(exe) == ["ProbeCustom"]
    desc = describe(exe, "ProbeCustom")
    assert [i["name"] for i in desc["inputs"]] == ["x"] and desc["inputs"][0]["dtypes"] == ["float32", "float16"]
    assert desc["outputs"][0]["name"] == "y"
    assert [(a["name"], a["type"], a["param_type"], a["default"]) for a in desc["attrs"]] == [
        ("alpha", "float", "optional", 0.5), ("count", "int", "required", None), ("flag", "bool", "optional", False),
        ("dims", "list_int", "optional", [1, 2]), ("mode", "int", "optional", 0)]
    assert desc["has_tiling"] and desc["has_infer_shape"] and desc["socs"] == ["ascend910b"]
    assert desc["tiling_class"] == "ProbeCustomTilingData" and desc["tiling_class_size"] == 77
    assert describe(exe, "Nope") is None
