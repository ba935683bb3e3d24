"""A Cluster Toolkit blueprint (`gcluster deploy`) and `gcluster job submit --pathways` lines as a new stack: every
setting it understands becomes a stack key, one whose effect is already this product's default is said so, and every
other module or flag is named with why it is not translated (Pulumi-free).

Read from GoogleCloudPlatform/cluster-toolkit (1047080, 2026-06-25): the GKE TPU examples `examples/gke-tpu-v6e`,
`examples/gke-tpu-7x` and `examples/gke-consumption-options/dws-flex-start*` (a blueprint with `vars` and
`deployment_groups[].modules[]`, each module a `source` and `settings`; a deployment file's `vars` override the
blueprint's), the modules they use (`modules/scheduler/gke-cluster`: the cluster is named after `deployment_name`
and, with `enable_pathways_for_tpus`, gets a `cpu-np` pool of n4-standard-64; `modules/compute/gke-node-pool`: one
pool per slice, `<name>-<i>` when `num_slices` > 1; `modules/compute/resource-policy`: a tpu7x pool's topology in
its `workload_policy.accelerator_topology`), and `cmd/job/submit.go` with `docs/gcluster_job_guide.md` for the job
flags. Expressions other than a whole or embedded `$(vars.NAME)` are not evaluated: what needs one is named.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from components.model.capacity.tpu import FAMILIES
from components.model.cluster.cluster import NetworkConfig
from components.model.errors import ConfigError, Problem
from infra.offline.new_stack import Setting, StackSpec, Translation, tpu_value

KEY = "--from-gcluster"
JOB_KEY = "--gcluster-job"
MAX_BYTES = 1 << 20
_VAR = re.compile(r"\$\(vars\.([A-Za-z_][A-Za-z0-9_]*)\)")
_EXPRESSION = re.compile(r"\$\(")
_FAMILY_OF_MACHINE = {m: f.name for f in FAMILIES.values() for m in f.machine_types}


class Unresolved(str):
    """A Terraform expression the translator does not evaluate (kept as its text, for the message)."""


@dataclass
class BlueprintTranslation(Translation):
    networks: int = 0
    """VPC modules seen: the first one's ranges are the stack's."""


def _read(path: Path, key: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError([Problem(key, f"{path}: cannot read it: {e.strerror}")]) from None
    if len(data) > MAX_BYTES:
        raise ConfigError([Problem(key, f"{path}: over 1 MiB; a blueprint is a few hundred lines")])
    try:
        doc = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError([Problem(key, f"{path}: not YAML: {' '.join(str(e).split())[:200]}")]) from None
    if not isinstance(doc, dict):
        raise ConfigError([Problem(key, f"{path}: not a blueprint (a mapping with vars and deployment_groups)")])
    return doc


def _expand(value: Any, variables: dict[str, Any]) -> Any:
    """`$(vars.x)` whole or inside text, recursively; other expressions stay Unresolved."""
    if isinstance(value, str):
        whole = _VAR.fullmatch(value.strip())
        if whole:
            return variables.get(whole.group(1))
        text = _VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), value)
        return Unresolved(text) if _EXPRESSION.search(text) else text
    if isinstance(value, list):
        return [_expand(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, variables) for k, v in value.items()}
    return value


def _dict(value: Any) -> dict[str, Any]:
    """A mapping where the blueprint has one; anything else (a list, a scalar, an expression) as nothing to read."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _modules(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for group in _list(doc.get("deployment_groups")) for m in _list(_dict(group).get("modules"))
            if isinstance(m, dict) and isinstance(m.get("source"), str)]


def _source(m: dict[str, Any]) -> str:
    return re.sub(r"^(\./)?(community/)?", "", m["source"]).rstrip("/")


