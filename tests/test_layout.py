"""The repository's layout: the layers import one way, and the one-off experiments in
research/ stand apart.

The layers (engine < env < agents < evaluation < training, humanplay; nothing of the product
imports the scripts, research/ or benchmarks/) are import-linter's contracts in
pyproject.toml, run here so that CI fails on an upward import.
Nothing outside research/ (the product packages, the benchmarks, the tests, the top-level
scripts and docs/'s generators) imports or runs a research script, and every research
script's docstring names the dated entry of the results archive (indexed in
benchmarks/RESULTS.md) that holds its answer, and its verdict. No module of the product is
named like one of its packages (a `training/evaluation.py` reads as the `evaluation` package).
docs/architecture.md's ```arrows block is the import graph between the layers, no more, no less.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESEARCH = ROOT / "research"
OUTSIDE = ("engine", "env", "agents", "training", "evaluation", "humanplay", "benchmarks", "examples", "tests", "docs")
SECTION = re.compile(r'^RESULTS\.md: "([^"]+)"', re.M)


def test_the_layers_import_one_way(capsys):
    from importlinter.cli import lint_imports

    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, "an import breaks the layers of pyproject.toml's [tool.importlinter]:\n" + capsys.readouterr().out


LAYERS = ("engine", "env", "agents", "evaluation", "training", "humanplay")
SCRIPTS = ("train", "evaluate", "play")


def documented_arrows(text: str) -> set[tuple[str, str]]:
    """The arrows of docs/architecture.md's ```arrows block: ``A --> B, C`` lines (a script
    is named with its .py)."""
    block = re.search(r"^```arrows\n(.*?)^```", text, re.M | re.S)
    assert block, "docs/architecture.md has no ```arrows block"
    arrows = set()
    for line in block.group(1).splitlines():
        importer, _, imported = line.partition("-->")
        arrows |= {(importer.strip().removesuffix(".py"), name.strip()) for name in imported.split(",") if name.strip()}
    return arrows


def real_arrows() -> set[tuple[str, str]]:
    """The import graph between the layers (grimp, as import-linter builds it: every import,
    in functions too) and what the scripts import from the product."""
    import grimp

    graph = grimp.build_graph(*LAYERS, cache_dir=None)
    arrows = {(a, b) for a in LAYERS for b in LAYERS
              if a != b and graph.direct_import_exists(importer=a, imported=b, as_packages=True)}
    for script in SCRIPTS:
        for node in ast.walk(ast.parse((ROOT / f"{script}.py").read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            arrows |= {(script, name) for name in names if name.split(".")[0] in LAYERS}
    return arrows


def test_the_architecture_docs_arrows_are_the_import_graph():
    documented = documented_arrows((ROOT / "docs" / "architecture.md").read_text())
    real = real_arrows()
    assert {("train", "training.cli"), ("training", "evaluation"), ("env", "engine")} <= real
    assert sorted(real - documented) == [], "imports that docs/architecture.md's arrows block does not list"
    assert sorted(documented - real) == [], "arrows in docs/architecture.md that no import makes"


def test_the_arrows_block_is_read_line_by_line():
    text = "x\n```arrows\ntrain.py --> training.cli\nagents --> env, engine\nengine -->\n```\n"
    assert documented_arrows(text) == {("train", "training.cli"), ("agents", "env"), ("agents", "engine")}


def product_packages() -> set[str]:
    """The product's top-level packages: the top names of the wheel's package list."""
    import tomllib

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    return {name.split(".")[0] for name in listed}


def shadowing_names(modules: list[str], packages: set[str]) -> list[str]:
    """The dotted `modules` below a top-level package whose own name is one of `packages`."""
    return [m for m in modules if "." in m and m.rsplit(".", 1)[1] in packages]


def test_no_module_is_named_like_a_package_of_the_product():
    packages = product_packages()
    assert {"engine", "env", "agents", "evaluation", "training", "humanplay"} <= packages
    modules = []
    for top in sorted(packages):
        for path in (ROOT / top).rglob("*"):
            if "__pycache__" in path.parts or not (path.suffix == ".py" or path.is_dir()):
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert shadowing_names(modules, packages) == [], "rename the module: it reads as the package of that name"


def test_the_shadowing_check_finds_a_module_and_a_folder():
    packages = {"evaluation", "training"}
    assert shadowing_names(["training.evaluation", "training.policy_games", "evaluation", "agents.training"],
                           packages) == ["training.evaluation", "agents.training"]


def research_scripts() -> list[Path]:
    return sorted(p for p in RESEARCH.glob("*.py") if p.name != "__init__.py")


def outside_files() -> list[Path]:
    files = [p for p in ROOT.glob("*.py")]
    for folder in OUTSIDE:
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def research_uses(source: str, names: set[str]) -> list[str]:
    """What `source` takes from research/: an import of the `research` package or of a module
    named like a research script (`from benchmarks import hand_inference` included), and a
    string naming a file of it (``"research/x.py"``, run as a subprocess or loaded by path)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        modules = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            modules = [str(node.args[0].value)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += re.findall(r"\bresearch/\w+\.py\b", node.value)
        for module in modules:
            parts = module.split(".")
            if parts[0] == "research" or names & set(parts[-1:]):
                found.append(module)
    return found


def test_nothing_outside_research_imports_or_runs_it():
    names = {p.stem for p in research_scripts()}
    assert {"hand_inference", "evaluator_data"} <= names
    me = Path(__file__).resolve()
    users = {str(p.relative_to(ROOT)): uses for p in outside_files() if p.resolve() != me
             if (uses := research_uses(p.read_text(), names))}
    assert users == {}, f"research/ is imported or run from outside it: {users}"


def test_the_check_finds_each_way_of_reaching_research():
    names = {"hand_inference"}
    assert research_uses("import research.hand_inference\n", names) == ["research.hand_inference"]
    assert research_uses("from research import x\n", names) == ["research", "research.x"]
    assert research_uses("from benchmarks import hand_inference\n", names) == ["benchmarks.hand_inference"]
    assert research_uses("import importlib\nimportlib.import_module('hand_inference')\n", names) == ["hand_inference"]
    assert research_uses("run(['python', 'research/other.py'])\n", names) == ["research/other.py"]
    assert research_uses("from benchmarks.machine import describe\n'a research toolkit.'\n", names) == []


def result_headings() -> list[str]:
    """The dated entries of the results archive (the topic files that benchmarks/RESULTS.md indexes)."""
    return [line[3:] for topic in sorted((ROOT / "benchmarks" / "results").glob("*.md"))
            for line in topic.read_text().splitlines() if line.startswith("## ")]


@pytest.mark.parametrize("script", research_scripts(), ids=lambda p: p.name)
def test_each_research_script_names_its_results_section_and_verdict(script):
    doc = ast.get_docstring(ast.parse(script.read_text())) or ""
    sections = SECTION.findall(doc)
    assert sections, f'{script.name}: its docstring has no line RESULTS.md: "DATE, TIME" naming its section'
    headings = result_headings()
    for section in sections:
        matches = [h for h in headings if h.startswith(section)]
        assert len(matches) == 1, f"{script.name}: {section!r} opens {len(matches)} RESULTS.md headings, not one"
    assert re.search(r"^Verdict: \S", doc, re.M), f"{script.name}: its docstring has no 'Verdict:' line"


def test_research_has_its_index():
    index = (RESEARCH / "README.md").read_text()
    missing = [p.name for p in research_scripts() if f"`{p.name}`" not in index]
    assert missing == [], f"research/README.md does not list {missing}"


# --- docs/status.md: the figures and the settings, one screen a section ---------------------------
STATUS_SECTION_LINES = 40
STATUS_SECTION_CHARS = 5500  # about one screen, the wide table rows wrapped


def status_sections(text: str) -> dict[str, str]:
    """docs/status.md's `## ` sections, {heading: body}."""
    sections, heading = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            sections[heading] = ""
        elif heading is not None:
            sections[heading] += line + "\n"
    return sections


def test_status_is_one_screen_a_section():
    sections = status_sections((ROOT / "docs" / "status.md").read_text())
    assert len(sections) >= 8
    long = {h: (b.count("\n"), len(b)) for h, b in sections.items()
            if b.count("\n") > STATUS_SECTION_LINES or len(b) > STATUS_SECTION_CHARS}
    assert long == {}, f"sections longer than a screen (lines, characters): {long}; details go to benchmarks/results/"


def test_the_section_check_sees_a_long_section():
    text = "## short\nfigure\n## long\n" + "row\n" * (STATUS_SECTION_LINES + 1)
    sections = status_sections(text)
    assert sections["short"] == "figure\n" and sections["long"].count("\n") > STATUS_SECTION_LINES
