"""Change safety: what one-field edits do to a running stack, and the guard for protected stacks.

Replacement rules come from the providers (infra/offline/change_rules.py names the source files);
these tests pin the classification a reviewer sees for the edits people actually make."""

from __future__ import annotations

import copy
import json
import re
import subprocess

import pytest
import yaml

from infra.offline.change_rules import (
    FORCE_NEW,
    IDENTITY_KEYED,
    NAME_SCOPE,
    NAMED_FROM_INPUTS,
    REPLACE_REFUSED,
    SERVER_NAMED,
    forcing_paths,
)
from infra.offline.diff import UNCHANGEABLE_TYPES, diff, guard
from tests.conftest import ROOT, STACKS, config_with, every_stack, example_path, in_zone_of, plan_of, stack_plan

JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
POOL = "gcp:container/nodePool:NodePool"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"


def tpu_pools(plan):
    return [r for r in plan.by_type(POOL) if (r.input("nodeConfig.labels") or {}).get("pathways/slice-group")]


def stack_config(stack: str) -> dict:
    """A committed stack's config, without its recorded reservations: these tests make larger, moved and renamed
    stacks to see what the diff says, which the records would refuse first (tests/test_reservations.py has that)."""
    config = yaml.safe_load(example_path(stack).read_text())["config"]
    for group in config.get("pathways:slices") or []:
        group.pop("reservationRecord", None)
    return config


def edit(config: dict, key: str, fn) -> dict:
    out = copy.deepcopy(config)
    out[key] = fn(copy.deepcopy(out.get(key)))
    return out


def run_diff(stack: str, after: dict, allow: list[str] = ()):
    before_cfg = stack_config(stack)
    if allow:
        after = {**after, "pathways:allowDisruption": list(allow)}
    before, after_plan = plan_of(before_cfg, stack), plan_of(after, stack)
    changes = diff(before, after_plan)
    protected = bool(after.get("pathways:protected"))
    verdict = guard(changes, before, after_plan, protected, list(after.get("pathways:allowDisruption", [])))
    return {c.name: c for c in changes}, verdict


def _set_group(field, value, group="train"):
    def fn(groups):
        for g in groups:
            if g["name"] == group:
                g[field] = value
        return groups
    return fn


def _set_workload(field, value, name):
    def fn(ws):
        for w in ws:
            if w["name"] == name:
                w[field] = value
        return ws
    return fn


def _count(delta):
    def fn(groups):
        groups[0]["count"] += delta
        return groups
    return fn


# (edit id, stack, config key, edit, {resource: action}, replaced-by input (for one of them), interrupted workloads)
# prod's colocated-Python sidecar (multi-tier checkpointing writes from it), built for the stack's JAX
SIDECAR = "us-docker.pkg.dev/pathways-prod-123/train/sidecar:20261120-python_3.12-jax_0.9.0"

EDITS = [
    ("reservation rename", "prod", "pathways:slices", _set_group("reservation", "pathways-prod-v5p-b"),
     {f"slices-train-{i}": "replace" for i in range(4)}, "nodeConfig.reservationAffinity.values", {"pretrain"}),
    ("cachePrefix", "prod", "pathways:bucket", lambda b: {**b, "cachePrefix": "cache-v2"},
     {"workload-pretrain": "replace", "workload-notebook": "replace"}, "spec.replicatedJobs", {"pretrain", "notebook"}),
    ("pathwaysVersion bump", "prod", "pathways:pathwaysVersion", lambda _: "jax-0.7.3",
     {"workload-pretrain": "replace", "workload-notebook": "replace"}, "spec.replicatedJobs", {"pretrain", "notebook"}),
    ("image bump", "prod", "pathways:workloads", _set_workload("image", "us-docker.pkg.dev/pathways-prod-123/train/trainer:2026-11-27", "pretrain"),
     {"workload-pretrain": "replace"}, "spec.replicatedJobs", {"pretrain"}),
    ("slice count +1", "staging", "pathways:slices", _count(+1),
     {"slices-v6e-2": "create"}, None, set()),
    ("slice count -1", "staging", "pathways:slices", _count(-1),
     # notebook uses 1 of the group's slices, which may be this one: both are named
     {"slices-v6e-1": "delete", "workload-train-smoke": "replace"}, "spec.replicatedJobs", {"train-smoke", "notebook"}),
    ("bucket TTL", "prod", "pathways:bucket", lambda b: {**b, "artifactsTtlDays": 21},
     {"scratch-artifacts": "update"}, None, set()),
    ("add a workload", "prod", "pathways:workloads", lambda ws: ws + [{"name": "eval", "mode": "batch", "sliceGroup": "explore", "image": "us-docker.pkg.dev/pathways-prod-123/train/eval:1",
                                                           "colocatedPython": {"image": SIDECAR}}],
     {"workload-eval": "create", "head-pool": "update"}, None, set()),
]

