"""Rule on secret-looking plain values (security #58.9; what looks like one: secrets.py): a protected stack keeps
them out of its state and previews."""

from __future__ import annotations

from components.model.errors import Problem
from components.model.stack import StackConfig
from components.model.workloads.secrets import secret_looking


def plain_secrets(cfg: StackConfig) -> list[Problem]:
    """Refused in a protected stack: its state and previews must hold no secret in clear."""
    if not cfg.protected:
        return []
    found = secret_looking(cfg.workloads, cfg.secret_env)
    return [Problem(key, (
        f"{what} looks like a secret given in plain text: a protected stack keeps it out of its state and previews; set it "
        "with `pulumi config set --secret --path` (a workload's env then goes into a Kubernetes Secret), or pass it in env "
        "and refer to it as $(NAME) in args")) for key, what in found]


RULES = (plain_secrets,)
