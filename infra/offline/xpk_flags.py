"""An xpk command line (`xpk cluster create` or `create-pathways`) as a new stack: every flag it understands
becomes a stack key, a flag whose effect is already this product's default is said so, and every other flag is
named with why it is not translated (Pulumi-free).

The flags are xpk's own (AI-Hypercomputer/xpk src/xpk/parser/cluster.py and common.py, read at 367c838 and in
the 1.16.0 wheel): argparse, abbreviations allowed as argparse allows them; --reservation, --spot, --on-demand
and --flex are xpk's capacity choices. xpk's TPU names are Google's: v5litepod-N and v6e-N count chips, v4, v5p
and tpu7x-N count TensorCores (two a chip), as this catalog does; xpk also takes a topology (v6e-4x4).
"""

from __future__ import annotations

import argparse
import re
import shlex
from typing import Any, NoReturn, Optional

from components.model.errors import ConfigError, Problem
from infra.offline.new_stack import Setting, StackSpec, Translation, tpu_value

# Flags whose effect every stack here already has: nothing to write.
ALREADY = {
    "--private": "private nodes are the default (pathways:cluster.privateNodes)",
    "--enable-private-endpoint": "the control plane has no public IP endpoint by default; kubectl goes through GKE's DNS endpoint",
    "--enable-workload-identity": "every cluster has Workload Identity",
    "--enable-pathways": "every stack is a Pathways cluster (head pool, JobSet, Kueue)",
    "--enable-gcsfuse-csi-driver": "the Cloud Storage FUSE driver is on whenever a workload or run mounts a bucket (docs/storage.md)",
    "--enable-gcpfilestore-csi-driver": "the Filestore driver is on whenever a workload mounts a Filestore share (docs/storage.md)",
    "--enable-lustre-csi-driver": "the Managed Lustre driver is on whenever a workload mounts a Lustre instance (docs/storage.md)",
    "--dry-run": "new-stack writes a file; `make plan` is the dry run, and nothing reaches the cloud before `pulumi up`",
    "--skip-validation": "the plan validates offline, before anything is created",
    "--quiet": "nothing to confirm",
    "--force": "nothing to confirm",
    "--dependency-auto-download": "nothing to download",
    "--on-demand": "on-demand is the default capacity",
}
# Flags with no key here, and why.
NOT_TRANSLATED = {
    "--custom-cluster-arguments": "raw gcloud flags; set the matching stack keys (pathways:network.existingNetwork and "
                                  "existingSubnetwork for --network/--subnetwork; the created VPC already has MTU 8896)",
    "--custom-nodepool-arguments": "raw gcloud flags for the CPU pool; set pathways:cluster.systemPool keys",
    "--custom-tpu-nodepool-arguments": "raw gcloud flags for the TPU pools; the slices' keys say what the pools are",
    "--private-endpoint-subnetwork": "the control plane is reached through GKE's DNS endpoint, not a private-endpoint subnet",
    "--enable-master-global-access": "the DNS endpoint is reachable from every region the IAM policy allows",
    "--enable-autoprovisioning": "node auto-provisioning is not used: one node pool per slice (pathways:slices)",
    "--autoprovisioning-min-chips": "node auto-provisioning is not used",
    "--autoprovisioning-max-chips": "node auto-provisioning is not used",
    "--num-nodes": "CPU device clusters are not made here; the head pool is pathways:headPool",
    "--host-maintenance-interval": "GKE's default (AS_NEEDED) applies; there is no key for PERIODIC",
    "--managed-mldiagnostics": "ML Diagnostics is not installed by the stack (and xpk's grants go to the default compute account)",
    "--create-vertex-tensorboard": "no Vertex AI TensorBoard is created",
    "--tensorboard-region": "no Vertex AI TensorBoard is created",
    "--tensorboard-name": "no Vertex AI TensorBoard is created",
    "--memory-limit": "Kueue's quota here is the slices' chips and the head nodes (docs/queues.md), not CPU and memory",
    "--cpu-limit": "Kueue's quota here is the slices' chips and the head nodes (docs/queues.md), not CPU and memory",
    "--sub-slicing": "sub-slicing is not supported",
    "--super-slicing": "super-slicing is not supported",
    "--num-cubes": "super-slicing is not supported",
    "--adapt-from-ct": "a Cluster Toolkit cluster is taken as it is with pathways:cluster.existing (docs/from-xpk.md)",
    "--cluster-state-gcs-bucket": "the stack's state lives in the bootstrap's state bucket",
    "--enable-parallelstore-csi-driver": "Parallelstore mounts are not supported",
    "--enable-pd-csi-driver": "GKE's Persistent Disk driver is on in every GKE cluster; no key",
    "--enable-legacy-lustre-port": "Lustre mounts use the driver's default port",
    "--mtc-gcs-bucket": "multi-tier checkpointing backs up to a bucket the stack makes (pathways:resilience.mtc.bucket names another)",
    "--mtc-toleration-key": "the MTC driver tolerates the TPU taint the stack sets",
    "--ignore-nodepool-creation-errors": "a node pool that fails fails the `pulumi up`",
    "--sandbox-kubeconfig": "no kubeconfig is written; get credentials with gcloud (docs/runs.md)",
    "--device-type": "only TPU slices are made here; give --tpu-type",
}
_CAPACITY = ("--reservation", "--spot", "--on-demand", "--flex")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ConfigError([Problem("--from-xpk", message)])


