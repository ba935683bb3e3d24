"""The real Pulumi engine on the Kubernetes layer (existing-cluster mode, the controllers' charts included)
against the local control plane: the CLI v3.274.1 and the pulumi-kubernetes provider v4.25.0 built from the Go
module proxy, the policy pack, a file backend and passphrase secrets in a throwaway directory. What `pulumi up`
makes is what the offline plan says; the policy verdicts agree; the second preview is empty; secrets stay
secret; the workflows' commands (saved plans) work; `pulumi destroy` leaves nothing behind."""

from __future__ import annotations

import json

import pytest

from infra.offline.engine import Plan
from infra.offline.policy_runner import run_policies
from policies.rules import ALL_POLICIES
from tests.conftest import plan_of
from tests_e2e.helpers import is_true, wait_running, workload
from tools.cluster.deploy import existing_mode
from tools.pulumi_real.run import POLICIES

TOKEN = "PLAINTEXT-hf_0c9d8e7f6a5b"
BASE = {
    "gcp:project": "test-proj-123", "gcp:region": "us-east5", "gcp:zone": "us-east5-b",
    "pathways:slices": [{"name": "main", "tpu": "v6e-16", "count": 2}],
    "pathways:pathwaysVersion": "jax-0.9.0",
    "pathways:headPool": {"nodeCount": 2},
}
TRAIN = {"name": "train", "image": "example.com/trainer:1", "slices": 1}
NOTEBOOK = {"name": "nb", "mode": "interactive", "slices": 1}


def existing(cluster, workloads: list[dict]) -> dict:
    """The stack's Kubernetes layer on the local control plane, the controllers' charts included."""
    return existing_mode({**BASE, "pathways:workloads": workloads}, cluster)


CHART = "kubernetes:helm.sh/v4:Chart"


def resources(preview_json: str) -> set[tuple[str, str]]:
    """(type, name) of every resource a preview's steps name (the URN's type after its parents' types), but the
    objects a chart renders (the Chart's children: the offline plan has the Chart as one resource)."""
    out = set()
    for step in json.loads(preview_json)["steps"]:
        _, _, qualified, name = step["urn"].split("::", 3)
        chain = qualified.split("$")
        if CHART in chain[:-1]:
            continue
        kind = chain[-1]
        if not kind.startswith(("pulumi:pulumi:Stack", "pulumi:providers:")):
            out.add((kind, name))
    return out


def offline(plan: Plan) -> set[tuple[str, str]]:
    return {(r.type, r.name) for r in plan.resources if not r.type.startswith("pulumi:providers:")}


@pytest.fixture(scope="module")
def pulumi_stack(stacks):
    # up with the first config (charts included); each test then changes the config of the same stack
    return stacks.use("e2e", {**BASE, "pathways:workloads": [TRAIN]}, secrets={"pathways:workloads[0].env.TOKEN": TOKEN}).run


def test_real_preview_equals_the_offline_plan_and_its_policies(cluster, pulumi_stack):
    # --show-sames: the stack is up, and a preview's JSON lists only the steps that change something otherwise
    result = pulumi_stack.cli("preview", "--json", "--show-sames", "--policy-pack", str(POLICIES))
    assert result.returncode == 0, result.output[-3000:]
    cfg = existing(cluster, [TRAIN])
    cfg["pathways:workloads"] = [{**TRAIN, "env": {"TOKEN": {"secure": "v1:stand-in"}}}]  # as the stack file keeps it
    plan = plan_of(cfg, "e2e")
    assert resources(result.stdout) == offline(plan)
    # the same verdict from the real policy engine and the offline runner: none
    assert json.loads(result.stdout).get("diagnostics", []) == [] or all(
        d.get("severity") != "error" for d in json.loads(result.stdout).get("diagnostics", []))
    assert run_policies(plan, ALL_POLICIES) == []


def test_a_secret_stays_secret_in_preview_and_state(pulumi_stack):
    result = pulumi_stack.cli("preview", "--diff", "--show-config")
    assert result.returncode == 0, result.output[-3000:]
    assert TOKEN not in result.output and "[secret]" in result.output


