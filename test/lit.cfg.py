# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "TV"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".json", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tv_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%tv_obj", config.tv_obj_root))
config.substitutions.append(("%tv_src", config.tv_src_root))
config.substitutions.append(("%tv_plugin", os.path.join(config.tv_obj_root, "lib", "libTVPlugin.so")))
config.substitutions.append(("%examples", os.path.join(config.tv_src_root, "examples")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                    "TV_FUZZ_MEMORY_MB"])
llvm_config.use_default_substitutions()

tool_dirs = [os.path.join(config.tv_obj_root, "bin"), config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["tv-opt", "tv-translate"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Tests that read ../shared (real plans and MLIR's partitioner pairs) need it
# beside the checkout; a clone on its own skips them (REQUIRES: shared).
if os.path.isdir(os.path.join(config.tv_src_root, "..", "shared", "shard")):
    config.available_features.add("shared")
# The z3 binary (Debian package z3) re-checks the SMT-LIB export.
import shutil
if shutil.which("z3"):
    config.available_features.add("z3")
