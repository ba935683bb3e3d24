"""Whom the GitHub Workload Identity pool trusts (bootstrap/program.py makes the pool): the environments each
stack's identities serve, and the condition every token must meet before any service account is looked at."""

from __future__ import annotations

from typing import Protocol

from components.model.cluster import identities

from .main_stack import MainStack

MAIN_BRANCH = "refs/heads/main"  # GitHub's `ref` claim of a run on a push to main (the deploy workflow)


class Trusting(Protocol):
    """What of the bootstrap's config the condition names (program.BootstrapConfig)."""

    @property
    def repository(self) -> str: ...
    @property
    def repository_id(self) -> str: ...
    @property
    def repository_owner_id(self) -> str: ...
    @property
    def stacks(self) -> tuple[MainStack, ...]: ...


def github_subject(repository: str, environment: str) -> str:
    """The `sub` GitHub puts in the OIDC token of a job that runs in an environment."""
    return f"repo:{repository}:environment:{environment}"


def environments(stack: str, identity: identities.Identity, pull_requests: bool = True) -> tuple[str, ...]:
    """The GitHub environments each identity serves (.github/workflows/pulumi-stack.yml): deploy `S`; preview
    `S-preview` (the preview before a deploy, on main) and, for a stack whose pull requests preview for real,
    `S-pull-request` (takes_pull_request_previews)."""
    if identity == "deploy":
        return (stack,)
    return (f"{stack}-preview", *([pull_request_environment(stack)] if pull_requests else []))


def takes_pull_request_previews(s: MainStack) -> bool:
    """A protected stack's or a fleet manager's preview identity decrypts secrets a pull request must not reach (the
    stack's, or its workers' tokens): it serves main's previews only (identities.pull_request_preview_refusal)."""
    fleet = s.config.fleet
    return identities.pull_request_preview_refusal(s.config.protected, fleet is not None and fleet.role == "manager") is None


def pull_request_environment(stack: str) -> str:
    return f"{stack}-pull-request"


# The workflows that authenticate (.github/workflows: pulumi-stack.yml's preview and up jobs, verify.yml's) and the
# events main runs them on; tests/test_workflows.py holds these to the workflow files.
PREVIEW_WORKFLOW = "pulumi-stack.yml"
MAIN_WORKFLOWS = (PREVIEW_WORKFLOW, "verify.yml")
MAIN_EVENTS = ("push", "schedule", "workflow_dispatch")


def pool_condition(cfg: Trusting) -> str:
    """What every token must be, checked by Google before any service account is looked at: from the repository
    and owner these IDs name (GitHub's immutable repository_id and repository_owner_id claims), and from a push to
    main unless the job runs in a pull-request preview environment. So the deploy environments, and the previews
    before a deploy, are main's alone in GCP's own conditions, whatever a branch's workflow says; a pull request's
    only identities are the pull-request environments', which GitHub releases to a job only after the
    environment's protection rules (its required reviewers) pass (docs/ci.md)."""
    pull_requests = ", ".join(f"'{pull_request_environment(s.name)}'" for s in cfg.stacks if takes_pull_request_previews(s))
    # and only the workflows that use the identities, on the events they run on (security #73.18): main's pushes
    # (deploy.yml), its schedule and manual runs (verify.yml), through pulumi-stack.yml or verify.yml as committed on
    # main (GitHub's job_workflow_ref claim: the called workflow's path and ref); a pull request's, through
    # pulumi-stack.yml (at the pull request's ref) on pull_request events only
    workflows = f"{cfg.repository}/.github/workflows"
    mains = ", ".join(f"'{workflows}/{w}@{MAIN_BRANCH}'" for w in MAIN_WORKFLOWS)
    return (f"assertion.repository_id == '{cfg.repository_id}' && assertion.repository_owner_id == '{cfg.repository_owner_id}' && "
            f"((assertion.ref == '{MAIN_BRANCH}' && assertion.event_name in {list(MAIN_EVENTS)} && assertion.job_workflow_ref in [{mains}]) || "
            f"(assertion.environment in [{pull_requests}] && assertion.event_name == 'pull_request' && "
            f"assertion.job_workflow_ref.startsWith('{workflows}/{PREVIEW_WORKFLOW}@')))")
