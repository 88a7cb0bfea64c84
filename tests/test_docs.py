"""The documentation a fresh clone ships: links resolve, generated pages are current, the
README stays a short page for users.

Run `python docs/make_observation_doc.py` after changing the observation table in
env/observation.py; docs/rules.md's examples are executed by tests/test_rules_examples.py.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"  # the index of the dated archive in benchmarks/results/
TOPICS = sorted((ROOT / "benchmarks" / "results").glob("*.md"))
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), RESULTS, *TOPICS]
ARCHIVE_MAX_LINES = 800
README_MAX_LINES = 200
README_COMMANDS = (
    'python -m venv .venv && . .venv/bin/activate',
    'pip install torch==2.13.0 -e . && python train.py --config configs/quickstart.yaml',
    'pip install torch==2.13.0 -e ".[test]" && python -m pytest -n 2',
)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def load_generator():
    spec = importlib.util.spec_from_file_location("make_observation_doc", ROOT / "docs" / "make_observation_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def without_code(text: str) -> str:
    """The page without fenced code blocks and inline code (links there are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown page (inline code keeps its text)."""
    anchors = set()
    for line in re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M).splitlines():
        heading = re.match(r"#{1,6}\s+(.*)", line)
        if heading:
            words = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            anchors.add(words.replace(" ", "-"))
    return anchors


def relative_links(path: Path) -> list[str]:
    return [t for t in LINK.findall(without_code(path.read_text()))
            if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # http:, https:, mailto: ...


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Relative links of `path` that a fresh clone of `root` cannot follow."""
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{target} (no such file)")
        elif root not in resolved.parents:
            broken.append(f"{target} (outside the repository)")
        elif anchor and resolved.suffix == ".md" and anchor not in heading_anchors(resolved):
            broken.append(f"{target} (no heading #{anchor})")
    return broken


def test_the_pages_exist():
    for name in ("README.md", "docs/rules.md", "docs/observation.md", "docs/architecture.md",
                 "docs/experiments.md", "benchmarks/RESULTS.md"):
        assert (ROOT / name).is_file(), name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    assert relative_links(page), f"{page} links nowhere"
    assert broken_links(page) == []


def test_the_results_archive_is_indexed_and_no_file_is_long():
    """Every topic file of benchmarks/results/ is listed in the index with each of its dated
    entries (so a figure's history is one click away), and none runs over 800 lines."""
    links = relative_links(RESULTS)
    assert len(TOPICS) >= 10 and len(RESULTS.read_text().splitlines()) <= ARCHIVE_MAX_LINES
    for topic in TOPICS:
        assert len(topic.read_text().splitlines()) <= ARCHIVE_MAX_LINES, f"{topic.name}: split it"
        named = f"results/{topic.name}"
        assert named in links, f"benchmarks/RESULTS.md does not list {named}"
        indexed = {link.partition("#")[2] for link in links if link.partition("#")[0] == named}
        entries = {a for a in heading_anchors(topic) if re.match(r"\d{4}-\d\d-\d\d", a)}
        assert entries and entries <= indexed, f"the index misses entries of {named}: {sorted(entries - indexed)}"


def test_link_checker_finds_broken_links(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "there.md").write_text("# A heading\n")
    (tmp_path / "outside.md").write_text("# Outside\n")
    page = repo / "page.md"
    page.write_text("[ok](there.md#a-heading) [gone](missing.md) [bad anchor](there.md#nope)\n"
                    "[web](https://example.org) `[code](skipped.md)` [up](../outside.md)\n")
    assert broken_links(page, root=repo) == [
        "missing.md (no such file)", "there.md#nope (no heading #nope)", "../outside.md (outside the repository)"]


def test_readme_links_into_docs():
    links = relative_links(ROOT / "README.md")
    for page in ("docs/rules.md", "docs/observation.md", "docs/architecture.md", "docs/experiments.md",
                 "benchmarks/RESULTS.md"):
        assert any(link.partition("#")[0] == page for link in links), f"README does not link {page}"


def test_readme_is_a_short_page_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    for command in README_COMMANDS:
        assert command in text, command


def test_readme_holds_no_lab_history():
    text = (ROOT / "README.md").read_text().lower()
    for phrase in ("this host", "later host", "earlier host", "this session", "faster host"):
        assert phrase not in text, f"README mentions {phrase!r}: history belongs in benchmarks/RESULTS.md"


def missing_names(code: str) -> list[str]:
    """Names a code block imports, or reads as module.attribute (or Class.attribute of an
    imported class), that do not exist. The blocks are not run: running them compiles
    minutes of numba kernels on a fresh clone."""
    tree = ast.parse(code)
    known, missing = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                known[alias.asname or alias.name] = importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            for alias in node.names:
                if hasattr(module, alias.name):
                    known[alias.asname or alias.name] = getattr(module, alias.name)
                else:
                    missing.append(f"{node.module}.{alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in known:
            if not hasattr(known[node.value.id], node.attr):
                missing.append(f"{node.value.id}.{node.attr}")
    return missing


def test_readme_code_names_exist():
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.S | re.M)
    assert len(blocks) >= 3
    for block in blocks:
        assert missing_names(block) == []


def test_missing_names_finds_renamed_api():
    assert missing_names("import agents\nfrom engine import GameState, Nope\nagents.build('x')\nGameState.new(2)\n") \
        == ["engine.Nope", "agents.build"]


# --- docs/observation.md is generated from the encoder's table -----------------------------
def test_observation_page_is_current():
    generator = load_generator()
    expected = generator.render(generator.observation_module())
    assert (ROOT / "docs" / "observation.md").read_text() == expected, \
        "docs/observation.md is out of date: run python docs/make_observation_doc.py"


def module_with_doc(obs, doc: str):
    fake = types.SimpleNamespace(**{k: getattr(obs, k) for k in dir(obs) if not k.startswith("__")})
    fake.__doc__ = doc
    return fake


def test_observation_generator_checks_the_table_against_the_code():
    generator = load_generator()
    obs = generator.observation_module()
    moved = obs.__doc__.replace("10       ``P_EMPTY``", "11       ``P_EMPTY``")
    assert moved != obs.__doc__
    with pytest.raises(ValueError, match="P_EMPTY"):
        generator.render(module_with_doc(obs, moved))
    wrong_range = obs.__doc__.replace("``V_SCORE + k``              0..100", "``V_SCORE + k``              0..1  ")
    assert wrong_range != obs.__doc__
    with pytest.raises(ValueError, match="V_SCORE"):
        generator.render(module_with_doc(obs, wrong_range))
    row_gone = re.sub(r"^63 .*\n", "", obs.__doc__, flags=re.M)
    assert row_gone != obs.__doc__
    with pytest.raises(ValueError, match="covers 63 entries"):
        generator.render(module_with_doc(obs, row_gone))


def command_files(text: str) -> list[str]:
    """The file paths the inline commands of a page (`python ...`, `bash ...`) name."""
    paths = []
    for command in re.findall(r"`((?:python|bash|pip)[^`\n]*)`", text):
        paths += [w for w in command.split() if re.fullmatch(r"[\w./-]+\.(?:py|c|yaml|sh|json|jsonl|md)", w)
                  and not re.search(r"\b[A-Z][A-Z_]+\b", w)]  # not a placeholder (configs/NAME.yaml)
    return paths


def test_readme_commands_name_only_files_of_the_repository():
    """A user runs the commands of the README and of its figures (docs/status.md's current
    figures) in a clone: every file they name is in it."""
    paths = command_files((ROOT / "README.md").read_text() + (ROOT / "docs" / "status.md").read_text())
    assert "benchmarks/engine_speed.py" in paths and "configs/quickstart.yaml" in paths
    missing = [p for p in paths if not (ROOT / p).resolve().is_file() or ROOT not in (ROOT / p).resolve().parents]
    assert missing == [], f"README commands name files a clone lacks: {missing}"
    assert command_files("`python benchmarks/x.py --limit247 ../shared/bench/limit247.c`") == \
        ["benchmarks/x.py", "../shared/bench/limit247.c"]


def test_every_shipped_model_has_its_recipe():
    """models/README.md names every file in models/; each network's section gives the one
    command that trains it (a shipped config), its time and the figures it should reach."""
    text = (ROOT / "models" / "README.md").read_text()
    files = sorted(p.name for p in (ROOT / "models").iterdir() if p.name != "README.md")
    assert files and [name for name in files if f"`{name}`" not in text] == []
    for net in (name for name in files if name.endswith(".pt")):
        section = text[text.index(f"`{net}`"):].split("\n## ")[0]
        command = re.search(r"python train\.py --config (configs/\S+\.yaml)", section)
        assert command and (ROOT / command.group(1)).is_file(), net
        assert f"models/{net}" in section and "Time:" in section and "Figures" in section, net


def test_ci_runs_the_readme_commands_in_a_fresh_virtual_environment():
    ci = (ROOT / ".ci" / "run").read_text()
    venv, install, tests = (ci.index(" -m venv "), ci.index('pip install -q torch==2.13.0 -e ".[test]"'),
                            ci.index("python -m pytest -n 2"))
    assert venv < ci.index("/bin/activate") < install < tests
    assert "[ -x /usr/bin/chromium ] || (apt-get update -qq && apt-get install -y -qq chromium)" in ci
