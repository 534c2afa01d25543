"""Package map: the top-level folders of the repository are installed under one import namespace.

`evokernel/` holds the small core (CLI, tasks, the public `evokernel.cpu` helper); graph/, nodes/,
memory/, verifier/, prompts/ and evals/ become `evokernel.graph`, `evokernel.nodes`, ...  Nested
packages are found here, because a pyproject-only mapping silently drops them from the wheel.
"""
from setuptools import find_packages, setup

TOP = ["graph", "nodes", "memory", "verifier", "prompts", "evals"]

packages = ["evokernel"] + [f"evokernel.{p}" for p in find_packages("evokernel")]
package_dir = {"evokernel": "evokernel"}
for top in TOP:
    packages.append(f"evokernel.{top}")
    packages += [f"evokernel.{top}.{sub}" for sub in find_packages(top)]
    package_dir[f"evokernel.{top}"] = top

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={
        "evokernel": ["suites/*/*.py", "suites/*/*.md", "examples/*/*.py", "examples/*.py"],
        "evokernel.prompts": ["*.md", "*/*.md"],
        "evokernel.verifier": ["*.md"],
        # the torch/extension.h a load_inline candidate's own unit is compiled against (no Python in it)
        "evokernel.verifier.trusted": ["inline_include/*/*.h"],
        "evokernel.evals.bench": ["*.json"],
        "evokernel.memory": ["seed/*/*.md"],
        # the Ascend C emulator is compiled from source on the user's machine (per candidate)
        "evokernel.verifier.backends.ascend_sim": ["runtime.cpp", "README.md", "include/*.h", "include/*/*.h",
                                                   "include/*/*/*.h", "include/*/*/*/*.h"],
        # EvoKernel's own EXEC_NPU_CMD header, copied into each candidate's CppExtension (binding_build.py)
        "evokernel.verifier.backends.ascend": ["include/*.hpp"],
    },
)
