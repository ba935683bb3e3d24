"""The stack at a glance: what it holds (slices, VMs, chips, buckets, workloads) and what it costs. Pure: computed from
the validated config and the TPU catalog, so `plan` prints it first and `--json` carries it as `summary`."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from components.constants import HEAD_TAINT, ROLE_LABEL, SYSTEM_ROLE
from components.model.capacity import quota, reservation_notices, rollout, tpu_zones
from components.model.capacity.reservations import Recorded, ReservationState, availability, block_availability, parse_path
from components.model.common import PRIORITY_CLASSES
from components.model.cost import cost
from components.model.cost.cpu_quota import cpu_quota
from components.model.cost.ladders_summary import ladders_summary
from components.model.cost.pool_sets_summary import pool_set_notices, pool_sets_summary, pool_sets_text
from components.model.cost.pricing import tpu_chip_price
from components.model.cost.teams_summary import teams_notices, teams_summary, teams_text
from components.model.resolved import ResolvedStack
from components.model.workloads import images, inference_gateway, metrics_adapter, secrets, serving, vllm
from components.model.workloads.failures import failure_handling
from components.model.workloads.ports import SERVE_HTTP_PORT
from components.model.workloads.workload import serve_service_name


def stack_summary(stack: ResolvedStack, reservations: Mapping[str, ReservationState] | None = None) -> dict[str, Any]:
    blocks = reservations.blocks if isinstance(reservations, Recorded) else {}
    groups = [{
        "name": g.name, "tpu": g.tpu.name, "topology": g.tpu.topology, "machineType": g.tpu.machine_type,
        # a fleet manager's groups hold nothing of its own: their slices are its workers'
        "slices": 0 if stack.fleet_manager else g.count, "spares": g.spares, "vmsPerSlice": g.tpu.hosts,
        "vms": 0 if stack.fleet_manager else g.pools * g.tpu.hosts, "chips": 0 if stack.fleet_manager else g.pools * g.tpu.chips,
        "capacity": g.capacity.value, "reservation": g.reservation,
        "queuedProvisioning": g.queued_provisioning, "ladder": list(g.ladder),
        # slices[].nodePools: pools made elsewhere, selected by GKE's node-pool label ([]: the stack's own labels)
        "nodePools": list(g.node_pools),
        # slices[].futureReservation: the calendar-mode request (null without one)
        "futureReservation": {
            "startTime": f"{g.future_reservation.start_time:%Y-%m-%dT%H:%M:%SZ}", "endTime": f"{g.future_reservation.end_time:%Y-%m-%dT%H:%M:%SZ}",
            "workloadType": g.future_reservation.workload_type, "chips": g.pools * g.tpu.chips,
            "delivered": g.name not in stack.undelivered,
        } if g.future_reservation else None,
        # slices[].reservationRecord: what the recorded reservation can give (null without a record)
        "reservationFree": availability(reservations[g.name], g.tpu) if reservations and g.name in reservations else None,
        # slices[].reservationBlockRecord: what the recorded block or sub-block can give (null without one)
        "blockFree": block_availability(blocks[g.name], parse_path(g.reservation, stack.project))
        if g.name in blocks and g.reservation else None,
    } for g in stack.slices]
    workloads = []
    for w in stack.workloads:
        direct = bool(w.spec.serve and w.spec.serve.direct)
        images = {} if direct else {"server": w.server_image}
        if w.mode != "service" and not direct:
            images["proxy"] = w.proxy_image
        if w.spec.image:
            images["user"] = w.spec.image
        if w.spec.serve and w.spec.serve.engine_name == "vllm":
            images["vllm"] = w.spec.serve.vllm_image
        elif w.spec.serve:
            images["jetstream"] = w.spec.serve.jetstream_image
            images["http"] = w.spec.serve.http_image
        entry = {
            "name": w.name, "mode": w.mode, "state": w.state, "sliceGroup": w.group.name, "slices": w.slices,
            "chips": w.chips, "namespace": w.namespace, "images": images,
            "onFailure": [{"failure": kind, "outcome": outcome} for kind, outcome in failure_handling(w)],
        }
        if w.spec.serve:
            sv = w.spec.serve
            entry["engine"] = sv.engine_name
            entry["runtime"] = sv.runtime_name
            entry["runtimeBecause"] = sv.runtime_because
            if sv.split is not None:
                price, _ = tpu_chip_price(w.group.tpu.family, w.group.capacity, stack.prices)
                chips = {role: getattr(sv.split, role).replicas * w.group.tpu.chips for role in ("prefill", "decode")}
                entry["split"] = {role: {"replicas": getattr(sv.split, role).replicas, "chips": n, "hourly": None if price is None
                                         else round(price * n, 2)} for role, n in chips.items()} | {"proxy": {
                    "replicas": sv.split.proxy_replicas, "cpu": sv.split.proxy_resources.cpu, "memory": sv.split.proxy_resources.memory}}
            entry["endpoint"] = f"{serve_service_name(w.name)}.{w.namespace}.svc.cluster.local:{SERVE_HTTP_PORT}"
            if sv.gateway.enabled:
                cpu, memory, _ = sv.gateway.picker_requests
                entry["gateway"] = {"access": sv.gateway.access, "class": inference_gateway.GATEWAY_CLASSES[sv.gateway.access],
                                    "name": f"{w.namespace}/{inference_gateway.gateway_name(w.name)}",
                                    "picker": {"cpu": cpu, "memory": memory}}
            if sv.autoscale:
                per_replica = sv.slices_per_replica * w.group.tpu.chips
                entry["autoscale"] = {
                    "minReplicas": sv.autoscale.min_replicas, "maxReplicas": sv.autoscale.max_replicas,
                    "metric": vllm.AUTOSCALE_METRICS[sv.autoscale.metric],
                    "target": sv.autoscale.target,
                    "chipsAtMin": sv.autoscale.min_replicas * per_replica, "chipsAtMax": sv.autoscale.max_replicas * per_replica,
                }
                price, _ = tpu_chip_price(w.group.tpu.family, w.group.capacity, stack.prices)
                entry["autoscale"]["hourlyAtMin"] = None if price is None else round(price * entry["autoscale"]["chipsAtMin"], 2)
                entry["autoscale"]["hourlyAtMax"] = None if price is None else round(price * entry["autoscale"]["chipsAtMax"], 2)
        workloads.append(entry)
    pools = stack.node_pools
    return {
        "sliceGroups": groups,
        "headPool": {"machineType": stack.head_machine_type, "nodes": stack.head_nodes, "nodePool": stack.head_node_pool,
                     "isolated": [{"nodePool": d.head_pool, "maxNodes": d.head_nodes} for d in stack.domains]},
        # kubernetes.kueue.clusterQueue: the ClusterQueue made elsewhere that the stack's LocalQueues share (null: its own)
        "sharedClusterQueue": stack.shared_cluster_queue,
        "systemPool": {"machineType": stack.system_machine_type, "minNodes": stack.system_min_nodes, "maxNodes": stack.system_max_nodes},
        "proxyPool": {"machineType": stack.proxy_machine_type, "nodes": stack.proxy_nodes} if stack.proxy_machine_type else None,
        "cpuQuota": cpu_quota(stack),  # the regional vCPU quotas its CPU pools draw on, at their largest (#75.3)
        "buckets": ([
            {"name": stack.bucket_name, "holds": f"compilation cache {stack.cache_location} (made elsewhere)"},
        ] if stack.existing_cluster else [
            {"name": stack.bucket_name, "holds": f"compilation cache {stack.cache_location}"},
            {"name": stack.artifacts_bucket, "holds": f"profiles and HLO dumps {stack.artifacts_location} "
                                                    f"(deleted after {stack.bucket.artifacts_ttl_days} days)"},
            *({"name": n, "holds": f"isolation domain {d.name}'s {what}"} for d in stack.domains
              for n, what in ((d.bucket_name, f"compilation cache {d.cache_location}"), (d.artifacts_bucket_name, "profiles and HLO dumps"))),
        ]) + ([{"name": stack.mtc.bucket, "holds": "multi-tier checkpoint backups (hierarchical namespace)"
                + (" (made elsewhere)" if stack.existing_cluster else "")}] if stack.mtc else []),
        "multiTierCheckpointing": {
            "bucket": stack.mtc.bucket, "inMemoryVolumeSize": stack.mtc.in_memory_volume_size,
            "localCheckpointDirectory": stack.mtc.mount_path, "sliceGroups": list(stack.mtc.slice_groups),
            "workloads": [w.name for w in stack.workloads if w.mtc_mount_path],
        } if stack.mtc else None,
        "runs": {
            "namespace": stack.namespace, "queues": dict(stack.run_queues), "headNodes": stack.runs.head_nodes,
            "priority": stack.runs.priority, "submitters": [s.name for s in stack.runs.submitters],
            "notebookIdleStopSeconds": stack.runs.notebook_idle_stop_seconds, "idleNotebookWeek": cost.idle_notebook_week(stack),
        } if stack.runs else None,
        "teams": teams_summary(stack),
        "poolSets": pool_sets_summary(stack),
        "storage": _storage(stack),
        "ladders": ladders_summary(stack),
        # pathways:fleet (docs/fleet.md): the stack's role, and a manager's workers in dispatch order
        "fleet": {"role": stack.fleet.role, "workers": [{"name": w.name, "stack": w.stack} for w in stack.fleet.workers]}
        if stack.fleet else None,
        "workloads": workloads,
        "labels": dict(stack.labels),
        "totals": {
            "slices": sum(g["slices"] for g in groups), "spares": sum(g.spares for g in stack.slices),
            "tpuVms": sum(g["vms"] for g in groups), "tpuChips": sum(g["chips"] for g in groups),
            "cpuVms": stack.head_nodes + stack.system_min_nodes + stack.proxy_nodes,
            "nodePools": pools, "workloads": len(stack.workloads), "activeWorkloads": len(stack.active_workloads),
        },
        "rollout": {"nodePoolConcurrency": stack.node_pool_concurrency,
                    "waves": rollout.waves(pools, stack.node_pool_concurrency)},
        "cost": cost.estimate(stack).to_json(),
        # the regional TPU quota the pools draw on (components/model/capacity/quota.py; IDs unverified, the listing is not)
        "quota": [] if stack.existing_cluster or stack.fleet_manager else [
            {"region": stack.region, "family": n.family, "kind": n.kind, "chips": n.chips, "groups": list(n.groups), "quotaId": n.quota_id,
             "dimension": "=".join(n.dimension) if n.dimension else None, "evidence": n.evidence,
             "describe": n.describe_command(stack.project),
             "list": n.list_command(stack.project)}
            for n in quota.needs(stack.slices, stack.group_pools)],
        "notices": notices(stack),
    }


def with_fleet_workers(summary: dict[str, Any], fleet_output: Any) -> dict[str, Any]:
    """A manager's summary with what its workers publish, as its program read them (the `fleet` output): each
    worker's region and, per slice group, its chips, capacity and list cost an hour. Unchanged when not a manager or
    the output is not known (a preview before the workers are deployed)."""
    fleet = summary.get("fleet")
    read = (fleet_output or {}).get("workers") if isinstance(fleet_output, dict) else None
    if not fleet or fleet.get("role") != "manager" or not isinstance(read, dict):
        return summary
    workers = []
    for w in fleet["workers"]:
        facts = read.get(w["name"]) or {}
        groups = [{"group": g, **{k: v.get(k) for k in ("tpu", "chips", "capacity", "hourly")}} for g, v in (facts.get("groups") or {}).items()]
        hourly = [g["hourly"] for g in groups]
        workers.append({**w, "region": facts.get("region"), "groups": groups,
                        "hourly": round(sum(hourly), 2) if groups and None not in hourly else None})
    return {**summary, "fleet": {**fleet, "workers": workers}}


def _storage(stack: ResolvedStack) -> Optional[dict[str, Any]]:
    """What the workloads mount, the grants the bootstrap holds for it and the CSI drivers it needs (None without
    mounts)."""
    mounts = [{"workload": w.name, "path": m.path, "source": f"gs://{m.bucket}" if m.bucket else f"fileSystem {m.file_system}",
               "readOnly": m.read_only, "workers": m.on_workers, **({"options": m.profile} if m.bucket else {})}
              for w in stack.active_workloads for m in w.spec.mounts]
    if not mounts and not stack.file_systems and not stack.bucket_grants:
        return None
    return {
        "mounts": mounts,
        "fileSystems": [{"name": f.name, "kind": f.kind, "instance": f.filestore or f.lustre, "ip": f.ip, "capacity": f.capacity}
                        for f in stack.file_systems],
        "bucketGrants": [{"bucket": b, "role": role, "serviceAccount": f"{ns}/{sa}"} for b, role, ns, sa in stack.bucket_grants],
        "csiDrivers": list(stack.csi_drivers),
    }


def notices(stack: ResolvedStack) -> list[str]:
    """What a reviewer should know that is not an error: the stack deploys, but something will surprise."""
    out = []
    if stack.existing_cluster:
        out.append("a cluster made elsewhere (cluster.existing): the stack deploys only its Kubernetes layer; the node pools, "
                   "buckets, IAM and alerts listed for the slice groups are the cluster owner's to provide")
    elif not stack.monitoring.notification_channels:
        out.append("alerts notify no one: pathways:monitoring.notificationChannels is empty, so incidents only open in the "
                   "Cloud Console; add a channel (projects/<p>/notificationChannels/<id>)")
    if stack.existing_cluster and stack.group_subjects:
        out.append(f"Google group(s) {', '.join(stack.group_subjects)} in RBAC on a cluster made elsewhere: their members get in only if "
                   "that cluster has Google Groups for RBAC on (gcloud container clusters describe CLUSTER "
                   "--format='value(authenticatorGroupsConfig.securityGroup)' names gke-security-groups@<domain>, and these "
                   "groups are its members); its owner turns it on with gcloud container clusters update CLUSTER "
                   "--security-group=gke-security-groups@<domain>")
    out += serving_prerequisites(stack)
    out += pool_set_notices(stack) + reservation_notices.unchecked_notices(stack.slices, stack.zone)
    out += as_it_is(stack)
    if stack.existing_cluster and stack.csi_drivers:
        out.append(f"mounts on a cluster made elsewhere: the cluster must have GKE's {', '.join(stack.csi_drivers)} CSI "
                   "driver add-on(s) enabled and Workload Identity Federation on its node pools; the stack enables them "
                   "only on a cluster it makes")
    autoscaled = ", ".join(w.name for w in stack.autoscaled_workloads)
    if autoscaled and not stack.install_metrics_adapter:
        out.append(f"serve workload(s) {autoscaled} autoscale on a Managed Prometheus metric, which the HorizontalPodAutoscaler "
                   "reads through the Custom Metrics Stackdriver Adapter; with kubernetes.installMetricsAdapter: false the "
                   "cluster must run one (with roles/monitoring.viewer for its identity), or the autoscaler holds the count "
                   "and reports FailedGetPodsMetric")
    elif autoscaled and stack.existing_cluster:
        out.append(f"serve workload(s) {autoscaled} on a cluster made elsewhere: the stack installs the Custom Metrics "
                   f"Stackdriver Adapter there (its APIServices would clash with one the cluster runs already: then set "
                   f"kubernetes.installMetricsAdapter: false); its identity needs {metrics_adapter.MONITORING_ROLE} on the "
                   "cluster's project, which the bootstrap grants only in its own project")
    out += [serving.jetstream_notice(w.name, w.spec.serve)
            for w in stack.serve_workloads if w.spec.serve and w.spec.serve.engine_name == "jetstream"]
    out += oversubscribed(stack)
    out += images.pathways_tag_notices([w.server_image for w in stack.workloads if not (w.spec.serve and w.spec.serve.direct)])
    out += teams_notices(stack)
    out += [f"{key}: {what} looks like a secret given in plain text: it is in the Pulumi state and in every preview's diff (a "
            "pull request's comment too); set it with `pulumi config set --secret --path` (a protected stack refuses it)"
            for key, what in secrets.secret_looking([w.spec for w in stack.workloads], any(w.env_secret for w in stack.workloads))]
    if stack.external_bucket_grants:
        out.append("bucket grants on buckets the stack does not make (the bootstrap makes them, where its "
                   "pathways-bootstrap:externalBuckets allows each): " + "; ".join(
                       f"{b} {role.removeprefix('roles/')} to {ns}/{sa}" for b, role, ns, sa in stack.external_bucket_grants))
    if stack.fleet is not None and stack.fleet.internet_tokens:
        out.append("fleet worker: the control plane takes Kubernetes tokens on its internet-facing DNS endpoint "
                   "(enable_k8s_tokens_via_dns), which no authorized-networks list covers: the manager's token (read the "
                   f"cluster, write runs in {', '.join(stack.fleet.dispatch_namespaces)}) works from anywhere it leaks to; "
                   "fleet.privateEndpoint: true keeps the manager's path inside the VPC (docs/fleet.md)")
    out += [f"slice group {g.name}: TPU {g.tpu.family} in {stack.zone} is not in Google's TPU zone table (unlistedZone): "
            "GKE refuses the node pool if the zone does not offer it to this project" for g in stack.slices if g.unlisted_zone]
    if not tpu_zones.covered(stack.zone):
        out.append(f"TPU zones: {stack.zone} is outside the regions of the stack's zone table (North America), so the "
                   "plan has not checked that it offers the slice groups' TPU families")
    return out


def as_it_is(stack: ResolvedStack) -> list[str]:
    """A cluster made elsewhere taken as it is (docs/from-xpk.md): what its owner's setup must give, and what the
    stack's guards no longer keep."""
    out = []
    if not stack.guards.enabled:
        out.append("admission guards off (kubernetes.guards.enabled: false): any pod that may be created in any namespace can "
                   "tolerate the TPU taint or use the host network, run on the Pathways nodes and act as their service "
                   "account (which writes the scratch bucket)")
    elif stack.guards.exempt_namespaces:
        out.append(f"admission guards exempt namespace(s) {', '.join(stack.guards.exempt_namespaces)} "
                   "(kubernetes.guards.exemptNamespaces): pods there may run on the Pathways nodes and the host network, "
                   "acting as the nodes' service account; whoever may create pods there has that access")
    if stack.shared_cluster_queue is not None:
        out.append(f"queues: the stack's LocalQueues point at ClusterQueue {stack.shared_cluster_queue}, made elsewhere "
                   "(kubernetes.kueue.clusterQueue): its flavors, quota and preemption are its owner's; it must select "
                   f"namespace(s) {', '.join(stack.workload_namespaces)} and hold cpu and memory quota on a flavor for "
                   "the head pool's nodes (xpk's Pathways clusters have cpu-user), or the head pods are never admitted")
        low, high = min(v for v, _ in PRIORITY_CLASSES.values()), max(v for v, _ in PRIORITY_CLASSES.values())
        out.append(f"priorities in the shared queue: the stack's workloads rank {low:,} to {high:,} (pathways-* priority classes), "
                   "above every PriorityClass xpk makes (very-low 100 to very-high 1,000): where that queue preempts by priority "
                   "(xpk's does: withinClusterQueue LowerPriority), Kueue evicts the owner's running work for any of the stack's")
    elif stack.existing_cluster and stack.kueue and not stack.install_controllers:
        out.append("queues: the cluster runs Kueue already (kubernetes.installControllers: false) and the stack adds its own "
                   "ClusterQueue over the slice groups' nodes; if a ClusterQueue of the cluster's (xpk's cluster-queue) "
                   "covers those nodes too, both admit work onto one slice: share it with kubernetes.kueue.clusterQueue")
    if stack.fleet_manager and stack.runs is not None:
        out.append(f"fleet runs keep their compilation cache in {stack.cache_location} (this stack's bucket) wherever they run: "
                   "the stack grants the workers' node service accounts nothing on it, so grant each worker's Pathways nodes "
                   "roles/storage.objectUser there, or the runs' servers cannot write their cache")
    if stack.head_node_pool is not None:
        out.append(f"head pool {stack.head_node_pool} (headPool.nodePool) is made elsewhere: unless it is tainted "
                   f"{HEAD_TAINT[0]}={HEAD_TAINT[1]}:NoSchedule, other pods may take the head pods' room on it")
    return out


