"""`python -m infra.offline new-stack`: a team's environment in one command. It writes a commented stack file
(stacks/Pulumi.<name>.yaml) and its project's bootstrap entry (bootstrap/Pulumi.<project>.yaml), from flags or
from an xpk command line (infra/offline/xpk_flags.py), after planning the stack: what `plan` refuses, it refuses
in the same words, and then writes nothing.

The text is built here (Pulumi-free); __main__ plans it and writes it.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from components.model.cluster import cluster as cluster_model
from components.model.errors import ConfigError, Problem
from infra.offline.stackfile import PROJECT_ROOT

# The Pathways release the examples run; a team moves it with its program's JAX (docs/runs.md).
DEFAULT_PATHWAYS_VERSION = "jax-0.9.0"
_PROJECT = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
_ZONE = re.compile(r"([a-z]+-[a-z]+[0-9]+)-([a-z]|ai[0-9][a-z])")


@dataclass
class Setting:
    """One config key the file sets, with the comment that says why (and where it came from)."""

    value: Any
    comment: str = ""


@dataclass
class StackSpec:
    name: str
    project: str
    zone: str
    tpu: Any  # a TPU name (v6e-16) or {family, topology}
    slices: int = 1
    capacity: str = "on-demand"
    reservation: Optional[str] = None
    slice_name: str = ""
    pathways_version: str = DEFAULT_PATHWAYS_VERSION
    cluster: dict[str, Setting] = field(default_factory=dict)
    head_pool: dict[str, Setting] = field(default_factory=dict)
    network: dict[str, Setting] = field(default_factory=dict)
    group: dict[str, Setting] = field(default_factory=dict)
    """More keys of the slice group (queuedProvisioning)."""
    workloads: list[dict[str, Any]] = field(default_factory=list)
    """Declared workloads (from `gcluster job submit` lines)."""
    origin: str = ""
    """Where the values came from, for the file's first comment (an xpk command line, or the flags)."""
    protected: bool = False
    """Production (#75.2): protection, its own Cloud KMS secrets key, a maintenance window and an exclusion that
    holds node upgrades, and a policy config that demands the flag."""

    @property
    def region(self) -> str:
        m = _ZONE.fullmatch(self.zone)
        return m.group(1) if m else self.zone.rsplit("-", 1)[0]

    @property
    def family(self) -> str:
        name = self.tpu["family"] if isinstance(self.tpu, dict) else str(self.tpu).rsplit("-", 1)[0]
        return "v5e" if name == "v5litepod" else name


@dataclass
class Translation:
    """Another tool's description of a cluster (an xpk line, a Cluster Toolkit blueprint) as a stack, and what became
    of each of its flags or settings."""

    spec: StackSpec
    translated: list[str] = field(default_factory=list)
    """`--flag value -> key` (or `module.setting value -> key`) lines."""
    already: list[str] = field(default_factory=list)
    untranslated: list[str] = field(default_factory=list)
    project_number: Optional[str] = None


def check(spec: StackSpec) -> None:
    """What the plan cannot say about the flags themselves (it reads the file they make), one line each."""
    problems = []
    if not _PROJECT.fullmatch(spec.project):
        problems.append(Problem("--project", f"{spec.project[:80]!r} is not a project ID (6-30 lowercase letters, digits, '-')"))
    if not _ZONE.fullmatch(spec.zone):
        problems.append(Problem("--zone", f"{spec.zone[:80]!r} is not a zone (e.g. us-east5-b)"))
    if spec.slices < 1 or spec.slices > 256:
        problems.append(Problem("--slices", f"{spec.slices} is not a number of slices (1 to 256)"))
    # every value that becomes text of the file, held to its grammar before any text is built (security #73.5: an
    # xpk line's --tpu-type or --cluster with a newline and YAML after it wrote keys of its own)
    if spec.slice_name and not _SLICE_NAME.fullmatch(spec.slice_name):
        problems.append(Problem("--slice-name", f"{spec.slice_name[:80]!r} is not a slice group name (a DNS label of at most 20 "
                                                "characters: lowercase letters, digits, '-')"))
    tpu_values = list(spec.tpu.values()) if isinstance(spec.tpu, dict) else [spec.tpu]
    if not all(isinstance(v, str) and _TPU_TEXT.fullmatch(v) for v in tpu_values):
        problems.append(Problem("--tpu", f"{str(spec.tpu)[:80]!r} is not a TPU (e.g. v6e-16, or family and topology like 4x4)"))
    if spec.reservation is not None and not _RESERVATION_TEXT.fullmatch(spec.reservation):
        problems.append(Problem("--reservation", f"{spec.reservation[:80]!r} is not a reservation name or path"))
    if problems:
        raise ConfigError(problems)


