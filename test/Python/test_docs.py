"""The worked example of docs/python.md runs and prints what it says."""

import contextlib
import io
import re

from conftest import ROOT


def test_worked_example(monkeypatch):
    text = (ROOT / "docs" / "python.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    shown = re.search(r"It prints:\n\n```\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/python.md", "exec"), {})
    assert out.getvalue() == shown
