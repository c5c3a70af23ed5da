"""Prints the C example of a section of a Markdown document: the first
```c block after the heading whose text is argv[2] (test/ME/capi.test
compiles the example of docs/me-isa.md, "The C API")."""

import sys

lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
heading = next(i for i, line in enumerate(lines)
               if line.lstrip("#").strip() == sys.argv[2]
               and line.startswith("#"))
start = next(i for i in range(heading, len(lines)) if lines[i] == "```c")
end = next(i for i in range(start + 1, len(lines)) if lines[i] == "```")
print("\n".join(lines[start + 1:end]))