def serving_prerequisites(stack: ResolvedStack) -> list[str]:
    """What a serve workload needs of a cluster made elsewhere that the stack would otherwise make itself."""
    if not stack.existing_cluster:
        return []
    out = []
    for w in stack.serve_workloads:
        assert w.spec.serve is not None
        bucket = w.spec.serve.weights_bucket
        read = (f", and that account needs roles/storage.objectViewer on gs://{bucket}" if bucket else
                ": the engine downloads the weights from Hugging Face, so the nodes need a route out (Cloud NAT)")
        out.append(f"serve workload {w.name} on a cluster made elsewhere: its slice group's TPU pools must run with the GCE "
                   f"metadata server (workloadMetadataConfig GCE_METADATA, as the stack's own serving pools do: the pods act "
                   f"as the node service account){read}")
    gateways = [w.name for w in stack.serve_workloads if w.spec.serve and w.spec.serve.gateway.enabled]
    if gateways:
        out.append(f"serve workload(s) {', '.join(gateways)} with serve.gateway on a cluster made elsewhere: the cluster must "
                   "have GKE's Gateway API enabled (gatewayApiConfig CHANNEL_STANDARD), the HttpLoadBalancing add-on, a "
                   "proxy-only subnet in its region (network.proxyOnlyCidr names its range for the firewall rule, which "
                   "the stack does not make here) and a firewall rule admitting it and Google's health checks "
                   f"({', '.join(inference_gateway.HEALTH_CHECK_RANGES)}) to the TPU nodes on port {SERVE_HTTP_PORT}; the "
                   f"endpoint picker requests {inference_gateway.PICKER_CPU} CPU and {inference_gateway.PICKER_MEMORY} on a "
                   f"node labelled {ROLE_LABEL}={SYSTEM_ROLE} unless serve.gateway.pickerResources")
    if stack.serve_workloads and not stack.install_controllers:
        out.append("serve workloads with kubernetes.installControllers: false: the cluster must run the LeaderWorkerSet "
                   "controller (0.6.0 or later)" + (" and Kueue with its leaderworkerset.x-k8s.io/leaderworkerset integration "
                                                   "enabled" if stack.kueue else ""))
    return out


