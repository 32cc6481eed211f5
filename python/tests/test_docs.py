"""The example of docs/python.md runs as written (against a test server's address)."""
import re

from conftest import REPO


def test_the_documented_example_runs(server):
    text = (REPO / "docs" / "python.md").read_text("utf-8")
    section = text.split("## Example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert '"127.0.0.1:7070"' in code
    exec(compile(code.replace('"127.0.0.1:7070"', repr(server.address)), "docs/python.md", "exec"), {})
