"""Secret-looking values in plain keys (security #58.9): what looks like one (the rule: secrets_checks.py): a token in a workload's env, args or serve.extraArgs that was
not given as a secret goes into the JobSet or LeaderWorkerSet as written, and so into Pulumi's state and every
preview's diff (a pull request's comment included). The plan names each; a protected stack refuses them.

What looks secret: an env name with a secret word as one of its `_`-separated parts (HF_TOKEN, WANDB_API_KEY,
AWS_SECRET_ACCESS_KEY), and a `--<name>=<value>` or `--<name> <value>` argument whose name holds one (--hf_token=...,
--api-key ...). A value that names an env var for Kubernetes to expand ($(HF_TOKEN)) holds no secret; nor do env
values when the workloads' env is secret (pulumi config set --secret --path: it all goes into a Kubernetes Secret)."""

from __future__ import annotations

import re
from typing import Sequence

from components.model.errors import config_key
from components.model.workloads.workload import Workload

_WORD = r"(TOKEN|SECRET|PASSWORD|PASSWD|APIKEY|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)"
SECRET_ENV = re.compile(rf"(?:^|.*_){_WORD}(?:_.*|$)", re.IGNORECASE)
# a flag whose name has a secret word as one of its -, _ or . separated parts (--hf_token, --api-key; not --tokenizer)
SECRET_FLAG = re.compile(r"--?(?:[A-Za-z0-9]+[-_.])*(?:token|secret|password|passwd|apikey|api[-_.]key|access[-_.]key|credentials?)(?:[-_.][A-Za-z0-9]+)*",
                         re.IGNORECASE)


def _reference(value: str) -> bool:
    """A value Kubernetes fills from the container's env ($(VAR)), or a shell reference ($VAR, ${VAR})."""
    return bool(re.fullmatch(r"\$\([A-Za-z_][A-Za-z0-9_]*\)|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", value))


def _in_args(args: list[str]) -> list[int]:
    """Indexes of args that carry a secret-looking value inline (--x_token=v) or as the next arg (--x_token v)."""
    found = []
    for i, a in enumerate(args):
        flag, eq, value = a.partition("=")
        if not SECRET_FLAG.fullmatch(flag):
            continue
        if eq:
            if value and not _reference(value):
                found.append(i)
        elif i + 1 < len(args) and not args[i + 1].startswith("-") and not _reference(args[i + 1]):
            found.append(i + 1)
    return found


def secret_looking_env(name: str, value: object) -> bool:
    """An env entry whose name says secret and whose value is one in plain text (not a reference to one)."""
    return bool(SECRET_ENV.fullmatch(name)) and bool(str(value)) and not _reference(str(value))


def secret_looking(workloads: Sequence[Workload], secret_env: bool) -> list[tuple[str, str]]:
    """(config key, what) of every plain value that looks like a secret (`secret_env`: the workloads' env was given
    as a secret, so it goes into a Kubernetes Secret)."""
    out = []
    for i, w in enumerate(workloads):
        if not secret_env:
            out += [(config_key(("workloads", i, "env", name)), f"env {name}") for name, value in w.env.items()
                    if SECRET_ENV.fullmatch(name) and str(value) and not _reference(str(value))]
        lists: list[tuple[tuple[str, ...], list[str]]] = [(("command",), w.command), (("args",), w.args)]
        if w.serve is not None:
            lists.append((("serve", "extraArgs"), w.serve.extra_args))
        for path, args in lists:
            out += [(config_key(("workloads", i, *path, j)), f"{'.'.join(path)} {args[j].partition('=')[0]}") for j in _in_args(list(args))]
    return out
