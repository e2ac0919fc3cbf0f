# -*- Python -*-
# lit configuration for Cleave's FileCheck tests.

import os

import lit.formats
from lit.llvm import llvm_config

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

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [os.path.join(config.cleave_obj_root, "bin"), config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["cleave-opt", "cleave-compile"], tool_dirs)
