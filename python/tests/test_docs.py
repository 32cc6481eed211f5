"""The examples of docs/python.md and docs/s3-api.md run as written (against a test server's
address), and the pages under docs/ link only to what exists: files, headings, results and
images."""
import fnmatch
import glob
import re
from pathlib import Path

from conftest import REPO


def test_the_documented_example_runs(server):
    text = (REPO / "docs" / "python.md").read_text("utf-8")
    section = text.split("## Example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert '"127.0.0.1:7070"' in code
    exec(compile(code.replace('"127.0.0.1:7070"', repr(server.address)), "docs/python.md", "exec"), {})


def test_the_s3_example_runs_against_a_server_without_tokens(server, capsys):
    text = (REPO / "docs" / "s3-api.md").read_text("utf-8")
    code = re.search(r"python3 - <<'PY'\n(.*?)\nPY\n", text, re.S).group(1)
    assert '"http://127.0.0.1:7071"' in code
    exec(compile(code.replace('"http://127.0.0.1:7071"', repr(server.s3_url)), "docs/s3-api.md",
                 "exec"), {})
    assert capsys.readouterr().out.strip() == "b'kv bytes'"


# ---------------------------------------------------------------- links, images and results

RESULTS = REPO / "docs" / "results"
IMAGES = REPO / "docs" / "img"
PLOT_TOOL = REPO / "docs" / "tools" / "plot_benchmarks.py"
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)\)")
BACKTICKED = re.compile(r"`([^`]+)`")  # may run over a line break
CITED_PATH = re.compile(r"docs/(?:results|img)/[\w./*\[\]-]+(?![\w./*\[\]$-])")  # not one a shell expression ends


def pages() -> list[Path]:
    """The pages checked: the READMEs, CONTRIBUTING.md if present, and every page under docs/."""
    found = [REPO / "README.md", REPO / "python" / "README.md", REPO / "CONTRIBUTING.md"]
    found += sorted((REPO / "docs").rglob("*.md"))
    return [p for p in found if p.is_file() and RESULTS not in p.parents]


def text_outside_code(page: Path) -> str:
    """The page without its fenced code blocks, where a link is only text."""
    return re.sub(r"^ *```.*?^ *```", "", page.read_text("utf-8"), flags=re.S | re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, seen = set(), {}
    for line in text_outside_code(page).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            a = anchor(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            found.add(a if n == 0 else f"{a}-{n}")
    return found


def links(page: Path) -> list[str]:
    return [t for t in LINK.findall(text_outside_code(page)) if not re.match(r"[a-z]+:", t)]


def test_every_relative_link_resolves():
    broken = []
    for page in pages():
        for target in links(page):
            path, _, frag = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(REPO)}: ({target})"
            if not dest.exists():
                broken.append(f"{where}: no file {dest.relative_to(REPO) if REPO in dest.parents else dest}")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                broken.append(f"{where}: no heading with anchor #{frag} in {dest.relative_to(REPO)}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def cited_paths(page: Path) -> list[str]:
    """Every docs/results/... or docs/img/... path a page names, in backticks or in the commands of
    its code blocks (globs included)."""
    text = page.read_text("utf-8")
    quoted = BACKTICKED.findall(text_outside_code(page)) + re.findall(r"^ *```.*?^ *```", text, flags=re.S | re.M)
    return [p.rstrip(".") for q in quoted for p in CITED_PATH.findall(q) if not p.endswith("/")]


def test_every_cited_result_exists():
    missing = []
    for page in pages():
        for cited in cited_paths(page):
            if not glob.glob(str(REPO / cited)):
                missing.append(f"{page.relative_to(REPO)}: `{cited}` names no file")
    assert not missing, "\n".join(missing)


def test_every_image_is_shown():
    shown = {(page.parent / t.partition("#")[0]).resolve() for page in pages() for t in links(page)}
    unshown = [str(p.relative_to(REPO)) for p in sorted(IMAGES.iterdir()) if p.resolve() not in shown]
    assert not unshown, "images in docs/img shown by no page: " + ", ".join(unshown)


def test_every_result_is_cited_or_read():
    """A file in docs/results is cited by a page (its path, a glob matching it, or its own name in
    backticks) or named by the plot tool, which reads it."""
    cited = set()
    names = set()
    for page in pages():
        for path in cited_paths(page):
            cited.update(Path(p).resolve() for p in glob.glob(str(REPO / path)))
            names.add(Path(path).name)
        names.update(q for q in BACKTICKED.findall(text_outside_code(page)) if "/" not in q)
    tool = "\n".join(source.read_text("utf-8")  # the entry point and its area modules
                     for source in [PLOT_TOOL, *sorted((PLOT_TOOL.parent / "plots").glob("*.py"))])
    uncited = []
    for f in sorted(p for p in RESULTS.rglob("*") if p.is_file()):
        if f.resolve() in cited or f.name in names or f.name in tool:
            continue
        if any(fnmatch.fnmatch(f.name, n) for n in names if "*" in n):
            continue
        uncited.append(str(f.relative_to(REPO)))
    assert not uncited, "results cited by no page and read by no tool: " + ", ".join(uncited)
