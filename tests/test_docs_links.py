"""The README's and docs' references resolve: links and anchors, repository paths, the docstrings'
cross-references and the ``python scripts/...`` command lines they quote."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGE = ROOT / "ordergrad_rl"


def prose(path: Path) -> str:
    """The Markdown of ``path`` without its fenced code blocks (a ``# comment`` there is no heading)."""
    return re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (word characters, ``-`` and spaces kept),
    spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``path`` (a repeated heading gets ``-1``, ``-2`` ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#+ (.*)$", prose(path), flags=re.M):
        anchor = github_anchor(heading)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def local_links(path: Path) -> list[str]:
    """The relative link targets ``[text](target)`` of ``path``'s prose (web and mail links left out)."""
    return [link for link in re.findall(r"\]\(([^)\s]+)\)", prose(path)) if not re.match(r"\w+:", link)]


def test_the_checks_see_the_links():
    """A change of the link syntax that the regexes miss would make the other tests pass on nothing."""
    readme = local_links(ROOT / "README.md")
    assert "#objectives" in readme and "docs/benchmarks.md" in readme
    assert "objectives" in anchors(ROOT / "README.md")
    assert "high-yield-tail-risk-portfolio-paper-fig-tailrisk-toy-table-tailrisk-toy-metrics" in anchors(DOCS[0])


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_relative_links_and_their_anchors_resolve(path: Path):
    broken = []
    for link in local_links(path):
        target, _, fragment = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists():
            broken.append(f"{link}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{link}: no heading of {file.name} has the anchor #{fragment}")
    assert not broken, f"{path.name}: " + "; ".join(broken)


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_repository_paths_named_in_backticks_exist(path: Path):
    """``scripts/x.py``, ``docs/...``, ``tests/...`` and ``ordergrad_rl/...`` paths quoted in the prose."""
    pattern = r"(?<![\w./-])((?:scripts|docs|tests|ordergrad_rl)/[\w./-]*\w)"
    named = {match for span in re.findall(r"`([^`]*)`", prose(path)) for match in re.findall(pattern, span)}
    named = {name for name in named if "*" not in name and "<" not in name}
    missing = sorted(name for name in named if not (ROOT / name).exists())
    assert not missing, f"{path.name} names paths that do not exist: {missing}"


# ------------------------------------------------------------------------------------------- docstring references
def resolve(dotted: str) -> Any:
    """The object a dotted ``ordergrad_rl...`` name refers to: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise ModuleNotFoundError(dotted)


#: A fully qualified name of the package, as the docs quote them.
DOTTED = r"(?<![\w/])(ordergrad_rl(?:\.\w+)+)"


def test_docstring_cross_references_resolve():
    """Every fully qualified ``ordergrad_rl....`` name in the package's docstrings and comments (Sphinx roles,
    ``~`` or not, and double-backticked names) is importable: ``zoo/models.py`` named
    ``ordergrad_rl.agents.saving.saved_algorithm`` and ``ordergrad_rl.agents.passk_eval.PassAtK``, paths of the
    0.1.0 layout that no longer exist (``agents/common/`` holds both since)."""
    names: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for name in re.findall(r"(?:`~?|``)(ordergrad_rl(?:\.\w+)+)`", path.read_text(encoding="utf-8")):
            names.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    assert len(names) > 100, "the pattern finds the references"
    broken = []
    for name, files in sorted(names.items()):
        try:
            resolve(name)
        except (ImportError, AttributeError):
            broken.append(f"{name} (in {', '.join(sorted(files))})")
    assert not broken, broken


# ------------------------------------------------------------------------------------------------ script commands
class _Parsed(Exception):
    """Raised in place of running a script once its command line parsed."""


def script_commands() -> list[tuple[str, str, str]]:
    """``(document, script, arguments)`` of every ``python scripts/<name>.py ...`` quoted in backticks, but those
    with placeholders (``--task T``, ``...``, ``[--option]``) that are no command line as written."""
    commands = set()
    for path in DOCS:
        for span in re.findall(r"`([^`]*)`", prose(path), flags=re.S):
            match = re.fullmatch(r"python scripts/(\w+)\.py(.*)", " ".join(span.split()))
            if match and not re.search(r"\.\.\.|\b[A-Z]\b|[\[{<]", match.group(2)):
                commands.add((path.name, match.group(1), match.group(2).strip()))
    return sorted(commands)


def test_script_commands_are_found():
    assert ("README.md", "bench_agents", "--repeats 2") in script_commands()


@pytest.mark.parametrize("document, name, arguments", script_commands())
def test_script_commands_in_the_docs_parse(document, name, arguments, monkeypatch):
    """The options a quoted measurement command passes are the script's: each parses, and nothing runs."""
    argv = shlex.split(arguments)
    original = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, args=None, namespace=None):
        original(self, args, namespace)  # SystemExit(2) naming the option a script does not take
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *argv])
    try:
        script = load_script(name)
    except ModuleNotFoundError as err:
        pytest.skip(f"needs {err.name}")
    with pytest.raises(_Parsed):
        script.main(argv) if script.main.__code__.co_argcount else script.main()


