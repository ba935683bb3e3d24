"""#75.3: a TPU quota is the project's, so the plan adds the needs of the other stacks of the same project and region
beside it; a sibling it cannot read is named, never left out in silence."""

from __future__ import annotations

import json

from infra.offline.__main__ import main as offline_main
from tests.conftest import config_with, write_stack_file


def _plan(path, capsys, *extra):
    assert offline_main(["plan", "--config", str(path), *extra]) == 0
    return capsys.readouterr().out


def test_two_stacks_of_one_project_and_region_are_summed_and_others_are_not(tmp_path, capsys):
    own = write_stack_file(tmp_path, config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}]), name="Pulumi.alpha.yaml")
    alone = _plan(own, capsys)
    assert "Project quota:" not in alone  # nothing beside it yet
    write_stack_file(tmp_path, config_with(slices=[{"name": "b", "tpu": "v6e-16", "count": 1},
                                                   {"name": "s", "tpu": "v6e-16", "count": 1, "spot": True}]), name="Pulumi.beta.yaml")
    write_stack_file(tmp_path, config_with(gcp_project="other-proj-123"), name="Pulumi.gamma.yaml")  # another project
    write_stack_file(tmp_path, config_with(gcp_region="us-central1", gcp_zone="us-central1-c"), name="Pulumi.delta.yaml")
    out = _plan(own, capsys)
    block = out[out.index("Project quota:"):].split("\n\n")[0].splitlines()
    assert block == [
        "Project quota: stacks alpha, beta share project test-proj-123 in us-east5; its regional TPU quota must hold them together:",
        "  48 v6e on-demand chips (alpha 32, beta 16)",
        "  16 v6e preemptible chips (beta 16)"], block
    doc = json.loads(_plan(own, capsys, "--json"))
    assert doc["projectQuota"]["needs"][0] == {"family": "v6e", "kind": "on-demand", "chips": 48, "byStack": [{"stack": "alpha", "chips": 32}, {"stack": "beta", "chips": 16}]}


def test_a_sibling_of_the_project_that_does_not_load_is_named(tmp_path, capsys):
    own = write_stack_file(tmp_path, config_with(), name="Pulumi.alpha.yaml")
    write_stack_file(tmp_path, config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 0}]), name="Pulumi.broken.yaml")
    out = _plan(own, capsys)
    assert "  not counted, its file does not load: broken (pathways:slices[0].count" in out, out
