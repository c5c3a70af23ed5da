#!/usr/bin/env python3
"""Check that the runtime stays below the compiler.

Code under runtime/ (the C runtime, the coprocessors, the emulator, packet
I/O) is linked into generated programs and embedders without LLVM: it may
include the standard library, system headers and the runtime's own public
headers (runtime/include/netvm/...), never a header of LLVM (llvm/,
llvm-c/), of MLIR (mlir/), of the dialects (NetVM/) or of the libraries
under lib/ (include/netvm/<Library>/...).

Usage: check-layering.py SOURCE_ROOT [--compile-commands FILE]

Reads every C and C++ file under SOURCE_ROOT/runtime and reports each
forbidden #include as file:line. With --compile-commands (CMake's
compile_commands.json) also checks that no translation unit under runtime/
is compiled with an include path that holds such headers, which is what
makes the compiler reject them. Exits 1 if anything is reported.
"""
import argparse
import json
import os
import re
import shlex
import sys

SUFFIXES = (".c", ".cpp", ".h", ".def", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# Headers of LLVM, MLIR and the dialects, by the first path component.
FOREIGN = ("llvm/", "llvm-c/", "mlir/", "NetVM/")


def lib_header_dirs(root):
    """netvm/<X>/ prefixes of the public headers of lib/ (include/netvm/X)."""
    top = os.path.join(root, "include", "netvm")
    if not os.path.isdir(top):
        return []
    return sorted(f"netvm/{d}/" for d in os.listdir(top)
                  if os.path.isdir(os.path.join(top, d)))


def check_includes(root):
    runtime = os.path.join(root, "runtime")
    runtime_include = os.path.join(runtime, "include")
    lib_dirs = lib_header_dirs(root)
    errors = []
    for dirpath, dirnames, filenames in os.walk(runtime):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    header = m.group(2)
                    why = None
                    if header.startswith(FOREIGN):
                        why = "an LLVM, MLIR or dialect header"
                    elif any(header.startswith(d) for d in lib_dirs):
                        why = "a header of lib/ (include/netvm/)"
                    elif (header.startswith("netvm/") and m.group(1) == '"'
                          and not os.path.exists(
                              os.path.join(runtime_include, header))
                          and not os.path.exists(
                              os.path.join(dirpath, header))):
                        why = "not a header of runtime/include/netvm"
                    if why:
                        errors.append(f"{rel}:{number}: includes {header}: "
                                      f"{why}")
    return errors


def include_dirs(command):
    """The -I, -isystem and -iquote directories of a compile command."""
    args = command.get("arguments") or shlex.split(command["command"])
    dirs = []
    it = iter(args)
    for arg in it:
        for flag in ("-I", "-isystem", "-iquote"):
            if arg == flag:
                dirs.append(next(it, ""))
            elif arg.startswith(flag) and len(arg) > len(flag):
                dirs.append(arg[len(flag):])
    return [os.path.normpath(os.path.join(command["directory"], d))
            for d in dirs]


def check_compile_commands(root, path):
    root = os.path.realpath(root)
    runtime = os.path.join(root, "runtime") + os.sep
    forbidden = {os.path.join(root, "include"), os.path.join(root, "dialects")}
    errors = []
    with open(path) as f:
        commands = json.load(f)
    for command in commands:
        source = os.path.realpath(
            os.path.join(command["directory"], command["file"]))
        if not source.startswith(runtime):
            continue
        rel = os.path.relpath(source, root)
        for d in include_dirs(command):
            holds = [h for h in ("llvm", "llvm-c", "mlir", "NetVM")
                     if os.path.isdir(os.path.join(d, h))]
            if os.path.realpath(d) in forbidden or holds:
                errors.append(f"{rel}: compiled with the include path {d}"
                              + (f" (holds {', '.join(holds)}/)" if holds
                                 else ""))
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--compile-commands")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.root, "runtime")):
        print(f"check-layering: no runtime/ in {args.root}", file=sys.stderr)
        return 2
    errors = check_includes(args.root)
    if args.compile_commands:
        errors += check_compile_commands(args.root, args.compile_commands)
    for e in errors:
        print(e)
    if errors:
        print(f"check-layering: {len(errors)} layering violations "
              "(runtime/ must not depend on LLVM, MLIR or lib/)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