_SLICE_NAME = re.compile(r"[a-z]([-a-z0-9]{0,18}[a-z0-9])?")
_TPU_TEXT = re.compile(r"[a-z0-9][a-z0-9x.-]{0,40}")
_RESERVATION_TEXT = re.compile(r"[a-z0-9][-a-z0-9/]{0,250}")


def _comment(text: str) -> str:
    """Text for a comment: one line, printable (an xpk line's newlines would end the comment and start YAML)."""
    return "".join(c if c.isprintable() else " " for c in text)


def secrets_provider(spec: StackSpec) -> str:
    """A protected stack's own Cloud KMS key, in the key ring the bootstrap makes in its project (bootstrap/program.py)."""
    return f"gcpkms://projects/{spec.project}/locations/{spec.region}/keyRings/pulumi/cryptoKeys/pulumi-{spec.name}"


def maintenance(today: datetime.date) -> dict[str, Any]:
    """A protected stack's GKE maintenance: weekend nights, and node upgrades held (NO_MINOR_OR_NODE_UPGRADES, which
    the policy pack's pathways-disruption-policy demands of protected stacks) until the day before the default
    channel's minor leaves standard support, the longest GKE accepts (cluster_checks.maintenance), at most 180 days."""
    minor = cluster_model.CHANNEL_DEFAULT_MINOR[cluster_model.ReleaseChannel.REGULAR.value]
    support_end = cluster_model.END_OF_STANDARD_SUPPORT.get(minor)
    end = today + datetime.timedelta(days=180)
    if support_end:
        end = min(end, datetime.date.fromisoformat(support_end[:10]) - datetime.timedelta(days=1))
    return {
        "window": {"startTime": f"{today.isoformat()}T02:00:00Z", "endTime": f"{today.isoformat()}T10:00:00Z",
                   "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"},
        "exclusions": [{"name": "hold-node-upgrades", "startTime": f"{today.isoformat()}T00:00:00Z",
                        "endTime": f"{end.isoformat()}T00:00:00Z", "scope": "NO_MINOR_OR_NODE_UPGRADES"}],
    }


def policy_config(spec: StackSpec) -> str:
    """policies/config.<stack>.json of a protected stack: the pack demands pathways:protected of it."""
    return json.dumps({"pathways-cluster-hardening": {"protectedStacks": [spec.name]}}, indent=2) + "\n"


def intended_config(spec: StackSpec, today: Optional[datetime.date] = None) -> dict[str, Any]:
    """The mapping stack_text means to write: new-stack refuses a file that does not parse back to exactly this."""
    group: dict[str, Any] = {"name": spec.slice_name or spec.family, "tpu": spec.tpu}
    if spec.slices != 1:
        group["count"] = spec.slices
    group.update({"on-demand": {}, "spot": {"spot": True}, "flex-start": {"flexStart": True},
                  "reservation": {"reservation": spec.reservation}}[spec.capacity])
    group.update({k: s.value for k, s in spec.group.items()})
    cluster = {k: s.value for k, s in spec.cluster.items()}
    if spec.protected:
        cluster["maintenance"] = maintenance(today or datetime.date.today())
    return {
        "gcp:project": spec.project, "gcp:region": spec.region, "gcp:zone": spec.zone, "pathways:protected": spec.protected,
        **({"pathways:cluster": cluster} if cluster else {}),
        **({"pathways:headPool": {k: s.value for k, s in spec.head_pool.items()}} if spec.head_pool else {}),
        **({"pathways:network": {k: s.value for k, s in spec.network.items()}} if spec.network else {}),
        "pathways:slices": [group], "pathways:pathwaysVersion": spec.pathways_version,
        **({"pathways:workloads": spec.workloads} if spec.workloads else {}),
    }


def _dump(value: Any) -> str:
    """A value as YAML flow text on one line."""
    return yaml.safe_dump(value, default_flow_style=True, width=1_000_000).strip().removesuffix("...").strip()


def _line(indent: int, key: str, value: Any, comment: str = "") -> str:
    text = f"{' ' * indent}{key}: {_dump(value)}"
    # a comment may carry another tool's text (a blueprint's module id): one printable line, never YAML of its own
    return f"{text}  # {_comment(comment)}" if comment else text