def _cidr_settings(settings: dict[str, Any]) -> dict[str, str]:
    """The VPC module's ranges, as the stack's network keys."""
    out: dict[str, str] = {}
    subnets = _list(settings.get("subnetworks"))
    if subnets and isinstance(_dict(subnets[0]).get("subnet_ip"), str):
        out["nodesCidr"] = subnets[0]["subnet_ip"]
    for entry in _list(settings.get("secondary_ranges_list")):
        for r in _list(_dict(entry).get("ranges")):
            name, cidr = _dict(r).get("range_name"), _dict(r).get("ip_cidr_range")
            if name == "pods" and isinstance(cidr, str):
                out["podsCidr"] = cidr
            elif name == "services" and isinstance(cidr, str):
                out["servicesCidr"] = cidr
    return out


def translate(blueprint: Path, deployment: Optional[Path], name: Optional[str]) -> BlueprintTranslation:
    """The stack a blueprint (with its deployment file) describes, and what became of each of its modules."""
    doc = _read(blueprint, KEY)
    variables = dict(_dict(doc.get("vars")))
    if deployment is not None:
        for k, v in _dict(_read(deployment, "--gcluster-deployment").get("vars")).items():
            if v is not None:  # a deployment file's empty placeholder (project_id:) leaves the blueprint's value
                variables[k] = v
    modules = [{**m, "settings": _dict(_expand(_dict(m.get("settings")), variables))} for m in _modules(doc)]
    policies = {m.get("id"): m["settings"] for m in modules if _source(m) == "modules/compute/resource-policy"}
    tpu_pools = [m for m in modules if _source(m) == "modules/compute/gke-node-pool"
                 and str(m["settings"].get("machine_type") or "") in _FAMILY_OF_MACHINE]
    if not tpu_pools:
        raise ConfigError([Problem(KEY, f"{blueprint}: no gke-node-pool module with a TPU machine type "
                                        f"({', '.join(sorted(_FAMILY_OF_MACHINE))}): only TPU slices are made here")])
    deployment_name = str(variables.get("deployment_name") or doc.get("blueprint_name") or "")
    t = BlueprintTranslation(spec=StackSpec(name=name or deployment_name, project=str(variables.get("project_id") or ""),
                                   zone=str(variables.get("zone") or ""), tpu="", origin=f" from Cluster Toolkit blueprint {blueprint.name}"))
    s, done = t.spec, t.translated.append
    for var, key in (("project_id", "gcp:project"), ("zone", "gcp:zone")):
        if variables.get(var):
            done(f"vars.{var} {variables[var]} -> {key}" + (" (and gcp:region)" if var == "zone" else ""))
    if deployment_name:
        s.cluster["name"] = Setting(deployment_name, "the blueprint's deployment_name (gke-cluster names the cluster after it)")
        done(f"vars.deployment_name {deployment_name} -> pathways:cluster.name" + ("" if name else " (and the stack's name)"))
    for m in modules:
        _module(t, m, policies, tpu_pools[0] is m)
    return t


