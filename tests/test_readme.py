"""The README's Python example runs and learns what it claims."""

import re
from pathlib import Path


def test_readme_example_learns_pendulum_reward():
    text = (Path(__file__).parents[1] / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1).replace("print(", "result = (")
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["result"]["accuracy"] > 0.9
    assert namespace["result"]["step_pearson"] > 0.8
