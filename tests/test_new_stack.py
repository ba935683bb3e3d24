"""One command starts an environment: `new-stack` from flags or from an xpk command line writes a commented stack file
and its bootstrap entry that plan OK, refuses what `plan` refuses (and writes nothing), and says what became of
every xpk flag. `plan-bootstrap` previews a project's bootstrap offline."""

from __future__ import annotations

import pytest
import yaml

from infra.offline.__main__ import main as offline_main
from infra.offline.stackfile import load_config
from tests.test_bootstrap import BOOTSTRAP_STACKS

IDS = ["--repository", "team/pathways", "--repository-id", "712345678", "--repository-owner-id", "81234567",
       "--project-number", "223456789012"]

# Command lines from xpk's own docs (AI-Hypercomputer/xpk at 367c838), shell variables put in where the doc has them.
XPK_LINES = {
    # recipes/Cluster_create_private.md
    "private-pathways": ("xpk cluster create-pathways --project=golden-project --zone=us-central1-a --cluster=golden-cluster-private "
                         "--private --tpu-type=v5p-8  --num-slices=1 --default-pool-cpu-machine-type=n1-standard-16 "
                         "--default-pool-cpu-num-nodes=4 --reservation=golden-reservation", []),
    # recipes/Cluster_create_private.md
    "private-endpoint": ("xpk cluster create --project=golden-project --zone=us-central1-a --cluster=golden-cluster-private-ep --private "
                         "--enable-private-endpoint --private-endpoint-subnetwork=golden-cp-subnet --authorized-networks 10.0.0.0/8 "
                         "--tpu-type=v5p-8 --num-slices=1 --on-demand", []),
    # docs/usage/clusters.md (no project or zone: xpk takes gcloud's; given here)
    "pathways-on-demand": ("xpk cluster create-pathways --cluster xpk-pw-test --num-slices=4 --on-demand --tpu-type=v5litepod-16",
                           ["--project", "team-ml-123", "--zone", "us-west4-a"]),
    # docs/usage/clusters.md
    "flex": ("xpk cluster create --cluster xpk-test --tpu-type=v5litepod-16 --num-slices=4 --flex",
             ["--project", "team-ml-123", "--zone", "us-west4-a"]),
    # xpk-notebooks.md
    "notebooks": ("xpk cluster create --cluster nb-cluster --project=team-ml-123 --default-pool-cpu-machine-type=n2-standard-8 "
                  "--num-slices=1 --tpu-type=v5litepod-256 --zone=us-west4-a --spot "
                  "--custom-cluster-arguments=\"--network=mtu9k --subnetwork=mtu9k\"", []),
    # .github/workflows/integration_pathways_cluster_create.yaml
    "v4-reservation": ("xpk cluster create-pathways --cluster tpu-cluster --tpu-type=v4-8  --num-slices=2 --zone=us-central2-b "
                       "--project=team-ml-123 --default-pool-cpu-machine-type=n1-standard-16 --default-pool-cpu-num-nodes=4 "
                       "--reservation=\"v4-reservation\"", []),
}


def new_stack(tmp_path, *args) -> int:
    return offline_main(["new-stack", *args, "--stacks-dir", str(tmp_path / "stacks"), "--bootstrap-dir", str(tmp_path / "bootstrap"), *IDS])


def written(tmp_path, name: str) -> dict:
    return yaml.safe_load((tmp_path / "stacks" / f"Pulumi.{name}.yaml").read_text())["config"]


def test_flags_write_a_stack_that_plans_ok_and_its_bootstrap(tmp_path, capsys):
    assert new_stack(tmp_path, "team-a", "--project", "team-a-ml", "--zone", "us-central1-a", "--tpu", "v5p-8", "--slices", "2", "--spot") == 0
    out = capsys.readouterr().out
    assert "Verdict: OK - the policy pack passes" in out and "next: make plan STACK=team-a" in out
    config = written(tmp_path, "team-a")
    assert config["gcp:project"] == "team-a-ml" and config["gcp:region"] == "us-central1" and config["gcp:zone"] == "us-central1-a"
    assert config["pathways:slices"] == [{"name": "v5p", "tpu": "v5p-8", "count": 2, "spot": True}]
    assert config["pathways:protected"] is False
    text = (tmp_path / "stacks" / "Pulumi.team-a.yaml").read_text()
    assert text.count("#") >= 8  # every key says why
    # and it plans as `plan` plans it
    assert offline_main(["plan", "--config", str(tmp_path / "stacks" / "Pulumi.team-a.yaml")]) == 0
    boot = yaml.safe_load((tmp_path / "bootstrap" / "Pulumi.team-a-ml.yaml").read_text())["config"]
    assert boot["pathways-bootstrap:stacks"] == ["team-a"] and boot["pathways-bootstrap:projectNumber"] == "223456789012"


