"""The README's snippets run as pasted (issue 9, defects 8 and 9)."""

from __future__ import annotations

import re
from pathlib import Path

from ordergrad_rl import cli

README = Path(__file__).resolve().parents[1] / "README.md"


def code_blocks(language: str) -> list[tuple[str, str]]:
    """``(section heading, code)`` of every fenced ``language`` block of the README, in order."""
    blocks, heading = [], ""
    for match in re.finditer(r"^(#+ [^\n]*)$|^```(\w*)\n(.*?)^```", README.read_text(), flags=re.M | re.S):
        if match.group(1):
            heading = match.group(1).lstrip("# ").strip()
        elif match.group(2) == language:
            blocks.append((heading, match.group(3)))
    return blocks


def synopsis_lines() -> list[str]:
    """The ``ordergrad-rl reproduce ...`` synopsis lines of the README."""
    return [
        line.strip()
        for _, code in code_blocks("bash")
        for line in code.splitlines()
        if line.startswith("ordergrad-rl reproduce ") and "[" in line
    ]


def test_reproduce_synopsis_offers_only_options_the_commands_take(tmp_path):
    """Defect 8: the synopsis offered ``[--seeds S]`` to every reproduction, and ``weights`` refused it."""
    values = {"S": "2", "DIR": str(tmp_path / "out"), "PATH": str(tmp_path / "x.json"), "SEED": "1"}
    lines = synopsis_lines()
    covered = set()
    for line in lines:
        head, _, options = line.partition(" [")
        names = re.fullmatch(r"ordergrad-rl reproduce \{?([\w,-]+)\}?", head).group(1).split(",")
        argv = []
        for option in re.findall(r"\[([^\]]+)\]", "[" + options):
            flag, *placeholder = option.split()
            argv += [flag, *(values[p] for p in placeholder)]
        for name in names:
            args = cli.build_parser().parse_args(["reproduce", name, *argv])  # SystemExit(2) if an option is refused
            assert args._run is not None
            covered.add(name)
    assert covered == set(cli.REPRODUCTIONS), "every reproduction appears in the synopsis"