def _section(key: str, settings: dict[str, Setting]) -> list[str]:
    lines = [f"  pathways:{key}:"]
    for name, s in settings.items():
        lines.append(_line(4, name, s.value, s.comment))
    return lines


def stack_text(spec: StackSpec, today: Optional[datetime.date] = None) -> str:
    """The stack file: every key it sets says why; the safe defaults it leaves alone are named in comments."""
    today = today or datetime.date.today()
    slice_name = spec.slice_name or spec.family
    capacity = {
        "on-demand": [],
        "spot": [_line(6, "spot", True, "Spot VMs: the cheapest, taken back at any time (runs restart from a checkpoint)")],
        "flex-start": [_line(6, "flexStart", True, "flex-start (DWS): pools start empty and get nodes when a run asks")],
        "reservation": [_line(6, "reservation", spec.reservation, "consumed by name; record it for the plan to judge: "
                              "docs/capacity.md, reservationRecord")],
    }[spec.capacity]
    lines = [
        f"# Stack {spec.name}: written by `python -m infra.offline new-stack` on {today.isoformat()}{_comment(spec.origin)}.",
        f"# Preview it: make plan STACK={spec.name}. Keys and defaults: docs/configuration.md; next steps: docs/adopting.md.",
    ]
    if spec.protected:
        lines += [
            "# Production: its secrets under its own Cloud KMS key, which the bootstrap makes in its project; the first",
            "# `pulumi stack init` (or select --create) adds the encryptedkey: commit it.",
            f"secretsprovider: {secrets_provider(spec)}",
        ]
    lines += [
        "config:",
        f"  gcp:project: {spec.project}",
        f"  gcp:region: {spec.region}",
        f"  gcp:zone: {spec.zone}  # the slices' zone: every node pool is here",
    ]
    if spec.protected:
        lines += [
            "  # protected: `pulumi destroy` refuses (protect on the cluster and buckets, GKE's deletion protection on), and",
            "  # `diff` refuses replacements and deletions the change does not list (pathways:allowDisruption);",
            f"  # policies/config.{spec.name}.json makes the policy pack demand it.",
            "  pathways:protected: true",
        ]
    else:
        lines += [
            "  # protected: true keeps the cluster and buckets from a `pulumi destroy` and refuses replacements the",
            "  # change does not list (production); this stack starts unprotected. GKE's deletion protection stays on.",
            "  pathways:protected: false",
        ]
    if spec.cluster or spec.protected:
        lines += _section("cluster", spec.cluster)
    if spec.protected:
        m = maintenance(today)
        w, (e,) = m["window"], m["exclusions"]
        lines += [
            "    # GKE may upgrade on weekend nights only, and never upgrades nodes (which recreates slices) before",
            f"    # {e['endTime'][:10]}: the day before GKE {cluster_model.CHANNEL_DEFAULT_MINOR['REGULAR']} (the REGULAR channel's) "
            "leaves standard support; renew the",
            "    # exclusion after the upgrade. Compute Engine's host maintenance of TPU VMs ignores both.",
            "    maintenance:",
            "      window:",
            _line(8, "startTime", w["startTime"]), _line(8, "endTime", w["endTime"]), _line(8, "recurrence", w["recurrence"]),
            "      exclusions:",
            f"        - name: {e['name']}",
            _line(10, "startTime", e["startTime"]), _line(10, "endTime", e["endTime"]), _line(10, "scope", e["scope"]),
        ]
    lines.append("  # private nodes, DNS-endpoint control plane, Workload Identity, maintenance window: on by default")
    if spec.head_pool:
        lines += _section("headPool", spec.head_pool)
    if spec.network:
        lines += _section("network", spec.network)
    lines += [
        "  pathways:slices:",
        f"    - name: {_dump(slice_name)}  # " + (f"node pools tpu-{slice_name}-0 .. tpu-{slice_name}-{spec.slices - 1}, one per slice"
                                                 if spec.slices > 1 else f"node pool tpu-{slice_name}-0"),
        _line(6, "tpu", spec.tpu),
        *([_line(6, "count", spec.slices)] if spec.slices != 1 else []),
        *capacity,
        *(_line(6, k, s.value, s.comment) for k, s in spec.group.items()),
        _line(2, "pathways:pathwaysVersion", spec.pathways_version, "the Pathways images: jax-<your program's JAX version>"),
    ]
    if spec.workloads:
        lines.append("  # Workloads (docs/workloads.md): translated from `gcluster job submit` lines")
        lines.append("  pathways:workloads:")
        for w in spec.workloads:
            first, *rest = list(w.items())
            lines.append(_line(4, f"- {first[0]}", first[1]))
            lines += [_line(6, k, v) for k, v in rest]
    else:
        lines += ["  # Workloads (batch, interactive, serve: docs/workloads.md) and researchers' runs (pathways:runs, docs/runs.md)",
                  "  # come next; the cluster and its slices plan on their own."]
    return "\n".join(lines) + "\n"


