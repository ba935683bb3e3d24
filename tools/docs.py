"""docs/configuration.md, generated from the config model so that it cannot drift from it.

    python -m tools.docs            # writes docs/configuration.md
    python -m tools.docs --check    # exit 1 when docs/configuration.md differs from what the model gives

One table row per key that components.model.config.key_paths() lists: the key (`pathways:…`, `gcp:…`),
its default (the field's default or default_factory; `required` when the field is required), the values
it takes (Literal and Enum choices, numeric bounds, list lengths: the field's own constraints) and the
field's `description`. A key under an optional section (a model field whose default is None, e.g.
`workloads[i].profiling`) goes into that section's own table, headed by the section's description.

Around the tables, per section: notes for what spans keys (NOTES), with the facts they quote rendered
from the model's constants (TPU families, GKE floors, maintenance rules, reserved names), so the notes
follow the code too. tests/test_docs.py checks that the committed file equals this output.
"""

from __future__ import annotations

import argparse
import difflib
import enum
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, Optional, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from components.model import config as model_config

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "configuration.md"
COMMAND = "python -m tools.docs"


# --- walking the model -----------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    key: str  # as key_paths() writes it: pathways:workloads[i].profiling.port
    field: FieldInfo
    top: str  # the top-level key: workloads (gcp keys: project, region, zone)
    optional: Optional[str]  # the optional section the key sits in, as a key (pathways:workloads[i].profiling)
    optional_field: Optional[FieldInfo]


def _parts(key: str) -> list[str]:
    """pathways:workloads[i].service.clients[i].kind -> ['workloads', 'service', 'clients', 'kind']."""
    return [p.removesuffix("[i]") for p in key.partition(":")[2].split(".")]


def _inner_model(annotation: Any) -> Optional[type[BaseModel]]:
    found = model_config._unwrap(annotation)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def _field(model: type[BaseModel], alias: str) -> FieldInfo:
    return next(f for n, f in model.model_fields.items() if (f.alias or n) == alias)


def rows() -> list[Row]:
    """Every key of the model, in key_paths() order, with the field that defines it."""
    out = []
    for key in model_config.key_paths():
        parts = _parts(key)
        model: type[BaseModel] = model_config.StackConfig
        optional: Optional[str] = None
        optional_field: Optional[FieldInfo] = None
        prefix = key.partition(":")[0] + ":"
        for depth, part in enumerate(parts):
            f = _field(model, part)
            is_list = get_origin(f.annotation) is list
            prefix += ("." if depth else "") + part + ("[i]" if is_list else "")
            if depth == len(parts) - 1:
                out.append(Row(key, f, parts[0], optional, optional_field))
                break
            inner = _inner_model(f.annotation)
            assert inner is not None, key
            if depth and optional is None and not f.is_required() and f.default is None and f.default_factory is None:
                optional, optional_field = prefix, f
            model = inner
    return out


# --- rendering one row -----------------------------------------------------------------------


def _number(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:g}"


def _value(v: Any) -> str:
    """A default as a stack file would write it."""
    if v is None:
        return "not set"
    if isinstance(v, bool):
        return f"`{str(v).lower()}`"
    if isinstance(v, enum.Enum):
        return f"`{v.value}`"
    if isinstance(v, (int, float)):
        return f"`{v:g}`" if isinstance(v, float) else f"`{v}`"
    if isinstance(v, str):
        return f"`{v}`" if v else '`""`'
    if isinstance(v, (list, tuple, set, frozenset)) and not v:
        return "`[]`"
    if isinstance(v, dict) and not v:
        return "`{}`"
    return f"`{v!r}`"


def default_text(f: FieldInfo) -> str:
    if f.is_required():
        return "required"
    return _value(f.get_default(call_default_factory=True))


def _choices(annotation: Any) -> Optional[list[str]]:
    origin = get_origin(annotation)
    if origin is Literal:
        return [str(a) for a in get_args(annotation)]
    if origin in (Union, UnionType):
        for arg in get_args(annotation):
            if arg is not NoneType:
                found = _choices(arg)
                if found:
                    return found
        return None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(m.value) for m in annotation]
    return None