def _module(t: BlueprintTranslation, m: dict[str, Any], policies: dict[Any, Any], first_pool: bool) -> None:
    s, done, source, mid, settings = t.spec, t.translated.append, _source(m), m.get("id", "?"), m["settings"]
    if source == "modules/scheduler/gke-cluster":
        _cluster(t, mid, settings)
    elif source == "modules/compute/gke-node-pool":
        machine = str(settings.get("machine_type") or "")
        if machine not in _FAMILY_OF_MACHINE:
            t.untranslated.append(f"{mid} (gke-node-pool, {machine or 'no machine type'}): only TPU slices are made here; the "
                                  "head pool (pathways:headPool) and the system pool (pathways:cluster.systemPool) are the stack's")
        elif not first_pool:
            t.untranslated.append(f"{mid}: a second TPU pool module; new-stack writes one slice group: add it to pathways:slices "
                                  "by hand (docs/capacity.md)")
        else:
            _tpu_pool(t, mid, settings, [policies[u] for u in _list(m.get("use")) if isinstance(u, str) and u in policies])
    elif source == "modules/network/vpc":
        ranges = _cidr_settings(settings)
        t.networks += 1
        if t.networks > 1:
            t.untranslated.append(f"{mid} (a second VPC, for the TPU VMs' extra NICs): not made here; the slices use the "
                                  "stack's one network (Pathways' DCN traffic runs over it)")
            return
        defaults = dict(NetworkConfig().named_ranges)  # the stack's own defaults, from its model
        changed = {k: v for k, v in ranges.items() if defaults.get(k) != v}
        for k, v in changed.items():
            s.network[k] = Setting(v, f"the blueprint's {mid}")
            done(f"{mid} {v} -> pathways:network.{k}")
        t.already.append(f"{mid}: the stack makes its VPC, subnet and firewall rules (Pathways' ports between its own nodes only)"
                         + ("; its ranges kept" if changed else ""))
    elif source == "modules/project/service-account":
        t.already.append(f"{mid}: the bootstrap makes the node and workload identities with least privilege (no storage.admin "
                         "or container.admin; docs/security.md)")
    elif source == "modules/management/kubectl-apply":
        t.already.append(f"{mid}: the stack installs JobSet, Kueue and LeaderWorkerSet at pinned versions and makes its own "
                         "Kueue flavors, ClusterQueues and LocalQueues (docs/queues.md)")
    elif source == "modules/compute/resource-policy":
        t.already.append(f"{mid}: the TPU pool's workload policy (its topology is the slice group's)")
    elif source == "modules/file-system/cloud-storage-bucket":
        mount = settings.get("local_mount") or "?"
        t.untranslated.append(f"{mid} (a bucket mounted at {mount}): the stack makes its scratch and artifacts buckets; a data "
                              "or checkpoint bucket is made elsewhere and mounted (workloads[].mounts, runs.buckets; docs/storage.md)")
    elif source in ("modules/compute/gke-job-template", "modules/file-system/gke-persistent-volume"):
        t.untranslated.append(f"{mid} ({source.rsplit('/', 1)[-1]}): a job is a declared workload here (pathways:workloads, "
                              f"or {JOB_KEY} 'gcluster job submit ...'), its storage a mount (docs/storage.md)")
    else:
        t.untranslated.append(f"{mid} ({source}): no counterpart here")


def _cluster(t: Translation, mid: str, settings: dict[str, Any]) -> None:
    s, done = t.spec, t.translated.append
    channel = settings.get("release_channel")
    if isinstance(channel, str) and channel:
        s.cluster["releaseChannel"] = Setting(channel.upper(), "the blueprint's release_channel")
        done(f"{mid}.release_channel {channel} -> pathways:cluster.releaseChannel")
    prefix = settings.get("version_prefix")
    if isinstance(prefix, str) and re.fullmatch(r"1\.[0-9]+\.?", prefix):
        s.cluster["minMasterVersion"] = Setting(prefix.rstrip("."), "the blueprint's version_prefix")
        done(f"{mid}.version_prefix {prefix} -> pathways:cluster.minMasterVersion {prefix.rstrip('.')}")
    networks = [n for n in _list(settings.get("master_authorized_networks")) if isinstance(n, dict) and n.get("cidr_block")]
    if networks:
        s.cluster["masterAuthorizedNetworks"] = Setting(
            [{"cidrBlock": n["cidr_block"], **({"displayName": n["display_name"]} if n.get("display_name") else {})} for n in networks],
            "the blueprint's master_authorized_networks")
        done(f"{mid}.master_authorized_networks -> pathways:cluster.masterAuthorizedNetworks")
    elif settings.get("master_authorized_networks"):
        t.untranslated.append(f"{mid}.master_authorized_networks: no CIDR given (vars.authorized_cidr is empty); kubectl reaches "
                              "the control plane through GKE's DNS endpoint, which needs none")
    if isinstance(settings.get("system_node_pool_machine_type"), str):
        s.cluster["systemPool"] = Setting({"machineType": settings["system_node_pool_machine_type"]}, "the blueprint's system pool")
        done(f"{mid}.system_node_pool_machine_type {settings['system_node_pool_machine_type']} -> pathways:cluster.systemPool.machineType")
    if settings.get("enable_private_endpoint") is False:
        t.already.append(f"{mid}.enable_private_endpoint false: the control plane has no public IP endpoint; kubectl goes "
                         "through GKE's DNS endpoint, with IAM")
    if settings.get("enable_pathways_for_tpus"):
        t.already.append(f"{mid}.enable_pathways_for_tpus: every stack has the Pathways head pool, n2-standard-64 (the blueprint's "
                         "cpu-np is n4-standard-64: set pathways:headPool.machineType to keep it) and Kueue quota for it")
    if settings.get("configure_workload_identity_sa"):
        t.already.append(f"{mid}.configure_workload_identity_sa: every cluster has Workload Identity; each workload gets its own "
                         "Kubernetes service account")
    if settings.get("maintenance_exclusions"):
        t.untranslated.append(f"{mid}.maintenance_exclusions: GKE's until-end-of-support exclusion has no end date here; the "
                              "stack writes a dated one (new-stack --protected: NO_MINOR_OR_NODE_UPGRADES until the minor's "
                              "end of standard support) or pathways:cluster.maintenance.exclusions")
    for key, why in (("enable_ml_diagnostics", "GKE's ML Diagnostics is not turned on by the stack"),
                     ("enable_slice_controller", "dynamic slicing is a pool set here: pathways:slices[].subBlocks (docs/dynamic-slicing.md)"),
                     ("additional_networks", "the TPU VMs' extra NICs (a second VPC) are not made here"),
                     ("namespace", "workloads run in the stack's namespace (pathways:kubernetes.namespace, default pathways)")):
        value = settings.get(key)
        if value:
            t.untranslated.append(f"{mid}.{key}{'' if value is True else ' ' + _shown(value)}: {why}")


