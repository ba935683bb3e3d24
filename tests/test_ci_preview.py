"""Issue #36.6: a team's first pull request previews with no hand step. The bootstrap writes the state bucket's
metadata object (tests/test_bootstrap.py), a preview of a stack with no state yet runs against an empty throwaway
backend (infra/ci_state.py), and the stack grants the CI preview identity the server-side dry runs
`pulumi preview` makes, which Kubernetes authorizes as writes, and nothing else (components/manifests/ci_preview.py)."""

from __future__ import annotations

import pytest
import yaml

from components.manifests import ci_preview
from components.model.cluster.identities import ci_account_email
from infra import ci_state
from tests.conftest import EXAMPLE_STACKS, config_with, example_path, example_plan, plan_of
from tests.test_security import _admitted, _evaluate

USER = "pulumi-dev-preview@pathways-dev-123.iam.gserviceaccount.com"
POLICY = ci_preview.dry_run_only_policy(USER, ("pathways",))
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"


def request(user=USER, dry_run=True, resource="jobsets", namespace="pathways", operation="UPDATE"):
    return {"userInfo": {"username": user}, "dryRun": dry_run, "operation": operation, "namespace": namespace,
            "resource": {"group": "", "version": "v1", "resource": resource}}


@pytest.mark.parametrize("req,admitted", [
    (request(), True),  # pulumi preview's server-side dry run
    (request(operation="CREATE", resource="namespaces", namespace=""), True),
    (request(dry_run=False), False),  # the same request for real
    (request(dry_run=False, operation="DELETE"), False),
    (request(dry_run=False, operation="CONNECT", resource="pods"), False),  # exec, port-forward
    (request(resource="secrets"), True),  # the stack's own Secrets, whose values the preview decrypts anyway
    (request(resource="secrets", namespace="jobset-system"), False),  # a dry run answers with the Secret's data
    (request(user="alice@example.com", dry_run=False), True),  # nobody else is this policy's business
])
def test_finding_6_the_preview_identity_may_only_dry_run(req, admitted):
    assert _admitted(POLICY, req, {}) == admitted


def test_finding_6_the_grant_never_reaches_admission_policies_or_subresources():
    role = ci_preview.cluster_role()
    groups = {g for rule in role["rules"] for g in rule["apiGroups"]}
    # ValidatingAdmissionPolicies and their bindings are not judged by any ValidatingAdmissionPolicy: a grant there
    # could unbind the policy that keeps this one to dry runs
    assert "admissionregistration.k8s.io" not in groups and "*" not in groups
    core = next(rule for rule in role["rules"] if rule["apiGroups"] == [""])
    assert all("/" not in r and r != "*" for r in core["resources"])  # never serviceaccounts/token, pods/exec
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"create", "patch"}  # get/list/watch: IAM's container.viewer
    rules = POLICY["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE", "DELETE", "CONNECT"], "resources": ["*/*"]}]
    assert POLICY["spec"]["failurePolicy"] == "Fail"
    assert all(_evaluate(c["expression"], {"request": request()}) for c in POLICY["spec"]["matchConditions"])


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_finding_6_the_stack_grants_its_bootstraps_preview_identity_dry_runs(stack):
    plan = example_plan(stack)
    project = plan.one("gcp:container/cluster:Cluster").input("project")
    user = ci_account_email(stack, "preview", project)  # the account the bootstrap makes for this stack
    binding = plan.one(CLUSTER_ROLE_BINDING, "guardrails-ci-preview")
    assert binding.input("subjects") == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    policy = plan.one(VAP, "guardrails-ci-preview")
    assert policy.input("spec.matchConditions")[0]["expression"] == f"request.userInfo.username == '{user}'"
    # the grant is bound only once the policy that keeps it to dry runs is
    assert plan.one(BINDING, "guardrails-ci-preview").urn in binding.dependencies
    assert plan.one(CLUSTER_ROLE, "guardrails-ci-preview").input("rules") == ci_preview.cluster_role()["rules"]


def test_no_ci_access_on_a_cluster_made_elsewhere():
    # GKE authenticates a Google service account by its email; another cluster need not
    plan = plan_of(config_with(cluster={"existing": {"kubeconfig": "build/kubeconfig"}}, bucket={"name": "b-cache"}), "ext")
    assert plan.by_type(CLUSTER_ROLE_BINDING) == [] and not [p for p in plan.by_type(VAP) if "ci-preview" in p.name]


# --- the first preview of a stack with no state ---------------------------------------------------------


def lister(code, text):
    calls = []

    def ls(url):
        calls.append(url)
        return code, text
    return ls, calls


def test_finding_6_a_stack_with_no_state_previews_against_an_empty_backend(tmp_path):
    ls, calls = lister(1, "ERROR: (gcloud.storage.ls) One or more URLs matched no objects.")
    out = ci_state.outputs("gs://pathways-dev-123-pulumi-state", "dev", False, ls=ls, empty_dir=str(tmp_path))
    assert calls == ["gs://pathways-dev-123-pulumi-state/.pulumi/stacks/pathways/dev.json*"]  # the DIY backend's checkpoint
    assert out == {"secrets-provider": "passphrase", "exists": "false", "url": f"file://{tmp_path}"}


def test_a_stack_with_state_previews_against_it():
    ls, _ = lister(0, "gs://b/.pulumi/stacks/pathways/prod.json\n")
    out = ci_state.outputs("gs://b", "prod", False, ls=ls)
    assert out["exists"] == "true" and out["url"] == "gs://b"
    assert out["secrets-provider"].startswith("gcpkms://projects/pathways-prod-123/")  # the stack file's, for a stack init


def test_a_listing_that_fails_otherwise_fails_the_job():
    # no permission, no bucket: never preview a deployed stack as if it were new
    ls, _ = lister(1, "ERROR: 403 pulumi-dev-preview does not have storage.objects.list access")
    with pytest.raises(ci_state.StateError, match="cannot tell whether stack dev has state"):
        ci_state.outputs("gs://b", "dev", False, ls=ls)
    with pytest.raises(SystemExit) as usage:  # argparse's error: not a gs:// backend
        ci_state.main(["not-a-bucket", "dev"])
    assert usage.value.code == 2


def test_the_deploy_job_only_needs_the_secrets_provider():
    ls, calls = lister(1, "unused")
    staging = yaml.safe_load(example_path("staging").read_text())["secretsprovider"]  # the example's (a team may have none)
    assert ci_state.outputs("gs://b", "staging", True, ls=ls, stacks_dir=EXAMPLE_STACKS) == {"secrets-provider": staging}
    assert calls == []