def _origin_repository() -> Optional[str]:
    """OWNER/NAME of the git remote `origin` when it is on GitHub."""
    proc = subprocess.run(["git", "remote", "get-url", "origin"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    m = re.search(r"github\.com[:/]([A-Za-z0-9-]+/[A-Za-z0-9._-]+?)(?:\.git)?/?$", proc.stdout.strip())
    return m.group(1) if proc.returncode == 0 and m else None


@dataclass
class BootstrapIds:
    repository: Optional[str] = None
    repository_id: Optional[str] = None
    repository_owner_id: Optional[str] = None
    project_number: Optional[str] = None


def bootstrap_text(path: Path, project: str, stack: str, ids: BootstrapIds) -> tuple[str, list[str]]:
    """(the bootstrap file's new text, what is still to fill in). An existing file gains the stack in its
    pathways-bootstrap:stacks list, its comments kept; a new one is written with what is known."""
    if path.exists():
        text = path.read_text()
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            raise ConfigError([Problem(str(path), f"not YAML ({' '.join(str(e).split())[:200]}); fix it, then add the stack")]) from None
        stacks = (doc.get("config") or {}).get("pathways-bootstrap:stacks")
        if not isinstance(stacks, list):
            raise ConfigError([Problem(str(path), "has no pathways-bootstrap:stacks list to add the stack to")])
        if stack in stacks:
            return text, []
        lines = text.splitlines()
        at = next(i for i, line in enumerate(lines) if line.strip().startswith("pathways-bootstrap:stacks:"))
        if lines[at].split(":", 2)[-1].strip():
            raise ConfigError([Problem(str(path), "lists pathways-bootstrap:stacks on one line; write it as a block list to add to it")])
        end = at + 1
        while end < len(lines) and re.match(r"\s+- ", lines[end]):
            end += 1
        indent = re.match(r"(\s+)- ", lines[end - 1]).group(1) if end > at + 1 else "    "  # type: ignore[union-attr]
        lines.insert(end, f"{indent}- {stack}")
        return "\n".join(lines) + "\n", []
    repository = ids.repository or _origin_repository()
    todo = []
    values = {
        "repository": (repository, "OWNER/NAME of the repository whose workflows run the stacks", "--repository"),
        "repositoryId": (ids.repository_id, "gh api repos/OWNER/NAME --jq .id", "--repository-id"),
        "repositoryOwnerId": (ids.repository_owner_id, "gh api repos/OWNER/NAME --jq .owner.id", "--repository-owner-id"),
        "projectNumber": (ids.project_number, f"gcloud projects describe {project} --format='value(projectNumber)'", "--project-number"),
    }
    lines = [
        f"# Bootstrap of project {project}: the state bucket, the workflows' identities and their exact roles, the APIs.",
        f"# Preview it: make plan-bootstrap PROJECT={project}. Apply it once, as a project owner (bootstrap/README.md).",
        "config:",
        f"  gcp:project: {project}",
    ]
    for key, (value, how, flag) in values.items():
        if value:
            lines.append(f"  pathways-bootstrap:{key}: {_dump(str(value))}  # {how}")
        else:
            lines.append(f"  pathways-bootstrap:{key}: \"\"  # to fill in: {how} (or new-stack {flag})")
            todo.append(f"pathways-bootstrap:{key} ({how})")
    lines += ["  pathways-bootstrap:stacks:", f"    - {stack}"]
    return "\n".join(lines) + "\n", todo


def tpu_value(name: str) -> Any:
    """A TPU as the stack file writes it: the catalog's name, or family and topology for xpk's v6e-4x4 form."""
    m = re.fullmatch(r"(v4|v5e|v5litepod|v5p|v6e|tpu7x)-([0-9]+x[0-9]+(?:x[0-9]+)?)", name)
    if m:
        return {"family": "v5e" if m.group(1) == "v5litepod" else m.group(1), "topology": m.group(2)}
    return name  # the plan judges it, in the catalog's words