def test_up_then_nothing_to_change_then_destroy(cluster, pulumi_stack):
    up = pulumi_stack.cli("up", "--yes", "--policy-pack", str(POLICIES))
    assert up.returncode == 0, up.output[-3000:]
    assert TOKEN not in pulumi_stack.state_file()  # encrypted with the stack's passphrase
    # what up made runs: Kueue admits the JobSet, its pods run (the same checks as the stack scenarios)
    cluster.wait_for("Kueue admits train", lambda: is_true(workload(cluster, "pathways", "train"), "Admitted"))
    wait_running(cluster, "pathways", "train", 1 + 4)
    secret = cluster.get("secret", "-n", "pathways", "train-env")
    assert set(secret["data"]) == {"TOKEN"}
    # no perpetual diff: a second preview proposes nothing
    again = pulumi_stack.cli("preview", "--expect-no-changes")
    assert again.returncode == 0, again.output[-3000:]


REPLACING = {"replace", "create-replacement", "delete-replaced", "discard-replaced"}


def real_actions(preview_json: str) -> dict[str, str]:
    """Resource name -> create / update / replace / delete, as the engine and the provider's own Diff decided."""
    out: dict[str, str] = {}
    for step in json.loads(preview_json).get("steps", []):
        _, _, qualified, name = step["urn"].split("::", 3)
        chain = qualified.split("$")
        kind = chain[-1]
        op = step["op"]
        if kind.startswith(("pulumi:pulumi:Stack", "pulumi:providers:")) or op in ("same", "read", "refresh") or CHART in chain[:-1]:
            continue
        out[name] = "replace" if op in REPLACING else op
    return out


# One edit at a time to a running stack's config (Kubernetes layer): what the real provider does to each object
# is what `diff` says (infra/offline/change_rules.py and the program's replaceOnChanges). A change of a field the
# JobSet CRD makes immutable by CEL is the next test's.
ORACLE_EDITS = [
    ("namespace rename", lambda c: c["pathways:kubernetes"].update(namespace="pathways-b")),
    ("image bump", lambda c: c["pathways:workloads"][0].update(image="example.com/trainer:2")),
    ("suspend", lambda c: c["pathways:workloads"][1].update(state="suspended")),
    ("cache prefix", lambda c: c["pathways:bucket"].update(cachePrefix="cache-v2")),
    ("priority", lambda c: c["pathways:workloads"][1].update(priority="experiment")),
    ("worker restarts per host", lambda c: c["pathways:workloads"][0].update(workerRestartsPerHost=8)),
    ("remove a workload", lambda c: c["pathways:workloads"].pop(1)),
]


def test_the_providers_own_diff_agrees_with_the_offline_review(cluster, pulumi_stack):
    import copy

    from infra.offline.diff import diff

    base = existing(cluster, [TRAIN, NOTEBOOK])
    pulumi_stack.set_config(base)
    up = pulumi_stack.cli("up", "--yes")
    assert up.returncode == 0, up.output[-3000:]
    compared = 0
    try:
        for name, edit in ORACLE_EDITS:
            after = copy.deepcopy(base)
            edit(after)
            pulumi_stack.set_config(after)
            preview = pulumi_stack.cli("preview", "--json")
            diagnostics = [d.get("message", "") for d in json.loads(preview.stdout or "{}").get("diagnostics", [])]
            assert preview.returncode == 0, (name, diagnostics, preview.stderr[-2000:])
            real = real_actions(preview.stdout)
            offline = {c.name: c.action for c in diff(plan_of(base, "e2e"), plan_of(after, "e2e"))}
            assert real == offline, (name, {k: (real.get(k), offline.get(k)) for k in set(real) | set(offline) if real.get(k) != offline.get(k)})
            compared += len(real)
    finally:
        pulumi_stack.set_config(base)
    assert compared >= 10


def preview_of_train_edit(cluster, pulumi_stack, train: dict):
    """Up the two-workload stack, preview it with workload `train` replaced by `train`, put the config back:
    (the real preview, its diagnostics, `diff`'s change of the train JobSet)."""
    from infra.offline.diff import diff

    base = existing(cluster, [TRAIN, NOTEBOOK])
    pulumi_stack.set_config(base)
    up = pulumi_stack.cli("up", "--yes")
    assert up.returncode == 0, up.output[-3000:]
    after = {**base, "pathways:workloads": [train, NOTEBOOK]}
    pulumi_stack.set_config(after)
    try:
        preview = pulumi_stack.cli("preview", "--json")
    finally:
        pulumi_stack.set_config(base)
    diagnostics = " ".join(d.get("message", "") for d in json.loads(preview.stdout or "{}").get("diagnostics", []))
    (change,) = [c for c in diff(plan_of(base, "e2e"), plan_of(after, "e2e")) if c.name == "workload-train" and c.type.endswith(":JobSet")]
    return preview, diagnostics, change


