"""The identity/role tables of bootstrap/README.md, rendered from components/model/cluster/identities.py and stack
files: `python -m bootstrap.roles_table` prints them for the stacks your deploy workflow deploys (read from it, not
a list of names here: #75.1); tests/test_bootstrap.py keeps the README's, of the example CI stacks, equal."""

from __future__ import annotations

from components.model.cluster import identities
from infra.offline import workflows
from infra.offline.stackfile import PROJECT_ROOT

from .main_stack import load_main_stack

# the README's table: the example CI stacks (tests/fixtures/examples), whatever a team's own workflows deploy
EXAMPLE_CI_STACKS = ("dev", "staging", "prod")


def _roles(roles: list[str]) -> str:
    return "<br>".join(f"`{r}`" for r in roles) or "-"


def stacks_table(stacks: tuple[str, ...]) -> str:
    header = "| stack | identity | project roles | on the node service accounts | on the state bucket | on the stack's KMS key |"
    lines = [header, "|---|---|---|---|---|---|"]
    for name in stacks:
        stack = load_main_stack(name)
        for identity in ("deploy", "preview"):
            grants = identities.grants(identity, stack.types, kms_key=stack.kms_key is not None, buckets=stack.buckets,
                                       state=("STATE", "pathways", name))
            by_scope = {scope: [g.role + (f" ({CONDITION_NOTES[g.condition.title.split('-of-')[0]]})" if g.condition else "")
                                for g in grants if g.scope == scope]
                        for scope in ("project", "node service accounts", "state bucket", "secrets key")}
            # the bootstrap's custom roles of exactly the permissions named (bootstrap/program.py)
            if identity == "deploy" and identities.BUCKET_TYPE in stack.types:
                by_scope["project"].append(f"{stack.config.bucket_create_role_id} (custom: {', '.join(identities.BUCKET_CREATE_PERMISSIONS)})")
            if identity == "preview":
                by_scope["project"].append(f"{stack.config.preflight_role_id} (custom: the preflight's {len(identities.PREFLIGHT_PERMISSIONS)} reads)")
            lines.append(f"| {name} | {identity} | {_roles(by_scope['project'])} | {_roles(by_scope['node service accounts'])} "
                         f"| {_roles(by_scope['state bucket'])} | {_roles(by_scope['secrets key'])} |")
    return "\n".join(lines)


CONDITION_NOTES = {"stack-buckets-only": "condition: the stack's buckets only", "state": "condition: its own stack's state only"}


def types_table() -> str:
    lines = ["| resource type | deploy | preview | decided by |", "|---|---|---|---|"]
    for t, a in sorted(identities.TABLE.items()):
        lines.append(f"| `{t}` | {_roles(list(a.deploy))} | {_roles(list(a.preview))} | {a.source} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(stacks_table(tuple(workflows.read(PROJECT_ROOT).deploys)), types_table(), sep="\n\n")
