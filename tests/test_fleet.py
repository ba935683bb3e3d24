"""pathways:fleet (docs/fleet.md): a worker's identity and output for its manager, a manager's MultiKueue objects
and queues, and the rules on both, under the offline engine (the manager reading its workers' offline plans)."""

from __future__ import annotations

import json

import pytest
import yaml

from components.manifests import fleet as fleet_manifest
from components.manifests import kueue as kueue_manifest
from components.manifests import runs as runs_manifest
from components.model.cluster.fleet import MULTIKUEUE_CHECK, MULTIKUEUE_NAMESPACE, WorkerFacts, kubeconfig
from components.model.config import resolve
from infra.offline import engine, stackfile
from infra.offline.render import manifests
from tests.conftest import config_with, every_stack, example_model, example_path, example_plan, plan_of, stack_model
from tests.test_security import _evaluate
from tests.test_storage import refusal

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"


def objects(plan, kind: str) -> list[dict]:
    return [o for o in manifests(plan) if o["kind"] == kind]


def test_a_worker_publishes_its_endpoint_token_queues_and_quotas_for_its_manager():
    plan = example_plan("fleet-east")
    fleet = plan.revealed_outputs["fleet"]
    assert plan.outputs["fleet"] == "[secret]"  # the token is in it: the whole output is a secret
    assert fleet["role"] == "worker" and fleet["stack"] == "fleet-east" and fleet["region"] == "us-east5"
    # the DNS endpoint, which takes Kubernetes tokens on a worker (and no CA: its certificate is publicly trusted)
    assert fleet["endpoint"] == f"https://{plan.outputs['clusterEndpoint']}" and fleet["caCertificate"] == ""
    dns = plan.one("gcp:container/cluster:Cluster").input("controlPlaneEndpointsConfig.dnsEndpointConfig")
    assert dns == {"allowExternalTraffic": True, "enableK8sTokensViaDns": True}
    assert fleet["token"].startswith("offline-token-")  # the stand-in token controller's
    assert fleet["versions"] == {"kueue": "0.19.2", "jobset": "0.12.0", "lws": "0.9.0"}
    assert "pathways/runs-pathways" in fleet["localQueues"] and fleet["namespaces"][0] == "pathways"
    # what the manager's plan shows of it: 2 x v6e-16 on spot, at the list price of a v6e spot chip-hour
    from components.model.capacity.pools import Capacity
    from components.model.cost.pricing import PricesConfig, tpu_chip_price

    spot, _ = tpu_chip_price("v6e", Capacity.SPOT, PricesConfig())
    assert fleet["groups"] == {"train": {"tpu": "v6e-16", "slices": 2, "chips": 32, "capacity": "spot", "hourly": round(32 * spot, 2)}}
    assert fleet["quotas"]["tpu-train"]["google.com/tpu"] == "32"


def test_a_stack_outside_a_fleet_keeps_tokens_off_its_dns_endpoint():
    dns = example_plan("dev").one("gcp:container/cluster:Cluster").input("controlPlaneEndpointsConfig.dnsEndpointConfig")
    assert dns == {"allowExternalTraffic": True}
    assert example_plan("dev").outputs.get("fleet") is None


def _verbs(rules) -> dict[tuple[str, str], set[str]]:
    return {(g, r): set(rule["verbs"]) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}


WRITES = {"create", "delete", "update", "patch", "deletecollection", "*"}