def _tpu_pool(t: Translation, mid: str, settings: dict[str, Any], used: list[dict[str, Any]]) -> None:
    s, done = t.spec, t.translated.append
    machine = str(settings["machine_type"])
    family = _FAMILY_OF_MACHINE[machine]
    topology = _dict(settings.get("placement_policy")).get("tpu_topology")
    if not topology:
        topology = next((_dict(p.get("workload_policy")).get("accelerator_topology") for p in used
                         if _dict(p.get("workload_policy")).get("accelerator_topology")), None)
    if not isinstance(topology, str) or not re.fullmatch(r"[0-9]+x[0-9]+(x[0-9]+)?", topology):
        raise ConfigError([Problem(KEY, f"{mid}: no TPU topology (placement_policy.tpu_topology, or a resource-policy's "
                                        f"workload_policy.accelerator_topology): give vars.tpu_topology a value, e.g. 4x4")])
    s.tpu = tpu_value(f"{family}-{topology}")
    done(f"{mid} {machine}, topology {topology} -> pathways:slices[0].tpu (family {family} and topology)")
    name = settings.get("name")
    if isinstance(name, str) and name:
        s.slice_name = name
        done(f"{mid}.name {name} -> pathways:slices[0].name (its pools here: tpu-{name}-<i>, one per slice)")
    slices = settings.get("num_slices")
    slices = int(slices) if isinstance(slices, str) and slices.isdigit() else slices
    if isinstance(slices, int) and not isinstance(slices, bool) and slices > 0:
        s.slices = slices
        done(f"{mid}.num_slices {slices} -> pathways:slices[0].count")
    affinity = _dict(settings.get("reservation_affinity"))
    reservations = [r.get("name") for r in _list(affinity.get("specific_reservations")) if isinstance(r, dict)]
    if affinity.get("consume_reservation_type") == "SPECIFIC_RESERVATION":
        if reservations and isinstance(reservations[0], str) and reservations[0]:
            s.capacity, s.reservation = "reservation", reservations[0]
            done(f"{mid}.reservation_affinity {reservations[0]} -> pathways:slices[0].reservation")
        else:
            t.untranslated.append(f"{mid}.reservation_affinity: no reservation name (vars.reservation is empty): the slices are "
                                  "on demand until you give --reservation NAME")
    if settings.get("spot"):
        s.capacity = "spot"
        done(f"{mid}.spot -> pathways:slices[0].spot")
    if settings.get("enable_flex_start"):
        s.capacity = "flex-start"
        done(f"{mid}.enable_flex_start -> pathways:slices[0].flexStart")
        if settings.get("enable_queued_provisioning"):
            s.group["queuedProvisioning"] = Setting(True, "the blueprint's enable_queued_provisioning")
            done(f"{mid}.enable_queued_provisioning -> pathways:slices[0].queuedProvisioning")
    for key, why in (("additional_networks", "the TPU VMs' extra NICs (a second VPC) are not made here"),
                     ("disk_type", "the stack chooses the boot disk"), ("disk_size_gb", "the stack chooses the boot disk")):
        if settings.get(key) and not isinstance(settings.get(key), Unresolved):
            t.untranslated.append(f"{mid}.{key}{'' if settings[key] is True else ' ' + _shown(settings[key])}: {why}")
        elif isinstance(settings.get(key), Unresolved):
            t.untranslated.append(f"{mid}.{key}: an expression ({_shown(settings[key])}): {why}")


