"""The CPU roofline profile: bounds of the shipped operators, calibration, the text refining reads."""
from pathlib import Path

import pytest

from evokernel.tasks.load import load_task
from evokernel.verifier.trusted.roofline import OVERHEAD_MS, roof_class, roofline

L1 = Path(__file__).resolve().parents[3] / "evokernel" / "suites" / "cpu_l1"


def roof(name, latency=10.0, reference=10.0, **sizes):
    r = roofline(load_task(L1 / f"{name}.py", sizes), latency, reference)
    assert r is not None, name
    return r


@pytest.mark.parametrize("name,bound", [
    ("01_relu", "memory"), ("03_gelu", "memory"), ("06_elementwise_add", "memory"),
    ("15_matmul", "compute"), ("17_batched_matmul", "compute"), ("29_conv2d", "compute"),
    ("18_matvec", "memory"),  # a matrix-vector product moves its matrix once for 2 FLOPs per element
    ("08_sum_dim", "memory"), ("10_mean_dim", "memory"),  # strided reductions priced as contiguous ones
])
def test_the_bound_of_each_kind_of_operator(name, bound):
    assert roof(name).bound == bound


def test_a_strided_reduction_is_priced_as_the_reduction_a_kernel_can_reorder_it_into():
    assert roof_class("reduce_strided:sum") == "reduce:sum" and roof_class("pool:avg") == "reduce:sum"
    assert roof_class("pool:max") == "reduce:max" and roof_class("mm") == "mm"
    r = roof("08_sum_dim")
    assert set(r.work) == {"reduce_strided:sum"} and r.compute_ms < r.mem_ms


def test_roofs_follow_the_measured_eager_time_and_efficiency_the_kernel():
    a, b = roof("03_gelu", 10.0, 10.0), roof("03_gelu", 10.0, 20.0)
    assert b.mem_ms == pytest.approx(2 * a.mem_ms) and b.compute_ms == pytest.approx(2 * a.compute_ms)
    at_roof = roof("03_gelu", a.roof_ms, 10.0)
    assert at_roof.efficiency == pytest.approx(1.0) and "100% of its memory roof" in at_roof.text()
    slow = roof("03_gelu", 4 * a.roof_ms, 10.0)
    assert "25% of its memory roof: far from it" in slow.text()
    # calibration is clamped: a tiny task's estimate is mostly per-op overhead
    assert roof("01_relu", 1.0, 1e6).scale == 5.0 and roof("01_relu", 1.0, 1e-9).scale == 0.2


def test_a_tiny_task_is_overhead_bound():
    r = roof("01_relu", 0.01, 0.01, batch_size=1, dim=64)
    assert r.roof_ms < OVERHEAD_MS and r.bound == "overhead" and "bound: overhead" in r.text()


def test_a_kernel_can_beat_the_compute_roof_and_is_told_so():
    r = roof("05_tanh")
    fast = roof("05_tanh", r.roof_ms / 2, 10.0)
    assert fast.bound == "compute" and fast.efficiency == pytest.approx(2.0) and "which a kernel can beat" in fast.text()


def test_no_profile_without_times_or_for_a_broken_task(tmp_path):
    task = load_task(L1 / "03_gelu.py")
    assert roofline(task, None, 1.0) is None and roofline(task, 1.0, 0.0) is None
    broken = tmp_path / "broken.py"
    # a forward that cannot run on the meta device (it reads a value): no probe, so no profile
    broken.write_text((L1 / "03_gelu.py").read_text().replace('return F.gelu(x, approximate="none")',
                                                               'return F.gelu(x) * float(x.sum().item())'))
    assert roofline(load_task(broken), 1.0, 1.0) is None
