"""Evaluation harness, metrics, reports and benchmark scripts."""
