# -*- Python -*-
# lit configuration of the netvm regression tests.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "netvm"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".netil", ".test", ".nvapp"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Unit"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.netvm_obj_root, "test")

llvm_config.use_default_substitutions()
config.substitutions.append(("%netvm_src", config.netvm_src_root))
config.substitutions.append(("%netvm_obj", config.netvm_obj_root))
config.substitutions.append(("%python", config.python_executable))
# The C compiler of the build, for tests that build C hosts.
config.substitutions.append(("%host_cc", config.host_cc))

tool_dirs = [config.netvm_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["netc", "netvm-opt", "netvm-run", "netvm-pcapgen", "netvm-bench",
     "netvm-pcap-diff", "netvm-emu", "netvm-me-as", "netvm-me-objdump",
     "netvm-ids", "netvm-ids-bench", "netvm-ccore", "netvm-onload"],
    tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.netvm_tools_dir, append_path=True)
# The libFuzzer harnesses, from the fuzz build tree (scripts/build-fuzzers.sh,
# docs/fuzzing.md), and the flags of test/Fuzz's bounded runs: a fixed seed
# and a time bound (lit -Dfuzz_time=SECONDS runs them longer), a per-input
# timeout and a memory limit, so that a hang or a leak is a failure too.
config.fuzz_bin = os.path.join(config.netvm_obj_root, "fuzz", "bin")
config.substitutions.append(("%fuzz_bin", config.fuzz_bin))
fuzz_time = lit_config.params.get("fuzz_time", "30")
config.substitutions.append(
    ("%fuzz_flags",
     "-seed=1 -max_total_time=%s -timeout=25 -rss_limit_mb=4096 "
     "-print_final_stats=1" % fuzz_time))
# The JIT's compile cache of the tests: in the build tree, never the user's.
config.environment["NETVM_CACHE_DIR"] = os.path.join(config.test_exec_root,
                                                     "jit-cache")
config.environment.pop("NETVM_CACHE", None)

# Optional tools: tests that need them say REQUIRES: <feature>.
if shutil.which("tcpdump"):
    config.available_features.add("tcpdump")
if shutil.which("clang-format-22"):
    config.available_features.add("clang-format")
# Live capture on the loopback interface needs root (or CAP_NET_RAW).
if hasattr(os, "geteuid") and os.geteuid() == 0 and os.path.exists(
        "/sys/class/net/lo"):
    config.available_features.add("live-capture")
# The build's C compiler can build with ThreadSanitizer (clang's runtime).
if "clang" in os.path.basename(config.host_cc):
    config.available_features.add("host-sanitizers")
if shutil.which("qemu-aarch64"):
    config.available_features.add("qemu-aarch64")
if shutil.which("aarch64-linux-gnu-gcc") and os.path.exists(
        os.path.join(config.netvm_obj_root, "aarch64", "libnetvm-rt.a")):
    config.available_features.add("aarch64-cross")
