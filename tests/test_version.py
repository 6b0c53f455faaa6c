"""One version number: the package, the installed distribution's metadata and the CLI agree."""

from importlib.metadata import version

import ordergrad_rl
from ordergrad_rl.cli import main
from ordergrad_rl.version import __version__


def test_the_package_and_the_distribution_have_one_version():
    assert ordergrad_rl.__version__ == __version__ == version("ordergrad-rl")


def test_cli_prints_the_version(capsys):
    try:
        main(["--version"])
    except SystemExit as exit_:
        assert exit_.code == 0
    assert capsys.readouterr().out.strip() == f"ordergrad-rl {__version__}"