@pytest.mark.parametrize("stack", ["fleet-east", "fleet-central"])
def test_the_managers_token_on_a_worker_reads_cluster_wide_and_writes_only_in_the_run_namespace(stack):
    plan = example_plan(stack)
    run_namespaces = sorted({q["metadata"]["namespace"] for q in objects(plan, "LocalQueue") if q["metadata"]["name"].startswith("runs-")})
    (role,) = [r for r in objects(plan, "ClusterRole") if r["metadata"]["name"] == "pathways-multikueue"]
    verbs = _verbs(role["rules"])
    # what Kueue's remote client lists and watches with no namespace (v0.19.2 multikueuecluster.go, clusterqueue.go)
    assert verbs[("jobset.x-k8s.io", "jobsets")] == verbs[("kueue.x-k8s.io", "workloads")] == {"get", "list", "watch"}
    assert verbs[("kueue.x-k8s.io", "localqueues")] == verbs[("kueue.x-k8s.io", "clusterqueues")] == {"get", "list", "watch"}
    assert not any(v & WRITES for v in verbs.values()), verbs  # a cluster-wide write would reach kube-system
    # a fleet's Kueue runs the JobSet integration alone: no LWS to watch or write
    assert not any(g == "leaderworkerset.x-k8s.io" for g, _ in verbs)
    roles = objects(plan, "Role")
    mine = [r for r in roles if r["metadata"]["name"] == "pathways-multikueue"]
    assert sorted(r["metadata"]["namespace"] for r in mine) == run_namespaces
    for r in mine:
        assert _verbs(r["rules"]) == {("jobset.x-k8s.io", "jobsets"): {"create", "delete"},
                                      ("kueue.x-k8s.io", "workloads"): {"create", "delete", "patch", "update"},
                                      ("kueue.x-k8s.io", "workloads/status"): {"patch", "update"}}
    subject = [{"kind": "ServiceAccount", "name": "pathways-multikueue", "namespace": MULTIKUEUE_NAMESPACE}]
    bindings = [b for b in objects(plan, "RoleBinding") if b["metadata"]["name"] == "pathways-multikueue"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == run_namespaces
    assert all(b["subjects"] == subject and b["roleRef"]["kind"] == "Role" for b in bindings)
    (binding,) = [b for b in objects(plan, "ClusterRoleBinding") if b["metadata"]["name"] == "pathways-multikueue"]
    assert binding["subjects"] == subject
    (secret,) = [s for s in plan.by_type("kubernetes:core/v1:Secret") if s.input("metadata.namespace") == MULTIKUEUE_NAMESPACE]
    assert secret.input("type") == "kubernetes.io/service-account-token"
    assert secret.input("metadata.annotations") == {"kubernetes.io/service-account.name": "pathways-multikueue"}
    # the policy that keeps the token to runs is in force, in every namespace, before the token exists
    (policy,) = [o for o in objects(plan, "ValidatingAdmissionPolicy") if o["metadata"]["name"] == "pathways-fleet-dispatch-only"]
    (policy_binding,) = [o for o in objects(plan, "ValidatingAdmissionPolicyBinding") if o["metadata"]["name"] == "pathways-fleet-dispatch-only"]
    assert "matchResources" not in policy_binding["spec"] and policy_binding["spec"]["validationActions"] == ["Deny"]
    assert policy["spec"]["matchConditions"][0]["expression"] == "request.userInfo.username == 'system:serviceaccount:kueue-system:pathways-multikueue'"
    before = {plan.get(d).name for d in secret.dependencies}
    assert {"runs-validatingadmissionpolicy-pathways-fleet-dispatch-only", *(f"fleet-role-{ns}" for ns in run_namespaces)} <= before, before


MULTIKUEUE = "system:serviceaccount:kueue-system:pathways-multikueue"


def _worker_policy():
    from tests.test_runs import model

    stack = resolve(model(fleet={"role": "worker"}, workloads=[{"name": "train", "image": "example.com/t:1"}]))
    (policy,) = [o for o in runs_manifest.fleet_dispatch_policy(stack) if o["kind"] == "ValidatingAdmissionPolicy"]
    return policy


def _dispatched(**changes):
    from tests.test_runs import _run

    return _run(**changes)


LWS = {"metadata": {"name": "exp", "labels": {"app.kubernetes.io/managed-by": "pathways-run"}}, "spec": {"replicas": 1}}
JOBSETS = {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"}
LWSS = {"group": "leaderworkerset.x-k8s.io", "version": "v1", "resource": "leaderworkersets"}


@pytest.mark.parametrize("user,namespace,resource,operation,obj,old,admitted", [
    (MULTIKUEUE, "pathways", JOBSETS, "CREATE", "run", None, True),  # a dispatched run
    (MULTIKUEUE, "pathways", JOBSETS, "DELETE", None, "run", True),  # the run finished or deleted on the manager
    (MULTIKUEUE, "kube-system", JOBSETS, "CREATE", "run", None, False),  # root on the nodes, past the guards
    (MULTIKUEUE, "kube-system", JOBSETS, "DELETE", None, "run", False),
    (MULTIKUEUE, "pathways", JOBSETS, "CREATE", "unlabelled", None, False),  # not a run
    (MULTIKUEUE, "pathways", JOBSETS, "CREATE", "secret", None, False),  # a run holding the worker's Secret
    (MULTIKUEUE, "pathways", JOBSETS, "CREATE", "declared", None, False),  # a run named like the worker's workload
    (MULTIKUEUE, "pathways", JOBSETS, "UPDATE", "unlabelled", "run", False),
    (MULTIKUEUE, "pathways", LWSS, "CREATE", "lws", None, False),  # the fleet dispatches JobSets only
    ("admin@example.com", "kube-system", JOBSETS, "CREATE", "unlabelled", None, True),  # not the token: RBAC decides
])
def test_the_managers_token_may_dispatch_runs_only_and_only_into_the_fleets_namespace(user, namespace, resource, operation, obj, old, admitted):
    from tests.test_runs import _secret_env

    made = {"run": lambda: _dispatched(), "unlabelled": lambda: _dispatched(labels={"app.kubernetes.io/managed-by": None}),
            "secret": lambda: _dispatched(pod=_secret_env), "declared": lambda: _dispatched(name="train"), "lws": lambda: LWS}
    request = {"operation": operation, "namespace": namespace, "resource": resource, "userInfo": {"username": user, "groups": []}}
    policy = _worker_policy()
    spec = policy["spec"]
    applies = all(_evaluate(m["expression"], {"request": request}) for m in spec["matchConditions"])
    got = not applies or all(_evaluate(v["expression"], {"object": made[obj]() if obj else None, "oldObject": made[old]() if old else None,
                                                          "request": request}) for v in spec["validations"])
    assert got is admitted


def test_only_a_fleet_worker_has_the_dispatch_policy():
    from tests.test_runs import model

    assert runs_manifest.fleet_dispatch_policy(resolve(model())) == []
    assert runs_manifest.fleet_dispatch_policy(resolve(model(fleet={"role": "worker"})))


def test_the_manager_dispatches_through_multikueue_with_its_workers_summed_quota():
    plan = example_plan("fleet-manager")
    clusters = objects(plan, "MultiKueueCluster")
    assert {c["metadata"]["name"]: c["spec"]["clusterSource"]["kubeConfig"] for c in clusters} == {
        "east": {"locationType": "Secret", "location": "pathways-fleet-east"},
        "central": {"locationType": "Secret", "location": "pathways-fleet-central"}}
    configs = {c["metadata"]["name"]: c["spec"]["clusters"] for c in objects(plan, "MultiKueueConfig")}
    # every worker; and the team that names its workers (teams[].workers: vision on east) a config of its own
    assert configs == {"pathways-fleet": ["east", "central"], "pathways-fleet-vision": ["east"]}
    checks = {c["metadata"]["name"]: c["spec"] for c in objects(plan, "AdmissionCheck")}
    assert {n: (c["controllerName"], c["parameters"]["name"]) for n, c in checks.items()} == {
        MULTIKUEUE_CHECK: ("kueue.x-k8s.io/multikueue", "pathways-fleet"), "pathways-fleet-vision": ("kueue.x-k8s.io/multikueue", "pathways-fleet-vision")}
    queues = {q["metadata"]["name"]: q for q in objects(plan, "ClusterQueue")}
    assert {n: q["spec"]["admissionChecksStrategy"] for n, q in queues.items()} == {
        "pathways": {"admissionChecks": [{"name": MULTIKUEUE_CHECK}]}, "team-vision": {"admissionChecks": [{"name": "pathways-fleet-vision"}]},
        "team-language": {"admissionChecks": [{"name": MULTIKUEUE_CHECK}]}}
    cq = queues["pathways"]
    # on every flavor: Kueue makes a queue whose MultiKueue check is per flavor inactive
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": MULTIKUEUE_CHECK}]}
    quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in cq["spec"]["resourceGroups"][0]["flavors"]}
    assert quota["tpu-train"]["google.com/tpu"] == "96"  # east 2 + central 4 slices of 16 chips
    # the kubeconfig Secrets: in Kueue's namespace, kept secret
    secrets = plan.by_type("kubernetes:core/v1:Secret")
    assert sorted(s.input("metadata.name") for s in secrets) == ["pathways-fleet-central", "pathways-fleet-east"]
    assert all(s.input("metadata.namespace") == MULTIKUEUE_NAMESPACE and s.input("stringData") == "[secret]" for s in secrets)
    # no pools, no head node: the runs run on the workers
    assert not [p for p in plan.by_type("gcp:container/nodePool:NodePool") if p.input("name", "").startswith("tpu-")]
    assert plan.revealed_outputs["fleet"]["workers"]["central"]["region"] == "us-central1"


def kueue_refuses(doc: dict) -> list[str]:
    """Kueue v0.19.2's own kubeconfig checks (pkg/controller/admissionchecks/multikueue/multikueuecluster.go
    validateKubeconfig / validateRestConfig): what makes a MultiKueueCluster InsecureKubeConfig."""
    out = []
    for u in doc.get("users") or []:
        user = u.get("user") or {}
        out += [k for k in ("tokenFile", "exec", "auth-provider", "username", "password") if k in user]
    for c in doc.get("clusters") or []:
        cluster = c.get("cluster") or {}
        out += [k for k in ("insecure-skip-tls-verify", "certificate-authority") if cluster.get(k)]
        if not cluster.get("server"):
            out.append("server")
    return out


def test_the_kubeconfig_is_one_kueue_accepts_and_gclouds_is_not():
    facts = WorkerFacts.from_output({"stack": "fleet-east", "endpoint": "https://10.254.254.1:32764", "caCertificate": "Q0E=",
                                     "token": "t0ken"})
    doc = yaml.safe_load(kubeconfig("east", facts))
    assert kueue_refuses(doc) == []
    assert doc["users"][0]["user"] == {"token": "t0ken"}
    assert doc["clusters"][0]["cluster"] == {"server": "https://10.254.254.1:32764", "certificate-authority-data": "Q0E="}
    # the context joins them: the current context names this cluster and the token's user
    assert doc["current-context"] == "east" and doc["contexts"] == [{"name": "east", "context": {"cluster": "east", "user": "pathways-multikueue"}}]
    assert doc["users"][0]["name"] == "pathways-multikueue"
    # an output missing them reads as empty, never as some other value
    empty = WorkerFacts.from_output({})
    assert (empty.ca_certificate, empty.token, empty.endpoint, empty.namespaces, empty.quotas) == ("", "", "", (), {})
    gcloud = {**doc, "users": [{"name": "gke", "user": {"exec": {"command": "gke-gcloud-auth-plugin"}}}]}
    assert kueue_refuses(gcloud) == ["exec"]


@pytest.mark.parametrize(("changes", "key", "text"), [
    ({"runs": None}, "pathways:fleet.role", "manager without runs"),
    ({"workloads": [{"name": "nb", "mode": "interactive"}], "pathwaysVersion": "jax-0.9.0"}, "pathways:workloads",
     "nb: a fleet manager takes ad-hoc runs only"),
    ({"slices": [{"name": "train", "tpu": "v6e-16", "spot": True}]}, "pathways:slices[0].spot", "a fleet manager holds no slices"),
    ({"kubernetes": {"kueue": {"enabled": False}}}, "pathways:kubernetes.kueue.enabled", "a fleet manager is Kueue's MultiKueue"),
    ({"fleet": {"role": "manager", "workers": [{"name": "a", "stack": "o/p/a"}, {"name": "a", "stack": "o/p/b"}]}}, "pathways:fleet",
     "workers: name 'a' is listed twice"),
    ({"fleet": {"role": "manager", "workers": []}}, "pathways:fleet", "list at least one under workers"),
    ({"fleet": {"role": "manager", "workers": [{"name": "a", "stack": "fleet-east"}]}}, "pathways:fleet.workers[0].stack",
     "is not a fully qualified stack name"),
    ({"fleet": {"role": "manager", "workers": [{"name": f"w{i}", "stack": f"o/p/w{i}"} for i in range(21)]}}, "pathways:fleet.workers",
     "at most 20"),
])
def test_a_manager_config_that_cannot_dispatch_is_refused_with_one_line(changes, key, text):
    base = {"slices": [{"name": "train", "tpu": "v6e-16"}], "runs": {},
            "fleet": {"role": "manager", "workers": [{"name": "east", "stack": "organization/pathways/fleet-east"}]}}
    line = refusal(config_with(**{**base, **changes}), key)
    assert line is not None and text in line, line


def test_a_worker_on_a_cluster_made_elsewhere_says_where_its_manager_reaches_it(tmp_path):
    kubeconfig_path = tmp_path / "kubeconfig"
    kubeconfig_path.write_text("apiVersion: v1\nkind: Config\n")
    cfg = config_with(cluster={"existing": {"kubeconfig": str(kubeconfig_path)}}, runs={}, fleet={"role": "worker"})
    assert "required on a cluster made elsewhere" in (refusal(cfg, "pathways:fleet.endpoint") or "")
    cfg = config_with(runs={}, fleet={"role": "worker", "endpoint": "http://10.0.0.1"})
    assert "is not an API server URL" in (refusal(cfg, "pathways:fleet.endpoint") or "")


def manager_run(worker_outputs: dict[str, dict]) -> list[str]:
    from infra.errors import InvalidStackConfig

    flat, secrets = stackfile.load_config(example_path("fleet-manager"))
    with pytest.raises(InvalidStackConfig) as err:
        engine.run(flat, "fleet-manager", secrets, stack_outputs=worker_outputs)
    return str(err.value).splitlines()


def outputs_of(*names: str) -> dict[str, dict]:
    return {f"organization/pathways/{n}": json.loads(json.dumps(example_plan(n).revealed_outputs)) for n in names}


def test_the_managers_deploy_refuses_workers_that_multikueue_could_not_use_one_line_each():
    outputs = outputs_of("fleet-east", "fleet-central")
    central = outputs["organization/pathways/fleet-central"]["fleet"]
    central["versions"]["kueue"] = "0.18.0"
    central["localQueues"] = []
    central["groups"]["train"]["tpu"] = "v6e-8"
    assert manager_run(outputs) == [
        "pathways:fleet.workers[1]: central (organization/pathways/fleet-central) runs kueue 0.18.0 (the manager's 0.19.2): "
        "MultiKueue needs the same controllers on every cluster; deploy the worker with the manager's versions",
        "pathways:fleet.workers[1]: central (organization/pathways/fleet-central) has no pathways/runs-pathways, team-language/runs-team-language: a "
        "dispatched run keeps its namespace and LocalQueue, so the worker needs both; give it the manager's kubernetes.namespace, runs: {}, "
        "slice groups and the teams that dispatch to it",
        "pathways:fleet.workers[1]: central (organization/pathways/fleet-central) has slice group train of v6e-8, the manager's "
        "is v6e-16: a run fits its group's TPU on every worker; rename one",
    ]


def test_a_worker_not_yet_deployed_is_named_and_nothing_is_made():
    lines = manager_run(outputs_of("fleet-east"))
    assert lines == ["pathways:fleet.workers[1].stack: organization/pathways/fleet-central publishes no fleet output: deploy it "
                     "with fleet.role: worker first (its `pulumi up` makes the manager's token)"]


def test_fleet_quotas_sum_each_flavor_and_resource():
    a = WorkerFacts.from_output({"quotas": {"tpu-train": {"cpu": "712", "memory": "2784Gi", "google.com/tpu": "16"}}})
    b = WorkerFacts.from_output({"quotas": {"tpu-train": {"cpu": "1424", "memory": "5568Gi", "google.com/tpu": "32"},
                                            "pathways-head": {"cpu": "0", "memory": "0", "google.com/tpu": "0"}}})
    assert fleet_manifest.fleet_quotas({"a": a, "b": b}) == {
        "tpu-train": {"cpu": "2136", "memory": "8352Gi", "google.com/tpu": "48"},
        "pathways-head": {"cpu": "0", "memory": "0", "google.com/tpu": "0"}}


def test_a_fleets_kueue_runs_the_charts_config_with_jobset_alone():
    # the pinned chart's own manager config (build/charts, from the Go module) but the integrations: on a manager,
    # Kueue keeps a worker inactive until it watches every enabled integration's kind there
    from components.manifests.controller_charts import (
        CHART_FRAMEWORKS,
        FLEET_FRAMEWORKS,
        KUEUE_CHART_CONFIG,
        STACK_FRAMEWORKS,
        kueue_manager_config,
    )
    from tools.cluster.local import ROOT

    chart = yaml.safe_load((ROOT / "build" / "charts" / "kueue" / "values.yaml").read_text())
    default = yaml.safe_load(chart["managerConfig"]["controllerManagerConfigYaml"])
    assert {k: v for k, v in default.items() if k != "integrations"} == KUEUE_CHART_CONFIG
    assert "jobset.x-k8s.io/jobset" in default["integrations"]["frameworks"]
    mine = yaml.safe_load(kueue_manager_config(FLEET_FRAMEWORKS)["managerConfig"]["controllerManagerConfigYaml"])
    assert mine == {**default, "integrations": {"frameworks": ["jobset.x-k8s.io/jobset"]},
                    "managedJobsNamespaceSelector": {"matchLabels": {"pathways/kueue-managed": "true"}}}
    # and the stacks of a fleet install Kueue with it; the others with the chart's
    def values(name: str) -> dict:
        (chart_resource,) = [r for r in example_plan(name).resources if r.type == "kubernetes:helm.sh/v4:Chart" and r.urn.endswith("::kueue")]
        return chart_resource.input("values")
    # the example fleet has teams: Kueue's fair sharing on too (docs/teams.md)
    fleet = kueue_manager_config(FLEET_FRAMEWORKS, fair_sharing=True)["managerConfig"]
    assert values("fleet-manager")["managerConfig"] == values("fleet-east")["managerConfig"] == fleet
    # any other stack: its own integrations (JobSet; LWS and its pods with serve workloads), never the chart's list
    assert values("dev")["managerConfig"] == kueue_manager_config(STACK_FRAMEWORKS)["managerConfig"]
    assert tuple(default["integrations"]["frameworks"]) == CHART_FRAMEWORKS  # the chart's, which the stack does not keep


def test_a_run_on_the_manager_is_judged_as_a_run_its_slices_left_to_the_workers_quota():
    from components.model.config import load, load_run
    from infra.offline.stackfile import raw_values

    config, secrets = stackfile.load_config(example_path("fleet-manager"))
    cfg = load(raw_values(config), "fleet-manager", frozenset(secrets))
    with_run = load_run(cfg, {"name": "wide", "image": "example.com/t:1", "slices": 4})
    assert with_run.workloads[-1].slices == 4 and with_run.workload_group(with_run.workloads[-1]).name == "train"


def test_an_unreadable_kubeconfig_of_a_worker_made_elsewhere_is_one_line(tmp_path):
    from infra.errors import InvalidStackConfig
    from infra.fleet import existing_cluster_ca

    with pytest.raises(InvalidStackConfig) as err:
        existing_cluster_ca(tmp_path / "missing", None)
    assert str(err.value).startswith("pathways:cluster.existing.kubeconfig: cannot be read for the fleet worker's CA")
    good = tmp_path / "kubeconfig"
    good.write_text(yaml.safe_dump({"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k"}}],
                                    "clusters": [{"name": "k", "cluster": {"certificate-authority-data": "Q0E="}}]}))
    assert existing_cluster_ca(good, None) == "Q0E="


