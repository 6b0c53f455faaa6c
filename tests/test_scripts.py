"""The maintenance and measurement scripts of ``scripts/``: argument checks before any work, and a run of each
fixed script at its smallest setting."""

from __future__ import annotations

import pytest
from conftest import load_script as load

import ordergrad_rl


# ------------------------------------------------------------------------------------------- make_saved_fixtures
def test_make_saved_fixtures_refuses_an_existing_release_directory(tmp_path, capsys):
    script = load("make_saved_fixtures")
    release = script.release_directory(tmp_path)
    assert release.name == f"saved_{ordergrad_rl.__version__.replace('.', '_')}"
    release.mkdir()
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--out", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--force" in err
    assert list(release.iterdir()) == []  # nothing trained, nothing written
    assert script.parse_args(["--out", str(tmp_path), "--force"]).force


def test_make_saved_fixtures_writes_into_out_only(tmp_path):
    script = load("make_saved_fixtures")
    args = script.parse_args(["--out", str(tmp_path / "new")])
    assert args.out == tmp_path / "new" and not args.force
    assert script.parse_args([]).out == script.ROOT  # default: the tests' fixtures, as documented


def test_make_saved_fixtures_refuses_an_out_that_is_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit):
        load("make_saved_fixtures").parse_args(["--out", str(tmp_path / "file")])
    assert "--out" in capsys.readouterr().err
