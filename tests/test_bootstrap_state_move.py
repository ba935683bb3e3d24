"""#75.6, the parts of `python -m bootstrap.move_state` that need no Pulumi CLI: where the state goes (the bucket the
bootstrap makes, from its own stack file) and the refusals before anything runs. The move itself, with the real CLI,
is tests_e2e/test_bootstrap_state.py."""

from __future__ import annotations

import pytest

from bootstrap import move_state
from tests.conftest import EXAMPLE_BOOTSTRAP


@pytest.mark.parametrize("path", sorted(EXAMPLE_BOOTSTRAP.glob("Pulumi.*.yaml")), ids=lambda p: p.stem)
def test_the_state_goes_to_the_bucket_the_bootstrap_makes(path):
    # the bucket the bootstrap's own plan creates (labelled pathways=pulumi-state), not a formula written again here
    from tests.test_bootstrap import example_bootstrap_plan

    (made,) = [b for b in example_bootstrap_plan(path.stem.removeprefix("Pulumi.")).by_type("gcp:storage/bucket:Bucket")
               if (b.input("labels") or {}).get("pathways") == "pulumi-state"]
    assert move_state.state_bucket(path) == made.input("name")


def test_a_named_state_bucket_wins_and_a_file_without_a_project_is_refused(tmp_path):
    named = tmp_path / "Pulumi.p.yaml"
    named.write_text("config:\n  gcp:project: p-123\n  pathways-bootstrap:stateBucket: our-state\n")
    assert move_state.state_bucket(named) == "our-state"
    empty = tmp_path / "Pulumi.q.yaml"
    empty.write_text("config: {}\n")
    with pytest.raises(move_state.MoveError, match="no gcp:project and no pathways-bootstrap:stateBucket"):
        move_state.state_bucket(empty)
    broken = tmp_path / "Pulumi.r.yaml"
    broken.write_text("config: [\n")
    with pytest.raises(move_state.MoveError, match="is not YAML"):
        move_state.state_bucket(broken)


def test_no_cli_is_one_line_not_a_traceback(tmp_path, capsys):
    (tmp_path / "Pulumi.p-123.yaml").write_text("config:\n  gcp:project: p-123\n")
    assert move_state.main(["p-123", "--to", "file:///nowhere", "--pulumi", str(tmp_path / "no-pulumi"), "--project-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot run {tmp_path / 'no-pulumi'}: No such file or directory")


def test_refusals_before_any_cli_call(tmp_path, capsys):
    never = tmp_path / "no-pulumi-here"  # running it would fail the test with another message
    assert move_state.main(["nope-123", "--pulumi", str(never), "--project-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'Pulumi.nope-123.yaml'} is missing")
    (tmp_path / "Pulumi.p-123.yaml").write_text("config:\n  gcp:project: p-123\n")
    assert move_state.main(["p-123", "--from", "gs://p-123-pulumi-state/", "--pulumi", str(never), "--project-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == "error: the state is in gs://p-123-pulumi-state already: nothing to move\n"