def _shown(value: Any) -> str:
    text = " ".join(map(str, value)) if isinstance(value, list) else str(value)
    return shlex.quote(" ".join(text.split())[:100])


# --- gcluster job submit --pathways ---------------------------------------------------------------------------------

_JOB_ALREADY = {
    "--queue": "each workload gets a LocalQueue of its own name on the stack's ClusterQueue",
    "--pathways-gcs-location": "the stack's scratch bucket is every workload's --gcs_scratch_location",
    "--pathways-head-np": "the head runs on the stack's head pool (pathways:headPool)",
    "--pathways-proxy-server-image": "the Pathways images follow pathways:pathwaysVersion, pinned (never :latest)",
    "--pathways-server-image": "the Pathways images follow pathways:pathwaysVersion, pinned (never :latest)",
    "--pathways-worker-image": "the Pathways images follow pathways:pathwaysVersion, pinned (never :latest)",
    "--cluster": "the stack is the cluster", "--location": "gcp:zone", "--project": "gcp:project",
    "--dry-run-out": "`make plan` and `make render` are the dry run",
    "--await-job-completion": "`pulumi up` returns once the workload is created; `python -m infra.run why` follows it",
    "--timeout": "`pulumi up` returns once the workload is created",
    "--verbose": "nothing to log",
}
_JOB_NOT = {
    "--base-image": "no image is built here: give --image, or ship code with `pathways-run submit --workdir` on the stack's run image",
    "--build-context": "no image is built here: give --image, or ship code with `pathways-run submit --workdir`",
    "--platform": "no image is built here",
    "--num-nodes": "a slice's hosts follow its TPU topology",
    "--gke-ttl-after-finished": "a declared workload's JobSet stays (a TTL would make `pulumi up --refresh` re-run it); a run "
                                "takes --ttl",
    "--placement-policy": "each slice's pool has its own compact placement",
    "--node-constraint": "the workload's nodes are its slice group's (the guards refuse other selectors)",
    "--cpu-affinity": "no key", "--restart-on-exit-codes": "the failure policy is onFailure and maxRestarts (docs/workloads.md)",
    "--image-pull-secret": "images are pulled as the node's service account (Artifact Registry reader)",
    "--service-account": "each workload runs as a Kubernetes service account of its own (Workload Identity)",
    "--gke-scheduler": "Kueue places the slices; the default scheduler binds the pods",
    "--gke-nap-provisioning": "node auto-provisioning is not used: one pool per slice",
    "--gke-nap-reservation": "node auto-provisioning is not used: the slice group's reservation",
    "--gke-disable-parallel-containers": "no key",
    "--priority": "priorities here are training, interactive and experiment (pathways:workloads[].priority)",
    "--pathways-elastic-slices": "elastic slices are not supported; a failed slice restarts the JobSet (docs/resilience.md)",
    "--pathways-max-slice-restarts": "elastic slices are not supported",
    "--pathways-proxy-args": "proxy XLA flags are pathways:workloads[].xlaFlags; other proxy flags are the stack's",
    "--pathways-server-args": "the resource manager's flags are the stack's",
    "--pathways-worker-args": "the workers' flags are the stack's",
    "--pathways-colocated-python-sidecar-image": "pathways:workloads[].colocatedPython takes the sidecar's image",
    "--compute-type": "",
}