# ---------------------------------------------------------------------------------------------- ordergrad-rl lines
#: What argparse says of a fragment quoted in prose (```ordergrad-rl evaluate```, ```train --eval-env```).
FRAGMENT = re.compile(r"the following arguments are required|expected one argument")


def cli_commands() -> list[tuple[str, str, bool]]:
    """``(document, command, in_prose)`` of every ``ordergrad-rl ...`` line of the bash blocks and of backticks
    in the prose, but synopses (``[...]``, ``{a,b}``, ``...``, placeholders such as ``N``)."""
    commands = set()
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        lines = [(" ".join(span.split()), True) for span in re.findall(r"`([^`]*)`", prose(path), flags=re.S)]
        for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.M | re.S):
            lines += [
                (" ".join(line.split(" #")[0].split()), False) for line in block.replace("\\\n", " ").splitlines()
            ]
        for line, in_prose in lines:
            if line.startswith("ordergrad-rl ") and not re.search(r"\.\.\.|…|[\[{<]|\b[A-Z]\b", line):
                commands.add((path.name, line, in_prose))
    return sorted(commands)


def test_cli_commands_are_found():
    commands = cli_commands()
    assert ("README.md", "ordergrad-rl reproduce benchmarks --quick", False) in commands
    assert len(commands) > 30


@pytest.mark.parametrize("document, command, in_prose", cli_commands())
def test_cli_commands_in_the_docs_parse(document, command, in_prose, capsys):
    """Every quoted ``ordergrad-rl`` command line names a command and options it takes (parsed, not run: the
    README's runnable examples run in ``test_readme.py``). A fragment in the prose may leave out a value or the
    model, never name an option or a choice that does not exist."""
    from ordergrad_rl import cli

    try:
        cli.build_parser().parse_args(shlex.split(command)[1:])
    except SystemExit as exit_info:
        error = capsys.readouterr().err.strip().splitlines()[-1]
        if not (in_prose and FRAGMENT.search(error)):
            pytest.fail(f"{document}: `{command}`: {error} (exit {exit_info.code})")


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_dotted_names_in_the_docs_resolve(path: Path):
    """``ordergrad_rl.x.y`` names quoted in the prose import: a module moved or renamed shows here."""
    names = {name for span in re.findall(r"`([^`]*)`", prose(path)) for name in re.findall(DOTTED, span)}
    broken = []
    for name in sorted(names):
        try:
            resolve(name)
        except (ImportError, AttributeError):
            broken.append(name)
    assert not broken, f"{path.name}: {broken}"


