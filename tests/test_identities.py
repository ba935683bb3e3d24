"""The CI identities' roles come from the resource types the stack creates (components/model/cluster/identities.py):
every type of every committed plan has an entry, the roles are predefined and least, and the two failures
issue #28 found are gone (deploy could not create alert policies and dashboards; preview could not read
the state bucket)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from components.model.cluster import identities
from components.model.cluster.identities import TABLE, deploy_roles, grants, preview_roles, project_roles, required_apis
from tests.conftest import MADE_STACKS, config_with, every_stack, example_plan, in_zone_of, plan_of, stack_plan

ROOT = Path(__file__).resolve().parents[1]
PRIMITIVE = {"roles/owner", "roles/editor", "roles/viewer"}
MONITORING_EDITORS = {"roles/monitoring.alertPolicyEditor", "roles/monitoring.dashboardEditor"}


def plan_types(plan) -> set[str]:
    return {r.type for r in plan.resources}


def all_roles() -> set[str]:
    table = {r for a in TABLE.values() for r in (*a.deploy, *a.preview)}
    implied = {r for k, v in identities.IMPLIES.items() for r in (k, *v)}
    return (table | implied | set(identities.STATE_ROLES.values()) | set(identities.KMS_ROLES.values()) | set(identities.NODE_ROLES)
            | {identities.NODE_ACCOUNT_ROLE})


@every_stack("stack")
def test_every_type_in_every_committed_plan_has_its_roles(stack):
    plan = stack_plan(stack)
    custom = {r.type for r in plan.resources if r.custom}
    assert custom - TABLE.keys() == set()
    # components register nothing in the cloud: ours need no role; the Helm chart (a remote component whose
    # objects the provider registers) has its entry
    components = {r.type for r in plan.resources if not r.custom}
    assert {t for t in components if not t.startswith(identities.COMPONENT_PREFIX)} <= TABLE.keys()
    deploy_roles(plan_types(plan))  # no UnknownResourceType


def _constructed_types(path: Path) -> set[str]:
    """Type tokens of the provider resources a module constructs (gcp.compute.Firewall(...), k8s.core.v1.Secret(...))."""
    packages = {"gcp": "pulumi_gcp", "k8s": "pulumi_kubernetes", "random": "pulumi_random"}
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        parts, f = [], node.func
        while isinstance(f, ast.Attribute):
            parts.insert(0, f.attr)
            f = f.value
        if not (isinstance(f, ast.Name) and f.id in packages and parts and parts[-1][:1].isupper()) or parts[-1].endswith("Args"):
            continue
        if parts == ["Provider"]:
            out.add(f"pulumi:providers:{packages[f.id].removeprefix('pulumi_')}")
            continue
        if parts[-1] == "CustomResource":  # JobSet, LeaderWorkerSet: their types are in the committed plans
            continue
        cls = importlib.import_module(".".join([packages[f.id], *parts[:-1]]))
        source = inspect.getsource(getattr(cls, parts[-1]))
        out.add(re.search(r"__init__\(\s*'((?:gcp|kubernetes|random):[^']+)'", source).group(1))  # pyright: ignore[reportOptionalMemberAccess]
    return out


def test_every_resource_the_program_can_construct_has_its_roles():
    # also what no committed stack creates today (tpu7x workload policies, secrets, shared-service RBAC)
    found = set().union(*(_constructed_types(p) for p in [*sorted((ROOT / "components").rglob("*.py")), *sorted((ROOT / "infra").glob("*.py"))]))
    assert {"gcp:compute/resourcePolicy:ResourcePolicy", "kubernetes:core/v1:Secret", "kubernetes:rbac.authorization.k8s.io/v1:Role",
            "random:index/randomPassword:RandomPassword", "pulumi:providers:kubernetes"} <= found
    assert found - TABLE.keys() == set()


@every_stack("stack", MADE_STACKS)
def test_deploy_can_create_the_alert_policies_and_dashboard(stack):
    # issue #28: the documented deploy roles had no Monitoring role, so the first `pulumi up` got a 403
    types = plan_types(stack_plan(stack))
    assert {"gcp:monitoring/alertPolicy:AlertPolicy", "gcp:monitoring/dashboard:Dashboard"} <= types
    assert MONITORING_EDITORS <= set(deploy_roles(types))
    assert "roles/monitoring.admin" not in deploy_roles(types) and "roles/monitoring.editor" not in deploy_roles(types)


@every_stack("stack")
def test_preview_reads_the_state_and_decrypts_the_secrets_and_writes_nothing(stack):
    roles = preview_roles(plan_types(stack_plan(stack)), kms_key=True)
    assert {"roles/storage.objectViewer", "roles/cloudkms.cryptoKeyDecrypter"} <= set(roles)
    read_only = re.compile(r"roles/[a-zA-Z.]+(Viewer|\.viewer|securityReviewer|cryptoKeyDecrypter)")
    assert [r for r in roles if not read_only.fullmatch(r)] == []
    scopes = {g.role: g.scope for g in grants("preview", plan_types(stack_plan(stack)), kms_key=True)}
    assert scopes["roles/storage.objectViewer"] == "state bucket" and scopes["roles/cloudkms.cryptoKeyDecrypter"] == "secrets key"


# The table, rendered for the committed CI stacks (bootstrap/README.md shows it): a change here is a change
# to what the identities may do, and should be reviewed as one. No iam.serviceAccountAdmin, no project-wide
# iam.serviceAccountUser, no resourcemanager.projectIamAdmin (issue #36.1).
DEPLOY = [
    "roles/compute.networkAdmin", "roles/compute.securityAdmin", "roles/container.admin",  # no iam.roleAdmin: #58.14
    "roles/monitoring.alertPolicyEditor", "roles/monitoring.dashboardEditor", "roles/storage.admin",
]  # no storage.editor: buckets are created with the bootstrap's custom role of storage.buckets.create (#73.1)
PREVIEW = [
    "roles/compute.networkViewer", "roles/container.viewer", "roles/iam.securityReviewer",
    "roles/monitoring.alertPolicyViewer", "roles/monitoring.dashboardViewer", "roles/storage.bucketViewer",
]


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_ci_stacks_roles(stack):
    types = plan_types(example_plan(stack))  # the examples as written: a team's own CI stacks differ
    assert project_roles("deploy", types) == DEPLOY
    assert project_roles("preview", types) == PREVIEW
    kms = stack != "dev"  # dev: passphrase; staging, prod: gcpkms (their stack files)
    assert deploy_roles(types, kms_key=kms) == sorted([*DEPLOY, "roles/iam.serviceAccountUser", "roles/storage.objectUser",
                                                       *(["roles/cloudkms.cryptoKeyDecrypter"] if kms else [])])
    assert preview_roles(types, kms_key=kms) == sorted([*PREVIEW, "roles/storage.objectViewer", *(["roles/cloudkms.cryptoKeyDecrypter"] if kms else [])])


def test_no_primitive_role_anywhere_and_every_role_is_predefined():
    roles = all_roles()
    assert roles & PRIMITIVE == set()
    assert [r for r in roles if not re.fullmatch(r"roles/[a-z]+(\.[A-Za-z0-9]+)+", r)] == []
    for t, a in TABLE.items():
        assert (not a.deploy) == (not a.preview) == (not a.apis), t  # a type needs both identities' roles, or nothing
        assert identities.REFERENCE in a.source or t.startswith(("pulumi:providers:", "random:")), t


def test_least_privilege_choices():
    everything = set(TABLE)
    deploy, preview = set(project_roles("deploy", everything)), set(project_roles("preview", everything))
    # narrower predefined roles than the service admins wherever they suffice
    assert deploy.isdisjoint({"roles/compute.admin", "roles/compute.instanceAdmin.v1", "roles/monitoring.admin", "roles/monitoring.editor",
                              "roles/iam.admin", "roles/iam.securityAdmin"})
    assert "roles/container.clusterAdmin" not in deploy  # container.admin implies it: one grant, not two
    assert "roles/container.clusterViewer" not in preview
    # Kubernetes objects alone (an existing cluster without controllers or RBAC) need container.developer only
    assert project_roles("deploy", {"kubernetes:core/v1:Namespace", "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"}) == ["roles/container.developer"]
    # a tpu7x workload policy adds the narrowest role that creates resource policies, nothing else
    base = plan_types(plan_of(config_with()))
    tpu7x = plan_types(plan_of(config_with(slices=[{"name": "g", "tpu": "tpu7x-128"}], **in_zone_of("tpu7x"))))
    assert tpu7x - base == {"gcp:compute/resourcePolicy:ResourcePolicy"}
    assert set(deploy_roles(tpu7x)) - set(deploy_roles(base)) == {"roles/compute.storageAdmin"}
    assert set(preview_roles(tpu7x)) - set(preview_roles(base)) == {"roles/compute.viewer"}


# --- issue #36.1: no identity one step from project owner ------------------------------------------------------

ESCALATING = {"roles/iam.serviceAccountAdmin", "roles/iam.serviceAccountTokenCreator", "roles/resourcemanager.projectIamAdmin",
              "roles/iam.securityAdmin", "roles/owner", "roles/editor"}


@every_stack("stack", MADE_STACKS)
def test_finding_1_the_deploy_identity_cannot_become_another_service_account(stack):
    # serviceAccountAdmin could grant itself token-creator on any account of the project, and a project-wide
    # serviceAccountUser could run a node pool as any of them; neither is granted any more
    everything = grants("deploy", plan_types(stack_plan(stack)), kms_key=True, buckets=("b",), state=("s", "pathways", stack))
    assert not [g for g in everything if g.role in ESCALATING]
    assert [g for g in everything if g.role == "roles/iam.serviceAccountUser"] == [
        identities.Grant("roles/iam.serviceAccountUser", "node service accounts")]  # on the two node accounts only
    assert not [g for g in grants("preview", set(TABLE), buckets=("b",)) if g.role in ESCALATING | {"roles/iam.serviceAccountUser"}]


@every_stack("stack", MADE_STACKS)
def test_finding_1_the_deploy_identity_grants_no_project_role(stack):
    # Google offers no condition on a setIamPolicy call's members (only iam.googleapis.com/modifiedGrantsByRole, roles):
    # the node accounts' project roles are the bootstrap's to grant, and the stack grants none
    plan = stack_plan(stack)
    assert plan.by_type("gcp:projects/iAMMember:IAMMember") == [] and plan.by_type("gcp:serviceaccount/account:Account") == []
    assert "gcp:projects/iAMMember:IAMMember" not in TABLE and "gcp:serviceaccount/account:Account" not in TABLE
    isolated = {d["nodeServiceAccount"] for d in (plan.outputs.get("isolationDomains") or {}).values()}
    (pools_sa,) = {p.input("nodeConfig.serviceAccount") for p in plan.by_type("gcp:container/nodePool:NodePool")
                   if p.input("name") != "system"} - isolated or {None}
    assert pools_sa == plan.outputs["nodeServiceAccounts"]["pathways"]


def test_finding_1_storage_roles_reach_only_the_stacks_buckets():
    types = {"gcp:storage/bucket:Bucket", "gcp:storage/bucketIAMMember:BucketIAMMember"}
    for identity, role in (("deploy", "roles/storage.admin"), ("preview", "roles/storage.bucketViewer")):
        (g,) = [g for g in grants(identity, types, buckets=("team-cache", "team-cache-artifacts")) if g.role == role]
        assert g.scope == "project" and g.condition is not None
        # Google's resource name of a bucket and of its objects (IAM "Resource attributes", resource name format): the
        # bucket itself or a slash after its name, so that team-cache does not also admit team-cache-evil
        assert g.condition.expression == (
            "resource.name == 'projects/_/buckets/team-cache' || resource.name.startsWith('projects/_/buckets/team-cache/') || "
            "resource.name == 'projects/_/buckets/team-cache-artifacts' || resource.name.startsWith('projects/_/buckets/team-cache-artifacts/')")
    # creating a bucket is checked on the project: no predefined storage role project-wide (storage.editor holds
    # storage.hmacKeys.*), the bootstrap's custom role of storage.buckets.create alone instead (tests/test_bootstrap.py)
    assert all(g.condition is not None for g in grants("deploy", types, buckets=("b",)) if g.role.startswith("roles/storage.") and g.scope == "project")
    assert identities.BUCKET_CREATE_PERMISSIONS == ("storage.buckets.create",)


def test_finding_1_each_identity_reaches_only_its_own_stacks_state():
    (g,) = [g for g in grants("deploy", set(), state=("proj-pulumi-state", "pathways", "prod")) if g.scope == "state bucket"]
    assert g.role == "roles/storage.objectUser" and g.condition is not None
    objects = "projects/_/buckets/proj-pulumi-state/objects/.pulumi"
    for path in (f"{objects}/stacks/pathways/prod.json", f"{objects}/history/pathways/prod/", f"{objects}/backups/pathways/prod/",
                 f"{objects}/locks/organization/pathways/prod/"):
        assert f"resource.name.startsWith('{path}')" in g.condition.expression
    assert f"resource.name == '{objects}/meta.yaml'" in g.condition.expression
    assert "/dev" not in g.condition.expression and "staging" not in g.condition.expression


def test_finding_1_the_deploy_identity_only_decrypts():
    # Pulumi calls KMS Encrypt only to make a stack's data key (pkg/secrets/cloud/manager.go generateNewDataKey), which
    # `pulumi stack change-secrets-provider` did once; every run after decrypts it
    assert identities.KMS_ROLES == {"deploy": "roles/cloudkms.cryptoKeyDecrypter", "preview": "roles/cloudkms.cryptoKeyDecrypter"}


def test_an_unknown_type_is_an_error_not_a_silent_skip():
    with pytest.raises(identities.UnknownResourceType) as e:
        deploy_roles({"gcp:container/cluster:Cluster", "gcp:sql/databaseInstance:DatabaseInstance"})
    assert "gcp:sql/databaseInstance:DatabaseInstance" in str(e.value) and "identities.py" in str(e.value)
    with pytest.raises(identities.UnknownResourceType):
        preview_roles({"kubernetes:apps/v1:StatefulSet"})
    assert project_roles("deploy", {"pathways:gcp:GkeCluster", "pulumi:providers:kubernetes"}) == []


@every_stack("stack", MADE_STACKS)
def test_apis_follow_the_types(stack):
    apis = required_apis(plan_types(stack_plan(stack)))
    assert {"container.googleapis.com", "compute.googleapis.com", "monitoring.googleapis.com", "iam.googleapis.com",
            "iamcredentials.googleapis.com", "sts.googleapis.com", "storage.googleapis.com", "cloudresourcemanager.googleapis.com"} <= set(apis)
    assert "cloudkms.googleapis.com" not in apis and "cloudkms.googleapis.com" in required_apis(plan_types(stack_plan(stack)), kms_key=True)