def test_a_jobset_field_immutable_by_cel_fails_the_real_preview_as_diff_warns(cluster, pulumi_stack):
    # pulumi-kubernetes previews a replacement's create as a server-side dry run against the live JobSet, and the
    # JobSet CRD's CEL rule refuses a new failurePolicy there: the preview fails, as `diff`'s note says
    preview, diagnostics, change = preview_of_train_edit(cluster, pulumi_stack, {**TRAIN, "maxRestarts": 5})
    assert preview.returncode != 0 and "Value is immutable" in diagnostics, diagnostics[-2000:]
    assert change.action == "replace" and change.notes and "the real `pulumi preview` fails" in change.notes[0]


def test_a_cel_field_the_new_jobset_drops_previews_as_a_replacement(cluster, pulumi_stack):
    # batch -> interactive drops successPolicy: CEL's transition rule does not run on an absent field, the
    # webhook's "field is immutable" makes the provider preview the create under a generated name, so the
    # real preview passes and shows the replacement, and `diff` adds no note. maxRestarts 3, batch's default:
    # failurePolicy stays
    interactive = {"name": "train", "mode": "interactive", "slices": 1, "maxRestarts": 3}
    preview, diagnostics, change = preview_of_train_edit(cluster, pulumi_stack, interactive)
    assert preview.returncode == 0, diagnostics[-2000:]
    assert real_actions(preview.stdout).get("workload-train") == "replace"
    assert change.action == "replace" and "spec.successPolicy" in change.forced_by and change.notes == []


def test_the_workflows_saved_plan_is_applied_as_previewed(cluster, pulumi_stack, tmp_path):
    # pull-request/deploy workflows: `pulumi preview --save-plan`, then `pulumi up --plan` of exactly that plan
    pulumi_stack.set_config(existing(cluster, [TRAIN, NOTEBOOK]))
    plan_file = tmp_path / "plan-e2e.json"
    preview = pulumi_stack.cli("preview", "--save-plan", str(plan_file), "--policy-pack", str(POLICIES))
    assert preview.returncode == 0, preview.output[-3000:]
    up = pulumi_stack.cli("up", "--yes", "--plan", str(plan_file), "--policy-pack", str(POLICIES))
    assert up.returncode == 0, up.output[-3000:]
    assert cluster.kubectl("get", "jobset", "-n", "pathways", "nb", check=False).returncode == 0


def test_destroy_leaves_nothing_behind(cluster, stacks, pulumi_stack):
    pulumi_stack.set_config(existing(cluster, [TRAIN]))
    # pulumi destroy, charts and all: the namespaces go and everything in them, the CRDs, webhooks and
    # cluster-scoped objects of the charts and the stack; the controllers' processes stop with their pods
    stacks.close()
    assert cluster.kubelet.running() == []
    for kind in ("clusterrolebindings", "clusterroles"):
        left = [o["metadata"]["name"] for o in cluster.get(kind)["items"]
                if o["metadata"]["name"].startswith(("jobset", "kueue", "lws", "pathways"))]
        assert left == [], (kind, left)


def test_the_policy_pack_config_is_checked_against_its_schema(cluster, pulumi_stack, tmp_path):
    # the real engine validates pack config against the rules' schemas (policies/rules/common.py); the offline plan
    # refuses the same two (tests/test_policies.py)
    bad = tmp_path / "policy-config.json"
    bad.write_text(json.dumps({"pathways-cluster-hardening": {"protectedStacks": "prod"}}))
    result = pulumi_stack.cli("preview", "--policy-pack", str(POLICIES), "--policy-pack-config", str(bad))
    assert result.returncode != 0 and "protectedStacks" in result.output, result.output[-3000:]
    # the cache-location limit is an integer (policies/rules/cache_location.py)
    bad.write_text(json.dumps({"pathways-one-cache-location": {"maxLocationsPerBucket": "fifty"}}))
    result = pulumi_stack.cli("preview", "--policy-pack", str(POLICIES), "--policy-pack-config", str(bad))
    assert result.returncode != 0 and "maxLocationsPerBucket" in result.output, result.output[-3000:]