def test_the_managers_plan_shows_each_workers_region_chips_and_cost():
    import contextlib
    import io

    from infra.offline.__main__ import main as offline_main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert offline_main(["plan", "--config", str(example_path("fleet-manager"))]) == 0
    text = out.getvalue()
    table = text.split("Fleet workers")[1].split("\n\n")[0].splitlines()
    assert table[1].split() == ["worker", "stack", "region", "group", "tpu", "chips", "capacity", "$/hour"]
    assert table[2].split()[:7] == ["east", "organization/pathways/fleet-east", "us-east5", "train", "v6e-16", "32", "spot"]
    assert table[3].split()[:7] == ["central", "organization/pathways/fleet-central", "us-central1", "train", "v6e-16", "64", "spot"]
    assert "every worker's slices busy: about $" in text
    # and how to find where a run landed
    assert "CLUSTER:.status.clusterName" in example_plan("fleet-manager").outputs["fleet"]["whereARunRuns"]


def test_run_list_names_the_worker_a_run_was_dispatched_to():
    from infra.run.status import rows, table

    jobset = {"metadata": {"name": "wide", "uid": "u1", "creationTimestamp": "2026-12-01T00:00:00Z",
                           "labels": {"kueue.x-k8s.io/queue-name": "runs-pathways"}}}
    wl = {"metadata": {"name": "jobset-wide", "ownerReferences": [{"kind": "JobSet", "uid": "u1"}]},
          "status": {"clusterName": "central", "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}}
    (row,) = rows([jobset], [wl], {}, True, 0)
    assert row.cluster == "central" and row.to_json()["cluster"] == "central"
    lines = table([row]).splitlines()
    assert lines[0].split()[:4] == ["NAME", "OWNER", "STATE", "CLUSTER"] and lines[1].split()[:4] == ["wide", "stack", "admitted", "central"]
    # on a single cluster no column of dashes
    (alone,) = rows([jobset], [{**wl, "status": {"conditions": wl["status"]["conditions"]}}], {}, True, 0)
    assert "CLUSTER" not in table([alone])


def test_the_managers_plan_says_the_workers_need_its_cache_bucket():
    from components.model.config import load, resolve
    from components.model.cost.summary import stack_summary
    from infra.offline.stackfile import load_config, raw_values

    flat, secrets = load_config(example_path("fleet-manager"))
    summary = stack_summary(resolve(load(raw_values(flat), "fleet-manager", frozenset(secrets))))
    (notice,) = [n for n in summary["notices"] if n.startswith("fleet runs keep their compilation cache")]
    assert "gs://pathways-fleet-123-fleet-manager-pathways/pathways-cache" in notice and "roles/storage.objectUser" in notice


@every_stack()
def test_the_queues_a_worker_publishes_are_the_queues_it_makes(stack):
    # the model resolves the LocalQueue names once (a worker publishes them; a manager judges its workers by them):
    # they are exactly the LocalQueues the Kueue builder makes for the stack, in its order
    model = stack_model(stack)
    made = [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in kueue_manifest.objects(model) if o["kind"] == "LocalQueue"]
    assert list(model.local_queue_names) == (made if model.kueue else [])
    if model.fleet is not None:
        assert model.fleet.local_queues == model.local_queue_names
        assert set(model.fleet.run_queues) <= set(model.local_queue_names)
        assert list(model.fleet.groups) == [g.name for g in model.slices]


def test_a_fleet_worker_admits_with_its_own_kueue():
    cfg = config_with(runs={}, fleet={"role": "worker"}, kubernetes={"kueue": {"enabled": False}})
    assert refusal(cfg, "pathways:kubernetes.kueue.enabled") == (
        "pathways:kubernetes.kueue.enabled: false, but a fleet worker admits the runs its manager dispatches with its own "
        "Kueue; enable Kueue")


# --- security #58.4: a worker's token on the internet-facing DNS endpoint ------------------------------------------

def _east(**fleet_changes) -> dict:
    config = yaml.safe_load(example_path("fleet-east").read_text())["config"]
    return {**config, "pathways:fleet": {**config["pathways:fleet"], **fleet_changes}}


def test_security_58_4_the_plan_says_a_worker_takes_tokens_from_the_internet():
    from components.model.cost.summary import notices

    stack = example_model("fleet-east")
    assert stack.fleet is not None and stack.fleet.internet_tokens
    (line,) = [n for n in notices(stack) if "internet-facing DNS endpoint" in n]
    assert "no authorized-networks list covers" in line and "fleet.privateEndpoint: true" in line


def test_security_58_4_a_private_endpoint_worker_publishes_its_ip_endpoint_and_ca_and_no_dns_tokens():
    from infra.offline.engine import CLUSTER_CA, CLUSTER_PRIVATE_ENDPOINT

    plan = plan_of(_east(privateEndpoint=True), "fleet-east")
    fleet = plan.revealed_outputs["fleet"]
    assert fleet["endpoint"] == f"https://{CLUSTER_PRIVATE_ENDPOINT}" and fleet["caCertificate"] == CLUSTER_CA
    dns = plan.one("gcp:container/cluster:Cluster").input("controlPlaneEndpointsConfig.dnsEndpointConfig")
    assert dns == {"allowExternalTraffic": True}  # people and CI still use it, with Google credentials only
    from components.model.cost.summary import notices

    assert not [n for n in notices(resolve(load_stack(_east(privateEndpoint=True)))) if "internet-facing DNS endpoint" in n]


def load_stack(config: dict):
    from components.model.config import load

    cfg = {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("pathways:")}
    return load({**cfg, "project": config["gcp:project"], "region": config["gcp:region"], "zone": config["gcp:zone"]}, "fleet-east")


@pytest.mark.parametrize(("config", "line"), [
    ({"pathways:protected": True}, "pathways:fleet.privateEndpoint: a protected worker would take the manager's Kubernetes "
                                   "token on its internet-facing DNS endpoint"),
    ({"fleet": {"privateEndpoint": True, "acknowledgeInternetTokens": True}},
     "pathways:fleet.acknowledgeInternetTokens: has no effect"),
])
def test_security_58_4_refusals(config, line):
    base = _east(**config.get("fleet", {}))
    base.update({k: v for k, v in config.items() if k != "fleet"})
    with pytest.raises(Exception) as e:
        plan_of(base, "fleet-east")
    assert line in str(e.value), str(e.value)


def test_security_58_4_a_manager_takes_no_worker_endpoint_keys():
    config = yaml.safe_load(example_path("fleet-manager").read_text())["config"]
    bad = {**config, "pathways:fleet": {**config["pathways:fleet"], "privateEndpoint": True}}
    with pytest.raises(Exception) as e:
        plan_of(bad, "fleet-manager")
    assert "privateEndpoint and acknowledgeInternetTokens are a worker's keys" in str(e.value)


def test_security_58_4_a_protected_worker_that_accepts_internet_tokens_says_so_to_the_policy_pack():
    from infra.offline.policy_runner import run_policies
    from policies.rules import ALL_POLICIES
    from tests.test_policies import mutate

    plan = plan_of({**_east(acknowledgeInternetTokens=True), "pathways:protected": True}, "fleet-east")
    cluster = plan.one("gcp:container/cluster:Cluster")
    assert cluster.input("resourceLabels") == {"pathways-protected": "true", "pathways-internet-tokens": "acknowledged"}
    exposure = [v for v in run_policies(plan, ALL_POLICIES) if v.policy == "pathways-network-exposure"]
    assert exposure == []
    unlabelled = mutate(plan, "gcp:container/cluster:Cluster", cluster.name, "resourceLabels", {"pathways-protected": "true"})
    found = [v.message for v in run_policies(unlabelled, ALL_POLICIES) if v.policy == "pathways-network-exposure"]
    assert len(found) == 1 and "takes Kubernetes tokens on its internet-facing DNS endpoint" in found[0]
    private = plan_of({**_east(privateEndpoint=True), "pathways:protected": True}, "fleet-east")
    assert [v for v in run_policies(private, ALL_POLICIES) if v.policy == "pathways-network-exposure"] == []


def test_a_manager_slice_group_no_worker_has_is_refused_and_its_output_says_manager():
    """fleet_problems' last rule, and the manager's `fleet` output (sampled mutation: neither was checked)."""
    from components.model.cluster.fleet_workers import fleet_problems

    manager = example_model("fleet-manager")
    assert manager.fleet is not None
    workers = {w.name: WorkerFacts.from_output({**example_plan(w.stack.rsplit("/", 1)[-1]).revealed_outputs["fleet"], "groups": {}})
               for w in manager.fleet.workers}
    problems = fleet_problems(manager.fleet, workers)
    names = list(manager.fleet.groups)
    assert [p.key for p in problems] == [f"pathways:slices[{i}].name" for i in range(len(names))]
    assert problems[0].message.startswith(f"{names[0]}: no worker has this slice group ({', '.join(w.name for w in manager.fleet.workers)})")
    assert example_plan("fleet-manager").revealed_outputs["fleet"]["role"] == "manager"


def test_a_managers_future_reservation_key_is_refused_by_its_own_name():
    config = yaml.safe_load(example_path("fleet-manager").read_text())["config"]
    group = dict(config["pathways:slices"][0])
    group["futureReservation"] = {"startTime": "2027-01-04T00:00:00Z", "endTime": "2027-01-18T00:00:00Z"}
    group["reservation"] = "fr-1"
    with pytest.raises(Exception) as e:
        plan_of({**config, "pathways:slices": [group, *config["pathways:slices"][1:]]}, "fleet-manager")
    assert "pathways:slices[0].futureReservation: a fleet manager holds no slices: futureReservation, reservation shape node pools" in str(e.value)


@pytest.mark.parametrize("key,value", [("autoUpgrade", True), ("spot", True), ("flexStart", True), ("scaleToZero", True),
                                       ("spares", 1), ("count", 2)])
def test_each_pool_key_on_a_managers_group_is_refused_by_its_own_name(key, value):
    # sampled mutation (issue #57): only futureReservation was named in a test; each key a manager may not set is named as written
    config = yaml.safe_load(example_path("fleet-manager").read_text())["config"]
    group = {**config["pathways:slices"][0], key: value}
    with pytest.raises(Exception) as e:
        plan_of({**config, "pathways:slices": [group, *config["pathways:slices"][1:]]}, "fleet-manager")
    assert f"pathways:slices[0].{key}: a fleet manager holds no slices: {key} shape node pools" in str(e.value), str(e.value)
