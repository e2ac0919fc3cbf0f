"""docs/user/python.md's example runs as written: its first python block is
executed unchanged: its assertion (Cleave within PyTorch float32's own
distance from float64) holds and it prints the comparison."""

import contextlib
import io
import os
import re

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "user",
                   "python.md")


def test_the_documented_example_runs_as_written():
    with open(DOC) as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert blocks, "docs/user/python.md has no python block"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], DOC, "exec"), {"__name__": "__main__"})
    printed = out.getvalue()
    print(printed)
    assert "'steps': 2" in printed
    for line in ("Cleave vs PyTorch float32:", "Cleave vs PyTorch float64:",
                 "PyTorch float32 vs float64:"):
        assert line in printed, printed