def oversubscribed(stack: ResolvedStack) -> list[str]:
    """Slice groups whose running workloads want more slices than they have: Kueue admits by priority (then in
    order) and holds the rest, which a reader of the stack file might not expect."""
    out = []
    for g in stack.slices:
        if g.dynamic:
            continue  # a pool set forms slices of any size: its table says which wait (pool_sets_summary.py)
        running = [w for w in stack.active_workloads if w.group is g and w.state == "running"]
        wanted = sum(w.slices for w in running)
        if wanted <= g.count:
            continue
        free, held = g.count, []
        for w in sorted(running, key=lambda w: -PRIORITY_CLASSES[w.priority][0]):  # stable: stack-file order within a priority
            if w.slices <= free:
                free -= w.slices
            else:
                held.append(f"{w.name} ({w.priority})")
        wants = ", ".join(f"{w.name} {w.slices}" for w in running)
        out.append(f"slice group {g.name}: running workloads want {wanted} slices ({wants}) and it has {g.count}; Kueue admits "
                   f"by priority and holds {', '.join(held)} until slices free up" if stack.kueue else
                   f"slice group {g.name}: running workloads want {wanted} slices ({wants}) and it has {g.count}; without Kueue "
                   "the scheduler places pods as they come and workloads can each hold part of a slice set")
    return out


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _money(x: float) -> str:
    return f"${x:,.2f}"


