# -*- Python -*-
# lit configuration for Cleave's FileCheck tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "Cleave"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cleave_obj_root, "test")
config.excludes = ["Inputs", "unit", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]

config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
config.environment["OMP_NUM_THREADS"] = "1"
config.substitutions.append(("%cleave_src", config.cleave_src_root))
config.substitutions.append(("%mlir_lib_dir", config.llvm_lib_dir))

# CUDA_ROOT, CUDA_HOME and CUDA_PATH point cleave-compile --target=cuda at
# the CUDA toolkit (ptxas, fatbinary, libdevice), as they point MLIR.
# XDG_CACHE_HOME and CLEAVE_MODEL_CACHE place the cache of the ONNX tests'
# models (Frontend/Onnx/Inputs/make_model.py).
llvm_config.with_system_environment(["HOME", "TMP", "TEMP", "CUDA_ROOT",
                                     "CUDA_HOME", "CUDA_PATH",
                                     "XDG_CACHE_HOME", "CLEAVE_MODEL_CACHE"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Every tool a RUN line names must exist: a missing one is a broken build or
# setup, which must fail the suite rather than turn whole directories
# UNSUPPORTED. The Cleave tools are looked up in this build's bin directory
# only, so that an installed or stale copy elsewhere is never tested instead;
# check-cleave-lit builds them all first (test/CMakeLists.txt), and the ctest
# `lit` test runs after the full build. The runtime tools exist exactly when
# the build has the runtime; without it their tests are unsupported by
# configuration, through the `cleave-runtime` feature.
cleave_bin = os.path.join(config.cleave_obj_root, "bin")
cleave_tools = list(config.cleave_compiler_tools)
if config.cleave_enable_runtime:
    cleave_tools += config.cleave_runtime_tools
    config.available_features.add("cleave-runtime")
    # The tracing frontend is a build option (CLEAVE_ENABLE_TRACE; the
    # sanitizer build turns it off), not something a machine may lack.
    if config.cleave_enable_trace:
        config.available_features.add("cleave-trace")
# The sanitizer build (ASan and UBSan) runs Cleave's code ten times slower:
# tests that repeat costly work it already covers leave it out.
if config.cleave_sanitize:
    config.available_features.add("sanitized")
llvm_config.add_tool_substitutions(
    [ToolSubst(tool, unresolved="fatal") for tool in cleave_tools],
    [cleave_bin])
llvm_config.add_tool_substitutions(
    [ToolSubst(tool, unresolved="fatal")
     for tool in ("split-file", "llvm-nm", "mlir-opt", "mlir-translate", "llc")],
    [config.llvm_tools_dir])
# Tests that pipe through several tools (cleave-compile ... | cleave-run)
# also find them on PATH, this build's first.
llvm_config.with_environment("PATH", cleave_bin, append_path=True)

# The CUDA back end's tests need the CUDA toolkit's ptxas and fatbinary
# (not a GPU), found as cleave-compile finds them (GpuTarget.cpp): under
# CUDA_ROOT, CUDA_HOME or CUDA_PATH if one is set, else beside the ptxas on
# PATH, else in /usr/local/cuda. Without them those tests are unsupported,
# and the run says why. CLEAVE_REQUIRE_CUDA=1 makes a missing toolkit an
# error instead.
import shutil


def cuda_toolkit():
    for var in ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return os.environ[var]
    ptxas = shutil.which("ptxas")
    if ptxas:
        return os.path.dirname(os.path.dirname(os.path.realpath(ptxas)))
    return "/usr/local/cuda"


toolkit = cuda_toolkit()
missing_cuda = [tool for tool in ("ptxas", "fatbinary")
                if not os.access(os.path.join(toolkit, "bin", tool), os.X_OK)]
if not missing_cuda:
    config.available_features.add("cuda-toolkit")
elif os.environ.get("CLEAVE_REQUIRE_CUDA") == "1":
    lit_config.fatal("CLEAVE_REQUIRE_CUDA=1 but the CUDA toolkit's " +
                     " and ".join(missing_cuda) + " are not in " + toolkit +
                     "/bin (set CUDA_HOME, e.g. to /usr/local/cuda)")
else:
    lit_config.note("the CUDA back end's tests (REQUIRES: cuda-toolkit) are "
                    "skipped: no " + " or ".join(missing_cuda) + " in " +
                    toolkit + "/bin (set CUDA_HOME to the CUDA toolkit, "
                    "e.g. /usr/local/cuda)")