def _bounds(f: FieldInfo) -> str:
    low = high = None
    low_len = high_len = None
    for m in f.metadata:
        if isinstance(m, annotated_types.Ge):
            low = _number(m.ge)
        elif isinstance(m, annotated_types.Gt):
            low = f"> {_number(m.gt)}"
        elif isinstance(m, annotated_types.Le):
            high = _number(m.le)
        elif isinstance(m, annotated_types.Lt):
            high = f"< {_number(m.lt)}"
        elif isinstance(m, annotated_types.MinLen):
            low_len = m.min_length
        elif isinstance(m, annotated_types.MaxLen):
            high_len = m.max_length
    base = get_origin(f.annotation) or f.annotation
    unit = "entries" if base is dict else "items" if base in (list, tuple, set, frozenset) else "characters"
    out = []
    if low is not None and high is not None and not low.startswith(">") and not high.startswith("<"):
        out.append(f"{low}–{high}")
    else:
        out += [f"≥ {low}" if low and not low.startswith(">") else low, f"≤ {high}" if high and not high.startswith("<") else high]
    if low_len is not None and high_len is not None:
        out.append(f"{low_len}–{_number(high_len)} {unit}")
    elif high_len is not None:
        out.append(f"≤ {_number(high_len)} {unit}")
    elif low_len is not None:
        out.append(f"≥ {low_len} {unit}")
    return ", ".join(x for x in out if x)


def values_text(f: FieldInfo) -> str:
    choices = _choices(f.annotation)
    if choices:
        return ", ".join(f"`{c}`" for c in choices)
    return _bounds(f)


def _escape(text: str) -> str:
    """Markdown table cell: `|` escaped, and `<…>` outside code spans shown as text, not taken for HTML."""
    parts = text.replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def meaning_text(f: FieldInfo) -> str:
    text = (f.description or "").strip()
    item = _inner_model(f.annotation)
    if item is not None:  # a list of small records the reference does not expand (authorized networks)
        fields = "; ".join(
            f"`{sub.alias or name}` ({default_text(sub)}): {(sub.description or '').rstrip('.')}"
            for name, sub in item.model_fields.items()
        )
        text = f"{text} Each item: {fields}." if text else f"Each item: {fields}."
    return _escape(text)


# --- notes around the tables -----------------------------------------------------------------


def _project_notes() -> str:
    return (
        "Keys in the `gcp:` namespace are the Google Cloud provider's own (`pulumi config set gcp:project my-project`), "
        "read by the provider and by this stack. `gcp:defaultLabels` labels every GCP resource that takes labels, and the "
        "stack puts the same labels on every Kubernetes object it creates (the objects' own labels win a clash; the "
        "upstream objects of the Helm charts keep theirs). The region holds the subnet, the control plane when "
        "`pathways:cluster.regional` is on, and the buckets; every node of the stack lives in the one zone, "
        "which must be in the region. A protected stack never moves zones ([changing.md](changing.md#protected-stacks)). "
        "A key whose namespace is one edit from `pathways`, `gcp` or `kubernetes` (`pathway:protected`, `Pathways:…`, "
        "`gpc:region`) is refused, naming the key it was likely meant to be: as written nothing would read it. Keys of other "
        "namespaces (other providers', a team's own) pass untouched."
    )


def _stack_notes() -> str:
    from components.constants import PROTECTED_LABEL

    return (
        "`pathways:protected: true` sets Pulumi `protect` on the cluster and both buckets, forces GKE deletion "
        f"protection on (`pathways:cluster.deletionProtection: false` is then refused), and labels the cluster and "
        f"buckets `{PROTECTED_LABEL[0]}={PROTECTED_LABEL[1]}`, which the policy pack reads: the flag is the one source of truth "
        "for \"protected\". `offline diff` then refuses a change that replaces, deletes or recreates a stateful resource unless "
        "`pathways:allowDisruption` lists it ([changing.md](changing.md#protected-stacks)).\n\n"
        "`pathways:pathwaysVersion` is required as soon as `pathways:workloads` is set: it picks the Pathways images "
        "(`…/pathways/server:jax-<version>`, `…/proxy_server:jax-<version>`), which must match the JAX of your program."
    )