def summary_text(s: dict[str, Any]) -> list[str]:
    """The summary as the lines `plan` prints first."""
    t = s["totals"]
    lines = [f"Stack: {t['slices']} TPU slice(s) ({t['tpuChips']} chips on {t['tpuVms']} TPU VMs, spares included), "
             f"{t['cpuVms']} CPU VM(s), {t['nodePools']} node pools, {t['workloads']} workload(s)", "",
             "Slice groups:"]
    rows = [["group", "tpu", "topology", "machine", "slices", "spares", "VMs", "chips", "capacity", "reservation"]]
    rows += [[g["name"], g["tpu"], g["topology"], g["machineType"], str(g["slices"]), str(g["spares"]), str(g["vms"]),
              str(g["chips"]), g["capacity"] + (" (queued)" if g["queuedProvisioning"] else ""), g["reservation"] or "-"] for g in s["sliceGroups"]]
    lines += _table(rows)
    lines += [f"  {free} (recorded)" for free in dict.fromkeys(g[k] for g in s["sliceGroups"] for k in ("reservationFree", "blockFree") if g[k])]
    for g in s["sliceGroups"]:
        fr = g["futureReservation"]
        if fr:
            when = "delivered: its pools are in this plan" if fr["delivered"] else "not delivered yet: its pools come with the first `pulumi up` after"
            lines.append(f"  future reservation {g['reservation']}: {fr['chips']} TPU {g['tpu'].split('-')[0]} chips from {fr['startTime']} to "
                         f"{fr['endTime']} ({fr['workloadType']}, calendar mode), {when} its start. Submitted, it cannot be "
                         "cancelled, changed or deleted")
    for ladder in s["ladders"]:
        def rung(r: dict[str, Any]) -> str:
            bound = "at most " if r["basis"].startswith("upper bound") else ""
            price = "" if r["hourly"] is None else f", {bound}${r['hourly']:,.2f}/h" + (" when used" if r["scalesToZero"] else "")
            return f"{r['group']} ({r['capacity']}{', queued' if r['queuedProvisioning'] else ''}, {r['chips']} chips{price})"
        bound = "at most " if any(r["basis"].startswith("upper bound") for r in ladder["rungs"]) else ""
        cost_range = ("" if ladder["idleHourly"] is None else
                      f"; {bound}${ladder['idleHourly']:,.2f}/h idle, {bound}${ladder['fullHourly']:,.2f}/h with every rung full")
        lines.append(f"  ladder {ladder['group']}: {' -> '.join(rung(r) for r in ladder['rungs'])}{cost_range}")
    if s["quota"]:
        lines.append(f"  regional TPU quota needed in {s['quota'][0]['region']} (a reserved group uses its reservation's): "
                     + "; ".join(f"{q['chips']} {q['family']} {q['kind']} chips ({q['quotaId']}"
                                 + (f", {q['dimension']}" if q["dimension"] else "") + f"; ID {q['evidence']})"
                                 for q in s["quota"]))
        lines.append(f"    current limits: {s['quota'][0]['list']} (the IDs' evidence: docs/capacity.md)")
    lines += [f"  {g['name']}: node pools {', '.join(g['nodePools'])}, made elsewhere (selected by cloud.google.com/gke-nodepool)"
              for g in s["sliceGroups"] if g["nodePools"]]
    if s["sharedClusterQueue"]:
        lines.append(f"  queue: ClusterQueue {s['sharedClusterQueue']}, made elsewhere and shared (its flavors and quota are its owner's)")
    fleet = s["fleet"]
    if fleet and fleet["role"] == "manager":
        workers = ", ".join(f"{w['name']} ({w['stack']})" for w in fleet["workers"])
        lines.append(f"  fleet manager: no slices of its own; Kueue admits runs against the summed quota of workers {workers}, "
                     "read at deploy, and dispatches each to a worker with room: the first whose Kueue admits it (MultiKueue)")
        read = [w for w in fleet["workers"] if "groups" in w]
        if read:
            lines += ["", "Fleet workers (as their stacks publish them; a run of a group goes to one with room in that group):"]
            rows = [["worker", "stack", "region", "group", "tpu", "chips", "capacity", "$/hour"]]
            rows += [[w["name"], w["stack"], w["region"] or "-", g["group"], g["tpu"], str(g["chips"]), g["capacity"],
                      "-" if g["hourly"] is None else _money(g["hourly"])] for w in read for g in w["groups"]]
            lines += _table(rows)
            known = [w["hourly"] for w in read]
            lines += [f"  every worker's slices busy: about {_money(sum(known))}/hour at the workers' prices (list prices unless set)"] \
                if None not in known else []
    elif fleet:
        lines.append("  fleet worker: the `fleet` output (a secret) gives a manager this cluster's endpoint, queues, quotas and a token for MultiKueue")
    head, lines = "head" if not s["headPool"]["nodePool"] else f"head ({s['headPool']['nodePool']}, made elsewhere)", [*lines, "", "CPU pools:"]
    rows = [["pool", "machine", "nodes"], [head, s["headPool"]["machineType"], str(s["headPool"]["nodes"])],
            *([p["nodePool"], s["headPool"]["machineType"], f"0-{p['maxNodes']} (autoscaled)"] for p in s["headPool"]["isolated"]),
            ["system", s["systemPool"]["machineType"], f"{s['systemPool']['minNodes']}-{s['systemPool']['maxNodes']} (autoscaled)"]]
    if s["proxyPool"]:
        rows.append(["proxy", s["proxyPool"]["machineType"], str(s["proxyPool"]["nodes"])])
    lines += _table(rows)
    lines += [f"  regional vCPU quota needed at their largest: {', '.join(f'{n} ({q})' for q, n in s['cpuQuota'].items())}; "
              "`preflight` reads the limits"] if s["cpuQuota"] else []
    lines += ["", "Buckets:"] + [f"  {b['name']}: {b['holds']}" for b in s["buckets"]]
    runs = s["runs"]
    if runs:
        queues = ", ".join(sorted(set(runs["queues"].values()))) or "none (no Kueue)"
        lines += ["", f"Ad-hoc runs (python -m infra.run, docs/runs.md): in {runs['namespace']} on queue {queues}, "
                      f"{runs['headNodes']} head node(s) of their own, priority {runs['priority']} unless asked; submitters: "
                      f"{', '.join(runs['submitters']) or 'none listed (only those with rights of their own in ' + runs['namespace'] + ')'}"]
        idle = runs["notebookIdleStopSeconds"]
        for n in runs["idleNotebookWeek"]:
            stop = (f"{_money(n['withIdleStop'])} with the idle stop after {idle / 3600:g} h (runs.notebookIdleStopSeconds)" if idle
                    else "no idle stop (runs.notebookIdleStopSeconds: 0)")
            anyway = "; its pools bill anyway, the stop frees the slice for the next run" if n["billedAnyway"] else ""
            lines.append(f"  a notebook left idle a week on one slice of {n['group']}: {_money(n['withoutIdleStop'])}, {stop}{anyway}")
    lines += teams_text(s["teams"], _table, _money)
    lines += pool_sets_text(s["poolSets"], _table)
    storage = s["storage"]
    if storage:
        lines += ["", "Storage mounts (docs/storage.md; GKE CSI drivers: " + (", ".join(storage["csiDrivers"]) or "none") + "):"]
        rows = [["workload", "path", "source", "access", "on", "gcsfuse options"]]
        rows += [[m["workload"], m["path"], m["source"], "read-only" if m["readOnly"] else "read-write",
                  "head+workers" if m["workers"] else "head", m.get("options", "-")] for m in storage["mounts"]]
        lines += _table(rows) if storage["mounts"] else []
        lines += [f"  file system {f['name']}: {f['kind']} {f['instance']} at {f['ip']} ({f['capacity']})" for f in storage["fileSystems"]]
        lines += [f"  the bootstrap grants {g['role']} on gs://{g['bucket']} to {g['serviceAccount']}" for g in storage["bucketGrants"]]
    mtc = s["multiTierCheckpointing"]
    if mtc:
        lines += ["", f"Multi-tier checkpointing: a {mtc['inMemoryVolumeSize']} RAM disk on every TPU host of "
                      f"slice group {', '.join(mtc['sliceGroups']) or 'none yet (no batch workload)'}, at {mtc['localCheckpointDirectory']} "
                      f"in {', '.join(mtc['workloads']) or 'no workload'} (the program's local_checkpoint_directory), "
                      f"backed up to gs://{mtc['bucket']}"]
    if s["labels"]:
        lines += ["", "Labels (gcp:defaultLabels: every GCP resource that takes labels, every Kubernetes object the stack creates):",
                  "  " + ", ".join(f"{k}={v}" for k, v in sorted(s["labels"].items()))]
    lines += ["", "Workloads:"]
    if s["workloads"]:
        rows = [["name", "mode", "state", "group", "slices", "chips", "namespace"]]
        rows += [[w["name"], w["mode"], w["state"], w["sliceGroup"], str(w["slices"]), str(w["chips"]), w["namespace"]]
                 for w in s["workloads"]]
        lines += _table(rows)
        for w in s["workloads"]:
            lines += [f"  {w['name']} images:"] + [f"    {k}: {v}" for k, v in w["images"].items()]
            lines += [f"  {w['name']} on failure:"] + [f"    {f['failure']}: {f['outcome']}" for f in w["onFailure"]]
            if "engine" in w:
                lines.append(f"  {w['name']} endpoint: {w['engine']} at {w['endpoint']}")
                lines.append(f"  {w['name']} runtime: {w['runtime']} ({w['runtimeBecause']})")
            if "split" in w:
                sp = w["split"]
                roles = "; ".join(f"{role} {sp[role]['replicas']} x {w['sliceGroup']} ({sp[role]['chips']} chips"
                                  + (f", {_money(sp[role]['hourly'])}/h" if sp[role]["hourly"] is not None else "") + ")"
                                  for role in ("prefill", "decode"))
                lines.append(f"  {w['name']} split: {roles}; proxy {sp['proxy']['replicas']} x ({sp['proxy']['cpu']} CPU, "
                             f"{sp['proxy']['memory']}) on the system pool")
            if "gateway" in w:
                g = w["gateway"]
                access = "EXTERNAL (reachable from the internet)" if g["access"] == "external" else "internal"
                lines.append(f"  {w['name']} gateway: {access} {g['class']} {g['name']} -> InferencePool "
                             f"{w['name']} (endpoint picker {g['picker']['cpu']} CPU, {g['picker']['memory']} on the system pool)")
            if "autoscale" in w:
                a = w["autoscale"]
                money = (f"; TPU chips {_money(a['hourlyAtMin'])}/h at min, {_money(a['hourlyAtMax'])}/h at max"
                         if a["hourlyAtMin"] is not None else "")
                lines.append(f"  {w['name']} autoscale: {a['minReplicas']}-{a['maxReplicas']} replicas on {a['metric']} "
                             f"(target {a['target']:g} per replica), {a['chipsAtMin']}-{a['chipsAtMax']} chips{money}")
    else:
        lines.append("  (none)")
    lines += _cost_lines(s["cost"])
    if s["notices"]:
        lines += ["", "Notices:"] + [f"  - {n}" for n in s["notices"]]
    return lines