def _parser() -> _Parser:
    p = _Parser(prog="xpk cluster create", add_help=False, allow_abbrev=True)
    for flag in ("--cluster", "--project", "--project-number", "--zone", "--tpu-type", "--reservation", "--gke-version",
                 "--pathways-gce-machine-type", "--default-pool-cpu-machine-type", "--cluster-cpu-machine-type",
                 "--mtc-ramdisk-size", "--custom-cluster-arguments", "--custom-nodepool-arguments",
                 "--custom-tpu-nodepool-arguments", "--private-endpoint-subnetwork", "--host-maintenance-interval",
                 "--tensorboard-region", "--tensorboard-name", "--memory-limit", "--cluster-state-gcs-bucket",
                 "--mtc-gcs-bucket", "--mtc-toleration-key", "--sandbox-kubeconfig", "--device-type"):
        p.add_argument(flag)
    for flag in ("--num-slices", "--default-pool-cpu-num-nodes", "--num-nodes", "--cpu-limit", "--num-cubes",
                 "--autoprovisioning-min-chips", "--autoprovisioning-max-chips"):
        p.add_argument(flag, type=int)
    p.add_argument("--authorized-networks", action="extend", nargs="+")
    for flag in ("--private", "--enable-private-endpoint", "--enable-master-global-access", "--enable-workload-identity",
                 "--adapt-from-ct", "--on-demand", "--spot", "--flex", "--enable-mtc", "--sub-slicing", "--super-slicing",
                 "--enable-autoprovisioning", "--managed-mldiagnostics", "--create-vertex-tensorboard", "--enable-pathways",
                 "--enable-gcsfuse-csi-driver", "--enable-gcpfilestore-csi-driver", "--enable-parallelstore-csi-driver",
                 "--enable-pd-csi-driver", "--enable-lustre-csi-driver", "--enable-legacy-lustre-port", "--dry-run",
                 "--skip-validation", "--quiet", "--force", "--dependency-auto-download", "--ignore-nodepool-creation-errors"):
        p.add_argument(flag, action="store_true", default=None)
    return p