def _cluster_notes() -> str:
    from components.model.capacity import rollout, tpu
    from components.model.cluster import cluster as c

    floors: dict[str, list[str]] = {}
    for fam in tpu.FAMILIES.values():
        floors.setdefault(fam.min_gke_version, []).append(fam.name)
    floor_text = "; ".join(f"{'/'.join(names)} `{v}`" for v, names in floors.items())
    support = ", ".join(f"{minor} until {end[:10]}" for minor, end in sorted(c.END_OF_STANDARD_SUPPORT.items()))
    channels = ", ".join(f"{ch} {minor}" for ch, minor in c.CHANNEL_DEFAULT_MINOR.items())
    start, end, rrule = c.DEFAULT_WINDOW
    return (
        "**Versions.** The stack requests no GKE version unless `pathways:cluster.minMasterVersion` is set; a requested "
        f"version must meet the floor of every slice group's TPU family ({floor_text}). A minor (`1.35`) is compared as a "
        "minor, a full version build for build ([design.md](design.md#gke-versions)).\n\n"
        "**Endpoint and nodes.** `privateNodes: false` needs `publicEndpoint: true` too. `publicEndpoint: true` needs "
        "`masterAuthorizedNetworks` (without them the IP endpoint would be open to the whole internet); with "
        "`publicEndpoint: false` the authorized networks may only be internal ranges (RFC 1918, RFC 6598), which is all GKE "
        "accepts for a private endpoint. `0.0.0.0/0` is never an authorized network. Without an IP endpoint, people and CI "
        "use the IAM-authorized DNS endpoint. `deletionProtection` not set means on.\n\n"
        f"**Maintenance.** Every stack sends a maintenance window (the provider requires exactly one): by default "
        f"`{rrule}` from `{start}` to `{end}`, i.e. Saturday and Sunday {start[11:16]}–{end[11:16]} UTC. GKE's rules, "
        f"checked here: an occurrence lasts at least {c.MIN_WINDOW_HOURS} hours (and at most a week), and the window leaves "
        f"GKE at least {c.MIN_AVAILABILITY_HOURS_PER_32_DAYS} hours in any 32 days; the recurrence is an RRULE with "
        "`FREQ=DAILY`, `WEEKLY` (`BYDAY`) or `MONTHLY` (`BYDAY` with an ordinal such as `1SA`, or `BYMONTHDAY`). At most "
        f"20 exclusions, with unique names; an exclusion that has ended is refused; `NO_UPGRADES` lasts at most "
        f"{c.MAX_NO_UPGRADES_DAYS} days; the other scopes may not outlast the standard support of the cluster's minor "
        f"({support}; without `minMasterVersion` the minor is the one the channel creates clusters at today: {channels}). "
        "Windows and exclusions do not hold back Compute Engine's host maintenance of TPU VMs "
        "([operating.md](operating.md#upgrades-and-maintenance)).\n\n"
        f"**Node-pool concurrency.** Pools wait in lanes: pool *k* waits on pool *k* − N, N = `nodePoolConcurrency`, so at "
        f"most N pool operations are in flight and each pool's create timeout starts when its operation can. At most "
        f"{rollout.MAX_LANE_LENGTH} pools a lane. The plan's deploy-time estimate also gives the time under GKE's 2023 quota "
        f"of {rollout.LEGACY_GKE_QUOTA} ([reading-a-plan.md](reading-a-plan.md#deploy-time)).\n\n"
        "**An existing cluster.** With `pathways:cluster.existing` the stack creates no GCP resource: `cluster.*` keys "
        "other than `existing` and `name`, `network.*`, `monitoring.*` and `protected` are refused, and `bucket.name` is "
        "required ([existing-cluster.md](existing-cluster.md))."
    )


