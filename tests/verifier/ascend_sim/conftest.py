import pytest

from ascend_sim_harness import COMPILE_TIMES, Sim, have_gxx


@pytest.fixture(scope="session")
def sim(tmp_path_factory):
    if not have_gxx():
        pytest.skip("g++ is not available")
    return Sim(tmp_path_factory.mktemp("ascend-sim"))


def pytest_terminal_summary(terminalreporter):
    if not COMPILE_TIMES:
        return
    terminalreporter.section("ascend-sim compile times (g++ -O1)")
    for label, seconds in COMPILE_TIMES.items():
        terminalreporter.write_line(f"{seconds:6.2f} s  {label}")