def _count(n: int, unit: str) -> str:
    """1 VM, 2 VMs, 16 chips."""
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def _cost_lines(c: dict[str, Any]) -> list[str]:
    if not c["lines"] and not c["whenUsed"]:
        return ["", f"Estimated cost: none. {c['note']}"]
    lines = ["", f"Estimated cost of what the stack keeps running: {c['qualifier']} {_money(c['hourly'])}/hour, "
                 f"{_money(c['monthly'])}/month ({c['hoursPerMonth']} h) - an estimate from list prices, not a quote:"]
    rows = [[line["item"], f"{line['quantity']} x {_money(line['unitPricePerHour'])}" if line["unitPricePerHour"] is not None else
             f"{line['quantity']} x ?", _money(line["hourly"]) + "/h" if line["hourly"] is not None else "?", line["basis"]]
            for line in c["lines"]]
    lines += _table(rows)
    if c["idleHourly"] != c["hourly"]:
        lines.append(f"  idle (no workload running, scaled to zero): {_money(c['idleHourly'])}/hour, {_money(c['idleMonthly'])}/month")
    for line in c["whenUsed"]:
        price = f"{_money(line['hourly'])}/h" if line["hourly"] is not None else "no price"
        lines.append(f"  only while scaled up: {line['item']}: {_count(line['quantity'], line['unit'])}, {price} ({line['basis']})")
    lines.append(f"  prices: {c['pricesAsOf']}; override with pathways:prices. {c['note']}")
    return lines
