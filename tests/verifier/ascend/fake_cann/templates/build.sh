#!/usr/bin/env python3
"""Fake msopgen project build.sh (written by the fake msopgen; tests only; see the fake_cann README)."""
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

LIB = "@FAKE_CANN_LIB@"  # substituted by the fake msopgen
sys.path.insert(0, LIB)
import fakecann  # noqa: E402

PROJ = Path(__file__).resolve().parent
META = json.loads((PROJ / ".fake_cann.json").read_text())
OP, SNAKE = META["op_type"], META["snake"]


def die(lines, rc=2):
    for ln in lines:
        print(ln)
    sys.exit(rc)


def main():
    fakecann.log("build.sh")
    scen = fakecann.scenario()
    if os.environ.get("ASCEND_CUSTOM_OPP_PATH"):
        # recorded: the variable "will perturb build if set" (harnesses unset it); the real symptom is not
        # recorded, so the fake fails loudly
        die([f"[fake cann] ASCEND_CUSTOM_OPP_PATH is set ({os.environ['ASCEND_CUSTOM_OPP_PATH']}): it perturbs "
             "the build; unset it"])
    if not os.environ.get("ASCEND_HOME_PATH"):
        die(["[fake cann] ASCEND_HOME_PATH is not set: source <cann>/set_env.sh"])
    kernel = (PROJ / "op_kernel" / f"{SNAKE}.cpp").read_text()
    host = (PROJ / "op_host" / f"{SNAKE}.cpp").read_text()
    tiling = (PROJ / "op_host" / f"{SNAKE}_tiling.h").read_text()
    print(f"[INFO] fake build of {OP} ({META['soc']})")
    # ---- host sources: compiled during CMake configure (opbuild) ----
    host_err = None
    for rel, src in ((f"op_host/{SNAKE}_tiling.h", tiling), (f"op_host/{SNAKE}.cpp", host)):
        bad = fakecann.first_unbalanced(src)
        if bad:
            host_err = (rel, *bad)
            break
    if host_err is None and ("FAKE_CANN_HOST_ERROR" in host + tiling or scen == "opbuild_fail"):
        host_err = (f"op_host/{SNAKE}.cpp", 1, 1, "'FAKE_CANN_HOST_ERROR' was not declared in this scope")
    if host_err is None and f"OP_ADD({OP})" not in host.replace(" ", ""):
        host_err = (f"op_host/{SNAKE}.cpp", 1, 1, f"OP_ADD({OP}) missing: the op is never registered")
    if host_err:
        rel, ln, col, msg = host_err
        die(["-- Opbuild generating sources",
             f"build ops lib error: {PROJ / rel}:{ln}:{col}: error: {msg}",
             "CMake Error at cmake/func.cmake:182 (message):", "  opbuild run failed!",
             "-- Configuring incomplete, errors occurred!",
             "gmake: *** No rule to make target 'package'.  Stop."])
    print("-- Opbuild generating sources\n-- Configuring done")
    # ---- kernel: bisheng (from PATH, as the generated CMake runs it), clang-style diagnostics ----
    print(f"[ 50%] Building CXX object op_kernel/CMakeFiles/ascendc_kernels.dir/{SNAKE}.cpp.o", flush=True)
    arch = "dav-2201" if META["soc"].startswith("Ascend910B") else "dav-m200"
    obj = PROJ / "build_out" / "op_kernel" / f"{SNAKE}.o"
    proc = subprocess.run(["bisheng", f"--npu-arch={arch}", "-xasc", "-std=c++17", "-fPIC",
                           f"-I{os.environ['ASCEND_HOME_PATH']}/include", f"-DFAKE_KERNEL={SNAKE}",
                           "-c", str(PROJ / "op_kernel" / f"{SNAKE}.cpp"), "-o", str(obj)],
                          capture_output=True, text=True)
    if proc.returncode:
        die([proc.stdout.rstrip() + proc.stderr.rstrip(), "[ERROR] TBE(1,python3): compile failed",
             "gmake[2]: *** [op_kernel/CMakeFiles/ascendc_kernels.dir/build.make:76] Error 1"])
    if scen == "tbe_error":
        die(["[ERROR] TBE(1,python3): ccec terminated abnormally"])
    out = PROJ / "build_out"
    (out / "autogen").mkdir(parents=True, exist_ok=True)
    (out / "autogen" / f"aclnn_{SNAKE}.h").write_text(
        f"// fake aclnn header\nint aclnn{OP}GetWorkspaceSize(void);\nint aclnn{OP}(void);\n")
    if scen == "missing_run":
        print("[fake cann] packaging skipped (scenario missing_run)")
        return
    run = out / f"custom_opp_ubuntu_{platform.machine()}.run"
    text = (Path(LIB).parent / "templates" / "custom_opp.run").read_text()
    run.write_text(text.replace("@FAKE_CANN_" + "LIB@", LIB).replace("@OP_TYPE@", OP)
                   .replace("@OP_SNAKE@", SNAKE))
    run.chmod(0o755)
    print(f"[SUCCESS] Build finished: {run}")


main()
