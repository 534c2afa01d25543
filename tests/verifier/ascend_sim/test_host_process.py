"""The host process (verifier/backends/ascend_sim/host.py, verifier/sandboxed/ascend_host.py): an Ascend C
candidate's TilingFunc, InferShape and OpDef run in a sandbox of their own on shapes, dtypes and attributes,
never beside the data; what comes back is parsed as untrusted bytes."""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend_sim import build, host
from evokernel.verifier.backends.ascend_sim.backend import AscendSimBackend, VALUE_DEPEND_MAX
from evokernel.verifier.backends.ascend_sim.project import parse_candidate
from evokernel.verifier.trusted.native_build import _local_runner

ROOT = Path(__file__).resolve().parents[3]
ADD = parse_candidate((ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text())
SHAPE = [256, 1024]


def call(dims=SHAPE, dtype="float32", **extra):
    return {"mode": "tiling", "op": "AddCustom", "attrs": [], "sim": {},
            "inputs": [{"name": "x", "dtype": dtype, "dims": dims}, {"name": "y", "dtype": dtype, "dims": dims}],
            "outputs": [{"name": "z", "dtype": dtype, "dims": dims}], **extra}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("host-cache")


def host_lib(cache: Path, host_src: str | None = None) -> Path:
    project = ADD if host_src is None else dataclasses.replace(ADD, sources={**ADD.sources, "host_operator_src": host_src})
    return build.build_host(project, cache, _local_runner).path


def test_describe_and_tiling_from_shapes_only(cache, tmp_path):
    lib = host_lib(cache)
    opdef = host.run_host(lib, {"mode": "describe", "op": "AddCustom"}, tmp_path)["opdef"]
    assert [p["name"] for p in opdef["inputs"]] == ["x", "y"] and opdef["outputs"][0]["name"] == "z"
    assert opdef["inputs"][0]["value_depend"] is False
    assert host.run_host(lib, {"mode": "describe", "op": "MulCustom"}, tmp_path)["opdef"] is None
    report = host.run_host(lib, call(), tmp_path)["report"]
    assert report["status"] == "ok" and report["block_dim"] == 40
    data = bytes.fromhex(report["tiling"]["data_hex"])
    assert len(data) == 20 and int.from_bytes(data[:4], "little") == 256 * 1024  # totalLength, from the shape
    assert not list(tmp_path.iterdir())  # each request's folder is removed


READS_DATA = ADD.sources["host_operator_src"].replace(
    "uint32_t totalLength = context->GetInputShape(0)->GetStorageShape().GetShapeSize();",
    "uint32_t totalLength = static_cast<uint32_t>(context->GetInputTensor(0)->GetData<float>()[0]);")


def test_a_tiling_func_that_reads_the_data_finds_none(cache, tmp_path):
    """On CANN TilingFunc runs before any data exists; here it gets the tensor's shape and a null data pointer."""
    report = host.run_host(host_lib(cache, READS_DATA), call(), tmp_path)["report"]
    assert report["status"] == "tiling_failed"
    msg = " ".join(v["message"] for v in report["violations"])
    assert "TilingFunc crashed" in msg and "shapes, dtypes and attributes only" in msg


VALUE_DEPEND = ADD.sources["host_operator_src"].replace(
    'this->Input("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16})',
    'this->Input("y").ParamType(REQUIRED).ValueDepend(REQUIRED).DataType({ge::DT_INT32, ge::DT_INT32})').replace(
    "context->SetBlockDim(blockDim);",
    "context->SetBlockDim(blockDim);\n    context->SetTilingKey(context->GetInputTensor(1)->GetData<int32_t>()[2]);")


def test_value_depend_inputs_reach_tiling_func_small_and_integer(cache, tmp_path):
    lib = host_lib(cache, VALUE_DEPEND)
    opdef = host.run_host(lib, {"mode": "describe", "op": "AddCustom"}, tmp_path)["opdef"]
    assert [p["value_depend"] for p in opdef["inputs"]] == [False, True]
    req = call()
    req["inputs"][1] = {"name": "y", "dtype": "int32", "dims": [4], "values": [5, 6, 7, 8]}
    report = host.run_host(lib, req, tmp_path)["report"]
    assert report["status"] == "ok" and report["tiling_key"] == 7

    backend = AscendSimBackend(tmp_path)
    small = {"inputs": [{"dtype": "float32", "dims": SHAPE, "values": [1]}, {"dtype": "int32", "dims": [4], "values": [5, 6, 7, 8]}],
             "outputs": [{"dtype": "float32", "dims": SHAPE}], "attrs": []}
    made = backend._tiling_call(small, ADD, opdef)
    assert "values" not in made["inputs"][0] and made["inputs"][1]["values"] == [5, 6, 7, 8]  # declared ones only
    big = json.loads(json.dumps(small))
    big["inputs"][1] = {"dtype": "int32", "dims": [VALUE_DEPEND_MAX + 1], "values": list(range(VALUE_DEPEND_MAX + 1))}
    with pytest.raises(ValueError, match="ValueDepend"):
        backend._tiling_call(big, ADD, opdef)
    floats = json.loads(json.dumps(small))
    floats["inputs"][1] = {"dtype": "float32", "dims": [4], "values": [0, 0, 0, 0]}
    with pytest.raises(ValueError, match="integer inputs"):
        backend._tiling_call(floats, ADD, opdef)


SPINS = ADD.sources["host_operator_src"].replace("context->SetBlockDim(blockDim);",
                                                 "for (volatile int spin = 1; spin;) {}\n    context->SetBlockDim(blockDim);")


def test_a_hanging_tiling_func_is_stopped(cache, tmp_path):
    with pytest.raises(host.HostError, match="did not finish within 3 s"):
        host.run_host(host_lib(cache, SPINS), call(), tmp_path, timeout=3)


def test_a_tiling_func_that_computes_for_ever_hits_the_cpu_limit(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(host, "HOST_CPU_S", 2)
    monkeypatch.setitem(host.HOST_LIMITS, "cpu_s", 2)
    with pytest.raises(host.HostError, match="used more than 2 s of CPU time"):
        host.run_host(host_lib(cache, SPINS), call(), tmp_path, timeout=120)


@pytest.mark.parametrize("written, error", [
    (None, "without an answer"),
    ("{not json", "junk"),
    (json.dumps({"ok": True, "report": {"status": "ok", "block_dim": -1, "tiling_key": 0, "violations": [],
                                        "tiling": {"data_hex": "", "workspace_sizes": [], "schedule_mode": 0}}}), "junk"),
    ("x" * (host.MAX_RESULT_BYTES + 1), "more than 4 MiB"),
])
def test_what_the_host_process_writes_is_untrusted(cache, tmp_path, written, error):
    def runner(argv, spec, timeout):
        if written is not None:
            (Path(argv[4]) / "result.json").write_text(written)
        return 0, ""

    with pytest.raises(host.HostError, match=error):
        host.run_host(host_lib(cache), call(), tmp_path, runner=runner)


def test_one_verdicts_host_processes_share_a_time_budget(tmp_path, monkeypatch):
    # red-team round 2: a TilingFunc spinning just under the per-process CPU limit, on 8 distinct shapes, made one
    # verdict take 200 s and come back feasible; the verdict's host processes now share one budget
    from evokernel.verifier.backends.ascend_sim import backend as sim_backend
    from evokernel.verifier.backends.ascend_sim import host as sim_host

    calls = []

    def slow_host(lib, request, scratch, *a, **kw):
        calls.append(request)
        time.sleep(0.05)
        raise sim_host.HostError("spun")

    monkeypatch.setattr(sim_host, "run_host", slow_host)
    monkeypatch.setattr(sim_backend, "HOST_VERDICT_BASE_S", 0.0)
    monkeypatch.setattr(sim_backend, "HOST_VERDICT_PER_CALL_S", 0.01)
    b = sim_backend.AscendSimBackend(tmp_path)
    try:
        st = sim_backend._VerdictState(host_lib=tmp_path / "host.so")
        first = b._compute_tiling(st, {"op": "SpinCustom"})
        assert "spun" in first["error"] and len(calls) == 1
        second = b._compute_tiling(st, {"op": "SpinCustom"})  # 0.05 s spent > 0.02 s allowed: not run
        assert len(calls) == 1 and "tiling call(s) of this verdict" in second["error"], second
    finally:
        b.close()
