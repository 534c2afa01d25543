"""The GM windows of a worker's kernel libraries (abi.window_base): one per dtype combination, all loaded before the
seccomp layer, each with an unbacked guard after it, all inside the super window the layer guards."""
from evokernel.verifier.backends.ascend_sim import abi


def test_every_declared_combination_of_a_community_project_gets_a_window():
    """JasperXzy's Fmax declares 9 dtype combinations (8 windows refused it at load)."""
    assert abi.MAX_LIBRARIES >= 9
    lo, size = abi.SUPER_WINDOW
    bases = [abi.window_base(k) for k in range(abi.MAX_LIBRARIES)]
    for a, b in zip(bases, bases[1:]):
        assert b - a >= 2 * abi.WINDOW_BYTES  # a window, then a guard as large
    assert bases[0] >= lo + abi.WINDOW_BYTES and bases[-1] + abi.WINDOW_BYTES <= lo + size  # a guard before the first
    assert all(b % (1 << 30) == 0 for b in bases)  # evk_sim_set_window's alignment