def _network_notes() -> str:
    return (
        "Set `existingNetwork` and `existingSubnetwork` together, or neither (a VPC and subnet are then created). An "
        "existing subnetwork must be in `gcp:region` and have secondary ranges named `pods` and `services`. The three "
        "ranges of a created subnet must be disjoint IPv4 ranges. Cloud NAT is on by default with private nodes in a "
        "created VPC: Private Google Access covers Google's registries, not `registry.k8s.io`, where the JobSet controller "
        "image lives. `pathwaysClientRanges` opens the IFRT proxy port to more ranges, never `0.0.0.0/0` "
        "([security.md](security.md#network))."
    )


def _head_notes() -> str:
    from components.model.common import DEFAULT_USER_RESOURCES, PROXY_RESOURCES, RESOURCE_MANAGER_RESOURCES

    rm, proxy, user = RESOURCE_MANAGER_RESOURCES, PROXY_RESOURCES, DEFAULT_USER_RESOURCES
    return (
        f"The head machine must hold each workload's head pod: the resource manager ({rm[0]} CPU / {rm[1]}), the IFRT "
        f"proxy ({proxy[0]} CPU / {proxy[1]}, not in service mode) and, for batch, the user container (`cpu` / `memory`, "
        f"default {user[0]} / {user[1]}), after GKE's reservations; the error names the smallest machine that fits. One "
        "head pod per node, so `nodeCount` is at least the number of running and suspended workloads that have one "
        "(every mode but `serve`, whose leader runs on its own slice)."
    )


def _slices_notes() -> str:
    from components.model.capacity import tpu
    from components.model.common import MAX_NODES_PER_CLUSTER, MAX_NODES_PER_POOL_ZONE, MAX_TPU_POOLS

    lines = [
        "A slice group is `count` identical slices, one GKE node pool each (`tpu-<name>-<n>`), plus `spares`. At most "
        f"{MAX_TPU_POOLS:,} slices (spares included) per stack, {MAX_NODES_PER_CLUSTER:,} nodes per cluster and "
        f"{MAX_NODES_PER_POOL_ZONE:,} per pool (GKE). Capacity: at most one of `spot`, `flexStart` and `reservation` "
        "(none: on-demand); a reservation is its name or, for a shared one, `projects/<project>/reservations/<name>`. "
        "Spot workers tolerate the spot taint; flex-start pools, and with `scaleToZero` any but reserved ones, start at 0 "
        "nodes and autoscale to the whole slice when a workload asks ([design.md](design.md#tpu-pools)). Workloads on "
        "a group with spares need `maxRestarts` ≥ 1 ([queues.md](queues.md#hot-swap-spares)). GKE keeps node auto-upgrade on "
        "in a release channel, where every cluster the stack makes is: `autoUpgrade: false` is refused; a protected stack "
        "holds node upgrades with a maintenance exclusion (the `pathways-disruption-policy` rule).",
        "",
        "**TPU families** (`components/model/capacity/tpu.py`). `tpu` is a name `<family>-<TensorCores>` (e.g. `v6e-16`, "
        "`v5p-128`) or `{family, topology[, machineType]}`:",
        "",
        "| family | also | machine types (chips per VM) | accelerator label | chips at most | GKE at least |",
        "|---|---|---|---|---:|---|",
    ]
    for fam in tpu.FAMILIES.values():
        machines = ", ".join(f"`{m}` ({n})" for m, n in fam.machine_types.items())
        aliases = ", ".join(f"`{a}`" for a in fam.aliases) or "–"
        lines.append(f"| `{fam.name}` | {aliases} | {machines} | `{fam.accelerator}` | {fam.max_chips:,} | `{fam.min_gke_version}` |")
    lines += [
        "",
        "Topologies: the 2-D families take "
        + ", ".join(f"`{t}`" for t in tpu.TOPOLOGIES_2D)
        + "; the 3-D ones "
        + ", ".join(f"`{t}`" for t in tpu.SMALL_TOPOLOGIES_3D)
        + " as written, then multiples of 4 (v4 in any order; v5p and tpu7x ascending), and tpu7x also `1x1x1` (`tpu7x-2`, "
        f"one chip). No 3-D dimension may exceed {tpu.MAX_DIMENSION_3D}. A name picks the most cube-like shape for its chip "
        "count, as the peers do (`v5p-2048` is `8x8x16`, not `4x16x16`). `2x4` defaults to one 8-chip VM (`-8t`), as "
        "Cluster Toolkit and the PathwaysJob controller create it; `{family: v6e, topology: 2x4, machineType: "
        "ct6e-standard-4t}` gives two 4-chip hosts, as xpk 1.16 creates it. How the pools are written: "
        "[design.md](design.md#tpu-pools).",
    ]
    return "\n".join(lines)


