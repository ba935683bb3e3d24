"""The one composition root: stack config -> validated model -> components -> stack outputs."""

from __future__ import annotations

import functools
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.constants import INTERNET_TOKENS_LABEL, PROTECTED_LABEL, SYSTEM_ROLE
from components.dependencies import Dependency
from components.gcp.checkpoint_backups import CheckpointBackups, CheckpointBackupsArgs
from components.gcp.cluster import GkeCluster, GkeClusterArgs
from components.gcp.future_reservations import CalendarReservation, CalendarReservationArgs
from components.gcp.gateway_armor import GatewayArmor, GatewayArmorArgs
from components.gcp.head_pool import HeadPool, HeadPoolArgs
from components.gcp.model_weights import ModelWeightsReader, ModelWeightsReaderArgs
from components.gcp.network import PODS_RANGE, SERVICES_RANGE, PathwaysNetwork, PathwaysNetworkArgs
from components.gcp.node_identity import NodeServiceAccount
from components.gcp.node_pool_lanes import NodePoolLanes
from components.gcp.observability import Observability, ObservabilityArgs
from components.gcp.pathways_firewall import PathwaysFirewall, PathwaysFirewallArgs
from components.gcp.proxy_pool import ProxyPool, ProxyPoolArgs
from components.gcp.scratch_bucket import ScratchBucket, ScratchBucketArgs
from components.gcp.tpu_slices import TpuSliceGroup, TpuSliceGroupArgs
from components.kubernetes.checkpointing import CheckpointConfigurations, CheckpointConfigurationsArgs
from components.kubernetes.guardrails import ClusterGuardrails, ClusterGuardrailsArgs
from components.kubernetes.jobset_controller import JobSetController, JobSetControllerArgs
from components.kubernetes.kueue import Kueue, KueueArgs
from components.kubernetes.lws_controller import LeaderWorkerSetController, LeaderWorkerSetControllerArgs
from components.kubernetes.metrics_adapter import CustomMetricsAdapter, CustomMetricsAdapterArgs
from components.kubernetes.pathways_workload import PathwaysWorkload, PathwaysWorkloadArgs
from components.kubernetes.run_access import RunAccess, RunAccessArgs
from components.kubernetes.serving_workload import GatewayArgs, ServingWorkload, ServingWorkloadArgs
from components.kubernetes.shared_service_access import SharedServiceAccess, SharedServiceAccessArgs
from components.kubernetes.stack_labels import label_kubernetes_objects
from components.kubernetes.teams import Teams, TeamsArgs
from components.kubernetes.workload_storage import WorkloadStorage, WorkloadStorageArgs
from components.manifests import checkpointing as checkpointing_manifest
from components.manifests import connection, lws_direct, monitoring, placement, service_access
from components.manifests import inference_gateway as gateway_manifest
from components.manifests import jobset as jobset_manifest
from components.manifests import kueue as kueue_manifest
from components.manifests import lws as lws_manifest
from components.manifests import metrics_adapter as metrics_adapter_manifest
from components.manifests import runs as runs_manifest
from components.manifests import storage as storage_manifest
from components.manifests import teams as teams_manifest
from components.manifests import usage as usage_manifest
from components.manifests.controller_charts import FLEET_FRAMEWORKS, SERVE_FRAMEWORKS, STACK_FRAMEWORKS
from components.manifests.guardrails import workload_namespace_labels
from components.model.cluster.identities import ci_account_email
from components.model.config import StackConfig, resolve
from components.model.errors import ConfigError
from components.model.resolved import ResolvedStack
from components.model.workloads.inference_gateway import HEALTH_CHECK_RANGES, armor_policy_name
from components.model.workloads.ports import PATHWAYS_PORTS
from infra import fleet
from infra.config import PLANNED_AT, read_stack_config
from infra.errors import InvalidStackConfig
from infra.quota_read import judge_quota, live_reader
from infra.reservation_records import LIVE_READS, LiveReader, read_records

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def build(cfg: StackConfig) -> dict[str, object]:
    """Create every resource of the stack; return the stack outputs."""
    label_kubernetes_objects(cfg.default_labels)  # GCP resources: the provider's own gcp:defaultLabels
    if cfg.cluster.existing is not None:
        return existing_cluster(cfg)
    stack = resolve(cfg)  # every derived value, once; the builders below render it
    # --- GCP: network, identities, cluster and its firewall -----------------------------------
    net = cfg.network
    network = PathwaysNetwork("network", PathwaysNetworkArgs(
        project=cfg.project, region=cfg.region, name=cfg.cluster_name,
        nodes_cidr=net.nodes_cidr, pods_cidr=net.pods_cidr, services_cidr=net.services_cidr, mtu=net.mtu,
        existing_network=net.existing_network, existing_subnetwork=net.existing_subnetwork, cloud_nat=cfg.cloud_nat,
        proxy_only_cidr=net.proxy_only_cidr if cfg.creates_proxy_only_subnet else None,
    ))
    # Two identities: system nodes get no data access; Pathways nodes (head + TPU) get the bucket. The bootstrap
    # creates both accounts and their project roles (components/gcp/node_identity.py).
    system_sa = NodeServiceAccount(cfg.project, cfg.service_account_id("sys"))
    pathways_sa = NodeServiceAccount(cfg.project, cfg.service_account_id("nodes"))
    c = cfg.cluster
    protected_labels = dict([PROTECTED_LABEL]) if cfg.protected else {}
    # the cluster alone says it accepted tokens on its DNS endpoint (pathways-network-exposure reads it)
    acknowledged = dict([INTERNET_TOKENS_LABEL]) if cfg.fleet is not None and cfg.fleet.acknowledge_internet_tokens else {}
    cluster = GkeCluster("cluster", GkeClusterArgs(
        project=cfg.project, name=cfg.cluster_name, region=cfg.region, zone=cfg.zone, regional=c.regional,
        network=network.network, subnetwork=network.subnetwork, pods_range=PODS_RANGE, services_range=SERVICES_RANGE,
        release_channel=c.release_channel.value, min_master_version=c.min_master_version,
        deletion_protection=cfg.deletion_protection, protect=cfg.protected,
        node_service_account=system_sa.email, system_machine_type=c.system_pool.machine_type,
        system_min_nodes=c.system_pool.min_nodes, system_max_nodes=c.system_pool.max_nodes,
        private_nodes=c.private_nodes, public_endpoint=c.public_endpoint,
        maintenance_window=(c.maintenance.window.start_time, c.maintenance.window.end_time, c.maintenance.window.recurrence),
        maintenance_exclusions=tuple((e.name, e.start_time, e.end_time, e.scope) for e in c.maintenance.exclusions),
        monitoring_components=monitoring.MONITORING_COMPONENTS,
        master_authorized_networks=tuple((n.cidr_block, n.display_name) for n in c.master_authorized_networks),
        resource_labels={**protected_labels, **acknowledged}, gateway_api=bool(cfg.gateway_workloads), security_group=c.security_group,
        multi_tier_checkpointing=stack.mtc is not None, csi_drivers=stack.csi_drivers,
        slice_controller=any(g.dynamic for g in stack.slices),
        k8s_tokens_via_dns=stack.fleet is not None and stack.fleet.internet_tokens,
    ))
    # teams[].isolationDomain: each domain's own node identity and firewall pair (components/model/workloads/isolation.py)
    domain_sa = {d.name: NodeServiceAccount(cfg.project, d.node_account_id) for d in stack.domains}
    for d in stack.domains:
        PathwaysFirewall(f"isolation-{d.name}", PathwaysFirewallArgs(
            project=cfg.project, name=cfg.cluster_name, rules=f"iso-{d.name}", network=network.network,
            node_service_account=domain_sa[d.name].email, nodes=f"nodes of isolation domain {d.name}",
            ports=(*PATHWAYS_PORTS, *cfg.profiling_ports),
        ))
    PathwaysFirewall("pathways-ports", PathwaysFirewallArgs(
        project=cfg.project, name=cfg.cluster_name, network=network.network, node_service_account=pathways_sa.email,
        ports=(*PATHWAYS_PORTS, *cfg.profiling_ports), client_ranges=tuple(net.pathways_client_ranges),
        gateway_ranges=(net.proxy_only_cidr, *HEALTH_CHECK_RANGES) if cfg.gateway_workloads else (),
    ))
    # --- GCP: node pools (head, TPU slices), in lanes; reservations -------------------------------
    location = cfg.region if c.regional else cfg.zone
    serving_groups = {w.group.name for w in stack.serve_workloads}
    lanes = NodePoolLanes(c.node_pool_concurrency)
    lanes.add(cluster.system_pool)
    head = HeadPool("head-pool", HeadPoolArgs(
        project=cfg.project, cluster=cluster.name, location=location, zone=cfg.zone, regional=c.regional,
        machine_type=cfg.head_pool.machine_type, node_count=cfg.head_nodes, service_account=pathways_sa.email, lanes=lanes,
        scale_to_zero=cfg.head_pool.scale_to_zero and cfg.head_nodes > 0,
    ))

    def node_account_of(group: str) -> NodeServiceAccount:
        d = stack.group_domain(group)
        return domain_sa[d.name] if d else pathways_sa

    head_pools = {d.name: HeadPool(f"head-pool-{d.name}", HeadPoolArgs(
        project=cfg.project, cluster=cluster.name, location=location, zone=cfg.zone, regional=c.regional,
        machine_type=cfg.head_pool.machine_type, node_count=d.head_nodes, service_account=domain_sa[d.name].email, lanes=lanes,
        scale_to_zero=True, pool=d.head_pool, isolation=d.taint,
    )) for d in stack.domains}
    groups = {
        g.name: TpuSliceGroup(f"slices-{g.name}", TpuSliceGroupArgs(
            project=cfg.project, region=cfg.region, zone=cfg.zone, regional=c.regional, cluster=cluster.name,
            cluster_name=cfg.cluster_name, location=location, group=g.name, tpu=g.tpu, count=stack.group_pools(g), capacity=g.capacity,
            reservation=g.reservation, auto_upgrade=g.auto_upgrade,
            service_account=node_account_of(g.name).email, isolation=stack.isolation_taint(g.name),
            lanes=lanes, scale_to_zero=g.scale_to_zero, queued_provisioning=g.queued_provisioning, sub_blocks=tuple(g.sub_blocks),
            workload_metadata="GCE_METADATA" if g.name in serving_groups else "GKE_METADATA",
        ))
        for g in cfg.slices if stack.group_pools(g)
    }
    for g in cfg.slices:
        if g.future_reservation is not None and g.reservation is not None:
            CalendarReservation(f"future-reservation-{g.name}", CalendarReservationArgs(
                project=cfg.project, zone=cfg.zone, reservation=g.reservation, tpu=g.tpu, chips=g.pools * g.tpu.chips,
                request=g.future_reservation,
            ))
    # --- GCP: storage (model weights, scratch and artifacts buckets, checkpoint backups) and monitoring ---
    weights = tuple(dict.fromkeys(b for w in stack.serve_workloads if w.spec.serve and (b := w.spec.serve.weights_bucket)))
    weights_reader = ModelWeightsReader("model-weights", ModelWeightsReaderArgs(
        buckets=tuple(b for b in weights if b != cfg.bucket_name), member=pathways_sa.member,
    )) if weights else None
    b = cfg.bucket
    bucket = ScratchBucket("scratch", ScratchBucketArgs(
        project=cfg.project, region=cfg.region, name=cfg.bucket_name, artifacts_name=cfg.artifacts_bucket_name,
        cache_prefix=b.cache_prefix, artifacts_prefix=b.artifacts_prefix, artifacts_ttl_days=b.artifacts_ttl_days,
        soft_delete_days=b.soft_delete_days, scratch_role=cfg.scratch_role_name, members=(pathways_sa.member,),
        protect=cfg.protected, labels={"pathways-stack": cfg.stack_slug, **protected_labels},
    ))
    domain_buckets = {d.name: ScratchBucket(f"scratch-{d.name}", ScratchBucketArgs(
        project=cfg.project, region=cfg.region, name=d.bucket_name, artifacts_name=d.artifacts_bucket_name,
        cache_prefix=b.cache_prefix, artifacts_prefix=b.artifacts_prefix, artifacts_ttl_days=b.artifacts_ttl_days,
        soft_delete_days=b.soft_delete_days, scratch_role=cfg.scratch_role_name, members=(domain_sa[d.name].member,),
        protect=cfg.protected, labels={"pathways-stack": cfg.stack_slug, "pathways-isolation": d.name, **protected_labels},
    )) for d in stack.domains}
    backups = CheckpointBackups("checkpoint-backups", CheckpointBackupsArgs(
        project=cfg.project, region=cfg.region, bucket=stack.mtc.bucket, soft_delete_days=b.soft_delete_days,
        protect=cfg.protected, labels={"pathways-stack": cfg.stack_slug, **protected_labels},
    )) if stack.mtc else None
    observability = Observability("observability", ObservabilityArgs(
        project=cfg.project, dashboard=monitoring.dashboard(stack), alert_policies=monitoring.alert_policies(stack),
        notification_channels=list(cfg.monitoring.notification_channels),
    ))
    # --- Kubernetes: the provider, a shared service's proxy nodes, then the Kubernetes layer --------
    provider = k8s.Provider(
        "gke",
        kubeconfig=cluster.kubeconfig,
        # Stable identity: a refreshed kubeconfig (new token, rotated CA) must not replace every object.
        cluster_identifier=f"{cfg.project}/{location}/{cfg.cluster_name}",
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(depends_on=[cluster.system_pool]),
    )
    service = cfg.service_workload
    proxy_pool = None
    if service is not None:
        sv = service.service_settings
        proxy_pool = ProxyPool(f"service-{service.name}", ProxyPoolArgs(
            project=cfg.project, cluster=cluster.name, location=location, zone=cfg.zone, regional=c.regional,
            machine_type=sv.proxy_machine_type, nodes=sv.max_clients, service_account=pathways_sa.email, lanes=lanes,
        ))
    # The bucket and its grants too: the first compilation-cache write must not 403.
    # an external inference gateway's Cloud Armor policy (serve.gateway.clientRanges): made before its backend policy
    armor = {w.name: GatewayArmor(f"armor-{w.name}", GatewayArmorArgs(
        project=cfg.project, region=cfg.region, name=armor_policy_name(cfg.stack_slug, w.name),
        client_ranges=tuple(w.spec.serve.gateway.client_ranges))) for w in stack.serve_workloads
        if w.spec.serve is not None and w.spec.serve.gateway.enabled and w.spec.serve.gateway.client_ranges}
    k8s_outputs = kubernetes_layer(cfg, stack, provider, armor=armor, waits_per_group={
        name: (head_pools[d.name], group, domain_buckets[d.name]) if (d := stack.group_domain(name)) else
        (head, group, bucket, *((proxy_pool,) if proxy_pool else ()), *((weights_reader,) if weights_reader else ()))
        for name, group in groups.items()}, checkpoint_backups=(backups,) if backups else (),
        fleet_endpoint=fleet_endpoint(stack, cluster))
    return {
        "clusterName": cluster.name,
        "clusterLocation": cluster.location,
        "clusterEndpoint": cluster.endpoint,
        # kubectl access through the control plane's DNS endpoint (no bastion, no public IP needed)
        "getCredentials": (f"gcloud container clusters get-credentials {cfg.cluster_name} --location {location} "
                           f"--project {cfg.project} --dns-endpoint"),
        "kubeconfig": cluster.kubeconfig,
        "bucketUrl": bucket.url,
        "cacheLocation": bucket.cache_location,
        "artifactsLocation": bucket.artifacts_location,
        "nodeServiceAccounts": {"pathways": pathways_sa.email, "system": system_sa.email},
        "headPool": head.pool_name,
        # teams[].isolationDomain: what each domain has of its own
        "isolationDomains": {d.name: {
            "teams": list(d.teams), "nodeServiceAccount": domain_sa[d.name].email, "headPool": head_pools[d.name].pool_name,
            "slicePools": {g: groups[g].pool_names for g in d.groups if g in groups},
            "cacheLocation": domain_buckets[d.name].cache_location, "artifactsLocation": domain_buckets[d.name].artifacts_location,
        } for d in stack.domains},
        "slicePools": {name: g.pool_names for name, g in groups.items()},
        "sliceGroups": {g.name: {
            "tpu": g.tpu.name, "accelerator": g.tpu.accelerator, "topology": g.tpu.topology,
            "machineType": g.tpu.machine_type, "chipsPerVm": g.tpu.chips_per_vm, "hosts": g.tpu.hosts,
            "slices": g.count, "spares": g.spares, "capacity": g.capacity.value,
        } for g in cfg.slices},
        "links": observability.dashboard_id.apply(lambda d: monitoring.console_links(stack, d)),
        **k8s_outputs,
    }