def help_examples() -> list[tuple[str, str]]:
    """``(prog, command)`` of the ``ordergrad-rl ...`` example lines of every command's ``--help`` text."""
    from ordergrad_rl import cli

    examples, parsers = [], [cli.build_parser()]
    while parsers:
        parser = parsers.pop()
        parser.format_help()  # loads a lazy command's options and description
        text = f"{parser.description or ''}\n{parser.epilog or ''}".replace("\\\n", " ")
        for line in re.findall(r"^ {4,}(ordergrad-rl .*)$", text, flags=re.M):  # the indented examples
            line = " ".join(line.split(" #")[0].split())
            if not re.search(r"\.\.\.|…|[\[{<]|\b[A-Z]\b", line):
                examples.append((parser.prog, line))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
    return sorted(set(examples))


def test_help_examples_parse(capsys):
    """The examples the commands' ``--help`` texts show run as pasted, as far as parsing goes."""
    from ordergrad_rl import cli

    examples = help_examples()
    assert any(prog == "ordergrad-rl train" for prog, _ in examples)
    for prog, command in examples:
        try:
            cli.build_parser().parse_args(shlex.split(command)[1:])
        except SystemExit:
            pytest.fail(f"{prog} --help: `{command}`: {capsys.readouterr().err.strip().splitlines()[-1]}")


# ------------------------------------------------------------------------------------------------ public docstrings
#: The public modules: their ``__all__``, or the names they define (the README's tabular toolkit).
PUBLIC_MODULES = (
    "ordergrad_rl",
    "ordergrad_rl.core",
    "ordergrad_rl.agents",
    "ordergrad_rl.envs",
    "ordergrad_rl.reasoning",
    "ordergrad_rl.agents.common.evaluation",
    "ordergrad_rl.envs.tabular",
    "ordergrad_rl.envs.tabular_history",
    "ordergrad_rl.envs.noise",
)


def public_callables() -> list[tuple[str, Any]]:
    """``(name, function)`` of the public modules' functions, classes and the classes' public methods defined in
    the package (what ``help(OrderGradPPO)`` and ``help(cvar_optimum)`` show)."""
    import inspect

    found, seen = [], set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None) or [
            name
            for name, obj in vars(module).items()
            if not name.startswith("_") and getattr(obj, "__module__", None) == module_name
        ]
        for name in names:
            obj = getattr(module, name)
            members = [(name, obj)] if inspect.isfunction(obj) or inspect.isclass(obj) else []
            if inspect.isclass(obj):
                for attribute in dir(obj):
                    member = inspect.getattr_static(obj, attribute)
                    function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
                    if (
                        not attribute.startswith("_")
                        and inspect.isfunction(function)
                        and function.__module__.startswith("ordergrad_rl")
                    ):
                        members.append((f"{name}.{attribute}", function))
            for label, member in members:
                if id(member) not in seen:
                    seen.add(id(member))
                    found.append((f"{module_name}.{label}", member))
    return found


def test_public_docstrings_document_exactly_their_parameters():
    """A public docstring that lists ``:param:`` lists every parameter, and none that does not exist:
    ``OrderStatTransform.value`` left out its rewards ``x``, ``ChannelObjective.parse`` its ``spec``,
    ``ChannelObjective.advantage_weights`` its ``normalize``, and the tabular toolkit its ``mdp`` (and
    ``TabularMDP.from_outcomes`` its ``outcomes`` and ``horizon``), among others."""
    import inspect

    wrong = []
    for name, function in public_callables():
        documented = {found.lstrip("*") for found in re.findall(r":param (\*{0,2}\w+):", function.__doc__ or "")}
        if not documented:
            continue
        parameters = inspect.signature(function).parameters.values()
        named = {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)} - {"self", "cls"}
        variadic = {p.name for p in parameters if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        missing = {name for name in named - documented if not name.startswith("_")}  # a dataclass's private fields
        unknown = documented - named - variadic
        if missing or unknown:
            wrong.append(f"{name}: undocumented {sorted(missing)}, not parameters {sorted(unknown)}")
    assert len(public_callables()) > 100
    assert not wrong, wrong
