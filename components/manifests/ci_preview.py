"""What the CI preview identity may do in the cluster (pure Python): server-side dry runs, nothing else.

`pulumi preview` asks the API server what each Kubernetes object would become (pulumi-kubernetes, server-side apply
with dryRun=All), which Kubernetes authorizes as the write itself: `create` for a new object, `patch` for an existing
one (RBAC has no dry-run verb). The preview identity's IAM role (roles/container.viewer) only reads, so without more
every dry run is Forbidden and the provider falls back to a client-side preview (pulumi-kubernetes
provider/pkg/provider/provider.go, Create and Update in preview): no admission check, no server defaults. So the
stack grants it, where the stack makes the cluster:

- ClusterRole/ClusterRoleBinding `pathways-ci-preview`: `create` and `patch` on the kinds the stack and its charts
  apply, for the user GKE authenticates the preview service account as (its email, GKE "Role-based access
  control"). Never on admissionregistration.k8s.io: ValidatingAdmissionPolicies and their bindings are the one kind
  no ValidatingAdmissionPolicy judges (Kubernetes "Validating Admission Policy": they are excluded to avoid
  deadlocks), so a grant there could remove the policy below.
- ValidatingAdmissionPolicy `pathways-ci-preview-dry-run-only` on every resource and subresource: every write by
  that user must be a dry run, and none may touch a Secret outside the stack's workload namespaces (a dry run
  answers with the object, data included: the workload namespaces' Secrets hold what the stack's own config, which
  the preview decrypts anyway, put there).
"""

from __future__ import annotations

from typing import Any

from components.manifests.guardrails import guard_binding

NAME = "pathways-ci-preview"
DRY_RUN_ONLY = "pathways-ci-preview-dry-run-only"
DRY_RUN_MESSAGE = "the CI preview identity may only dry-run (pulumi preview); it changes nothing"
SECRETS_MESSAGE = "the CI preview identity may not dry-run Secrets outside the stack's workload namespaces"
# The API groups of what the stack and its controllers' charts apply (their kinds are in components/model/
# identities.TABLE and the charts): core kinds by name (never a subresource such as serviceaccounts/token), the
# rest whole.
CORE_RESOURCES = ("namespaces", "services", "serviceaccounts", "configmaps", "secrets")
GROUPS = ("apps", "batch", "policy", "rbac.authorization.k8s.io", "scheduling.k8s.io", "apiextensions.k8s.io",
          "jobset.x-k8s.io", "leaderworkerset.x-k8s.io", "kueue.x-k8s.io", "networking.k8s.io")
VERBS = ["create", "patch"]


def _quoted(values: Any) -> str:
    return ", ".join(f"'{v}'" for v in values)


def cluster_role() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": NAME},
        "rules": [{"apiGroups": [""], "resources": list(CORE_RESOURCES), "verbs": VERBS},
                  {"apiGroups": list(GROUPS), "resources": ["*"], "verbs": VERBS}],
    }


def cluster_role_binding(user: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }


def dry_run_only_policy(user: str, workload_namespaces: tuple[str, ...]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": DRY_RUN_ONLY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE", "DELETE", "CONNECT"],
                                                    "resources": ["*/*"]}]},
            "matchConditions": [{"name": "ci-preview-identity", "expression": f"request.userInfo.username == '{user}'"}],
            "validations": [
                {"expression": "request.dryRun == true", "message": DRY_RUN_MESSAGE, "reason": "Forbidden"},
                {"expression": f"request.resource.resource != 'secrets' || request.namespace in [{_quoted(workload_namespaces)}]",
                 "message": SECRETS_MESSAGE, "reason": "Forbidden"},
            ],
        },
    }


def objects(user: str, workload_namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
    """The policy and its binding first: the grant is never in force without the policy that keeps it to dry runs."""
    return [dry_run_only_policy(user, workload_namespaces), guard_binding(DRY_RUN_ONLY), cluster_role(), cluster_role_binding(user)]