def _bucket_notes() -> str:
    return (
        "Derived names must still be bucket names GCS accepts (3–63 characters, no dots, nothing with `google`); the "
        "error says so, and then set them explicitly. `artifactsName` must differ from `name`, and `artifactsPrefix` and "
        "`cachePrefix` may not overlap (the artifacts TTL would delete the compilation cache). The scratch bucket's "
        "lifecycle rules belong to Pathways; the stack's own TTL lives on the artifacts bucket "
        "([design.md](design.md#buckets-and-lifecycle-rules)). With `pathways:cluster.existing`, `name` is required: the "
        "existing scratch bucket."
    )


def _kubernetes_notes() -> str:
    from components.model.cluster.kubernetes import MIN_JOBSET, MIN_KUEUE, RESERVED_NAMESPACE_PREFIXES, RESERVED_NAMESPACES

    reserved = ", ".join(f"`{n}`" for n in sorted(RESERVED_NAMESPACES))
    prefixes = ", ".join(f"`{p}…`" for p in RESERVED_NAMESPACE_PREFIXES)
    return (
        "The workload namespace is made privileged (Pathways pods use the host network), so it may not be a system or "
        f"controller namespace ({reserved}, {prefixes}). JobSet must be at least `{MIN_JOBSET}` (the first with "
        f"`spec.coordinator`), Kueue at least `{MIN_KUEUE}` (the first with `kueue.x-k8s.io/v1beta2`). A chart is an "
        "`oci://` reference, fetched at the pinned version, or a local chart directory (air-gapped clusters), whose own "
        "version is what gets installed. `installControllers: false` is for clusters that run JobSet and Kueue already. "
        "With `kueue.enabled: false`, workloads sharing a slice group must fit in it together ([queues.md](queues.md))."
    )


