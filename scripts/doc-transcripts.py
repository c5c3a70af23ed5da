#!/usr/bin/env python3
"""Check (or regenerate) the command transcripts of netvm's docs.

A transcript is a ```console block right after the line
`<!-- transcript -->` in a Markdown file: lines `$ command` and the
output the command prints. Each command runs, in order, in a scratch
directory (one per file) where `examples` and `scripts` are the source
tree's, `build` is the build tree and build/bin is first on PATH; a later
command sees the files an earlier one wrote. Two more comments set the
scene without showing in the rendered page: `<!-- transcript-file: NAME
-->` before a ``` block writes its text to NAME, and `<!-- transcript-run:
COMMAND -->` runs COMMAND (it must succeed). A line `...` in the expected output
(indented or not) stands for any number of lines. The check fails on the first block whose
output differs and shows the difference; --update writes the actual
output into the file instead (keeping `...` where the output goes on).

    doc-transcripts.py --src SRC --build BUILD [--update] FILE.md...
"""

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARK = "<!-- transcript -->"


def events(lines):
    """The file's directives in order: ("transcript", first, end),
    ("file", name, first, end) with the body's line range, ("run", cmd)."""
    out = []

    def body(i):
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit(f"line {i + 1}: {lines[i].strip()} is not "
                             "followed by a ``` block")
        end = i + 2
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise SystemExit(f"line {i + 2}: the block does not end")
        return i + 2, end

    for i, line in enumerate(lines):
        text = line.strip()
        if text == MARK:
            out.append(("transcript",) + body(i))
        elif m := re.fullmatch(r"<!-- transcript-file: (\S+) -->", text):
            out.append(("file", m.group(1)) + body(i))
        elif m := re.fullmatch(r"<!-- transcript-run: (.*) -->", text):
            out.append(("run", m.group(1)))
    return out


def steps(body):
    """[(command, expected lines)] of a block body."""
    result = []
    for line in body:
        if line.startswith("$ "):
            result.append((line[2:], []))
        elif result:
            result[-1][1].append(line)
        else:
            raise SystemExit(f"output before the first command: {line!r}")
    return result


def matches(expected, actual):
    """Whether `actual` matches `expected`, `...` matching any lines."""
    if not expected:
        return not actual
    if expected[0].strip() == "...":
        return any(matches(expected[1:], actual[k:])
                   for k in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and \
        matches(expected[1:], actual[1:])


def run(command, cwd, env):
    p = subprocess.run(command, shell=True, cwd=cwd, env=env, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=600)
    return [l.rstrip() for l in p.stdout.splitlines()]


def elide(expected, actual):
    """The actual output in the shape of `expected`: where expected ends in
    `...`, the actual lines up to that many, then `...`."""
    if expected and expected[-1] == "..." and "..." not in expected[:-1]:
        keep = len(expected) - 1
        if len(actual) > keep:
            return actual[:keep] + ["..."]
    return actual


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    env = dict(os.environ)
    env["PATH"] = os.path.join(os.path.abspath(args.build), "bin") + \
        os.pathsep + env.get("PATH", "")
    env["NETVM_CACHE"] = "off"
    failures = 0
    checked = 0
    for path in args.files:
        with open(path) as f:
            lines = f.read().split("\n")
        scratch = tempfile.mkdtemp(prefix="netvm-doc-")
        for name in ("examples", "scripts"):
            os.symlink(os.path.join(os.path.abspath(args.src), name),
                       os.path.join(scratch, name))
        os.symlink(os.path.abspath(args.build),
                   os.path.join(scratch, "build"))
        edits = []
        for event in events(lines):
            if event[0] == "file":
                _, name, first, end = event
                with open(os.path.join(scratch, name), "w") as f:
                    f.write("\n".join(lines[first:end]) + "\n")
                continue
            if event[0] == "run":
                p = subprocess.run(event[1], shell=True, cwd=scratch, env=env,
                                   text=True, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=600)
                if p.returncode:
                    failures += 1
                    print(f"{path}: `{event[1]}` failed:\n{p.stdout}")
                continue
            _, first, end = event
            new_body = []
            for command, expected in steps(lines[first:end]):
                actual = run(command, scratch, env)
                checked += 1
                new_body.append("$ " + command)
                if matches(expected, actual):
                    new_body += expected
                    continue
                new_body += elide(expected, actual)
                if not args.update:
                    failures += 1
                    print(f"{path}:{first + 1}: the output of `{command}` "
                          "differs from the transcript (regenerate with "
                          "scripts/doc-transcripts.py --update):")
                    sys.stdout.writelines(
                        l + "\n" for l in difflib.unified_diff(
                            expected, actual, "documented", "actual",
                            lineterm=""))
            edits.append((first, end, new_body))
        shutil.rmtree(scratch, ignore_errors=True)
        if args.update:
            for first, end, body in reversed(edits):
                lines[first:end] = body
            with open(path, "w") as f:
                f.write("\n".join(lines))
    print(f"{checked} commands checked, {failures} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
