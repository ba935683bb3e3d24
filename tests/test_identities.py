"""The CI identities' roles come from the resource types the stack creates (components/model/identities.py):
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

from components import node_identity
from components.model import identities
from components.model.identities import TABLE, deploy_roles, grants, preview_roles, project_roles, required_apis
from tests.conftest import STACKS, config_with, plan_of, stack_plan

ROOT = Path(__file__).resolve().parents[1]
PRIMITIVE = {"roles/owner", "roles/editor", "roles/viewer"}
MONITORING_EDITORS = {"roles/monitoring.alertPolicyEditor", "roles/monitoring.dashboardEditor"}


def plan_types(plan) -> set[str]:
    return {r.type for r in plan.resources}


def all_roles() -> set[str]:
    table = {r for a in TABLE.values() for r in (*a.deploy, *a.preview)}
    implied = {r for k, v in identities.IMPLIES.items() for r in (k, *v)}
    return table | implied | set(identities.STATE_ROLES.values()) | set(identities.KMS_ROLES.values()) | set(identities.NODE_ROLES)


@pytest.mark.parametrize("stack", STACKS)
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
    found = set().union(*(_constructed_types(p) for p in [*sorted((ROOT / "components").glob("*.py")), ROOT / "infra" / "program.py"]))
    assert {"gcp:compute/resourcePolicy:ResourcePolicy", "kubernetes:core/v1:Secret", "kubernetes:rbac.authorization.k8s.io/v1:Role",
            "random:index/randomPassword:RandomPassword", "pulumi:providers:kubernetes"} <= found
    assert found - TABLE.keys() == set()


@pytest.mark.parametrize("stack", STACKS)
def test_deploy_can_create_the_alert_policies_and_dashboard(stack):
    # issue #28: the documented deploy roles had no Monitoring role, so the first `pulumi up` got a 403
    types = plan_types(stack_plan(stack))
    assert {"gcp:monitoring/alertPolicy:AlertPolicy", "gcp:monitoring/dashboard:Dashboard"} <= types
    assert MONITORING_EDITORS <= set(deploy_roles(types))
    assert "roles/monitoring.admin" not in deploy_roles(types) and "roles/monitoring.editor" not in deploy_roles(types)


@pytest.mark.parametrize("stack", STACKS)
def test_preview_reads_the_state_and_decrypts_the_secrets_and_writes_nothing(stack):
    roles = preview_roles(plan_types(stack_plan(stack)), kms_key=True)
    assert {"roles/storage.objectViewer", "roles/cloudkms.cryptoKeyDecrypter"} <= set(roles)
    read_only = re.compile(r"roles/[a-zA-Z.]+(Viewer|\.viewer|securityReviewer|cryptoKeyDecrypter)")
    assert [r for r in roles if not read_only.fullmatch(r)] == []
    scopes = {g.role: g.scope for g in grants("preview", plan_types(stack_plan(stack)), kms_key=True)}
    assert scopes["roles/storage.objectViewer"] == "state bucket" and scopes["roles/cloudkms.cryptoKeyDecrypter"] == "secrets key"


# The table, rendered for the committed CI stacks (bootstrap/README.md shows it): a change here is a change
# to what the identities may do, and should be reviewed as one.
DEPLOY = [
    "roles/compute.networkAdmin", "roles/compute.securityAdmin", "roles/container.admin", "roles/iam.roleAdmin",
    "roles/iam.serviceAccountAdmin", "roles/iam.serviceAccountUser", "roles/monitoring.alertPolicyEditor",
    "roles/monitoring.dashboardEditor", "roles/resourcemanager.projectIamAdmin", "roles/storage.admin",
]
PREVIEW = [
    "roles/compute.networkViewer", "roles/container.viewer", "roles/iam.roleViewer", "roles/iam.securityReviewer",
    "roles/iam.serviceAccountViewer", "roles/monitoring.alertPolicyViewer", "roles/monitoring.dashboardViewer",
    "roles/storage.bucketViewer",
]


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_ci_stacks_roles(stack):
    types = plan_types(stack_plan(stack))
    assert project_roles("deploy", types) == DEPLOY
    assert project_roles("preview", types) == PREVIEW
    kms = stack != "dev"  # dev: passphrase; staging, prod: gcpkms (their stack files)
    assert deploy_roles(types, kms_key=kms) == sorted([*DEPLOY, "roles/storage.objectUser", *(["roles/cloudkms.cryptoKeyEncrypterDecrypter"] if kms else [])])
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
    tpu7x = plan_types(plan_of(config_with(slices=[{"name": "g", "tpu": "tpu7x-128"}])))
    assert tpu7x - base == {"gcp:compute/resourcePolicy:ResourcePolicy"}
    assert set(deploy_roles(tpu7x)) - set(deploy_roles(base)) == {"roles/compute.storageAdmin"}
    assert set(preview_roles(tpu7x)) - set(preview_roles(base)) == {"roles/compute.viewer"}


def test_the_deploy_identity_may_grant_only_the_node_roles():
    (g,) = [g for g in grants("deploy", set(TABLE)) if g.role == "roles/resourcemanager.projectIamAdmin"]
    assert g.condition is not None and "iam.googleapis.com/modifiedGrantsByRole" in g.condition.expression
    assert re.findall(r"'(roles/[^']+)'", g.condition.expression) == list(node_identity.NODE_ROLES)
    for stack in STACKS:  # the stack grants no other project role, so the condition never blocks it
        granted = {r.input("role") for r in stack_plan(stack).by_type("gcp:projects/iAMMember:IAMMember")}
        assert granted <= set(node_identity.NODE_ROLES), stack
    assert all(g.condition is None for g in grants("preview", set(TABLE)))


def test_an_unknown_type_is_an_error_not_a_silent_skip():
    with pytest.raises(identities.UnknownResourceType) as e:
        deploy_roles({"gcp:container/cluster:Cluster", "gcp:sql/databaseInstance:DatabaseInstance"})
    assert "gcp:sql/databaseInstance:DatabaseInstance" in str(e.value) and "identities.py" in str(e.value)
    with pytest.raises(identities.UnknownResourceType):
        preview_roles({"kubernetes:apps/v1:Deployment"})
    assert project_roles("deploy", {"pathways:gcp:GkeCluster", "pulumi:providers:kubernetes"}) == []


@pytest.mark.parametrize("stack", STACKS)
def test_apis_follow_the_types(stack):
    apis = required_apis(plan_types(stack_plan(stack)))
    assert {"container.googleapis.com", "compute.googleapis.com", "monitoring.googleapis.com", "iam.googleapis.com",
            "iamcredentials.googleapis.com", "sts.googleapis.com", "storage.googleapis.com", "cloudresourcemanager.googleapis.com"} <= set(apis)
    assert "cloudkms.googleapis.com" not in apis and "cloudkms.googleapis.com" in required_apis(plan_types(stack_plan(stack)), kms_key=True)