def fleet_endpoint(stack: ResolvedStack, cluster: GkeCluster) -> Optional[tuple[pulumi.Output[str], pulumi.Output[str]]]:
    """Where a fleet worker's manager reaches its control plane, and the CA it trusts there: the private IP endpoint
    and the cluster's CA (fleet.privateEndpoint), or the DNS endpoint (a publicly trusted certificate: no CA)."""
    if stack.fleet is None:
        return None
    if stack.fleet.private_endpoint:
        return cluster.private_endpoint.apply(lambda ip: f"https://{ip}"), cluster.ca_certificate
    return cluster.endpoint.apply(lambda e: f"https://{e}"), pulumi.Output.from_input("")


def kubernetes_layer(cfg: StackConfig, stack: ResolvedStack, provider: k8s.Provider,
                     waits_per_group: dict[str, tuple[pulumi.Resource, ...]],
                     checkpoint_backups: tuple[pulumi.Resource, ...] = (),
                     armor: Optional[Mapping[str, pulumi.Resource]] = None,
                     fleet_endpoint: Optional[tuple[pulumi.Input[str], pulumi.Input[str]]] = None) -> dict[str, object]:
    """The controllers, namespaces, guardrails, queues and workloads, on a cluster the stack made or one made
    elsewhere (pathways:cluster.existing). `waits_per_group`: what a slice group's workloads wait for besides
    the Kubernetes objects (its pools, the head pool, the bucket grants). `fleet_endpoint`: a fleet worker's API
    server URL and CA (base64 PEM; empty for a publicly trusted certificate), as its manager reaches it."""
    k8s_opts = pulumi.ResourceOptions(provider=provider)
    kube = cfg.kubernetes
    # the Kueue builder, entered once: its objects and the quotas they write
    kueue_objects = kueue_manifest.objects(stack) if kube.kueue.enabled else []
    kueue_quotas = kueue_manifest.quota_quantities(stack) if kube.kueue.enabled else {}
    # --- controllers, namespace, guardrails, access --------------------------------------------
    controllers: tuple[Dependency, ...] = ()
    if kube.install_controllers:
        controllers = (JobSetController("jobset", JobSetControllerArgs(
            version=kube.jobset_version, chart=kube.jobset_chart, system_role=SYSTEM_ROLE, mtc=stack.mtc is not None),
            opts=k8s_opts).ready,)
    serving_controllers: tuple[Dependency, ...] = ()
    if kube.install_controllers and any(w.mode == "serve" for w in cfg.workloads):
        serving_controllers = (LeaderWorkerSetController("lws", LeaderWorkerSetControllerArgs(
            version=kube.lws_version, chart=kube.lws_chart, system_role=SYSTEM_ROLE), opts=k8s_opts).ready,)
    # The namespaces runs and workloads live in: after the ClusterQueues that admit their workloads, so that Pulumi
    # deletes them first. Removing a team, or destroying the stack, with runs still in a namespace then deletes the
    # namespace (and the runs with it) before the ClusterQueue, whose deletion Kueue holds while it has workloads
    # (finalizer kueue.x-k8s.io/resource-in-use): in the other order the queue's delete waited out its timeout.
    teams: Optional[Teams] = None

    def make_namespaces(after: Sequence[pulumi.Resource]) -> list[pulumi.Resource]:
        nonlocal teams
        made = k8s.core.v1.Namespace(
            "workloads", metadata=k8s.meta.v1.ObjectMetaArgs(name=kube.namespace, labels=workload_namespace_labels()),
            opts=pulumi.ResourceOptions(provider=provider, depends_on=list(after)))
        # pathways:teams: each team's namespace and its submitters' access there (its queues are Kueue's)
        teams = Teams("teams", TeamsArgs(namespaces=tuple(teams_manifest.namespaces(stack)), access=tuple(teams_manifest.access(stack)),
                                         usage=tuple(usage_manifest.objects(stack, SYSTEM_ROLE)) if kube.kueue.enabled else (),
                                         after=tuple(after)), opts=k8s_opts) if stack.teams else None
        return [made, *(teams.namespaces if teams else ())]

    # Kueue: the stack's queues, flavors and priorities (the namespaces between its cluster-wide objects and its
    # LocalQueues); a fleet's part in it (pathways:fleet, infra/fleet.py) joins here, a manager's MultiKueue objects
    # among the Kueue objects and a worker's identity for its manager below, after the runs' access
    queues: tuple[Dependency, ...] = ()
    membership: Optional[fleet.Fleet] = None
    if kube.kueue.enabled:
        membership = fleet.Fleet(stack.fleet, provider, fleet_endpoint) if stack.fleet is not None else None
        kueue = Kueue("kueue", KueueArgs(
            version=kube.kueue.version, chart=kube.kueue.chart if kube.install_controllers else None,
            system_role=SYSTEM_ROLE, objects=membership.kueue_objects(kueue_objects) if membership else kueue_objects,
            frameworks=FLEET_FRAMEWORKS if membership else SERVE_FRAMEWORKS if stack.serve_workloads else STACK_FRAMEWORKS,
            fair_sharing=bool(stack.teams), workload_namespaces=tuple(stack.workload_namespaces), namespaces=make_namespaces,
        ), opts=pulumi.ResourceOptions(provider=provider))
        queues = tuple(kueue.ready)
        namespaces = tuple(kueue.namespaces)
    else:
        namespaces = tuple(make_namespaces(()))
    namespace = namespaces[0]
    service = cfg.service_workload
    guardrails = ClusterGuardrails("guardrails", ClusterGuardrailsArgs(
        workload_namespace=kube.namespace, extra_namespaces=tuple(stack.workload_namespaces[1:]),
        proxy_namespace=service.service_settings.namespace if service else None,
        proxy_clients=tuple((c.kind, c.name) for c in service.service_settings.clients) if service else (),
        guards=stack.guards.enabled, exempt_namespaces=tuple(stack.guards.exempt_namespaces), domains=stack.domains,
        node_pools=placement.named_pools(stack),
        # the bootstrap's CI preview identity, on clusters the stack makes (GKE authenticates it by its email)
        ci_preview_user=ci_account_email(cfg.stack, "preview", cfg.project) if cfg.cluster.existing is None else None,
    ), opts=k8s_opts)
    if service is not None:
        SharedServiceAccess(f"service-{service.name}", SharedServiceAccessArgs(
            role=service_access.role(service), role_binding=service_access.role_binding(service),
            namespace_labels=workload_namespace_labels(),
        ), opts=pulumi.ResourceOptions(provider=provider, depends_on=[namespace]))
    # runs.submitters' access, and on a fleet worker the policy that keeps its manager's token to runs (before the
    # token exists: the fleet block below waits for it)
    run_objects = [*runs_manifest.submitter_access(stack), *runs_manifest.fleet_dispatch_policy(stack)]
    run_access = [RunAccess("runs", RunAccessArgs(objects=tuple(run_objects)),
                            opts=pulumi.ResourceOptions(provider=provider, depends_on=[namespace]))] if run_objects else []
    fleet_output: Optional[dict[str, Any]] = None
    if membership is not None:
        fleet_output = membership.output([*queues, *run_access], kueue_quotas, kube.namespace)
    # --- what workloads need before they start: metrics adapter, checkpointing, storage ------------
    metrics: tuple[Dependency, ...] = ()
    if kube.install_metrics_adapter and stack.autoscaled_workloads:
        metrics = tuple(CustomMetricsAdapter("metrics-adapter", CustomMetricsAdapterArgs(
            objects=metrics_adapter_manifest.objects(SYSTEM_ROLE, stack.metrics_adapter_certificate_generation),
            seed=metrics_adapter_manifest.seed_objects(stack.metrics_adapter_certificate_generation),
            derive=metrics_adapter_manifest.serving_tls_of,
            serving_secret=functools.partial(metrics_adapter_manifest.serving_secret, stack.metrics_adapter_certificate_generation),
            api_services=metrics_adapter_manifest.api_services, now=cfg.planned_at,
            after=(namespace, guardrails, *controllers, *serving_controllers, *queues)), opts=k8s_opts).ready)
    # resilience.mtc: the RAM disks' configurations before any workload that mounts one
    checkpointing: tuple[Dependency, ...] = ()
    if stack.mtc is not None:
        checkpointing = tuple(CheckpointConfigurations("checkpointing", CheckpointConfigurationsArgs(
            objects=checkpointing_manifest.checkpoint_configurations(stack), after=checkpoint_backups), opts=k8s_opts).ready)
    # mounts: the pods' service accounts and the file systems' volumes and claims, before any workload
    storage_objects = (*storage_manifest.service_accounts(stack), *storage_manifest.file_system_objects(stack))
    storage: tuple[Dependency, ...] = ()
    if storage_objects:
        storage = tuple(WorkloadStorage("storage", WorkloadStorageArgs(objects=storage_objects),
                                        opts=pulumi.ResourceOptions(provider=provider, depends_on=[namespace])).ready)
    # --- workloads: serving (LeaderWorkerSets), then JobSets -----------------------------------------
    interactive: dict[str, object] = {}
    services: dict[str, object] = {}
    serving: dict[str, object] = {}
    for w in stack.serve_workloads:
        ServingWorkload(f"serve-{w.name}", ServingWorkloadArgs(
            workload=w.name, leader_worker_sets=tuple(lws_direct.leader_worker_sets(stack, w)),
            service=lws_direct.http_service(w), role_services=tuple(lws_direct.role_services(w)),
            network_policy=lws_direct.network_policy(w),
            autoscaler=lws_manifest.autoscaler(w) if w.spec.serve and w.spec.serve.autoscale else None,
            autoscaler_depends_on=metrics,
            pod_monitoring=lws_manifest.pod_monitoring(w) if w.spec.serve and w.spec.serve.autoscale else None,
            gateway=GatewayArgs(
                chart=kube.inference_pool_chart, version=kube.inference_pool_version,
                chart_values=gateway_manifest.chart_values(w, kube.inference_pool_version, SYSTEM_ROLE),
                gateway=gateway_manifest.gateway(w), http_route=gateway_manifest.http_route(w),
                backend_policies=tuple(gateway_manifest.backend_policies(w, armor_policy_name(cfg.stack_slug, w.name)))
                if w.spec.serve.gateway.client_ranges else (),
                armor=((armor or {})[w.name],) if w.name in (armor or {}) else (),
            ) if w.spec.serve and w.spec.serve.gateway.enabled else None,
            depends_on=(*serving_controllers, *namespaces, guardrails.priority_classes[f"pathways-{w.priority}"],
                        *waits_per_group.get(w.group.name, ()), *queues),
        ), opts=k8s_opts)
        access = lws_direct.serving_access(w)
        if w.spec.serve and w.spec.serve.gateway.enabled:
            access |= gateway_manifest.gateway_access(w)
        serving[w.name] = access
    # A pool set's JobSets one after another, in the stack file's order: Kueue admits equal priorities in the order
    # their Workloads were made (BestEffortFIFO by creation time), which its JobSet integration makes in the order the
    # JobSets arrive (one reconciler: the Configuration gives JobSet no groupKindConcurrency of its own), so each
    # workload gets the cubes the plan placed it on (components/model/capacity/slice_placement.py), not a race's.
    previous_on_pool_set: dict[str, PathwaysWorkload] = {}
    for w in stack.jobset_workloads:
        before = previous_on_pool_set.get(w.group.name)
        workload = PathwaysWorkload(f"workload-{w.name}", PathwaysWorkloadArgs(
            manifest=jobset_manifest.jobset(stack, w), profiling_secret=w.profiling_secret,
            env_secret=w.env_secret, env=dict(w.spec.env),
            depends_on=(*controllers, *namespaces, guardrails.priority_classes[f"pathways-{w.priority}"],
                        *waits_per_group.get(w.group.name, ()), *queues, *(checkpointing if w.mtc_mount_path else ()),
                        *(storage if w.spec.mounts else ()), *((before.jobset,) if before is not None else ())),
        ), opts=k8s_opts)
        if w.group.dynamic:
            previous_on_pool_set[w.group.name] = workload
        if w.mode == "interactive":
            interactive[w.name] = connection.interactive_access(w, cfg.stack)
        if w.mode == "service":
            services[w.name] = connection.service_access(stack, w)
    return {
        "kueue": {
            "localQueues": {w.name: f"{w.namespace}/{w.local_queue}" for w in stack.active_workloads},
            "clusterQueues": [name for name, _ in stack.queue_shards],
            # a shared ClusterQueue's quota is its owner's, not what the stack's slice groups would give
            "quotas": kueue_quotas if stack.shared_cluster_queue is None else None,
        } if kube.kueue.enabled else None,
        "workloadNamespace": kube.namespace,
        "runs": runs_manifest.runs_output(stack),
        "interactive": interactive,
        "services": services,
        "serving": serving,
        # what the program needs to use it (MaxText: local_checkpoint_directory; the backups' bucket)
        "multiTierCheckpointing": {"localCheckpointDirectory": stack.mtc.mount_path, "bucket": stack.mtc.bucket} if stack.mtc else None,
        "storage": storage_manifest.storage_output(stack),
        # pathways:fleet: a worker's endpoint, CA, token (secret), versions, queues and quotas for its manager; a
        # manager's workers as it read them
        "fleet": fleet_output,
    }


