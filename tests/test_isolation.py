"""Isolation domains (teams[].isolationDomain, security #73.2): what a domain's teams get of their own (node identity,
head and slice pools, firewall pair, buckets, Kueue cohort), the admission guard that keeps every other namespace off
its nodes (evaluated as the API server does), and the refusals of every combination that would cross it. The real
Kueue and API server's side is tests_e2e/test_teams.py (the committed example has a domain)."""

from __future__ import annotations

import pytest

from components.manifests import admission, isolation_guard
from components.manifests import kueue as kueue_manifest
from components.manifests.jobset import jobset
from components.manifests.runs import run_jobset
from components.model.config import ConfigError, as_run, load_run, resolve
from components.model.cost.summary import stack_summary, summary_text
from tests.conftest import config_with, plan_of
from tests.test_security import JOB_CONTROLLER, TPU, _admitted
from tests.test_teams import model, refused

SLICES = [{"name": "shared", "tpu": "v6e-4", "count": 12}, {"name": "vault", "tpu": "v6e-4", "count": 3},
          {"name": "lab", "tpu": "v6e-4", "count": 2}]
BIO = {"name": "bio", "submitters": [{"name": "bio@example.com"}], "isolationDomain": "bio", "slices": {"vault": {"slices": 2}}}
GEN = {"name": "gen", "submitters": [{"name": "gen@example.com"}], "isolationDomain": "bio", "slices": {"vault": {"slices": 1}}}
OPEN = {"name": "open", "submitters": [{"name": "open@example.com"}], "slices": {"shared": {"slices": 2}}}
TEAMS = [OPEN, BIO]


def stack(teams=TEAMS, **changes):
    return resolve(model(teams, slices=SLICES, **changes))


def _objects(s, kind):
    return {o["metadata"]["name"]: o for o in kueue_manifest.objects(s) if o["kind"] == kind}


def _flavors(cq):
    return [f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]]


# --- Kueue: a cohort of its own, its own head flavor, its groups listed by its queues only ------------------------

