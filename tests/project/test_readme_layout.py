"""Issue 31, "a README for a newcomer": the quick start (the two commands, as dev.sh and
CI run them) within the first 40 lines, no line over 120 characters, every link from the
README and docs/ to a file or a heading that exists, and the README's Python example
printing what its comment says."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
README = ROOT / "README.md"
QUICK_START = ["./dev.sh train", "./dev.sh test"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, flags=re.M)}


def test_the_quick_start_is_on_the_first_screen():
    head = README.read_text().splitlines()[:40]
    assert "## Quick start" in head
    commands = [line.split("#")[0].strip() for line in head if line.startswith("./dev.sh ")]
    assert commands == QUICK_START


def test_the_quick_start_commands_are_the_ones_dev_sh_and_ci_run():
    dev = (ROOT / "dev.sh").read_text()
    for command in QUICK_START:
        assert re.search(rf"^  {command.split()[1]}\)", dev, flags=re.M), command
    assert "exec ./dev.sh test" in (ROOT / ".ci" / "run").read_text()


def test_no_readme_line_is_over_120_characters():
    long = [(i, len(line)) for i, line in enumerate(README.read_text().splitlines(), 1)
            if len(line) > 120]
    assert long == []


def test_every_link_of_the_readme_and_docs_reaches_a_file_and_heading():
    broken = []
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http(s)://, mailto: ...
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == [], broken


def test_the_readme_python_example_prints_what_it_says(tmp_path):
    code = re.search(r"```python\n(.*?)```", README.read_text(), flags=re.S).group(1)
    script = tmp_path / "readme_example.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "b'Hello, distributed TensorFlow!'"
