# -*- Python -*-
# lit configuration of the GoogleTest unit tests.

import os

import lit.formats

config.name = "netvm-unit"
config.suffixes = []
config.test_source_root = os.path.join(config.netvm_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
