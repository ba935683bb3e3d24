"""Bucket grants on buckets the stack does not own (Pulumi-free).

The bootstrap grants each workload's and the runs' Kubernetes service account a role on every bucket they mount
(`ResolvedStack.bucket_grants`): a stack file naming any bucket would otherwise have the bootstrap operator grant
this project's workloads read or write on it, another project's or another stack's included (a dev stack mounting
prod's checkpoints). A bucket the stack makes (scratch, artifacts, multi-tier checkpointing backups) is its own;
any other needs the bootstrap's own config to list it for this stack, with the most it may be granted
(`pathways-bootstrap:externalBuckets`: {stack: {bucket: read | write}}), checked by the program (infra/config.py,
against the bootstrap config of the stack's project) and again by the bootstrap before it grants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from components.model.cluster.bucket import check_bucket_name
from components.model.errors import Problem, config_key
from components.model.stack import StackConfig
from components.model.workloads import isolation
from components.model.workloads.storage import WRITE_ROLE

ACCESS = {"read": 0, "write": 1}


@dataclass(frozen=True)
class BucketGrant:
    key: str
    """the stack-file key naming the bucket"""
    bucket: str
    write: bool


def owned_buckets(cfg: StackConfig) -> frozenset[str]:
    """The buckets the stack makes (none on a cluster made elsewhere: it makes no GCP resource there)."""
    if cfg.cluster.existing is not None:
        return frozenset()
    domains = [b for d in isolation.domains(cfg) for b in (d.bucket_name, d.artifacts_bucket_name)]
    return frozenset(b for b in (cfg.bucket_name, cfg.artifacts_bucket_name, cfg.mtc_bucket_name, *domains) if b)


def mounted_buckets(cfg: StackConfig) -> list[BucketGrant]:
    """Every bucket a grant is made for, by the key that names it: workloads' mounts, runs.buckets, teams' buckets."""
    out = []
    for i, w in enumerate(cfg.workloads):
        if w.state == "finished":
            continue
        for j, m in enumerate(w.mounts):
            if m.bucket:
                out.append(BucketGrant(config_key(("workloads", i, "mounts", j, "bucket")), m.bucket, m.role == WRITE_ROLE))
    if cfg.runs is not None:
        for k, b in enumerate(cfg.runs.buckets):
            out.append(BucketGrant(config_key(("runs", "buckets", k, "name")), b.name, b.role == WRITE_ROLE))
        for i, t in enumerate(cfg.teams):
            for k, b in enumerate(t.buckets):
                out.append(BucketGrant(config_key(("teams", i, "buckets", k, "name")), b.name, b.role == WRITE_ROLE))
    return out


def external_grants(cfg: StackConfig) -> list[BucketGrant]:
    """Grants on buckets the stack does not make."""
    own = owned_buckets(cfg)
    return [g for g in mounted_buckets(cfg) if g.bucket not in own]


def external_bucket_problems(cfg: StackConfig, allowed: Mapping[str, str], bootstrap_file: str) -> list[Problem]:
    """One line per grant on a bucket the stack does not make that `allowed` ({bucket: read | write}, the bootstrap
    config's entry for this stack) does not cover."""
    problems = []
    for g in external_grants(cfg):
        most = allowed.get(g.bucket)
        need = "write" if g.write else "read"
        if most is None:
            problems.append(Problem(g.key, (
                f"{g.bucket!r} is not a bucket this stack makes, and {bootstrap_file} does not list it for stack "
                f"{cfg.stack}; the bootstrap would grant {need} on it: add it under pathways-bootstrap:externalBuckets."
                f"{cfg.stack} ({g.bucket}: {need}) there if this project's workloads may {need} it")))
        elif ACCESS[need] > ACCESS.get(most, -1):
            problems.append(Problem(g.key, (
                f"{g.bucket!r} is mounted read-write, but {bootstrap_file} allows stack {cfg.stack} only {most} on it; "
                "mount it readOnly, or raise its entry under pathways-bootstrap:externalBuckets to write")))
    return problems


def parse_external_buckets(value: object, stacks: list[str], key: str) -> tuple[dict[str, dict[str, str]], list[Problem]]:
    """The bootstrap's `externalBuckets` ({stack: {bucket: read | write}}), or problems naming `key`."""
    if value is None:
        return {}, []
    if not isinstance(value, dict):
        return {}, [Problem(key, "not a map; give {<stack>: {<bucket>: read | write}}")]
    out: dict[str, dict[str, str]] = {}
    problems = []
    for stack, buckets in value.items():
        if stack not in stacks:
            problems.append(Problem(f"{key}.{stack}", f"not a stack this bootstrap sets up ({', '.join(stacks) or 'none'})"))
            continue
        if not isinstance(buckets, dict):
            problems.append(Problem(f"{key}.{stack}", "not a map; give {<bucket>: read | write}"))
            continue
        for bucket, access in buckets.items():
            try:
                check_bucket_name(str(bucket))
            except ValueError as e:
                problems.append(Problem(f"{key}.{stack}.{bucket}", str(e)))
                continue
            if access not in ACCESS:
                problems.append(Problem(f"{key}.{stack}.{bucket}", f"{str(access)[:40]!r}; give read or write"))
                continue
            out.setdefault(str(stack), {})[str(bucket)] = str(access)
    return out, problems
