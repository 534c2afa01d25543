"""The ascend-sim backend: Ascend C operator projects on a CPU emulator of the Ascend C API (docs/ascend-sim.md)."""
