"""Write docs/observation.md from the encoder's own table (the docstring of env/observation.py).

    python docs/make_observation_doc.py           # rewrite docs/observation.md
    python docs/make_observation_doc.py --check   # exit 1 if the page is out of date

The table in the docstring of `env.observation` is the one description of the
observation. This script reads it, checks every row against the module's constants (each
named offset starts where the table says, and the rows cover every plane and every
vector feature exactly once), and renders it as Markdown. tests/test_docs.py fails when
docs/observation.md differs from what this script writes.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "observation.md"


def observation_module():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from env import observation

    return observation


def table_rows(doc: str) -> dict[str, list[dict]]:
    """The rows of the docstring's table, by section ("planes", "vector"). Each row:
    first, last (the index range), name, range, meaning (continuation lines joined)."""
    lines = doc.splitlines()
    rules_at = [i for i, line in enumerate(lines) if re.fullmatch(r"=+( +=+){3}", line.strip())]
    if len(rules_at) != 3:
        raise ValueError("the observation table needs a header rule, a rule under the header and a closing rule")
    border = lines[rules_at[0]]
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
    sections: dict[str, list[dict]] = {}
    current = None
    for line in lines[rules_at[1] + 1:rules_at[2]]:
        cells = [line[a:(spans[k + 1][0] if k + 1 < len(spans) else None)].strip()
                 for k, (a, _) in enumerate(spans)]
        index, name, value_range, meaning = cells
        if index and not index[0].isdigit():  # a section heading: "planes (plane c occupies ...)"
            current = index
            sections[current] = []
        elif index:
            first, _, last = index.partition("-")
            sections[current].append({"first": int(first), "last": int(last or first), "name": name,
                                      "range": value_range, "meaning": meaning})
        elif meaning:
            sections[current][-1]["meaning"] += " " + meaning
    return sections


def check_rows(sections: dict[str, list[dict]], obs) -> None:
    """Every named offset starts where the table says; the rows tile each section."""
    sizes = {"planes": obs.NUM_PLANES, "vector": obs.NUM_VECTOR_FEATURES}
    if set(sections) != set(sizes):
        raise ValueError(f"the table's sections are {sorted(sections)}, expected {sorted(sizes)}")
    for section, rows in sections.items():
        expected_first = 0
        for row in rows:
            constant = re.match(r"``(\w+)", row["name"]).group(1)
            if getattr(obs, constant) != row["first"]:
                raise ValueError(f"{constant} is {getattr(obs, constant)} but the table puts it at {row['first']}")
            if row["first"] != expected_first:
                raise ValueError(f"{section}: row {row['name']} starts at {row['first']}, expected {expected_first}")
            expected_first = row["last"] + 1
        if expected_first != sizes[section]:
            raise ValueError(f"{section}: the table covers {expected_first} entries, the encoder has {sizes[section]}")
    for section, rows in sections.items():
        for row in rows:
            check_bounds(obs, section, row)


def value_bounds(text: str) -> tuple[float, float]:
    """(low, high) of a table range: {0,1}, 0..1, 0..10, +-100."""
    if text == "{0,1}":
        return 0.0, 1.0
    if text.startswith("+-"):
        return -float(text[2:]), float(text[2:])
    low, dots, high = text.partition("..")
    if not dots:
        raise ValueError(f"cannot read the value range {text!r}")
    return float(low), float(high)


def check_bounds(obs, section: str, row: dict) -> None:
    """The row's value range is the observation space's bounds for those entries."""
    if section == "planes":
        flat = slice(row["first"] * obs.rules.NUM_CELLS, (row["last"] + 1) * obs.rules.NUM_CELLS)
    else:
        flat = slice(obs.PLANES_SIZE + row["first"], obs.PLANES_SIZE + row["last"] + 1)
    low, high = value_bounds(row["range"])
    if not (set(obs.OBS_LOW[flat].tolist()) == {low} and set(obs.OBS_HIGH[flat].tolist()) == {high}):
        raise ValueError(f"{row['name']}: the table says {row['range']}, the observation space bounds are "
                         f"{sorted(set(obs.OBS_LOW[flat].tolist()))}..{sorted(set(obs.OBS_HIGH[flat].tolist()))}")


def markdown(text: str) -> str:
    """The docstring's reST inline code (``x``) as Markdown code (`x`)."""
    return text.replace("``", "`").replace("|", "\\|")


