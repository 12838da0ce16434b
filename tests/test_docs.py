"""The help text and the docs agree: every command of the command line (read from the Click objects
of rankkit.cli, and `rankkit warmup`'s own parser) has its page docs/COMMAND.md, and every option of
the command appears on that page; every page the README links exists, and every docs page is
reachable from the README or the docs index; every relative link in README.md and docs/*.md
resolves, to a file and, after `#`, to a heading of that file. In one process (no subprocess per
option): the whole file takes well under a second."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from rankkit.cli import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

# [text](target), not ![image](...) nor inside `code`; the target without a title
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _without_blocks(text: str) -> str:
    """The text without fenced or indented code blocks: `# comments` there are not headings."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return "\n".join(line for line in text.splitlines() if not line.startswith("    "))


def _without_code(text: str) -> str:
    """The text without code blocks and inline code: links written there are examples, not links."""
    return re.sub(r"`[^`\n]*`", "", _without_blocks(text))


def _links(page: Path) -> list[str]:
    return LINK.findall(_without_code(page.read_text(encoding="utf-8")))


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation other than - and _ dropped,
    spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _without_blocks(page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m is None:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _command_options(cmd: click.Command) -> list[str]:
    opts = []
    for p in cmd.params:
        if isinstance(p, click.Option):
            opts += [o for o in (*p.opts, *p.secondary_opts) if o != "--help"]
    return opts


def _warmup_options(capsys) -> list[str]:
    """`rankkit warmup` hands its arguments to rankkit.warmup's own argparse parser: its options
    are the ones that parser lists under "options:"."""
    from rankkit import warmup

    with pytest.raises(SystemExit):
        warmup.main(["--help"])
    text = capsys.readouterr().out
    listed = re.split(r"\n(?:options|optional arguments):\n", text, maxsplit=1)[-1]
    return [o for o in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", listed) if o not in ("-h", "--help")]


def _named(option: str, text: str) -> bool:
    """`option` written on the page as itself: `--eta` is not named by `--eta0` or `--eta-c`."""
    return re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", text) is not None


def test_every_command_has_its_page_and_every_option_is_on_it(capsys):
    missing = []
    for name, cmd in sorted(cli.commands.items()):
        page = DOCS / f"{name}.md"
        assert page.is_file(), f"rankkit {name} has no page docs/{name}.md"
        text = page.read_text(encoding="utf-8")
        options = _warmup_options(capsys) if name == "warmup" else _command_options(cmd)
        assert options, f"no options found for rankkit {name}"
        missing += [f"rankkit {name} {o} (docs/{name}.md)" for o in options if not _named(o, text)]
    assert missing == [], "options missing from their docs page: " + ", ".join(missing)


def test_the_readme_links_every_command_page():
    linked = {Path(t.split("#")[0]).as_posix() for t in _links(README)}
    for name in sorted(cli.commands):
        assert f"docs/{name}.md" in linked, f"the README does not link docs/{name}.md"


def test_every_docs_page_is_reachable_from_the_readme_or_the_index():
    reachable = set()
    for page in (README, DOCS / "README.md"):
        for target in _links(page):
            path = target.split("#")[0]
            if path and "://" not in path:
                reachable.add((page.parent / path).resolve())
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert page.resolve() in reachable, f"docs/{page.name} is linked from neither README.md nor docs/README.md"
    assert (DOCS / "README.md").resolve() in reachable


def test_every_relative_link_resolves():
    broken = []
    for page in _pages():
        for target in _links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: ({target})"
            if not dest.exists():
                broken.append(f"{where}: no {path}")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{where}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert broken == [], "broken links:\n" + "\n".join(broken)


def test_every_readme_section_links_further():
    """The README is a guide: each of its sections points to the page that says more."""
    sections = re.split(r"\n## ", README.read_text(encoding="utf-8"))[1:]
    for section in sections:
        title = section.splitlines()[0]
        assert LINK.search(_without_code(section)), f"README section '{title}' links nowhere"


def test_readme_is_a_guide():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 350, f"README.md has {len(lines)} lines (a guide: at most 350)"
    long = [i + 1 for i, line in enumerate(lines) if len(line) > 200]
    assert long == [], f"README.md lines longer than 200 characters: {long}"


def test_slug_and_link_helpers():
    assert _slug("`rankkit train`: fit a ranker") == "rankkit-train-fit-a-ranker"
    assert _slug("Group files (LightGBM, XGBoost)") == "group-files-lightgbm-xgboost"
    assert _slug("svm_rank") == "svm_rank"
    assert _slug("`--solver`: the exact solvers") == "--solver-the-exact-solvers"
    assert _named("--eta", "`--eta0` and `--eta-c`") is False
    assert _named("--eta", "`--eta basic`") is True
    assert _named("-C", "`-C 1`") is True and _named("-C", "--coef0") is False
    assert LINK.findall("see [a](b.md#c) and ![img](x.png)") == ["b.md#c"]
    assert _figures(["# convention ...", "read f: 3 documents in 0.036s (and 2.100s compiling kernels)",
                     "compiling kernels took 1.000s of the fit", "ndcg@1   0.375000"]) == [
        "read f: 3 documents in <time>", "ndcg@1 0.375000"]


# -- the figures the README prints, reproduced ---------------------------------------------------
SHARED_MQ2008 = ROOT.parent / "shared" / "data" / "MQ2008"


def _sessions(text: str) -> list[tuple[list[str], list[str]]]:
    """The transcripts of a page: each indented `$ rankkit ...` line with the indented output lines
    under it (up to a blank line or the next `$`)."""
    import shlex

    sessions, current = [], None
    for line in text.splitlines():
        if line.startswith("    $ "):
            current = (shlex.split(line[6:], comments=True), [])
            sessions.append(current)
        elif current is not None and line.startswith("    ") and line.strip():
            current[1].append(line[4:])
        else:
            current = None
    return [s for s in sessions if s[0] and s[0][0] == "rankkit"]


def _figures(lines) -> list[str]:
    """The lines that carry figures: not the `#` header lines (cut with `...` on the page), not
    `rankkit:` notes, with timings (`0.036s`) and what compiling took (a kernel one run compiles
    and another finds cached) left out; columns compared as words."""
    out = []
    for line in lines:
        if line.startswith(("#", "rankkit: ", "compiling kernels took")) or "..." in line:
            continue
        line = re.sub(r"\b\d+(?:\.\d+)?s\b", "<time>", line)
        line = re.sub(r" \(and <time> compiling kernels\)|, <time> of it compiling kernels", "", line)
        out.append(" ".join(line.split()))
    return out


def _replay(page: Path, tmp_path: Path, keep) -> int:
    """Run the page's transcripts in order in tmp_path (MQ2008 linked there, as the README says),
    those `keep` accepts, and compare their figures with the page's."""
    import subprocess
    import sys

    if not (tmp_path / "MQ2008").exists():
        (tmp_path / "MQ2008").symlink_to(SHARED_MQ2008)
    env = dict(__import__("os").environ)
    env["PYTHONPATH"] = str(ROOT)
    env.pop("RANKKIT_DEBUG", None)
    ran = 0
    for argv, expected in _sessions(page.read_text(encoding="utf-8")):
        if not keep(argv) or any(a in ("|", ">") for a in argv):
            continue
        inputs = [a for a in argv if a.startswith("MQ2008/")]
        if not all((tmp_path / a).exists() for a in inputs) or "bad.txt" in argv:
            continue
        proc = subprocess.run([sys.executable, "-m", "rankkit", *argv[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{page.name}: {' '.join(argv)}: {proc.stderr}"
        shown = proc.stdout.splitlines() + proc.stderr.splitlines()
        assert _figures(shown) == _figures(expected), f"{page.name}: {' '.join(argv)} printed other figures"
        ran += 1
    return ran


@pytest.mark.skipif(not SHARED_MQ2008.is_dir(), reason="../shared/data/MQ2008 absent")
def test_the_worked_example_prints_the_readme_figures(tmp_path):
    """train -v, predict and eval of the README's worked example, then docs/eval.md's (which use
    its files): every figure as printed on the page (timings aside)."""
    ran = _replay(README, tmp_path, keep=lambda argv: argv[1] != "experiment")
    ran += _replay(DOCS / "eval.md", tmp_path, keep=lambda argv: argv[1] != "experiment")
    assert ran >= 10


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_MQ2008.is_dir(), reason="../shared/data/MQ2008 absent")
def test_the_five_fold_experiment_prints_the_readme_table(tmp_path):
    assert _replay(README, tmp_path, keep=lambda argv: argv[1] == "experiment") == 1
