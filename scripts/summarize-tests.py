#!/usr/bin/env python3
"""Sum JUnit-style XML reports (lit --xunit-xml-output, pytest --junitxml)
into one line: `N passed, N failed` (plus `, N skipped` when any were
skipped). Exits 1 if a test failed or a report is missing or unreadable."""
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
ok = True
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"summarize-tests: cannot read {path}: {e}", file=sys.stderr)
        ok = False
        continue
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(0 if ok and failed == 0 and passed > 0 else 1)