def _words(line: str) -> list[str]:
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise ConfigError([Problem("--from-xpk", f"cannot split the command line: {e}")]) from None
    for i, w in enumerate(words):  # the program: xpk, xpk.py, python3 xpk.py, ./xpk.py
        if re.fullmatch(r"(.*/)?xpk(\.py)?", w):
            rest = words[i + 1:]
            break
    else:
        raise ConfigError([Problem("--from-xpk", "not an xpk command line; give 'xpk cluster create ...' or 'xpk cluster create-pathways ...'")])
    if rest[:2] not in (["cluster", "create"], ["cluster", "create-pathways"]):
        raise ConfigError([Problem("--from-xpk", f"'xpk {' '.join(rest[:2])}' makes no cluster; give 'xpk cluster create' or 'create-pathways'")])
    unexpanded = sorted({m for w in rest for m in re.findall(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", w)})
    if unexpanded:
        raise ConfigError([Problem("--from-xpk", f"unexpanded shell variable(s) {', '.join(unexpanded)}: put in their values")])
    return rest


def translate(line: str, name: Optional[str]) -> Translation:
    """The stack an xpk command line describes, and what became of each of its flags."""
    words = _words(line)
    pathways = words[1] == "create-pathways"
    args, unknown = _parser().parse_known_args(words[2:])
    given = {k: v for k, v in vars(args).items() if v is not None}
    problems = [Problem("--from-xpk", f"{u!r} is not an xpk cluster create flag") for u in unknown]
    if not args.tpu_type:
        problems.append(Problem("--from-xpk", "no --tpu-type: only TPU slices are made here" +
                                (f" (--device-type {args.device_type} is not translated)" if args.device_type else "")))
    capacities = [flag for flag in _CAPACITY if given.get(flag[2:].replace("-", "_"))]
    if len(capacities) > 1:
        problems.append(Problem("--from-xpk", f"{' and '.join(capacities)}: xpk takes one capacity flag"))
    if problems:
        raise ConfigError(problems)

    t = Translation(spec=StackSpec(name=name or args.cluster or "", project=args.project or "", zone=args.zone or "",
                                   tpu=tpu_value(args.tpu_type), slices=args.num_slices or 1,
                                   origin=" from an xpk command line"))
    s = t.spec
    done = t.translated.append
    done(f"--tpu-type {args.tpu_type} -> pathways:slices[0].tpu" + (" (family and topology)" if isinstance(s.tpu, dict) else ""))
    if args.tpu_type.startswith("v6e-") and args.tpu_type.endswith("-8"):
        done("  (xpk makes v6e-8 of two 4-chip VMs; GKE's single-host ct6e-standard-8t here: one VM, 8 chips)")
    if args.num_slices:
        done(f"--num-slices {args.num_slices} -> pathways:slices[0].count")
    for flag, value in (("--project", args.project), ("--zone", args.zone)):
        if value:
            done(f"{flag} {value} -> gcp:{flag[2:]}" + (" (and gcp:region)" if flag == "--zone" else ""))
    if args.cluster:
        s.cluster["name"] = Setting(args.cluster, "xpk's --cluster")
        done(f"--cluster {args.cluster} -> pathways:cluster.name" + ("" if name else " (and the stack's name)"))
    if args.reservation:
        first, *others = args.reservation.split(",")
        s.capacity, s.reservation = "reservation", first
        done(f"--reservation {first} -> pathways:slices[0].reservation")
        if others:
            t.untranslated.append(f"--reservation {','.join(others)}: a group takes one reservation; a capacity ladder "
                                  "(pathways:slices[].ladder, docs/capacity.md) takes the others as groups of their own")
    elif args.spot:
        s.capacity = "spot"
        done("--spot -> pathways:slices[0].spot")
    elif args.flex:
        s.capacity = "flex-start"
        done("--flex -> pathways:slices[0].flexStart")
    system_type = args.default_pool_cpu_machine_type or args.cluster_cpu_machine_type
    if system_type:
        s.cluster["systemPool"] = Setting({"machineType": system_type}, "xpk's default CPU pool")
        flag = "--default-pool-cpu-machine-type" if args.default_pool_cpu_machine_type else "--cluster-cpu-machine-type"
        done(f"{flag} {system_type} -> pathways:cluster.systemPool.machineType")
    if args.default_pool_cpu_num_nodes is not None:
        n = args.default_pool_cpu_num_nodes
        pool = dict(s.cluster["systemPool"].value) if "systemPool" in s.cluster else {}
        s.cluster["systemPool"] = Setting({**pool, "minNodes": n, "maxNodes": n}, "xpk's default CPU pool (a fixed size there)")
        done(f"--default-pool-cpu-num-nodes {n} -> pathways:cluster.systemPool.minNodes and maxNodes")
    if args.gke_version:
        s.cluster["minMasterVersion"] = Setting(args.gke_version, "xpk's --gke-version")
        done(f"--gke-version {args.gke_version} -> pathways:cluster.minMasterVersion")
    if args.authorized_networks:
        s.cluster["masterAuthorizedNetworks"] = Setting([{"cidrBlock": c} for c in args.authorized_networks], "xpk's --authorized-networks")
        done(f"--authorized-networks {' '.join(args.authorized_networks)} -> pathways:cluster.masterAuthorizedNetworks")
    if args.pathways_gce_machine_type:
        s.head_pool["machineType"] = Setting(args.pathways_gce_machine_type, "xpk's --pathways-gce-machine-type")
        done(f"--pathways-gce-machine-type {args.pathways_gce_machine_type} -> pathways:headPool.machineType")
    if args.enable_mtc or args.mtc_ramdisk_size:
        if args.mtc_ramdisk_size:
            t.untranslated.append(f"--enable-mtc --mtc-ramdisk-size {args.mtc_ramdisk_size}: add pathways:resilience.mtc."
                                  f"inMemoryVolumeSize: {args.mtc_ramdisk_size} with the batch workload that checkpoints "
                                  "(docs/resilience.md): the stack turns MTC on for workloads, and has none yet")
        else:
            t.untranslated.append("--enable-mtc: give pathways:resilience.mtc.inMemoryVolumeSize with a batch workload (docs/resilience.md)")
    t.project_number = args.project_number
    if args.project_number:
        done(f"--project-number {args.project_number} -> pathways-bootstrap:projectNumber (bootstrap)")
    if pathways:
        t.already.append("create-pathways: every stack has the Pathways head pool (n2-standard-64 unless --pathways-gce-machine-type)")
    handled = {"--tpu-type", "--num-slices", "--project", "--zone", "--cluster", "--reservation", "--spot", "--flex",
               "--default-pool-cpu-machine-type", "--cluster-cpu-machine-type", "--default-pool-cpu-num-nodes", "--gke-version",
               "--authorized-networks", "--pathways-gce-machine-type", "--enable-mtc", "--mtc-ramdisk-size", "--project-number"}
    for dest, value in given.items():
        flag = "--" + dest.replace("_", "-")
        if flag in handled:
            continue
        if flag in ALREADY:
            t.already.append(f"{flag}: {ALREADY[flag]}")
        else:
            t.untranslated.append(f"{flag}{'' if value is True else ' ' + _shown(value)}: {NOT_TRANSLATED[flag]}")
    return t


def _shown(value: Any) -> str:
    text = " ".join(map(str, value)) if isinstance(value, list) else str(value)
    return shlex.quote(text[:120])