def _job_parser():
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):  # type: ignore[override]
            raise ConfigError([Problem(JOB_KEY, message)])

    p = _Parser(prog="gcluster job submit", add_help=False, allow_abbrev=False)
    for flags in (("-i", "--image"), ("-B", "--base-image"), ("-b", "--build-context"), ("-e", "--command"), ("--compute-type",),
                  ("-o", "--dry-run-out"), ("-f", "--platform"), ("-n", "--name"), ("-q", "--queue"), ("--gke-ttl-after-finished",),
                  ("--grace-period",), ("--placement-policy",), ("--cpu-affinity",), ("--image-pull-secret",), ("--service-account",),
                  ("--topology",), ("--gke-scheduler",), ("--timeout",), ("--priority",), ("--gke-nap-provisioning",),
                  ("--gke-nap-reservation",), ("--pathways-proxy-server-image",), ("--pathways-server-image",),
                  ("--pathways-worker-image",), ("--pathways-gcs-location",), ("--pathways-proxy-args",), ("--pathways-server-args",),
                  ("--pathways-worker-args",), ("--pathways-colocated-python-sidecar-image",), ("--pathways-head-np",),
                  ("-c", "--cluster"), ("-l", "--location"), ("-p", "--project"), ("--node-constraint",), ("--restart-on-exit-codes",)):
        p.add_argument(*flags)
    for flag in ("--num-nodes", "--num-slices", "--restarts", "--pathways-elastic-slices", "--pathways-max-slice-restarts"):
        p.add_argument(flag, type=int)
    p.add_argument("--mount", action="append")
    for flag in ("--pathways", "--pathways-headless", "--await-job-completion", "--verbose", "--gke-disable-parallel-containers"):
        p.add_argument(flag, action="store_true", default=None)
    return p


