"""`python -m infra.offline preflight`: what in the real project would stop the first `pulumi up`, read before
anything is created, read-only (docs/deploying.md, "Preflight").

    python -m infra.offline preflight --stack S --live          # gcloud, as the stack's preview identity
    python -m infra.offline preflight --stack S --recorded DIR  # the same reads, from files (tests, a CI artifact)

Each read is one `gcloud ... --format=json` (the API's own resource JSON); `--recorded DIR` takes each from
DIR/<name>.json instead (the names: READS). What is judged, each failure one line with its fix:

- apis:          the services the stack's resources and CI need are enabled (serviceusage Service.state);
- quota:         TPU chips per family and kind (components/model/capacity/quota.py's IDs, flex-start falling back to
                 on-demand, -1 unlimited) and the CPUs of the head, system and proxy pools (CPUS and N2-CPUS);
- reservations:  each slice group's reservation exists in the zone, READY, of its machine type, with free VMs,
                 shared with the project (the plan's own rule on a live read: infra/reservation_records.py);
- machine types: every machine type the pools use is offered in the zone (compute machineTypes.list);
- versions:      the version the release channel creates the cluster at, or cluster.minMasterVersion, is offered and
                 meets the TPU families' floors (container getServerConfig: channels[].defaultVersion, validVersions);
- org policies:  constraints that refuse what the stack creates (gcp.resourceLocations, compute.restrictCloudNATUsage,
                 compute.restrictNonConfidentialComputing), from the project's effective policies;
- network:       an existing subnet's node range and its pods and services ranges hold the stack at its largest
                 (components/model/cluster/address_space.py), as a created one's are checked offline.
Exit status: 0 nothing stops the deploy (notices aside); 3 something does (listed); 2 invalid input."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from components.model.capacity import quota
from components.model.cluster import address_space
from components.model.cluster.cluster import CHANNEL_DEFAULT_MINOR, gke_version_key, meets_gke_floor
from components.model.config import StackConfig
from components.model.errors import ConfigError

EXIT_STOPS = 3
# Each read (its recorded file's name, or prefix) -> the gcloud command and the permission its REST reference names;
# the bootstrap grants the preview identity exactly these (identities.PREFLIGHT_PERMISSIONS).
PREFLIGHT_READS = {
    "services": ("gcloud services list --enabled", "serviceusage.services.list"),
    "quota-<ID>": ("gcloud beta quotas info describe <ID>", "cloudquotas.quotas.get"),
    "reservation-<name>": ("gcloud compute reservations describe", "compute.reservations.get"),
    "block-<name>": ("gcloud compute reservations blocks describe", "compute.reservationBlocks.get"),
    "sub-block-<name>": ("gcloud compute reservations sub-blocks describe", "compute.reservationSubBlocks.get"),
    "machine-types": ("gcloud compute machine-types list --zones", "compute.machineTypes.list"),
    "server-config": ("gcloud container get-server-config", "container.clusters.list"),
    "org-policy-<constraint>": ("gcloud org-policies describe <constraint> --effective", "orgpolicy.policy.get"),
    "subnetwork": ("gcloud compute networks subnets describe", "compute.subnetworks.get"),
}


@dataclass(frozen=True)
class Finding:
    check: str
    message: str
    stops: bool = True
    """False for a notice: something to know that does not stop the deploy."""

    def __str__(self) -> str:
        return f"{'STOP' if self.stops else 'note'} {self.check}: {self.message}"


Read = Callable[[str, list[str]], Any]
"""(name, gcloud argv) -> the parsed JSON, or raises ReadError."""


class ReadError(Exception):
    pass


def live_reader(project: str) -> Read:
    def read(name: str, argv: list[str]) -> Any:
        proc = subprocess.run(["gcloud", *argv, f"--project={project}", "--format=json"], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise ReadError(" ".join(proc.stderr.split())[:300] or f"gcloud exited {proc.returncode}")
        return json.loads(proc.stdout or "null")
    return read


def recorded_reader(directory: Path) -> Read:
    def read(name: str, argv: list[str]) -> Any:
        path = directory / f"{name}.json"
        if not path.is_file():
            raise ReadError(f"{path} not recorded (record it with: gcloud {' '.join(argv)} --format=json > {path})")
        return json.loads(path.read_text())
    return read


def _first(items: list[Any]) -> Any:
    return items[0] if items else None


@dataclass
class Preflight:
    cfg: StackConfig
    types: set[str]
    """The resource types the stack registers (its plan): which APIs it needs."""
    read: Read
    findings: list[Finding] = field(default_factory=list)

    def _get(self, check: str, name: str, argv: list[str], needs: str) -> Any:
        try:
            return self.read(name, argv)
        except ReadError as e:
            self.findings.append(Finding(check, f"cannot read ({e}); the preview identity needs {needs} (the bootstrap's "
                                                f"preflight role has it)"))
            return None

    # --- the checks ---------------------------------------------------------------------------------------------

    def apis(self) -> None:
        from components.model.cluster import identities

        wanted = identities.required_apis(self.types, read_quota=self.cfg.read_quota)
        services = self._get("apis", "services", ["services", "list", "--enabled"], "serviceusage.services.list")
        if services is None:
            return
        enabled = {s.get("config", {}).get("name") or str(s.get("name", "")).rsplit("/", 1)[-1] for s in services
                   if s.get("state", "ENABLED") == "ENABLED"}
        missing = [a for a in wanted if a not in enabled]
        if missing:
            self.findings.append(Finding("apis", f"{', '.join(missing)} not enabled in {self.cfg.project}: gcloud services enable "
                                                 f"{' '.join(missing)} --project={self.cfg.project} (or run the bootstrap)"))

    def tpu_quota(self) -> None:
        from components.model.config import resolve

        stack = resolve(self.cfg)
        needed = quota.needs(stack.slices, stack.group_pools)
        flex = quota.flex_start_chips(stack.slices, stack.group_pools)
        ids = {n.quota_id: n.dimension for n in needed} | {quota.QUOTA_IDS[(f, "on-demand")][0]: quota.QUOTA_IDS[(f, "on-demand")][1] for f in flex}
        limits: dict[str, Optional[float]] = {}
        for quota_id, dimension in ids.items():
            info = self._get("quota", f"quota-{quota_id}", ["beta", "quotas", "info", "describe", quota_id, f"--service={quota.SERVICE}"],
                             "cloudquotas.quotas.get")
            limits[quota_id] = quota.limit_in(info, self.cfg.region, dimension) if info is not None else None
        self.findings += [Finding("quota", p.message) for p in quota.quota_problems(needed, limits, self.cfg.region, flex)]

    def cpu_quota(self) -> None:
        from components.model.capacity import machines

        pools = [(self.cfg.head_pool.machine_type, self.cfg.head_nodes), (self.cfg.cluster.system_pool.machine_type,
                 self.cfg.cluster.system_pool.max_nodes)]
        if self.cfg.proxy_nodes:
            s = self.cfg.service_workload
            assert s is not None
            pools.append((s.service_settings.proxy_machine_type, self.cfg.proxy_nodes))
        by_id = quota.cpu_quota_needs(pools, lambda m: machines.shape(m).vcpus)
        for quota_id, cpus in by_id.items():
            info = self._get("quota", f"quota-{quota_id}", ["beta", "quotas", "info", "describe", quota_id, "--service=compute.googleapis.com"],
                             "cloudquotas.quotas.get")
            limit = quota.limit_in(info, self.cfg.region, None) if info is not None else None
            if limit is not None and limit < cpus:
                self.findings.append(Finding("quota", f"the head, system and proxy pools need {cpus} vCPUs in {self.cfg.region} at "
                                                      f"their largest, and {quota_id} allows {limit:g}: request more or shrink the pools"))

    def reservations(self) -> None:
        from infra.reservation_records import read_records

        read = self.read

        class Reader:
            def reservation(self, path: Any) -> Any:
                return read(f"reservation-{path.name}", ["compute", "reservations", "describe", path.name, f"--zone={zone}"])

            def block(self, path: Any) -> Any:
                kind = "sub-blocks" if path.sub_block else "blocks"
                flags = [f"--block-name={path.block}", *([f"--sub-block-name={path.sub_block}"] if path.sub_block else [])]
                return read(f"{kind[:-1]}-{path.sub_block or path.block}", ["compute", "reservations", kind, "describe", path.name, *flags, f"--zone={zone}"])

        zone = self.cfg.zone
        groups = [g.model_copy(update={"read_reservation": True, "reservation_record": None, "reservation_block_record": None})
                  if g.reservation and g.future_reservation is None else g for g in self.cfg.slices]
        try:
            read_records(self.cfg.model_copy(update={"slices": groups}), live=Reader())  # type: ignore[arg-type]
        except ConfigError as e:
            self.findings += [Finding("reservations", f"{p.key}: {p.message}") for p in e.problems]

    def machine_types(self) -> None:
        wanted = {g.tpu.machine_type for g in self.cfg.slices} | {self.cfg.cluster.system_pool.machine_type}
        if self.cfg.head_nodes:
            wanted.add(self.cfg.head_pool.machine_type)
        offered = self._get("machine types", "machine-types", ["compute", "machine-types", "list", f"--zones={self.cfg.zone}"],
                            "compute.machineTypes.list")
        if offered is None:
            return
        names = {m.get("name") for m in offered}
        missing = sorted(wanted - names)
        if missing:
            self.findings.append(Finding("machine types", f"{', '.join(missing)} not offered in {self.cfg.zone} to {self.cfg.project}: "
                                                          "move gcp:zone to one that offers them (docs/capacity.md, TPU zones)"))

    def versions(self) -> None:
        c = self.cfg.cluster
        location = self.cfg.region if c.regional else self.cfg.zone
        config = self._get("versions", "server-config", ["container", "get-server-config", f"--location={location}"],
                           "container.clusters.list")
        if config is None:
            return
        channel = next((ch for ch in config.get("channels") or [] if ch.get("channel") == c.release_channel.value), None)
        if channel is None:
            self.findings.append(Finding("versions", f"{location} offers no {c.release_channel.value} channel "
                                                     f"({', '.join(ch.get('channel', '?') for ch in config.get('channels') or [])})"))
            return
        valid = list(channel.get("validVersions") or [])
        if c.min_master_version:
            offered = [v for v in valid if v == c.min_master_version or v.startswith(c.min_master_version + ".")
                       or v.startswith(c.min_master_version + "-")]
            if not offered:
                self.findings.append(Finding("versions", f"cluster.minMasterVersion {c.min_master_version} is not offered by the "
                                                         f"{c.release_channel.value} channel in {location} (newest: "
                                                         f"{', '.join(valid[:3])}): pick one of those, or remove it"))
                return
            created = max(offered, key=gke_version_key)
        else:
            created = str(channel.get("defaultVersion") or "")
        floor = self.cfg.required_gke_version
        if created and floor and not meets_gke_floor(created, floor):
            newer = [v for v in valid if meets_gke_floor(v, floor)]
            fix = (f"set cluster.minMasterVersion: {newer[0]}" if newer else "use the RAPID channel, which offers newer versions")
            self.findings.append(Finding("versions", f"the {c.release_channel.value} channel creates the cluster at {created}, below "
                                                     f"{floor} ({'; '.join(f'{w} needs {v}' for w, v in self.cfg.gke_version_needs.items())}): {fix}"))
        if not c.min_master_version and created and not created.startswith(CHANNEL_DEFAULT_MINOR[c.release_channel.value] + "."):
            self.findings.append(Finding("versions", f"the {c.release_channel.value} channel's default is {created}; the plan's "
                                                     f"maintenance checks assumed {CHANNEL_DEFAULT_MINOR[c.release_channel.value]}", stops=False))

    def org_policies(self) -> None:
        checks = {
            "gcp.resourceLocations": (lambda allowed, denied: _location_allowed(allowed, denied, self.cfg.region, self.cfg.zone),
                                      f"the stack's region {self.cfg.region} and zone {self.cfg.zone}"),
            "compute.restrictNonConfidentialComputing": (lambda allowed, denied: "compute.googleapis.com" not in denied,
                                                         "TPU and head VMs, which cannot be Confidential VMs"),
            "compute.restrictCloudNATUsage": (lambda allowed, denied: not self.cfg.network.create or self.cfg.network.cloud_nat is False
                                              or not (allowed or denied) or bool(allowed), "the stack's Cloud NAT"),
        }
        for constraint, (ok, what) in checks.items():
            policy = self._get("org policies", f"org-policy-{constraint}", ["org-policies", "describe", constraint, "--effective"],
                               "orgpolicy.policy.get")
            if policy is None:
                continue
            rules = (policy.get("spec") or {}).get("rules") or []
            if any(r.get("denyAll") for r in rules):
                allowed, denied = [], ["*", "compute.googleapis.com"]
                verdict = False
            else:
                allowed = [v for r in rules for v in (r.get("values") or {}).get("allowedValues") or []]
                denied = [v for r in rules for v in (r.get("values") or {}).get("deniedValues") or []]
                verdict = True if any(r.get("allowAll") for r in rules) and not denied else ok(allowed, denied)
            if verdict is False:
                self.findings.append(Finding("org policies", f"constraints/{constraint} refuses {what} (allowed: {', '.join(allowed) or '-'}; "
                                                             f"denied: {', '.join(denied) or '-'}): ask the organization's admins for an "
                                                             "exception on this project, or deploy where it allows them"))
            elif verdict is None:
                self.findings.append(Finding("org policies", f"constraints/{constraint} names value groups this check cannot expand "
                                                             f"({', '.join(allowed)}); confirm it allows {what}", stops=False))

    def network(self) -> None:
        n = self.cfg.network
        if n.create or self.cfg.cluster.existing is not None:
            return  # a created subnet's ranges are the plan's own check
        assert n.existing_subnetwork is not None
        name = n.existing_subnetwork.rsplit("/", 1)[-1]
        subnet = self._get("network", "subnetwork", ["compute", "networks", "subnets", "describe", name, f"--region={self.cfg.region}"],
                           "compute.subnetworks.get")
        if subnet is None:
            return
        ranges = {r.get("rangeName"): r.get("ipCidrRange") for r in subnet.get("secondaryIpRanges") or []}
        for wanted in ("pods", "services"):
            if wanted not in ranges:
                self.findings.append(Finding("network", f"{name} has no secondary range {wanted!r} (it has: {', '.join(ranges) or 'none'}); "
                                                        "add it: gcloud compute networks subnets update ... --add-secondary-ranges"))
        need = address_space.need(address_space.stack_pools(self.cfg))
        if subnet.get("ipCidrRange") and need.nodes > address_space.primary_capacity(subnet["ipCidrRange"]):
            self.findings.append(Finding("network", f"{name}'s range {subnet['ipCidrRange']} holds "
                                                    f"{address_space.primary_capacity(subnet['ipCidrRange'])} nodes; the stack's pools reach "
                                                    f"{need.nodes}: expand it (gcloud compute networks subnets expand-ip-range)"))
        pods = ranges.get("pods")
        if pods and need.pod_addresses > address_space.range_capacity(pods):
            self.findings.append(Finding("network", f"{name}'s pods range {pods} holds {address_space.range_capacity(pods):,} pod addresses; "
                                                    f"the stack's nodes take {need.pod_addresses:,}: give it a /"
                                                    f"{address_space.smallest_prefix(need.pod_addresses)} or larger"))

    def run(self) -> list[Finding]:
        for check in (self.apis, self.tpu_quota, self.cpu_quota, self.reservations, self.machine_types, self.versions,
                      self.org_policies, self.network):
            check()
        return self.findings


def _location_allowed(allowed: list[str], denied: list[str], region: str, zone: str) -> Optional[bool]:
    """gcp.resourceLocations: True / False, or None when only value groups (in:...) decide it. A value is a location
    (us-central1, zones/us-central1-a), or a group `in:<name>` (in:us-locations, in:us-central1-locations)."""
    mine = {region, zone, f"zones/{zone}", f"regions/{region}", f"in:{region}-locations", f"in:{zone}-locations"}
    if any(d in mine for d in denied):
        return False
    if not allowed:
        return True
    if any(a in mine for a in allowed):
        return True
    groups = [a.removeprefix("in:").removesuffix("-locations") for a in allowed if a.startswith("in:")]
    prefix = region.split("-", 1)[0]  # us-east5 -> in:us-locations; europe-west4 -> in:europe-locations
    if prefix in groups:
        return True
    # continental groups that are not the region's own refuse it; any other group (a region's, a named set) is
    # beyond what this check expands
    return False if groups and all(g in _CONTINENTS for g in groups) else None if groups else False


_CONTINENTS = {"us", "europe", "eu", "asia", "northamerica", "southamerica", "australia", "me", "africa"}


def text(findings: list[Finding], stack: str) -> str:
    stops = [f for f in findings if f.stops]
    lines = [f"Preflight of stack {stack!r} (read-only)", ""]
    lines += [f"  {f}" for f in findings] or ["  nothing found"]
    lines += ["", f"Verdict: {'STOP - ' + str(len(stops)) + ' finding(s) would stop pulumi up' if stops else 'OK - nothing found stops pulumi up'}"]
    return "\n".join(lines) + "\n"


def add_parser(sub: Any) -> None:
    import argparse

    p = sub.add_parser("preflight", help="what in the real project would stop the first `pulumi up` (read-only)",
                       description=(__doc__ or "").split("\n\n", 2)[2].strip(), formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="exit status: 0 nothing found stops pulumi up; 3 something does; 2 invalid input")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--stack", help="stack name: reads stacks/Pulumi.<NAME>.yaml")
    src.add_argument("--config", type=Path, help="path to a stack file")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--live", action="store_true", help="read the project with gcloud (the preview identity's credentials)")
    how.add_argument("--recorded", type=Path, metavar="DIR", help="read DIR/<name>.json instead (the names: the module's docstring)")
    p.add_argument("--json", action="store_true", help="findings as JSON")


def command(args: Any, plan_of: Callable[[Any], tuple[Any, StackConfig]]) -> int:
    plan, cfg = plan_of(args)
    if cfg.cluster.existing is not None:
        findings = [Finding("cluster", "a cluster made elsewhere (cluster.existing): the stack creates no GCP resource to preflight",
                            stops=False)]
    else:
        read = live_reader(cfg.project) if args.live else recorded_reader(args.recorded)
        findings = Preflight(cfg, {r.type for r in plan.resources}, read).run()
    if args.json:
        print(json.dumps({"stack": plan.stack, "findings": [{"check": f.check, "message": f.message, "stops": f.stops} for f in findings]},
                         indent=2))
    else:
        print(text(findings, plan.stack), end="")
    return EXIT_STOPS if any(f.stops for f in findings) else 0