def span(row: dict) -> str:
    return str(row["first"]) if row["first"] == row["last"] else f"{row['first']}-{row['last']}"


def render(obs) -> str:
    sections = table_rows(obs.__doc__)
    check_rows(sections, obs)
    v0 = obs.PLANES_SIZE
    out = [
        "# The observation",
        "",
        "<!-- Generated by docs/make_observation_doc.py from the table in env/observation.py;",
        "     edit that table, then run `python docs/make_observation_doc.py`. -->",
        "",
        "Every environment (PettingZoo AEC, Gymnasium, the vector env) and every network-based",
        "agent sees a game through one encoding, `env.observation.encode(state, seat)`: a flat",
        f"`float32` vector of **{obs.OBS_SIZE}** values holding what that seat may see under the",
        "[hidden-information rules](rules.md#hidden-information). It has two parts:",
        "",
        f"* **{obs.NUM_PLANES} planes** of 7x7, channel-major: plane `c`, cell `(row, col)` is at flat",
        f"  index `c * 49 + row * 7 + col` (indices 0-{v0 - 1});",
        f"* **{obs.NUM_VECTOR_FEATURES} vector features**: feature `i` is at flat index `{v0} + i`",
        f"  (indices {v0}-{obs.OBS_SIZE - 1}).",
        "",
        "`env.observation.split(obs)` returns the views `(planes (..., "
        f"{obs.NUM_PLANES}, 7, 7), vector (..., {obs.NUM_VECTOR_FEATURES}))`",
        "that a network reads; `env.observation.describe(obs)` decodes one observation into",
        "readable fields (board, hand, scores, ...) for debugging.",
        "",
        "Features about seats are *rotated*: slot `k` is the seat `(seat + k) % n`, so slot 0 is",
        "always the observer, slot 1 the seat that plays after it and, in the team variant,",
        "slot 2 its partner. Slots `k >= n` are 0. The legal-action mask travels beside the",
        "observation (`{\"observation\": ..., \"action_mask\": ...}`), never inside it; it follows",
        "the [action encoding](rules.md#action-encoding).",
        "",
        "The names are constants of `env.observation` (`P_*` for planes, `V_*` for offsets inside",
        "the vector part); code should index with them, never with the numbers.",
        "",
        "## Planes",
        "",
        "| plane | name | values | meaning |",
        "|---|---|---|---|",
    ]
    for row in sections["planes"]:
        out.append(f"| {span(row)} | {markdown(row['name'])} | {markdown(row['range'])} | {markdown(row['meaning'])} |")
    out += [
        "",
        "## Vector features",
        "",
        "| feature | flat index | name | values | meaning |",
        "|---|---|---|---|---|",
    ]
    for row in sections["vector"]:
        flat = {"first": v0 + row["first"], "last": v0 + row["last"]}
        out.append(f"| {span(row)} | {span(flat)} | {markdown(row['name'])} | {markdown(row['range'])} "
                   f"| {markdown(row['meaning'])} |")
    out += [
        "",
        "## Scales",
        "",
        "The divisors used above, as constants of `env.observation`:",
        "",
        "| constant | value |",
        "|---|---|",
    ]
    for name in ("SCORE_SCALE", "HAND_SCALE", "BAG_SCALE", "TURN_SCALE", "COUNT_SCALE", "POINTS_SCALE"):
        out.append(f"| `{name}` | {getattr(obs, name):g} |")
    return "\n".join(out) + "\n"


def write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)  # mkstemp creates the file private
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check that docs/observation.md is current")
    args = parser.parse_args(argv)
    text = render(observation_module())
    if args.check:
        current = PAGE.read_text() if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE} is out of date: run python docs/make_observation_doc.py", file=sys.stderr)
            return 1
        return 0
    write_atomically(PAGE, text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