def _seconds(text: str, flag: str) -> int:
    """A Go duration as gcluster parses it (time.ParseDuration: 30s, 2m, 1h, 1m30s), whole seconds."""
    parts = re.findall(r"([0-9]+)(h|m|s)", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ConfigError([Problem(JOB_KEY, f"{flag} {text[:40]!r} is not a duration (30s, 2m, 1h, 1m30s)")])
    return sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


def job(line: str, spec: StackSpec) -> tuple[dict[str, Any], list[str], list[str], list[str]]:
    """A `gcluster job submit --pathways ...` line as a declared workload on the stack's slice group: (the workload,
    translated, already so here, not translated)."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise ConfigError([Problem(JOB_KEY, f"cannot split the command line: {e}")]) from None
    at = next((i for i, w in enumerate(words) if re.fullmatch(r"(.*/)?gcluster", w)), None)
    if at is None or words[at + 1:at + 3] != ["job", "submit"]:
        raise ConfigError([Problem(JOB_KEY, "not a 'gcluster job submit ...' line")])
    args, unknown = _job_parser().parse_known_args(words[at + 3:])
    problems = [Problem(JOB_KEY, f"{u!r} is not a gcluster job submit flag") for u in unknown]
    if not args.pathways:
        problems.append(Problem(JOB_KEY, "no --pathways: a job that runs JAX on the TPU hosts directly is not a Pathways workload; "
                                         "only Pathways workloads are declared here"))
    if not args.name:
        problems.append(Problem(JOB_KEY, "no --name: a workload needs one"))
    if problems:
        raise ConfigError(problems)
    done: list[str] = []
    already: list[str] = []
    untranslated: list[str] = []
    w: dict[str, Any] = {"name": args.name}
    done.append(f"--name {args.name} -> pathways:workloads[].name")
    if args.pathways_headless:
        w["mode"] = "interactive"
        done.append("--pathways-headless -> mode: interactive (a head without a program; clients in the VPC reach its proxy)")
    else:
        w["mode"] = "batch"
        if args.image:
            w["image"] = args.image
            done.append(f"--image {args.image} -> image")
        if args.command:
            # a shell line, as gcluster runs it: its quoting, operators and comments mean what they meant there
            w["command"] = ["/bin/sh", "-c", args.command]
            done.append("--command -> command (through /bin/sh -c, a shell line as gcluster runs it)")
    # gcluster's own defaults (cmd/job/submit.go: --num-slices 1, --restarts 1) where the line leaves them out: the
    # stack's would be the whole group and three restarts
    w["slices"] = args.num_slices if args.num_slices is not None else 1
    done.append(f"--num-slices {w['slices']} -> slices" + ("" if args.num_slices is not None else " (gcluster's default)"))
    w["maxRestarts"] = args.restarts if args.restarts is not None else 1
    done.append(f"--restarts {w['maxRestarts']} -> maxRestarts" + ("" if args.restarts is not None else " (gcluster's default)"))
    if args.grace_period:
        w["terminationGracePeriodSeconds"] = _seconds(args.grace_period, "--grace-period")
        done.append(f"--grace-period {args.grace_period} -> terminationGracePeriodSeconds")
    mounts = []
    for item in (part for given in args.mount or [] for part in given.split(",") if part):  # a StringSlice: repeated or a,b
        parts = item.split(":")
        if item.startswith("gs://") and len(parts) in (3, 4):
            bucket, path = parts[1].lstrip("/"), parts[2]
            mode = parts[3] if len(parts) == 4 else "ro"
            mounts.append({"path": path, "bucket": bucket, "readOnly": mode != "rw"})
            done.append(f"--mount {item} -> mounts (the bootstrap grants the workload's account {'objectUser' if mode == 'rw' else 'objectViewer'})")
        else:
            untranslated.append(f"--mount {item}: only gs:// buckets translate; a Filestore or Lustre instance is a "
                                "pathways:storage.fileSystems entry, a host path is refused by the guards")
    if mounts:
        w["mounts"] = mounts
    family = spec.family
    if args.compute_type:
        wanted = args.compute_type.split("-", 1)[0].replace("v5litepod", "v5e")
        if wanted != family:
            untranslated.append(f"--compute-type {args.compute_type}: the stack's slice group is {family}; the workload runs there")
        else:
            already.append(f"--compute-type {args.compute_type}: the workload runs on the stack's slice group ({family})")
    if args.topology:
        ours = spec.tpu.get("topology") if isinstance(spec.tpu, dict) else None
        (already if args.topology == ours else untranslated).append(
            f"--topology {args.topology}: " + ("the slice group's topology" if args.topology == ours else
                                               f"the slice group's topology is {ours}; a workload takes its group's"))
    given = {f"--{k.replace('_', '-')}": v for k, v in vars(args).items() if v is not None}
    handled = {"--name", "--pathways", "--pathways-headless", "--image", "--command", "--num-slices", "--restarts", "--grace-period",
               "--mount", "--compute-type", "--topology"}
    for flag, value in given.items():
        if flag in handled:
            continue
        text = f"{flag}{'' if value is True else ' ' + _shown(value)}"
        if flag in _JOB_ALREADY:
            already.append(f"{text}: {_JOB_ALREADY[flag]}")
        else:
            untranslated.append(f"{text}: {_JOB_NOT.get(flag) or 'no key'}")
    return w, [f"(job {args.name}) {d}" for d in done], [f"(job {args.name}) {a}" for a in already], [f"(job {args.name}) {u}" for u in untranslated]
