"""EvoKernel: LLM-written kernels, a value-driven memory, and an honest verifier."""
__version__ = "0.1.0"
