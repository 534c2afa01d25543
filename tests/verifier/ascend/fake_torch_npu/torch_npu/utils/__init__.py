"""Fake torch_npu.utils (tests only)."""