def _workloads_notes() -> str:
    from components.manifests.guardrails import PRIORITY_CLASSES
    from components.model.common import DEFAULT_BATCH_RESTARTS_PER_HOST, UNLIMITED_RESTARTS_PER_HOST
    from components.model.workloads import workload as w
    from components.model.workloads.ports import HEAD_NODE_PORTS

    priorities = ", ".join(f"`pathways-{k}` {v:,}" for k, (v, _) in PRIORITY_CLASSES.items())
    reserved_env = ", ".join(f"`{n}`" for n in sorted(w.RESERVED_ENV))
    ports = ", ".join(str(p) for p in sorted(HEAD_NODE_PORTS))
    return (
        "Each entry becomes one JobSet ([workloads.md](workloads.md)), or for `serve` a LeaderWorkerSet. **Modes:** `batch` runs your program "
        "(`image`, required, with `command`, `args`, `env`) on the head beside the resource manager and the IFRT proxy; "
        "`interactive` runs the resource manager and proxy only, for notebooks; `service` is a Shared Pathways Service "
        "([service-mode.md](service-mode.md)); `serve` runs a model endpoint on JetStream "
        "([serving.md](serving.md)). Only batch workloads take `image`, `command`, `args`, `env`, `profiling` and "
        "`persistence`.\n\n"
        "**States:** `running`; `suspended` holds the workload's Kueue LocalQueue (`stopPolicy: HoldAndDrain`: its pods "
        "are deleted, the JobSet stays; without Kueue the JobSet's `spec.suspend`), and `running` again restarts it from "
        "its last checkpoint; `finished` (batch only) retires the run: the stack deletes its JobSet and nothing re-runs it "
        "([changing.md](changing.md)).\n\n"
        "**Names.** The coordinator label `<name>-pathways-head-0-0.<subdomain>` must stay within 63 characters, so a "
        "name is at most 22 characters with the default subdomain (the name), or set `subdomain`. Two running workloads "
        "of one namespace may not share a subdomain. `sliceGroup` is required when the stack has several groups; "
        "`slices` is at most the group's `count` (spares are not for workloads).\n\n"
        "**Defaults by mode.** `maxRestarts`: "
        f"batch {w.DEFAULT_BATCH_MAX_RESTARTS}, interactive {w.DEFAULT_INTERACTIVE_MAX_RESTARTS}, service "
        f"{w.DEFAULT_SERVICE_MAX_RESTARTS}. `workerRestartsPerHost`: batch {DEFAULT_BATCH_RESTARTS_PER_HOST}, otherwise "
        f"unlimited ({UNLIMITED_RESTARTS_PER_HOST:,} per host, the worker Job's `backoffLimit` capped at 2³¹−1). "
        f"`priority`: `training` for batch, `serving` for serve, `interactive` otherwise; PriorityClasses {priorities}.\n\n"
        "**Images** are pinned: a tag other than `latest`, or a `@sha256:` digest. An overridden `serverImage` brings its "
        "own proxy (`…/server:T` → `…/proxy_server:T`); a proxy from another release, or a digest-only server without "
        "`proxyImage`, is refused. The colocated-Python image's tag `<date>-python_<X>-jax_<Y>` must carry the stack's "
        "JAX, and sidecar CPU, memory and `shmSize` together may take at most half of the TPU VM.\n\n"
        f"**Env.** Names the stack sets are reserved ({reserved_env}). For a batch workload, `dataLoaderWorkers` is at most "
        "its CPU limit and `shmSize` at most its memory. Secret values: `pulumi config set --secret --path "
        "'pathways:workloads[0].env.TOKEN' …` puts every env value of the stack's workloads in a Kubernetes Secret "
        "`<workload>-env` ([workloads.md](workloads.md#secret-env)); a secret anywhere else is refused.\n\n"
        f"**Profiling** (`profiling: {{}}` turns it on at the default port) may not use a port the head node serves "
        f"already ({ports}); the auth token is a generated Secret and traces go under the artifacts bucket. "
        "**Elastic** (`elastic: {}`): `maxMissingSlices` is how many slices the job may lose and keep running, 1 up to "
        "its `slices`. **Service** (`mode: service`, one per stack): `service` may be left out (the defaults below "
        "apply); its namespace must be `default`, its group made of 4-chip VMs of v5e, v5p, v6e or tpu7x, and it takes "
        "no `profiling`, `persistence`, `xlaFlags`, `hloDump` or `elastic`.\n\n"
        "`ttlSecondsAfterFinished` is off by default: a JobSet deleted by its TTL is gone from the cluster but not from "
        "the stack, so `pulumi up --refresh` would create it again and re-run the job."
    )


def _monitoring_notes() -> str:
    return (
        "The alerts: a TPU or head node interrupted; more than `restartStorm` container restarts in 10 minutes; a running "
        "batch workload's TPU duty cycle below `dutyCycleThreshold` % for `dutyCycleMinutes`; a head pod running but not "
        "ready for 10 minutes ([operating.md](operating.md#when-a-job-stalls)). With no notification channel the plan says "
        "that alerts notify no one. Refused with `pathways:cluster.existing` (no GCP resources there)."
    )


def _prices_notes() -> str:
    from components.model.capacity.pools import Capacity
    from components.model.cost import pricing

    modes = ", ".join(f"`{c.value}`" for c in Capacity)
    return (
        f"Your prices (committed-use, negotiated, this month's Spot) over the list-price table in "
        f"`components/model/cost/pricing.py`, in {pricing.CURRENCY}. Capacity modes: {modes}. A mode without a price is "
        "shown at the on-demand list price and the total reads \"at most\"; a machine series or family with no known "
        f"price reads \"at least\". `clusterHour` not set means the list fee, {pricing.CLUSTER_HOUR:.2f} per hour "
        "([reading-a-plan.md](reading-a-plan.md#cost))."
    )