# Edits that need a second key to stay valid (the model refuses them otherwise).
COMPANIONS = {
    # prod's sidecar is built for the stack's JAX (multi-tier checkpointing needs it)
    "pathwaysVersion bump": ("pathways:workloads", _set_workload("colocatedPython", {"image": SIDECAR.replace("jax_0.9.0", "jax_0.7.3")}, "pretrain")),
    "slice count -1": ("pathways:workloads", _set_workload("slices", 1, "train-smoke")),
    "add a workload": ("pathways:headPool", lambda h: {**h, "nodeCount": 3}),
}


def edited(case, stack, key, fn):
    config = edit(stack_config(stack), key, fn)
    if case in COMPANIONS:
        config = edit(config, *COMPANIONS[case])
    return config


@pytest.mark.parametrize("case,stack,key,fn,expected,forced_by,interrupted", EDITS, ids=[e[0] for e in EDITS])
def test_edit_classification(case, stack, key, fn, expected, forced_by, interrupted):
    changes, _ = run_diff(stack, edited(case, stack, key, fn))
    for name, action in expected.items():
        assert name in changes and changes[name].action == action, (name, {n: c.action for n, c in changes.items()})
    if forced_by:
        assert any(forced_by in c.forced_by for c in changes.values() if c.action == "replace")
    hit = {i.split(" (")[0] for c in changes.values() for i in c.interrupts if " (" in i}
    assert hit == interrupted


def test_removing_a_slice_names_what_ran_on_it():
    case = next(e for e in EDITS if e[0] == "slice count -1")
    changes, _ = run_diff("staging", edited(*case[:4]))
    assert "train-smoke (batch, maxRestarts 3): restarts from its last checkpoint, or from step 0 without one" in changes["slices-v6e-1"].interrupts


@pytest.mark.parametrize("case,stack,key,fn,expected,forced_by,interrupted", EDITS, ids=[e[0] for e in EDITS])
def test_guard_verdicts(case, stack, key, fn, expected, forced_by, interrupted):
    after = edited(case, stack, key, fn)
    changes, verdict = run_diff(stack, after)
    destructive = {n for n, c in changes.items() if c.destructive and c.type in (POOL, JOBSET, "gcp:container/cluster:Cluster", "gcp:storage/bucket:Bucket")}
    if stack == "prod":  # protected
        assert verdict.ok == (not destructive), verdict.refusals
        if destructive:
            # stated in the same change, it passes
            _, allowed = run_diff(stack, after, allow=sorted(destructive))
            assert allowed.ok, allowed.refusals
    else:  # staging is unprotected: listed, never refused
        assert verdict.ok and not verdict.protected


def test_zone_moves_are_refused_in_protected_stacks_even_when_allowed():
    after = {**stack_config("prod"), "gcp:zone": "us-east5-b"}
    changes, verdict = run_diff("prod", after, allow=["*"])
    assert not verdict.ok and verdict.refusals[0].startswith("zone us-east5-a -> us-east5-b: a protected stack never moves zones")
    # the pools' node locations move: an in-place update that recreates every node
    assert changes["slices-train-0"].action == "update" and changes["slices-train-0"].disruptive == ["nodeLocations"]
    staging_after = {**stack_config("staging"), "gcp:zone": "us-east5-c"}
    changes, verdict = run_diff("staging", staging_after)
    assert verdict.ok  # unprotected: shown, not refused
    assert changes["cluster"].action == "replace" and changes["cluster"].forced_by == ["location"]  # zonal cluster


def test_suspending_a_workload_holds_its_queue_in_place():
    # Kueue owns spec.suspend of a queued JobSet: suspension holds the workload's LocalQueue instead
    after = edit(stack_config("prod"), "pathways:workloads", _set_workload("state", "suspended", "pretrain"))
    changes, verdict = run_diff("prod", after)
    queue = changes["kueue-localqueue-pathways-pretrain"]
    assert queue.action == "update" and queue.changed == ["spec.stopPolicy"]
    assert "workload-pretrain" not in changes
    assert verdict.ok


def test_finishing_a_batch_run_deletes_its_jobset_only():
    after = edit(stack_config("prod"), "pathways:workloads", _set_workload("state", "finished", "pretrain"))
    changes, verdict = run_diff("prod", after, allow=["workload-pretrain"])
    assert changes["workload-pretrain"].action == "delete"
    # and the idle-TPU alert, which watched the only running batch workload (an alert is no disruption: not guarded)
    # and its LocalQueue
    assert {n for n, c in changes.items() if c.action in ("replace", "delete")} == {
        "workload-pretrain", "observability-alert-2", "kueue-localqueue-pathways-pretrain"}
    assert verdict.ok and verdict.unused_allowances == []


