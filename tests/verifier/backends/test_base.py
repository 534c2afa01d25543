"""The Backend interface's report hooks: what reaches the trusted gates about emulator reports goes through the
backend (verifier/backends/base.py), so the gates name no target."""
from evokernel.verifier.backends.ascend_sim.backend import AscendSimBackend
from evokernel.verifier.backends.cpu import CpuBackend

WARNING = {"rule": "half_overflow", "severity": "warning", "file": "/build/k.cpp", "line": 7, "block": 0,
           "message": "Cast on half produced 1 result beyond the half range"}


def test_a_backend_without_an_emulator_refuses_any_report(tmp_path):
    cpu = CpuBackend(tmp_path)
    assert "runs no emulator" in cpu.judge_report({"status": "ok", "violations": []})
    assert cpu.report_warnings([[{"status": "ok", "violations": [WARNING]}]]) == []


def test_ascend_sim_judges_and_formats_its_reports(tmp_path):
    sim = AscendSimBackend(tmp_path)
    try:
        assert sim.judge_report({"status": "ok", "violations": [WARNING]}) == ""  # a warning is not a failure
        assert "hardware-rule violation" in sim.judge_report({"status": "ok", "violations": [WARNING | {"severity": "error"}]})
        # one line per distinct (rule, file, line) over every trial
        got = sim.report_warnings([[{"violations": [WARNING]}], [{"violations": [WARNING, WARNING | {"line": 9}]}]])
        assert got == ["[warning] half_overflow at /build/k.cpp:7 (block 0): Cast on half produced 1 result beyond the half range",
                       "[warning] half_overflow at /build/k.cpp:9 (block 0): Cast on half produced 1 result beyond the half range"]
    finally:
        sim.close()


def test_one_build_budget_for_all_the_builds_of_a_verdict(tmp_path):
    """rt4_sixteen_slow_builds: 16 builds of up to 600 s each held a verdict for hours; the builds of one verdict
    now share one budget (VerifyConfig.build_timeout_s): each gets what is left, and none starts once it is spent."""
    import time

    from evokernel.verifier.backends.base import BuildLog
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    seen = []

    class Slow:
        def handle_build(self, request, log, rules=True):
            seen.append(log.timeout(3.0))
            time.sleep(1.2)
            return {"ok": False, "error": "the compiler was still burning"}

    v = Verifier("cpu", VerifyConfig(cache_dir=tmp_path, build_timeout_s=3.0))  # not started: no sandboxes
    v.backend = Slow()
    log = BuildLog()
    replies = [v._serve_build(None, {"kind": "cpp"}, log) for _ in range(3)]
    assert seen[0] == 3.0 and 1.5 < seen[1] < 1.9  # the second build may run only what the first one left
    assert len(seen) == 2 and "whole build budget" in replies[2]["error"]  # the third never starts
    assert log.errors and "build less" in log.errors[-1]