def existing_cluster(cfg: StackConfig) -> dict[str, object]:
    """pathways:cluster.existing: only the Kubernetes layer, onto a cluster made elsewhere."""
    existing = cfg.cluster.existing
    assert existing is not None
    path = Path(existing.kubeconfig).expanduser()
    if not path.is_absolute():
        path = PROJECT_ROOT / path
    provider = k8s.Provider(
        "existing",
        kubeconfig=str(path),
        context=existing.context,
        # Stable identity: a rewritten kubeconfig (new token) must not replace every object.
        cluster_identifier=f"existing/{cfg.cluster_name}",
        enable_server_side_apply=True,
    )
    stack = resolve(cfg)
    fleet_endpoint = None
    if stack.fleet is not None and stack.fleet.worker and stack.fleet.endpoint is not None:
        fleet_endpoint = (stack.fleet.endpoint, fleet.existing_cluster_ca(path, existing.context))
    return {"clusterName": cfg.cluster_name, "cacheLocation": cfg.cache_location,
            # what the cluster's pools must be for the workloads to land (docs/existing-cluster.md)
            "clusterPools": placement.cluster_pools(stack),
            **kubernetes_layer(cfg, stack, provider, {}, fleet_endpoint=fleet_endpoint)}


def main() -> None:
    # the plan's one clock: the offline engine's input, else (`pulumi up`) the wall clock, read once here
    now = PLANNED_AT.get() or datetime.now(timezone.utc)
    try:
        cfg = read_stack_config(now)
        # a recorded or live-read reservation that cannot hold its group fails here, before any resource
        read_records(cfg, live=LiveReader(cfg) if LIVE_READS.get() else None)
        # and, with readQuota, the regional TPU quota the slice groups need (components/model/capacity/quota.py)
        for notice in judge_quota(cfg, live_reader(cfg) if LIVE_READS.get() else None):
            pulumi.log.warn(notice)
    except ConfigError as e:
        raise InvalidStackConfig(e) from None
    for name, value in build(cfg).items():
        pulumi.export(name, value)