def test_force_new_rules_are_provider_facts():
    # A few written out from terraform-provider-google e03b7622 (ForceNew: true in the schemas)
    assert forcing_paths(POOL, ["placementPolicy.tpuTopology", "nodeConfig.labels", "nodeLocations"]) == ["placementPolicy.tpuTopology"]
    assert forcing_paths(POOL, ["nodeConfig.reservationAffinity.values", "autoscaling.maxNodeCount"]) == ["nodeConfig.reservationAffinity.values"]
    assert forcing_paths("gcp:storage/bucket:Bucket", ["lifecycleRules", "location"]) == ["location"]
    assert forcing_paths("gcp:compute/firewall:Firewall", ["sourceRanges", "direction"]) == ["direction"]
    assert set(FORCE_NEW["gcp:compute/resourcePolicy:ResourcePolicy"]) >= {"workloadPolicy", "region"}


def test_cli_against_a_git_ref(tmp_path, capsys):
    from infra.offline.__main__ import main

    fixture = str(example_path("prod").relative_to(ROOT))
    unchanged = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", fixture], cwd=ROOT).returncode == 0 and \
        subprocess.run(["git", "cat-file", "-e", f"HEAD:{fixture}"], cwd=ROOT, capture_output=True).returncode == 0
    assert main(["diff", "--config", str(example_path("prod")), "--against", "HEAD"]) in (0, 1)
    out = capsys.readouterr().out
    assert out.startswith("Changes to stack 'prod' against HEAD")
    if unchanged:
        assert "no changes" in out
    assert main(["diff", "--config", str(example_path("prod")), "--against", "no-such-ref-xyz"]) == 2
    assert "not a git revision here" in capsys.readouterr().err
    after = tmp_path / "Pulumi.prod.yaml"
    after.write_text(yaml.safe_dump({"config": edit(stack_config("prod"), "pathways:slices", _set_group("reservation", "r2"))}))
    assert main(["diff", "--config", str(after), "--before", str(example_path("prod")), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["guard"]["ok"] is False and len(doc["guard"]["refusals"]) == 4
    assert {c["name"] for c in doc["changes"] if c["action"] == "replace"} == {f"slices-train-{i}" for i in range(4)}


def test_turning_protection_off_in_the_same_change_as_a_replacement_is_still_guarded(tmp_path, capsys):
    # #75.2: protection is judged from the file before the change too; drop it in a change of its own first
    from infra.offline.__main__ import main

    config = edit(stack_config("prod"), "pathways:slices", _set_group("reservation", "r2"))
    config = {**config, "pathways:protected": False, "pathways:cluster": {**config["pathways:cluster"], "deletionProtection": True}}
    after = tmp_path / "Pulumi.prod.yaml"
    after.write_text(yaml.safe_dump({"config": config}))
    assert main(["diff", "--config", str(after), "--before", str(example_path("prod")), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["guard"]["protected"] is True and len(doc["guard"]["refusals"]) == 4
    # the same replacements, starting from an unprotected file, are that stack's own business
    before = tmp_path / "before.yaml"
    before.write_text(yaml.safe_dump({"config": {**stack_config("prod"), "pathways:protected": False,
                                                 "pathways:cluster": {**stack_config("prod")["pathways:cluster"], "deletionProtection": True}}}))
    assert main(["diff", "--config", str(after), "--before", str(before), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["guard"]["protected"] is False


def test_make_diff_target_exists():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    assert "diff:" in text and "--against $(REF)" in text
    assert subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True).returncode == 0


def test_the_review_shows_old_and_new_values_the_capacity_delta_and_one_pattern_per_group(tmp_path, capsys):
    from infra.offline.__main__ import main

    after = tmp_path / "Pulumi.prod.yaml"
    after.write_text(yaml.safe_dump({"config": edit(stack_config("prod"), "pathways:slices", _set_group("tpu", "v5p-256"))}))
    assert main(["diff", "--config", str(after), "--before", str(example_path("prod"))]) == 1
    out = capsys.readouterr().out
    # each changed field, old -> new, down into lists and keys with dots
    assert "          placementPolicy.tpuTopology: 4x4x4 -> 4x4x8\n" in out and "          nodeCount: 16 -> 32\n" in out
    assert "spec.replicatedJobs[1].template.spec.completions: 16 -> 32" in out
    assert "spec.nodeLabels.cloud.google.com/gke-tpu-topology: 4x4x4 -> 4x4x8" in out
    assert "nominalQuota: 256 -> 512" in out  # the TPU quota follows the pools
    # chips and cost of the change: 4 slices of v5p-128 (64 chips) -> v5p-256 (128 chips)
    assert "Capacity: 264 -> 520 TPU chips; estimated cost $1,115.65 -> $2,190.85/hour (+$1,075.20/hour, +$784,896/month)" in out
    assert 'to allow each group\'s pools at once: pathways:allowDisruption: ["slices-train-*"]' in out
    assert main(["diff", "--config", str(after), "--before", str(example_path("prod")), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    pool = next(c for c in doc["changes"] if c["name"] == "slices-train-0")
    assert pool["values"]["nodeCount"] == {"old": 16, "new": 32}
    assert doc["capacity"] == {"before": {"chips": 264, "hourly": 1115.65}, "after": {"chips": 520, "hourly": 2190.85}}
    assert doc["guard"]["suggestions"] == ["slices-train-*"]


def test_a_zone_move_replaces_what_the_zone_holds_and_renders():
    from infra.offline.diff import render_text

    after = {**stack_config("staging"), "gcp:zone": "us-east5-c"}
    changes, verdict = run_diff("staging", after)
    replaced = sorted(n for n, c in changes.items() if c.action == "replace")
    # the cluster, its pools and provider, and what that provider manages; never the buckets, IAM or accounts
    assert "cluster" in replaced and "gke" in replaced and "slices-v6e-0" in replaced
    assert not [n for n in replaced if n.startswith(("scratch", "pathways-nodes", "system-nodes", "pathways-ports"))], replaced
    assert all(changes[n].type.startswith(("gcp:container/", "kubernetes:", "pulumi:providers:kubernetes", "gcp:compute/resourcePolicy"))
               for n in replaced), replaced
    assert len(replaced) == len([c for c in changes.values() if c.action == "replace"]) == 32  # train-smoke's service account too (the file system's volume and claim get new names: the zone is in them), the queued group's admission check and its config, the spot rung's pool and flavor
    assert changes["cluster"].interrupts[0] == "every workload and slice of the stack"
    text = render_text(list(changes.values()), verdict, "t")
    assert "  -/+ replace  cluster (Cluster)  forced by " in text


def test_a_regional_clusters_zone_move_recreates_its_nodes():
    # prod's cluster is regional: moving the zone changes its nodeLocations, which GKE applies in place by
    # recreating the nodes (change_rules.DISRUPTIVE_UPDATES)
    after = {**stack_config("prod"), "gcp:zone": "us-east5-b"}
    changes, _ = run_diff("prod", after)
    cluster = changes["cluster"]
    assert cluster.action == "update" and cluster.disruptive == ["nodeLocations"]
    assert "every workload and slice of the stack" in cluster.interrupts


def test_the_text_review_marks_each_action():
    from infra.offline.diff import Change, Verdict, render_text

    changes = [
        Change("old-pool", POOL, "delete", interrupts=["pretrain (batch, maxRestarts 3): stops the run"]),
        Change("queue", "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "update",
               changed=[f"spec.f{i}" for i in range(7)], values={"spec.f0": (1, 2)}),
        Change("new-pool", POOL, "create"),
    ]
    text = render_text(changes, Verdict(False), "t")
    assert "    - delete   old-pool (NodePool)\n          interrupts: pretrain (batch, maxRestarts 3): stops the run" in text
    assert "    ~ update   queue (ClusterQueue)  spec.f0, spec.f1, spec.f2, spec.f3, spec.f4, spec.f5 …\n          spec.f0: 1 -> 2" in text
    assert "    + create   new-pool (NodePool)" in text
    assert "Summary: 0 to replace, 1 to delete, 1 to update, 1 to create" in text


def test_renaming_the_workload_namespace_names_what_it_interrupts():
    after = edit(stack_config("staging"), "pathways:kubernetes", lambda k: {**(k or {}), "namespace": "pathways-v2"})
    changes, _ = run_diff("staging", after)
    ns = changes["workloads"]
    assert ns.action == "replace"
    assert sorted(i.split(" (")[0] for i in ns.interrupts) == ["notebook", "train-smoke"]


def test_force_new_fields_the_provider_replaces_on():
    # terraform-provider-google (change_rules's sources): a custom role's project, a firewall's name and a
    # resource policy's name are ForceNew
    assert forcing_paths("gcp:projects/iAMCustomRole:IAMCustomRole", ["project", "permissions"]) == ["project"]
    assert forcing_paths("gcp:compute/firewall:Firewall", ["name", "sourceRanges"]) == ["name"]
    assert forcing_paths("gcp:compute/resourcePolicy:ResourcePolicy", ["name"]) == ["name"]


def test_a_replacement_the_real_preview_cannot_show_is_said():
    # JobSet v0.12.0's CRD: failurePolicy, network, startupPolicy and successPolicy are immutable by CEL, which the
    # API server applies to pulumi-kubernetes' dry run of the new JobSet (tests_e2e/test_pulumi.py shows the failure)
    changes, _ = run_diff("prod", edited("maxRestarts", "prod", "pathways:workloads", _set_workload("maxRestarts", 5, "pretrain")))
    note = changes["workload-pretrain"].notes[0]
    assert note.startswith("the real `pulumi preview` fails on this replacement (spec.failurePolicy: 'Value is immutable')")
    assert "remove the workload (a batch run: state finished), then add it back" in note
    # an image bump is the webhook's to refuse, which the real preview takes in its stride: no note
    changes, _ = run_diff("prod", edited("image", "prod", "pathways:workloads", _set_workload("image", "example.com/t:2", "pretrain")))
    assert changes["workload-pretrain"].action == "replace" and changes["workload-pretrain"].notes == []


def test_a_cel_field_the_new_jobset_drops_is_not_said_to_fail():
    # CEL transition rules do not run on a field the new object lacks: batch -> interactive drops successPolicy,
    # the webhook's "field is immutable" then lets the provider preview under a generated name (tests_e2e)
    from tests.conftest import config_with, plan_of

    batch = {"name": "w", "slices": 1, "maxRestarts": 5, "image": "example.com/t:1"}
    interactive = {"name": "w", "slices": 1, "maxRestarts": 5, "mode": "interactive"}

    def jobset_change(a, b):
        (change,) = [c for c in diff(*(plan_of({**config_with(workloads=[w]), "pathways:pathwaysVersion": "jax-0.9.0"}) for w in (a, b)))
                     if c.type.endswith(":JobSet")]
        return change

    dropped, added = jobset_change(batch, interactive), jobset_change(interactive, batch)
    assert "spec.successPolicy" in dropped.forced_by and dropped.notes == []
    assert "spec.successPolicy" in added.forced_by and "(spec.successPolicy: 'Value is immutable')" in added.notes[0]


@pytest.mark.every_stack
def test_the_cel_immutable_jobset_fields_are_the_pinned_crds():
    # Source: the JobSet v0.12.0 CRD (`make crds`, tools/engines/jobset/go.mod): every spec field whose CEL rule
    # is `self == oldSelf`, less volumeClaimPolicies, which no stack's JobSet sets
    from components.manifests.admission import _jobset_schema
    from infra.offline.diff import JOBSET_CEL_IMMUTABLE
    from tests.conftest import STACKS, stack_plan

    schema = _jobset_schema()
    assert schema is not None, "make crds"
    immutable = {f"spec.{name}" for name, prop in schema["properties"]["spec"]["properties"].items()
                 if any(r.get("rule") == "self == oldSelf" for r in prop.get("x-kubernetes-validations") or [])}
    assert set(JOBSET_CEL_IMMUTABLE) == immutable - {"spec.volumeClaimPolicies"}
    for stack in STACKS:
        for jobset in stack_plan(stack).by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"):
            assert "volumeClaimPolicies" not in jobset.input("spec")


def test_a_zone_move_says_that_every_kubernetes_object_is_re_created():
    # the provider's new cluster identity (pulumi-kubernetes: clusterIdentifier) re-creates what it manages
    from infra.offline.diff import render_text

    changes, verdict = run_diff("staging", {**stack_config("staging"), "gcp:zone": "us-east5-c"})
    text = render_text(list(changes.values()), verdict, "t")
    assert (
        "  -/+ replace  gke (kubernetes)  forced by clusterIdentifier\n"
        "          clusterIdentifier: pathways-staging-123/us-east5-b/pathways-staging -> pathways-staging-123/us-east5-c/pathways-staging\n"
        "          kubeconfig: [secret] -> [secret]\n"
        "          note: a secret value changed (kubeconfig); its values are not shown\n"
        "          interrupts: every Kubernetes object is re-created\n"
        "          interrupts: notebook (interactive, maxRestarts 20): drops every notebook session\n"
        "          interrupts: train-smoke (batch, maxRestarts 3): restarts from its last checkpoint, or from step 0 without one\n"
    ) in text
    assert "  -/+ replace  workloads (Namespace)  forced by its provider's clusterIdentifier\n" in text


def _image_change(old: str, new: str) -> str:
    from infra.offline.diff import Change, Verdict, render_text

    path = "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image"
    return render_text([Change("workload-pretrain", JOBSET, "replace", forced_by=["spec.replicatedJobs"], values={path: (old, new)})],
                       Verdict(False), "t").split(f"{path}: ", 1)[1].split("\n", 1)[0]


def test_a_changed_value_is_shown_up_to_60_characters_and_a_long_one_where_it_changed():
    assert _image_change("a" * 60, "b" * 60) == f"{'a' * 60} -> {'b' * 60}"  # 60 characters: whole
    assert _image_change("x" * 59 + "a", "x" * 59 + "b") == f"{'x' * 59}a -> {'x' * 59}b"
    assert _image_change("a" * 61, "b" * 61) == f"{'a' * 59}… -> {'b' * 59}…"  # 61: cut to 60
    # a long image whose tag changes: both sides end at the tag, still 60 characters
    image = "us-docker.pkg.dev/pathways-prod-123/train/trainer-with-a-long-name:2026-11-2"
    old, new = _image_change(image + "7", image + "8").split(" -> ")
    assert old == "…pathways-prod-123/train/trainer-with-a-long-name:2026-11-27" and new == old[:-1] + "8"
    # a change in the middle of a long value: shown around it, never two equal texts
    middle = [_image_change("x" * 30 + a + "x" * 70, "x" * 30 + b + "x" * 70).split(" -> ") for a, b in [("A", "B")]][0]
    assert middle[0] != middle[1] and "A" in middle[0] and "B" in middle[1] and all(len(m) == 60 for m in middle)
    grown = _image_change("x" * 100, "x" * 100 + "y").split(" -> ")
    assert grown[0] != grown[1] and grown[1].endswith("y")


def _secret_env_config(run: str) -> dict:
    from tests.conftest import config_with

    return config_with(pathwaysVersion="jax-0.9.0", workloads=[
        {"name": "train", "image": "example.com/t:1", "env": {"TOKEN": {"secure": "v1:abc"}, "RUN": run}}])


def test_a_plain_env_value_that_goes_into_the_workloads_secret_shows_its_change_but_not_its_value():
    # pathways:workloads is secret once any env value under it is (`config set --secret --path`): every env value
    # then goes into the workload's Kubernetes Secret, and a change of a plain one replaces that Secret
    # (pulumi-kubernetes forceNewProperties: a Secret's stringData)
    from infra.offline.diff import Verdict, render_text
    from tests.conftest import plan_of

    changes = diff(plan_of(_secret_env_config("r1")), plan_of(_secret_env_config("r2-value")))
    assert [(c.name, c.action, c.forced_by) for c in changes] == [("workload-train-env", "replace", ["stringData"])]
    text = render_text(changes, Verdict(False), "t")
    assert "  -/+ replace  workload-train-env (Secret)  forced by stringData\n          stringData: [secret] -> [secret]\n" in text
    assert "note: read as env by train when its containers start: running pods keep the old values until they restart" in text
    assert "r1" not in text and "r2-value" not in text
    assert diff(plan_of(_secret_env_config("r1")), plan_of(_secret_env_config("r1"))) == []


def test_a_new_cluster_name_moves_the_pools_to_new_node_service_accounts():
    # the node accounts are named after the cluster and made by the bootstrap (re-run it first): the pools'
    # nodeConfig.serviceAccount is ForceNew (change_rules.FORCE_NEW, resource_container_node_pool.go)
    after = edit(stack_config("staging"), "pathways:cluster", lambda k: {**(k or {}), "name": "pathways-staging-2"})
    changes, _ = run_diff("staging", after)
    assert not [c for c in changes.values() if c.kind == "Account"]  # the stack makes no account
    pools = {n: c for n, c in changes.items() if c.kind == "NodePool"}
    assert pools and all(c.action == "replace" for c in pools.values())
    assert any("nodeConfig.serviceAccount" in c.forced_by for c in pools.values())


def test_a_new_project_replaces_every_resource_in_it_the_pools_and_nat_by_their_project():
    # terraform-provider-google: `project` is ForceNew on every resource change_rules lists (node pool, router NAT, …)
    cfg = stack_config("staging")
    changes, _ = run_diff("staging", {**cfg, "gcp:project": "pathways-staging-456"})
    moved = {c.name: c for c in changes.values() if "project" in c.changed and c.type in FORCE_NEW}
    assert {c.kind for c in moved.values()} >= {"NodePool", "RouterNat", "Bucket", "Cluster", "Subnetwork", "AlertPolicy", "Dashboard"}
    assert all(c.action == "replace" and "project" in c.forced_by for c in moved.values()), \
        {n: (c.action, c.forced_by) for n, c in moved.items()}
    assert changes["network-nat"].forced_by == ["project"] and "project" in changes["scratch"].forced_by
    assert "project" in changes["slices-v6e-0"].forced_by


VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
VAPB = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


@pytest.mark.parametrize("drop", [VAP, VAPB])
def test_security_58_2_losing_a_guard_in_a_protected_stack_is_refused_with_no_allowance(drop):
    """The stack config refuses guards off in a protected stack; a program change that loses one (or its binding) is
    refused by the diff too, whatever allowDisruption says. An unprotected stack is shown the change, not refused."""
    from infra.offline.engine import Plan

    for stack, protected in (("prod", True), ("staging", False)):
        before = plan_of(stack_config(stack), stack)
        after = Plan(before.stack, [r for r in before.resources if not (r.type == drop and r.name == "guardrails-node-guard")], before.outputs)
        changes = diff(before, after)
        assert [(c.name, c.action) for c in changes if c.type == drop] == [("guardrails-node-guard", "delete")]
        verdict = guard(changes, before, after, protected, ["*"])
        if protected:
            assert not verdict.ok and any(r.startswith("guardrails-node-guard (") and "keeps its admission guards in force" in r
                                          for r in verdict.refusals), verdict.refusals
        else:
            assert verdict.ok


def test_security_58_2_a_guard_binding_that_stops_denying_is_refused_in_a_protected_stack():
    import dataclasses

    from infra.offline.engine import Plan

    before = plan_of(stack_config("prod"), "prod")
    after = Plan(before.stack, [dataclasses.replace(r, inputs={**r.inputs, "spec": {**r.inputs["spec"], "validationActions": ["Warn"]}})
                                if r.type == VAPB and r.name == "guardrails-template-guard" else r for r in before.resources], before.outputs)
    verdict = guard(diff(before, after), before, after, True, [])
    assert any(r.startswith("guardrails-template-guard (ValidatingAdmissionPolicyBinding): this change changes what it does on a refusal")
               for r in verdict.refusals), verdict.refusals


# --- no resource is replaced under its own name (issue #72.1) -----------------------------------------------------

def _gcp_registrations(plan):
    return [r for r in plan.resources if r.custom and r.type.startswith(("gcp:", "random:"))]


def _collision_risks(plan) -> list[str]:
    """Named GCP resources that an input outside their name scope could replace create-before-delete, with no way
    round it: not delete-before-replace, not named from those inputs, and not refused by `diff`."""
    risks = []
    for r in _gcp_registrations(plan):
        scope = NAME_SCOPE.get(r.type)
        if scope is None:
            assert r.type in IDENTITY_KEYED + SERVER_NAMED + UNCHANGEABLE_TYPES or r.type.startswith("random:"), (
                f"{r.type} ({r.name}) is in no class of infra/offline/change_rules.py: say how its replacement avoids "
                "its own name (NAME_SCOPE, IDENTITY_KEYED, SERVER_NAMED)")
            continue
        replacing = [p for p in forcing_paths(r.type, _leaf_paths(r.inputs)) if p.split(".")[0] not in scope]
        named_from = NAMED_FROM_INPUTS.get(r.type, ())
        replacing = [p for p in replacing if not any(p == n or p.startswith(n + ".") for n in named_from)]
        if replacing and not r.options.get("deleteBeforeReplace") and r.type not in REPLACE_REFUSED:
            risks.append(f"{r.name} ({r.type}): {', '.join(replacing)}")
    return risks


def _leaf_paths(value, prefix=""):
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaf_paths(v, f"{prefix}.{k}" if prefix else k)]
    return [prefix]


@every_stack()
def test_no_named_resource_can_be_replaced_under_its_own_name(stack):
    # every GCP type the stack registers is classified, and each named one that an input can replace either goes
    # first (deleteBeforeReplace), takes a new name with that input, or is refused by diff before pulumi up
    assert _collision_risks(stack_plan(stack)) == []


def test_no_bootstrap_resource_can_be_replaced_under_its_own_name():
    from tests.test_bootstrap import example_bootstrap_plan

    for project in ("pathways-dev-123", "pathways-prod-123"):
        assert _collision_risks(example_bootstrap_plan(project)) == []


def test_a_fixed_name_without_a_way_round_is_found():
    # the property test's own check: a head pool without deleteBeforeReplace is a risk (its service account, scopes
    # and shielded config replace it, and it keeps the name pathways-head)
    plan = copy.deepcopy(plan_of(stack_config("dev"), "dev"))
    head = next(r for r in plan.resources if r.type == POOL and r.input("name") == "pathways-head")
    head.options["deleteBeforeReplace"] = False
    assert any(risk.startswith(f"{head.name} (") for risk in _collision_risks(plan))


TPU7X_GROUP = {"name": "train", "tpu": "tpu7x-128", "count": 2}


def _tpu7x_config(**group) -> dict:
    return config_with(slices=[{**TPU7X_GROUP, **group}], **in_zone_of("tpu7x"))


@pytest.mark.parametrize("change", [{"tpu": "tpu7x-256", "count": 1}, {"tpu": "tpu7x-64", "count": 4}])
def test_resizing_a_tpu7x_group_makes_a_new_workload_policy_beside_the_old(change):
    before, after = plan_of(_tpu7x_config()), plan_of(_tpu7x_config(**change))
    old, new = before.one(POLICY), after.one(POLICY)
    assert old.input("name") != new.input("name")
    changes = {c.name: c for c in diff(before, after)}
    policy = changes[new.name]
    assert policy.action == "replace" and "name" in policy.forced_by and not policy.collides
    assert guard(list(changes.values()), before, after, False, []).ok
    # the pools take the new policy, old ones deleted first (quota and reservations never hold two copies)
    for pool in tpu_pools(after):
        assert pool.input("placementPolicy.policyName") == new.input("name")
        assert pool.options["deleteBeforeReplace"] is True


def test_the_workload_policy_name_carries_its_shape_and_stays_a_compute_name():
    from components.gcp.tpu_slices import workload_policy_name

    names = {workload_policy_name("pathways-dev", "train", t, m) for t in ("4x4x4", "4x4x8", "8x8x8") for m in (False, True)}
    assert len(names) == 6
    assert workload_policy_name("pathways-dev", "train", "4x4x8", True) == "pathways-dev-train-4x4x8-po-wp"
    long = [workload_policy_name("c" * 40, g, "16x16x36", True) for g in ("a" * 20, "a" * 19 + "b")]
    assert long[0] != long[1] and all(len(n) <= 63 and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", n) for n in long)


def test_a_replacement_under_its_own_name_is_refused_in_any_stack():
    # moving the cluster onto an existing VPC forces a new cluster (network is ForceNew) under the same name and
    # location: GKE refuses the second cluster, so diff says so before pulumi up tries, protected or not
    before = plan_of(config_with())
    after = plan_of(config_with(network={"existingNetwork": "shared-vpc", "existingSubnetwork": "shared-subnet"}))
    changes = diff(before, after)
    cluster = next(c for c in changes if c.type == "gcp:container/cluster:Cluster")
    assert cluster.action == "replace" and cluster.collides and "network" in cluster.forced_by
    verdict = guard(changes, before, after, False, [])
    assert not verdict.ok
    [refusal] = [r for r in verdict.refusals if r.startswith(f"{cluster.name} (")]
    assert "replaced under its own name 'pathways-test'" in refusal and "already exists" in refusal
    assert "pathways:cluster.name" in refusal  # the way round it
    # the pools go with it, but each is deleted first (deleteBeforeReplace): no refusal of theirs
    assert not any("(NodePool)" in r for r in verdict.refusals)


_FORCES_NEW = re.compile(r"forces? (a )?(new|recreation|replacement)|will force", re.IGNORECASE)


def _sdk_says_force_new(type_: str) -> list[str]:
    """The inputs of a pulumi-gcp resource whose docstring, in the pinned SDK, says changing it forces a new one."""
    import importlib

    module_path, cls = type_.split(":")[1].rsplit("/", 1)[0], type_.rsplit(":", 1)[1]
    args = getattr(importlib.import_module(f"pulumi_gcp.{module_path}"), f"{cls}Args")
    out = []
    for attr in dir(args):
        prop = getattr(args, attr, None)
        if isinstance(prop, property) and _FORCES_NEW.search(prop.__doc__ or ""):
            head, *rest = attr.split("_")
            out.append(head + "".join(w.title() for w in rest))
    return sorted(out)


def test_every_input_the_pinned_sdk_says_forces_a_new_resource_is_in_the_table():
    # The pinned pulumi-gcp SDK's docstrings say it of few inputs (the provider's schema, where ForceNew lives, is
    # not in the SDK): each one they name must be in FORCE_NEW; the rest of the table is the provider's source.
    from tests.test_bootstrap import example_bootstrap_plan

    plans = [stack_plan(s) for s in STACKS] + [example_bootstrap_plan("pathways-prod-123")]
    types = sorted({r.type for p in plans for r in _gcp_registrations(p) if r.type.startswith("gcp:")})
    said = {t: _sdk_says_force_new(t) for t in types}
    missing = {t: [p for p in paths if p not in forcing_paths(t, [p])] for t, paths in said.items()}
    assert {t: m for t, m in missing.items() if m} == {}
    assert said["gcp:compute/subnetwork:Subnetwork"] == ["externalIpv6Prefix", "ipCollection", "ipv6AccessType"]
    assert said["gcp:serviceaccount/account:Account"] == ["accountId"]