# Sections, in order: (title, top-level keys, notes); "gcp:" stands for every key of the Google Cloud provider's
# namespace. A top-level key no section names goes to "Other keys".
SECTIONS: tuple[tuple[str, tuple[str, ...], Optional[Callable[[], str]]], ...] = (
    ("Google Cloud provider keys", ("gcp:",), _project_notes),
    ("Stack", ("protected", "pathwaysVersion", "allowDisruption"), _stack_notes),
    ("Cluster", ("cluster",), _cluster_notes),
    ("Network", ("network",), _network_notes),
    ("Head pool", ("headPool",), _head_notes),
    ("Slice groups", ("slices",), _slices_notes),
    ("Buckets", ("bucket",), _bucket_notes),
    ("Kubernetes, JobSet and Kueue", ("kubernetes",), _kubernetes_notes),
    ("Workloads", ("workloads",), _workloads_notes),
    ("Monitoring", ("monitoring",), _monitoring_notes),
    ("Prices", ("prices",), _prices_notes),
)

HEADER = """\
<!-- Generated by `{command}` from the config model (components/model/): edit its field descriptions or
     tools/docs.py, then run `{command}`. tests/test_docs.py fails when this file is out of date. -->
# Configuration reference

Every key a stack file (`stacks/Pulumi.<stack>.yaml`) takes: the project's own keys under `pathways:`, plus the
Google Cloud provider's `gcp:project`, `gcp:region` and `gcp:zone`. Set them in the file or with
`pulumi config set` (nested keys with `--path`, e.g. `pulumi config set --path 'pathways:slices[0].count' 2`).
A minimal stack:

```yaml
config:
  gcp:project: my-project
  gcp:region: us-east5
  gcp:zone: us-east5-b
  pathways:slices:
    - name: main
      tpu: v6e-16
```

An invalid value stops the plan (and `pulumi up`) before any resource, with one line per problem naming the key,
the value and what is valid ([reading-a-plan.md](reading-a-plan.md#invalid-config)). `[i]` stands for a list
index. *default* is what an unset key means (`not set`: nothing, or a value derived as the description says);
*values* are the choices or bounds the model enforces. Keys under an optional section (e.g.
`pathways:workloads[i].profiling`) have their own table: the section is off until it is given, and `{{}}` gives it
its defaults.

{contents}
"""


def _table(rs: list[Row]) -> list[str]:
    out = ["| key | default | values | meaning |", "|---|---|---|---|"]
    for r in rs:
        out.append(f"| `{r.key}` | {default_text(r.field)} | {values_text(r.field)} | {meaning_text(r.field)} |")
    return out


def _anchor(title: str) -> str:
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _top(r: Row) -> str:
    return "gcp:" if r.key.startswith("gcp:") else r.top


def render() -> str:
    all_rows = rows()
    known = {top for _, tops, _ in SECTIONS for top in tops}
    sections = [*SECTIONS, ("Other keys", tuple(sorted({_top(r) for r in all_rows} - known)), None)]
    body: list[str] = []
    contents: list[str] = []
    for title, tops, notes in sections:
        section = [r for r in all_rows if _top(r) in tops]
        if not section:
            continue
        contents.append(f"- [{title}](#{_anchor(title)})")
        body += [f"## {title}", ""]
        if notes is not None:
            body += [notes(), ""]
        body += _table([r for r in section if r.optional is None])
        body.append("")
        for optional in dict.fromkeys(r.optional for r in section if r.optional is not None):
            group = [r for r in section if r.optional == optional]
            described = group[0].optional_field
            assert described is not None
            body += [f"### `{optional}`", ""]
            if described.description:
                body += [_escape(described.description.strip()), ""]
            body += _table(group)
            body.append("")
    text = HEADER.format(command=COMMAND, contents="\n".join(contents)) + "\n" + "\n".join(body)
    return text.rstrip("\n") + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Write docs/configuration.md from the config model.")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/configuration.md differs from the model")
    parser.add_argument("--out", type=Path, default=OUT, help=f"file to write or check (default {OUT.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current == text:
            print(f"{args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} is up to date")
            return 0
        diff = difflib.unified_diff(current.splitlines(), text.splitlines(), "committed", "generated", lineterm="", n=1)
        sys.stdout.writelines(line + "\n" for line in list(diff)[:60])
        print(f"{args.out} is out of date: run `{COMMAND}`", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
