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
