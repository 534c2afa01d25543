# EvoKernel developer entry points. Each target creates or reuses .venv at the repo root.
.PHONY: setup run demo demo-ascend test test-llm bench lint-imports clean

setup:
	@bash scripts/setup.sh

run: setup  ## offline, no API key: draft and refine kernels for 3 built-in tasks, print the result table
	@HF_HUB_OFFLINE=1 .venv/bin/evokernel run cpu-l1 --limit 3 --budget 5

demo: setup  ## verify a shipped example kernel against its task (offline, no API key)
	@HF_HUB_OFFLINE=1 .venv/bin/evokernel verify evokernel/suites/cpu_l1/15_matmul.py evokernel/examples/cpu/15_matmul.py

demo-ascend: setup  ## verify a shipped Ascend C operator project on the ascend-sim emulator (estimated latency)
	@HF_HUB_OFFLINE=1 .venv/bin/evokernel verify evokernel/suites/npu_l1/19_softmax.py evokernel/examples/ascend/softmax_custom.py --backend ascend-sim

test: setup  ## the whole test suite
	@HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -n auto --maxprocesses 4 -m "not ray and not llm" --durations=25 tests
	@for f in $$(grep -rl --include='test_*.py' 'pytest.mark.ray' tests | sort); do \
		HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -p no:xdist -m ray $$f || exit 1; done

test-llm: setup  ## the tests that drive a real local model: installs the [local] extra (builds llama.cpp once, ~5 min) and the 0.5B model (0.5 GB once)
	@CMAKE_BUILD_PARALLEL_LEVEL=2 .venv/bin/python -m pip install -q -e '.[local]'
	@.venv/bin/evokernel model fetch qwen2.5-coder-0.5b
	@HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -m llm tests

bench: setup  ## seconds per verdict and timing noise (prints a table)
	@HF_HUB_OFFLINE=1 .venv/bin/python -m evokernel.evals.bench.bench_verifier

lint-imports: setup  ## the import contracts of pyproject.toml, over the installed layout (graph/, verifier/, ... included)
	@.venv/bin/python scripts/lint_imports.py

clean:
	rm -rf build *.egg-info .pytest_cache
