"""One-off measurements and benchmarks, apart from the eval harness (evals/): each is a script,
`python -m evokernel.evals.bench.NAME` (bench_*: verifier, engine and generator timings; measure_*: suites,
fits, correctness and template coverage; the Ascend sample and golden corpora; the template fingerprint)."""