def test_a_second_stack_of_the_project_joins_its_bootstrap_file_comments_kept(tmp_path):
    assert new_stack(tmp_path, "team-a", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-8") == 0
    path = tmp_path / "bootstrap" / "Pulumi.team-a-ml.yaml"
    path.write_text(path.read_text().replace("config:", "# ours\nconfig:"))
    assert new_stack(tmp_path, "team-b", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-16", "--flex-start") == 0
    assert yaml.safe_load(path.read_text())["config"]["pathways-bootstrap:stacks"] == ["team-a", "team-b"]
    assert "# ours" in path.read_text()
    assert written(tmp_path, "team-b")["pathways:slices"][0]["flexStart"] is True


@pytest.mark.parametrize("args,error", [
    (["t", "--project", "team-a-ml", "--zone", "us-central1-a", "--tpu", "tpu7x-8"],
     "pathways:slices[0].tpu: TPU tpu7x is not offered in gcp:zone us-central1-a"),
    (["t", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-12"], "pathways:slices[0].tpu:"),
    (["t", "--project", "Team_A", "--zone", "us-east5-b", "--tpu", "v6e-8"], "--project: 'Team_A' is not a project ID"),
    (["t", "--zone", "us-east5-b", "--tpu", "v6e-8"], "new-stack: missing --project"),
    (["t", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-8", "--slices", "0"], "--slices: 0 is not a number of slices"),
])
def test_what_plan_refuses_new_stack_refuses_and_writes_nothing(tmp_path, capsys, args, error):
    assert new_stack(tmp_path, *args) == 2
    err = capsys.readouterr().err
    assert error in err and all(line.startswith("error: ") for line in err.splitlines())
    assert not (tmp_path / "stacks").exists() and not (tmp_path / "bootstrap").exists()


def test_an_existing_stack_file_is_never_overwritten(tmp_path, capsys):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.t.yaml").write_text("config: {}\n")
    assert new_stack(tmp_path, "t", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-8") == 2
    assert "exists: new-stack writes new stacks only" in capsys.readouterr().err
    assert (tmp_path / "stacks" / "Pulumi.t.yaml").read_text() == "config: {}\n"


def test_a_bootstrap_file_that_is_not_yaml_is_named_not_a_traceback(tmp_path, capsys):
    (tmp_path / "bootstrap").mkdir()
    (tmp_path / "bootstrap" / "Pulumi.team-a-ml.yaml").write_text("config: [unclosed\n")
    assert new_stack(tmp_path, "t", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-8") == 2
    err = capsys.readouterr().err
    assert "Pulumi.team-a-ml.yaml: not YAML" in err and "Traceback" not in err
    assert not (tmp_path / "stacks" / "Pulumi.t.yaml").exists()


def test_without_the_github_ids_the_bootstrap_says_what_to_fill_in(tmp_path, capsys):
    args = ["new-stack", "t", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-8", "--repository", "team/p",
            "--stacks-dir", str(tmp_path / "stacks"), "--bootstrap-dir", str(tmp_path / "bootstrap")]
    assert offline_main(args) == 0
    out = capsys.readouterr().out
    assert "to fill in before the bootstrap can run: pathways-bootstrap:repositoryId (gh api repos/OWNER/NAME --jq .id)" in out
    assert offline_main(["plan-bootstrap", "--config", str(tmp_path / "bootstrap" / "Pulumi.team-a-ml.yaml")]) == 2
    assert "pathways-bootstrap:repositoryId: '' is not a GitHub ID" in capsys.readouterr().err


@pytest.mark.parametrize("case", sorted(XPK_LINES))
def test_xpk_command_lines_from_xpks_docs_become_stacks_that_plan_ok(tmp_path, capsys, case):
    line, extra = XPK_LINES[case]
    assert new_stack(tmp_path, "--from-xpk", line, *extra) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "Verdict: OK - the policy pack passes" in out
    (path,) = (tmp_path / "stacks").glob("Pulumi.*.yaml")
    config, _ = load_config(path)
    cluster = yaml.safe_load(config["pathways:cluster"])
    assert path.name == f"Pulumi.{cluster['name']}.yaml"  # xpk's --cluster names the stack and the cluster
    assert "--tpu-type" in out and "-> pathways:slices[0].tpu" in out


def test_each_xpk_flag_is_translated_already_so_or_named(tmp_path, capsys):
    line = XPK_LINES["private-endpoint"][0] + " --gke-version=1.33 --pathways-gce-machine-type=n2-standard-80 --enable-mtc --mtc-ramdisk-size=50Gi"
    assert new_stack(tmp_path, "--from-xpk", line) == 0
    out = capsys.readouterr().out
    translated, already, untranslated = (out.split(f"xpk flags {t}:\n")[1].split("xpk flags")[0].split("wrote")[0]
                                         for t in ("translated", "already so here", "not translated"))
    for flag in ("--project", "--zone", "--cluster", "--tpu-type", "--num-slices", "--authorized-networks", "--gke-version",
                 "--pathways-gce-machine-type"):
        assert f"  {flag} " in translated, flag
    for flag in ("--private", "--enable-private-endpoint", "--on-demand"):
        assert f"  {flag}:" in already, flag
    assert "  --private-endpoint-subnetwork golden-cp-subnet: " in untranslated
    assert "  --enable-mtc --mtc-ramdisk-size 50Gi: add pathways:resilience.mtc.inMemoryVolumeSize: 50Gi" in untranslated
    config = written(tmp_path, "golden-cluster-private-ep")
    assert config["pathways:cluster"]["masterAuthorizedNetworks"] == [{"cidrBlock": "10.0.0.0/8"}]
    assert config["pathways:cluster"]["minMasterVersion"] == "1.33"
    assert config["pathways:headPool"] == {"machineType": "n2-standard-80"}


def test_xpk_abbreviations_and_the_topology_form_are_understood(tmp_path):
    # argparse, which xpk uses, takes a flag's unambiguous prefix; xpk takes v6e-4x4 for v6e-16
    assert new_stack(tmp_path, "--from-xpk", "xpk cluster create --cluster c1 --project team-ml-123 --zone us-east5-b "
                     "--tpu-type v6e-4x4 --num-slice 2 --spot") == 0
    assert written(tmp_path, "c1")["pathways:slices"] == [{"name": "v6e", "tpu": {"family": "v6e", "topology": "4x4"}, "count": 2, "spot": True}]


@pytest.mark.parametrize("line,error", [
    ("xpk workload create --cluster c --workload w", "'xpk workload create' makes no cluster"),
    ("xpk cluster create --cluster ${CLUSTER} --tpu-type v6e-8", "unexpanded shell variable(s) ${CLUSTER}"),
    ("xpk cluster create --cluster c --tpu-type v6e-8 --bogus 1", "'--bogus' is not an xpk cluster create flag"),
    ("xpk cluster create --cluster c --device-type n2-standard-64-1", "no --tpu-type: only TPU slices are made here"),
    ("xpk cluster create --cluster c --tpu-type v6e-8 --spot --flex", "--spot and --flex: xpk takes one capacity flag"),
    ("gcloud container clusters create c", "not an xpk command line"),
])
def test_what_is_not_an_xpk_cluster_is_refused_in_one_line(tmp_path, capsys, line, error):
    assert new_stack(tmp_path, "--from-xpk", line, "--project", "team-ml-123", "--zone", "us-east5-b") == 2
    assert error in capsys.readouterr().err


def test_flags_given_beside_an_xpk_line_win_and_are_said(tmp_path, capsys):
    assert new_stack(tmp_path, "mine", "--from-xpk", XPK_LINES["flex"][0], "--project", "team-ml-123", "--zone", "us-west4-a",
                     "--slices", "2") == 0
    assert "--slices 2 given here, in place of the xpk line's 4" in capsys.readouterr().out
    assert written(tmp_path, "mine")["pathways:slices"][0]["count"] == 2


@pytest.mark.every_stack
@pytest.mark.parametrize("project", BOOTSTRAP_STACKS)
def test_each_bootstrap_previews_offline_with_its_grants_and_verdict(capsys, project):
    assert offline_main(["plan-bootstrap", "--project", project]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Plan for the bootstrap of {project!r}")
    assert "\nGrants (" in out and out.rstrip().splitlines()[-1].startswith("Verdict: OK - the policy pack passes")
    # no grant the pack's stack rules flag: buckets are created with a custom role of storage.buckets.create alone,
    # where storage.editor (storage.hmacKeys.*) stood as "by design" before security #73.1
    assert "By design" not in out and "roles/storage.editor" not in out


def test_plan_bootstrap_of_an_unknown_project_names_the_known_ones(capsys):
    assert offline_main(["plan-bootstrap", "--project", "nope-123"]) == 2
    assert "no such bootstrap file (projects with one: " in capsys.readouterr().err


@pytest.mark.parametrize("where", ["stacks/Pulumi.t.yaml", "bootstrap/Pulumi.team-a-ml.yaml"])
def test_security_73_13_a_link_where_a_file_goes_is_refused_and_nothing_is_written(tmp_path, capsys, where):
    # a dangling symlink: exists() says no, and a plain write would create its target wherever it points
    for d in ("stacks", "bootstrap"):
        (tmp_path / d).mkdir()
    target = tmp_path / "elsewhere" / "victim.yaml"
    (tmp_path / where).symlink_to(target)
    assert new_stack(tmp_path, "t", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-8") == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "is a symbolic link: new-stack writes regular files only" in line
    assert not target.exists() and not (tmp_path / "stacks" / "Pulumi.t.yaml").is_file()


@pytest.mark.parametrize("line", [
    # a value with a newline and YAML after it: unquoted, it wrote a run submitter of its own into the file
    'xpk cluster create-pathways --cluster c --tpu-type "v6e-8\n  pathways:runs: {submitters: [{name: evil@example.com}]}" '
    "--num-slices 1 --zone us-east5-b --project team-ml-123",
    'xpk cluster create-pathways --cluster "c\n  pathways:runs: {}" --tpu-type v6e-8 --zone us-east5-b --project team-ml-123',
])
def test_security_73_5_a_crafted_xpk_line_is_refused_in_one_line_and_nothing_is_written(tmp_path, capsys, line):
    code = new_stack(tmp_path, "--from-xpk", line)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert not (tmp_path / "stacks").exists() or not list((tmp_path / "stacks").iterdir())
    assert not (tmp_path / "bootstrap").exists() or not list((tmp_path / "bootstrap").iterdir())


def test_security_73_5_a_slice_name_outside_its_grammar_is_refused(tmp_path, capsys):
    assert new_stack(tmp_path, "t", "--project", "team-a-ml", "--zone", "us-east5-b", "--tpu", "v6e-8",
                     "--slice-name", "a\n  pathways:runs: {}") == 2
    assert "--slice-name: " in capsys.readouterr().err and not (tmp_path / "stacks").exists()


def test_protected_writes_all_production_needs_and_the_bootstrap_makes_its_key(tmp_path, capsys, monkeypatch):
    # #75.2: prod in one command
    from bootstrap import main_stack
    from infra.offline import engine
    from tests.test_bootstrap import BOOTSTRAP

    args = ["prod-eu", "--project", "acme-prod-eu", "--zone", "europe-west4-a", "--tpu", "v5p-8", "--protected", "--root", str(tmp_path)]
    assert new_stack(tmp_path, *args) == 0
    out = capsys.readouterr().out
    assert "wrote " in out and "config.prod-eu.json" in out and "Verdict: OK - the policy pack passes" in out
    path = tmp_path / "stacks" / "Pulumi.prod-eu.yaml"
    doc = yaml.safe_load(path.read_text())
    assert doc["secretsprovider"] == "gcpkms://projects/acme-prod-eu/locations/europe-west4/keyRings/pulumi/cryptoKeys/pulumi-prod-eu"
    config = doc["config"]
    assert config["pathways:protected"] is True
    (exclusion,) = config["pathways:cluster"]["maintenance"]["exclusions"]
    assert exclusion["scope"] == "NO_MINOR_OR_NODE_UPGRADES" and exclusion["endTime"] == "2027-04-10T00:00:00Z"
    assert config["pathways:cluster"]["maintenance"]["window"]["recurrence"] == "FREQ=WEEKLY;BYDAY=SA,SU"
    policy = tmp_path / "policies" / "config.prod-eu.json"
    assert yaml.safe_load(policy.read_text()) == {"pathways-cluster-hardening": {"protectedStacks": ["prod-eu"]}}
    assert offline_main(["plan", "--config", str(path), "--policy-config", str(policy)]) == 0
    # the policy config demands the flag: the same file with protection off fails its plan
    path.write_text(path.read_text().replace("pathways:protected: true", "pathways:protected: false"))
    assert offline_main(["plan", "--config", str(path), "--policy-config", str(policy)]) == 1
    path.write_text(path.read_text().replace("pathways:protected: false", "pathways:protected: true"))
    # the bootstrap of its project makes the key its secretsprovider names
    monkeypatch.setattr(main_stack, "STACKS_DIR", tmp_path / "stacks")
    boot, _ = load_config(tmp_path / "bootstrap" / "Pulumi.acme-prod-eu.yaml")
    keys = [r for r in engine.run(boot, "acme-prod-eu", program_dir=BOOTSTRAP).resources if r.type == "gcp:kms/cryptoKey:CryptoKey"]
    assert [k.input("name") for k in keys] == ["pulumi-prod-eu"]
    # an existing policy config is never overwritten
    assert new_stack(tmp_path, "prod-eu-2", *args[1:-2], "--root", str(tmp_path)) == 0
    policy2 = tmp_path / "policies" / "config.prod-eu-3.json"
    policy2.write_text("{}")
    assert new_stack(tmp_path, "prod-eu-3", *args[1:]) == 2
    assert "config.prod-eu-3.json exists" in capsys.readouterr().err