def test_a_domains_queues_list_its_groups_and_head_flavor_only_in_a_cohort_of_their_own():
    s = stack([OPEN, BIO, GEN])
    queues = _objects(s, "ClusterQueue")
    assert _flavors(queues["pathways"]) == ["tpu-shared", "tpu-lab", "pathways-head"]  # no domain group in the stack's
    assert _flavors(queues["team-open"]) == ["tpu-shared", "tpu-lab", "pathways-head"]  # nor in a shared team's: no borrowing
    for name in ("team-bio", "team-gen", "domain-bio"):
        assert _flavors(queues[name]) == ["tpu-vault", "pathways-head-bio"], name
        assert queues[name]["spec"]["cohortName"] == "isolated-bio"
    assert queues["pathways"]["spec"]["cohortName"] == queues["team-open"]["spec"]["cohortName"] == "pathways"
    # the domain's Cohort is a root: nothing above it lends to it or borrows from it
    assert _objects(s, "Cohort")["isolated-bio"]["spec"] == {}
    # the domain's queue holds its head pool and the vault slice no team owns (bio owns 2 of 3); it admits from no namespace
    s = stack()
    queues = _objects(s, "ClusterQueue")
    one = kueue_manifest.slice_quota(s.slices[1])
    dq = queues["domain-bio"]["spec"]
    vault = {r["name"]: r["nominalQuota"] for r in dq["resourceGroups"][0]["flavors"][0]["resources"]}
    assert vault == {"cpu": str(one["cpu"]), "memory": f"{one['memory']}Gi", "google.com/tpu": str(one["google.com/tpu"])}
    head = {r["name"]: r["nominalQuota"] for r in dq["resourceGroups"][0]["flavors"][1]["resources"]}
    assert head["cpu"] == str(62 * 3)  # an n2-standard-64's allocatable cores (62) x one head a vault slice (3)
    assert dq["namespaceSelector"] == {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"}]}
    for name in ("domain-bio", "team-bio", "pathways"):
        assert admission.check_kueue(queues[name]).violations == [], name  # the pinned v0.19.2 CRD and its CEL rules
    assert admission.check_kueue(_objects(s, "Cohort")["isolated-bio"]).violations == []


def test_a_domains_flavors_select_and_tolerate_its_own_nodes():
    flavors = _objects(stack(), "ResourceFlavor")
    assert flavors["pathways-head-bio"]["spec"]["nodeLabels"] == {"pathways/role": "head", "pathways/isolation": "bio"}
    taint = {"key": "pathways/isolation", "operator": "Equal", "value": "bio", "effect": "NoSchedule"}
    assert taint in flavors["pathways-head-bio"]["spec"]["tolerations"]
    assert taint in flavors["tpu-vault"]["spec"]["tolerations"]
    assert flavors["tpu-vault"]["spec"]["nodeLabels"]["pathways/isolation"] == "bio"  # what Kueue merges into its pods' selector
    assert all(taint not in f["spec"]["tolerations"] for n, f in flavors.items() if n not in ("tpu-vault", "pathways-head-bio"))


def test_the_plans_ceilings_stay_inside_each_domain():
    s = stack([OPEN, BIO, GEN])
    teams = {t["name"]: t for t in stack_summary(s)["teams"]["teams"]}
    vault = {name: next(g for g in t["groups"] if g["group"] == "vault") for name, t in teams.items()}
    assert vault["open"] == {"group": "vault", "listed": False}
    # bio owns 2, gen 1: each may borrow the other's idle slices (no slice of vault is left to the domain's queue)
    assert (vault["bio"]["ceiling"], vault["gen"]["ceiling"]) == (3, 3)
    assert next(g for g in teams["bio"]["groups"] if g["group"] == "shared") == {"group": "shared", "listed": False}
    text = "\n".join(summary_text(stack_summary(s)))
    assert "isolation domain bio (bio, gen): groups vault and head pool pathways-head-bio run as" in text
    notices = stack_summary(s)["notices"]
    assert any(n.startswith("team open: a quota boundary, not a security boundary") for n in notices)
    assert any(n.startswith("teams bio, gen share isolation domain bio") for n in notices)


# --- a run of the domain's team: its queue, its scratch; anyone else's refused ------------------------------------

def test_a_domain_teams_run_queues_on_its_queue_and_writes_its_own_scratch_bucket():
    cfg = load_run(model(TEAMS, slices=SLICES), {"name": "exp", "image": "example.com/t:1", "sliceGroup": "vault", "team": "bio"})
    s = resolve(cfg)
    w = as_run(s, s.workloads[-1])
    js = run_jobset(s, w, "bio@example.com")
    (domain,) = s.domains
    assert w.cluster_queue == "team-bio" and domain.cache_location == "gs://test-proj-123-test-pathways-bio/pathways-cache"
    args = [a for rj in js["spec"]["replicatedJobs"] for c in rj["template"]["spec"]["template"]["spec"]["containers"]
            for a in c.get("args", []) if a.startswith("--gcs_scratch_location=")]
    assert args and set(args) == {f"--gcs_scratch_location={domain.cache_location}"}
    # the stack's own workload keeps the stack's cache
    shared = resolve(model(TEAMS, slices=SLICES, workloads=[{"name": "t", "sliceGroup": "shared", "image": "example.com/t:1"}]))
    own = jobset(shared, shared.workloads[0])
    assert "gs://test-proj-123-test-pathways/pathways-cache" in str(own) and "pathways-bio" not in str(own)


@pytest.mark.parametrize("team", [None, "open"])
def test_a_run_of_anyone_else_on_a_domains_group_is_refused(team):
    spec = {"name": "exp", "image": "example.com/t:1", "sliceGroup": "vault", **({"team": team} if team else {})}
    with pytest.raises(ConfigError) as e:
        load_run(model(TEAMS, slices=SLICES), spec)
    (problem,) = e.value.problems
    assert "vault is in isolation domain bio" in str(problem) and "a workload runs only on its own domain's groups" in str(problem)


# --- refusals: every way across the boundary ---------------------------------------------------------------------

@pytest.mark.parametrize("teams,changes,expected", [
    ([OPEN, BIO, {**OPEN, "name": "peek", "submitters": [{"name": "peek@example.com"}], "slices": {"vault": {"slices": 1}}}], {},
     "pathways:teams[2].slices.vault: vault belongs to isolation domain bio (team bio lists it), and team peek is in no "
     "isolation domain: a domain's slice groups are its teams' alone (their nodes run as its identity); give team peek "
     "isolationDomain: bio, or another group"),
    ([OPEN, BIO, {**BIO, "name": "other", "isolationDomain": "other", "submitters": [{"name": "o@example.com"}], "slices": {"vault": {"slices": 1}}}], {},
     "pathways:teams[2].slices.vault: vault belongs to isolation domain bio (team bio lists it), and team other is in "
     "isolation domain other"),
    ([OPEN, {**BIO, "parent": "research"}], {}, "pathways:teams[1].parent: 'research': team bio is in isolation domain bio"),
    ([OPEN, {**BIO, "slices": {}}], {}, "pathways:teams[1].isolationDomain: bio: no team of this isolation domain lists a slice group"),
    (TEAMS, {"workloads": [{"name": "t", "sliceGroup": "vault", "image": "example.com/t:1"}]},
     "pathways:workloads[0].sliceGroup: vault is in isolation domain bio, and workload t belongs to the stack (no team), "
     "in no isolation domain"),
    (TEAMS, {"workloads": [{"name": "t", "team": "bio", "sliceGroup": "shared", "image": "example.com/t:1"}]},
     "pathways:workloads[0].sliceGroup: shared is in no isolation domain, and workload t belongs to team bio, in isolation domain bio"),
    (TEAMS, {"workloads": [{"name": "chat", "team": "bio", "sliceGroup": "vault", "mode": "serve",
                            "serve": {"model": "Qwen/Qwen3-8B"}}]},
     "pathways:workloads[0].mode: serve: workload chat's team is in isolation domain bio"),
    (TEAMS, {"kubernetes": {"guards": {"enabled": False}}}, "pathways:teams[1].isolationDomain: bio: an isolation domain needs the admission guards"),
    (TEAMS, {"headPool": {"nodePool": "cpu-np"}}, "pathways:teams[1].isolationDomain: bio: an isolation domain needs the stack's own head pools"),
    ([OPEN, {**BIO, "isolationDomain": "artifacts"}], {"bucket": {"name": "b-pathways", "artifactsName": "b-pathways-artifacts"}},
     "pathways:teams[1].isolationDomain: artifacts: its bucket b-pathways-artifacts would be the artifacts bucket"),
])
def test_each_way_across_a_domain_is_refused_in_one_line(teams, changes, expected):
    problems = refused(teams, slices=SLICES, **changes)
    assert any(p.startswith(expected) for p in problems), problems


def test_a_ladder_between_domains_and_a_too_long_domain_name_are_refused():
    slices = [SLICES[0], {**SLICES[1], "ladder": ["lab"]}, SLICES[2]]
    (problem,) = [p for p in refused(TEAMS, slices=slices) if "ladder" in p]
    assert problem.startswith("pathways:slices[1].ladder[0]: lab is in no isolation domain and vault in isolation domain bio")
    (long,) = refused([OPEN, {**BIO, "isolationDomain": "biosecurity"}], slices=SLICES)
    assert long.startswith("pathways:teams[1].isolationDomain: 'biosecurity' is not a valid name") and "at most 10 characters" in long


def test_on_a_cluster_made_elsewhere_the_plan_says_what_the_owner_must_make():
    s = stack(cluster={"existing": {"kubeconfig": "/tmp/kubeconfig"}},
              bucket={"name": "team-bucket"})
    (notice,) = [n for n in stack_summary(s)["notices"] if n.startswith("isolation domain bio on a cluster made elsewhere")]
    assert "pathways/isolation=bio as a label and a NoSchedule taint" in notice and "gs://team-bucket-bio" in notice


# --- the admission guard ------------------------------------------------------------------------------------------

BIO_TOLERATION = {"key": "pathways/isolation", "operator": "Equal", "value": "bio", "effect": "NoSchedule"}


@pytest.mark.parametrize("namespace,pod,user,admitted", [
    ("team-bio", {"tolerations": [*TPU, BIO_TOLERATION], "nodeSelector": {"pathways/isolation": "bio"}}, JOB_CONTROLLER, True),  # its run, as Kueue admitted it
    # a pod set that requests nothing gets no flavor from Kueue: written to select the shared head pool, as the shared account
    ("team-bio", {"hostNetwork": True, "tolerations": [{"key": "pathways/role", "operator": "Equal", "value": "head"}],
                  "nodeSelector": {"pathways/role": "head"}}, JOB_CONTROLLER, False),
    ("team-bio", {"hostNetwork": True, "nodeSelector": {"pathways/isolation": "other"}}, JOB_CONTROLLER, False),
    ("team-bio", {}, "alice@example.com", True),  # an ordinary pod of the team's: neither the Pathways nodes nor the host network
    ("team-bio", {"tolerations": [{**BIO_TOLERATION, "operator": None}]}, JOB_CONTROLLER, True),  # Equal is the default
    ("team-open", {"tolerations": [*TPU, BIO_TOLERATION]}, JOB_CONTROLLER, False),  # another team's, however made
    ("pathways", {"tolerations": [BIO_TOLERATION]}, JOB_CONTROLLER, False),  # the stack's own
    ("team-bio", {"tolerations": [{**BIO_TOLERATION, "value": "other"}]}, JOB_CONTROLLER, False),  # another domain's
    ("team-bio", {"tolerations": [{"key": "pathways/isolation", "operator": "Exists"}]}, JOB_CONTROLLER, False),  # every domain's
    ("team-open", {"tolerations": [{"operator": "Exists"}]}, JOB_CONTROLLER, False),  # every taint
    ("team-bio", {"tolerations": [{"key": "", "operator": "Exists"}]}, JOB_CONTROLLER, False),
    ("xpk", {"nodeName": "gke-vault-0"}, "alice@example.com", False),  # an exempt namespace of the node guard too
    ("team-open", {"tolerations": TPU}, JOB_CONTROLLER, True),  # the shared nodes are the node guard's to judge
    ("kube-system", {"tolerations": [{"operator": "Exists"}]}, "alice@example.com", True),  # GKE's DaemonSets
])
def test_the_isolation_guard_keeps_a_domains_nodes_to_its_teams(namespace, pod, user, admitted):
    policy = isolation_guard.isolation_guard_policy(stack().domains)
    for t in pod.get("tolerations", []):
        if t.get("operator", "") is None:
            del t["operator"]
    request = {"namespace": namespace, "operation": "CREATE", "userInfo": {"username": user}}
    assert _admitted(policy, request, {"spec": pod}) == admitted


def test_no_update_adds_a_domains_toleration_and_one_kept_passes():
    policy = isolation_guard.isolation_guard_policy(stack().domains)
    request = {"namespace": "team-open", "operation": "UPDATE", "userInfo": {"username": "alice@example.com"}}
    before, after = {"spec": {"tolerations": TPU}}, {"spec": {"tolerations": [*TPU, BIO_TOLERATION]}}
    assert not _admitted(policy, request, after, before)
    assert not _admitted(policy, request, {"spec": {"tolerations": [{"operator": "Exists"}]}}, {"spec": {}})
    # a pod made in a domain keeps its finalizer updates after a stack change moved its namespace out of it
    assert _admitted(policy, request, after, after)


def test_the_guard_is_made_only_with_domains_and_bound_to_deny():
    with_domain = plan_of(config_with(slices=SLICES, runs={"submitters": [{"name": "admins@example.com"}]}, teams=TEAMS,
                                      cluster={"securityGroup": "gke-security-groups@example.com"}))
    made = {r.input("metadata.name") for r in with_domain.by_type("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy")}
    assert isolation_guard.ISOLATION_GUARD in made
    binding = next(r for r in with_domain.by_type("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding")
                   if r.input("metadata.name") == isolation_guard.ISOLATION_GUARD)
    assert binding.input("spec.validationActions") == ["Deny"]
    # --- and the GCP half: the domain's pools, account, firewall pair and buckets, granted to it alone
    d = with_domain.outputs["isolationDomains"]["bio"]
    account = d["nodeServiceAccount"]
    assert account == "pathways-test-iso-bio@test-proj-123.iam.gserviceaccount.com" != with_domain.outputs["nodeServiceAccounts"]["pathways"]
    pools = {p.input("name"): p for p in with_domain.by_type("gcp:container/nodePool:NodePool")}
    for name in ("pathways-head-bio", "tpu-vault-0", "tpu-vault-1", "tpu-vault-2"):
        cfg = pools[name].input("nodeConfig")
        assert cfg["serviceAccount"] == account and cfg["labels"]["pathways/isolation"] == "bio", name
        assert {"key": "pathways/isolation", "value": "bio", "effect": "NO_SCHEDULE"} in cfg["taints"], name
    assert pools["pathways-head-bio"].input("autoscaling.minNodeCount") == 0
    assert all("pathways/isolation" not in (p.input("nodeConfig.labels") or {}) for n, p in pools.items()
               if n not in ("pathways-head-bio", "tpu-vault-0", "tpu-vault-1", "tpu-vault-2"))
    rules = {r.input("name"): r for r in with_domain.by_type("gcp:compute/firewall:Firewall")}
    allow, deny = rules["pathways-test-iso-bio-allow"], rules["pathways-test-iso-bio-deny"]
    assert allow.input("sourceServiceAccounts") == allow.input("targetServiceAccounts") == [account]
    assert deny.input("targetServiceAccounts") == [account] and deny.input("sourceRanges") == ["0.0.0.0/0"]
    assert deny.input("priority") > allow.input("priority")
    assert account not in str(rules["pathways-test-pathways-allow"].input("sourceServiceAccounts"))
    grants = {(g.input("bucket"), g.input("member")) for g in with_domain.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")}
    mine = {b for b, m in grants if m == f"serviceAccount:{account}"}
    assert mine == {"test-proj-123-test-pathways-bio", "test-proj-123-test-pathways-bio-artifacts"}
    assert not {m for b, m in grants if b in mine} - {f"serviceAccount:{account}"}  # no one else on them


def test_the_bootstrap_makes_each_domains_node_account_and_lists_its_buckets_as_the_stacks():
    from bootstrap.main_stack import MainStack

    cfg = model(TEAMS, slices=SLICES)
    main = MainStack("test", cfg, None, frozenset())
    assert main.node_account_ids == ("pathways-test-sys", "pathways-test-nodes", "pathways-test-iso-bio")
    assert {"test-proj-123-test-pathways-bio", "test-proj-123-test-pathways-bio-artifacts"} <= set(main.buckets)


def test_the_pod_range_check_counts_each_domains_head_pool_at_its_largest():
    from components.model.cluster.address_space import stack_pools

    pools = {p.name: p for p in stack_pools(model(TEAMS, slices=SLICES))}
    assert pools["pathways-head-bio"].nodes == 3 + 1  # a head a vault slice, and one surge node


def test_with_every_group_a_domains_the_stacks_own_runs_are_refused_rather_than_run_unqueued():
    from components.manifests import runs as runs_manifest
    from tests.test_runs import _policy_admits

    only = resolve(model([BIO], slices=[SLICES[1]]))
    assert only.run_queues == {}
    policy = next(o for o in runs_manifest.runs_only_policy(only) if o["kind"] == "ValidatingAdmissionPolicy")
    message = next(v["message"] for v in policy["spec"]["validations"] if "isolation domain" in v["message"])
    assert message == "no slice group is the stack's own (each is an isolation domain's): submit runs with --team"
    run = {"metadata": {"name": "x", "labels": {"app.kubernetes.io/managed-by": "pathways-run"}}, "spec": {"replicatedJobs": []}}
    assert not _policy_admits(policy, "ada@example.com", ["admins@example.com"], "CREATE", run, None)


def test_a_domain_teams_namespace_may_not_be_exempt_from_the_guards():
    (problem,) = [p for p in refused(TEAMS, slices=SLICES, kubernetes={"guards": {"exemptNamespaces": ["team-bio"]}})
                  if "exempt" in p and "isolation domain" in p]
    assert problem.startswith("pathways:teams[1].isolationDomain: bio: an isolation domain cannot have its namespace team-bio")


def test_a_domain_workloads_profile_link_opens_its_domains_artifacts_bucket():
    from components.manifests.monitoring import console_links

    s = stack(workloads=[{"name": "t", "team": "bio", "sliceGroup": "vault", "image": "example.com/t:1"},
                         {"name": "u", "sliceGroup": "shared", "image": "example.com/t:1"}])
    links = console_links(s)["workloads"]
    assert "/storage/browser/test-proj-123-test-pathways-bio-artifacts/artifacts/t/profiles?" in links["t"]["profiles"]
    assert "/storage/browser/test-proj-123-test-pathways-artifacts/artifacts/u/profiles?" in links["u"]["profiles"]


def test_the_longest_names_a_domain_derives_are_names_gcp_takes():
    # Compute API Firewall.name and Cloud Storage bucket names: at most 63 characters (RFC 1035 labels); IAM service
    # account IDs: 6-30; GKE node pool names: at most 40. The longest cluster name (40) and domain name (10) allowed.
    long_domain = {**BIO, "isolationDomain": "d" * 10}
    plan = plan_of(config_with(slices=SLICES, runs={"submitters": [{"name": "admins@example.com"}]}, teams=[OPEN, long_domain],
                               cluster={"name": "c" * 40, "securityGroup": "gke-security-groups@example.com"}))
    firewalls = [r.input("name") for r in plan.by_type("gcp:compute/firewall:Firewall") if "-iso-" in r.input("name")]
    assert sorted(firewalls) == [f"{'c' * 40}-iso-{'d' * 10}-allow", f"{'c' * 40}-iso-{'d' * 10}-deny"]
    assert max(map(len, firewalls)) <= 63
    account = plan.outputs["isolationDomains"]["d" * 10]["nodeServiceAccount"].partition("@")[0]
    assert 6 <= len(account) <= 30 and account.endswith(f"-iso-{'d' * 10}")
    assert all(len(r.input("name")) <= 63 for r in plan.by_type("gcp:storage/bucket:Bucket"))
    assert all(len(r.input("name")) <= 40 for r in plan.by_type("gcp:container/nodePool:NodePool"))
