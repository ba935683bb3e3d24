"""Run the real Pulumi program under the SDK's mock runtime and record every registration.

The program is started the way the Python language host starts it (``run_in_stack`` around
``runpy.run_path("infra")``), so `pulumi up` and the offline tools share one code path. Calls that
would reach Google Cloud get deterministic stand-ins: the same config always gives the same plan.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import re
import runpy
import secrets
import threading
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc, settings
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

from infra.offline.stackfile import PROJECT_NAME, PROJECT_ROOT, SECRET, STACKS_DIR, load_config

# The engine drives private SDK internals (_sync_await, SETTINGS.rpc_manager, SETTINGS.outputs,
# rpc._special_sig_key); these changed shape within 3.x before. Tested with exactly this range.
SUPPORTED_PULUMI = ((3, 272), (3, 273))  # [min, max)


class UnsupportedSdk(RuntimeError):
    """The installed Pulumi SDK is outside what the offline engine is tested on."""


def check_sdk(version: str | None = None) -> None:
    version = version or metadata.version("pulumi")
    parts = tuple(int(p) for p in re.findall(r"[0-9]+", version)[:2])
    low, high = SUPPORTED_PULUMI
    if not (low <= parts < high):
        raise UnsupportedSdk(
            f"pulumi {version} is installed; the offline engine is tested with pulumi >={low[0]}.{low[1]},<{high[0]}.{high[1]} "
            "(its SDK internals change between releases): run `make` to install requirements.lock"
        )


PROGRAM_DIR = PROJECT_ROOT / "infra"

# Stand-in values for what Google Cloud would compute. Documentation ranges only (RFC 5737).
PROJECT_NUMBER = "123456789012"
CLUSTER_ENDPOINT = "203.0.113.10"
CLUSTER_PRIVATE_ENDPOINT = "10.0.0.2"
CLUSTER_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCm9mZmxpbmUKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="


# The stand-in token Secrets' creation time: fixed, so that a plan is the same on any day (what is derived from a
# token, the metrics adapter's certificate, is valid five years from it).
STAND_IN_CREATED = "2026-12-01T00:00:00Z"


def stand_in_token(namespace: str, name: str) -> tuple[str, str]:
    """What the offline engine's stand-in token controller fills the token Secret namespace/name with: its data.token
    (base64, as the API returns it: one per Secret, as long as a real token's signature) and its
    metadata.creationTimestamp."""
    token = f"offline-token-{hashlib.sha256(f'{namespace}/{name}'.encode()).hexdigest()}"
    return base64.b64encode(token.encode()).decode(), STAND_IN_CREATED


@dataclass(frozen=True)
class Registration:
    """One resource as the engine saw it."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    dependencies: tuple[str, ...]
    options: dict[str, Any]
    secret_digests: dict[str, str] = field(default_factory=dict)
    """Input path of each masked secret -> a keyed digest of its value (SECRET_DIGEST_KEY): two plans of one
    process can tell a changed secret from an unchanged one without holding or printing it. Never written out."""

    def input(self, path: str, default: Any = None) -> Any:
        """Dotted lookup into the (camelCased) inputs: input('nodeConfig.machineType')."""
        value: Any = self.inputs
        for part in path.split("."):
            if isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            elif isinstance(value, dict) and part in value:
                value = value[part]
            else:
                return default
        return value

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "inputs": self.inputs,
            "dependencies": list(self.dependencies),
            "options": self.options,
        }


@dataclass
class Plan:
    stack: str
    resources: list[Registration] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    revealed_outputs: dict[str, Any] = field(default_factory=dict, repr=False)
    """The outputs with secrets unwrapped, for a stack reference in another offline plan; never printed."""

    def by_type(self, type_: str) -> list[Registration]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: Optional[str] = None) -> Registration:
        found = [r for r in self.by_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            names = [r.name for r in self.by_type(type_)]
            raise LookupError(f"expected one {type_} named {name!r}, found {len(found)}; have {names}")
        return found[0]

    def get(self, urn: str) -> Registration:
        return next(r for r in self.resources if r.urn == urn)

    def to_json(self) -> dict[str, Any]:
        return {"resources": [r.to_json() for r in self.resources], "outputs": self.outputs}


# The key of Registration.secret_digests: random per process and never stored, so a digest compares two plans
# made here and says nothing about the value anywhere else (no dictionary attack on a short secret).
SECRET_DIGEST_KEY = secrets.token_bytes(32)


def _secret_digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hmac.new(SECRET_DIGEST_KEY, text.encode(), hashlib.sha256).hexdigest()


def _revealed(value: Any) -> Any:
    """Deserialized RPC values with secrets unwrapped: what another stack's reference reads (never printed)."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _revealed(value.get("value"))
        return {k: _revealed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_revealed(v) for v in value]
    return _plain(value)


def _plain(value: Any, digests: Optional[dict[str, str]] = None, path: str = "") -> Any:
    """Deserialized RPC values -> JSON-able data, secrets masked (each one's digest into `digests`, by input path)."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            if digests is not None:
                digests[path] = _secret_digest(_plain(value.get("value")))
            return SECRET
        return {k: _plain(v, digests, f"{path}.{k}" if path else k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, digests, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, pulumi.Resource):
        return "<resource>"
    if isinstance(value, float) and value.is_integer():
        return int(value)  # protobuf Struct carries every number as a double
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def duration_seconds(duration: str) -> float:
    """'180m' -> 10800.0 (custom timeouts as the SDK sends them); 0 for an empty or odd value."""
    m = re.fullmatch(r"([0-9.]+)(s|m|h)", duration or "")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)] if m else 0.0


def _duration_options(timeouts: Any) -> dict[str, str]:
    return {k: getattr(timeouts, k) for k in ("create", "update", "delete") if getattr(timeouts, k, "")}


# pulumi-gcp's reservation reads the live read makes (infra/reservation_records.py)
RESERVATION_READS = ("gcp:compute/getReservation:getReservation", "gcp:compute/getReservationBlock:getReservationBlock",
                     "gcp:compute/getReservationSubBlock:getReservationSubBlock")


class StandInMocks(pulumi_mocks.Mocks):
    """Deterministic outputs for resources and invokes that would otherwise need Google Cloud."""

    def __init__(self, project: str, reservations: Optional[dict[str, dict[str, Any]]] = None,
                 stack_outputs: Optional[dict[str, dict[str, Any]]] = None, quotas: Optional[dict[str, dict[str, Any]]] = None):
        self.project = project
        # recorded get_s_quota_info responses by quota ID (tests of pathways:readQuota; offline, none is read)
        self.quotas = quotas or {}
        # other stacks' outputs by fully qualified name, for stack references (a fleet manager reads its workers')
        self.stack_outputs = stack_outputs or {}
        # recorded get_reservation(_block, _sub_block) responses by "<project>/<name>[/<block>[/<sub-block>]]" (tests of
        # the live read; offline, none is read)
        self.reservations = reservations or {}

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[Optional[str], dict]:
        inputs = dict(args.inputs)
        t, name, project = args.typ, inputs.get("name", args.name), inputs.get("project", self.project)
        extra: dict[str, Any] = {}
        if t == "gcp:serviceaccount/account:Account":
            email = f"{inputs['accountId']}@{project}.iam.gserviceaccount.com"
            extra = {"email": email, "member": f"serviceAccount:{email}", "name": f"projects/{project}/serviceAccounts/{email}"}
        elif t == "gcp:container/cluster:Cluster":
            endpoints = dict(inputs.get("controlPlaneEndpointsConfig") or {})
            endpoints["dnsEndpointConfig"] = {**(endpoints.get("dnsEndpointConfig") or {}), "endpoint": f"gke-0123456789abcdef-{project}.{inputs.get('location')}.gke.goog"}
            extra = {
                "endpoint": CLUSTER_ENDPOINT, "masterAuth": {"clusterCaCertificate": CLUSTER_CA},
                # a stand-in private IP endpoint, in the range GKE gives a PSC-based cluster's control plane
                "privateClusterConfig": {**(inputs.get("privateClusterConfig") or {}), "privateEndpoint": CLUSTER_PRIVATE_ENDPOINT},
                "controlPlaneEndpointsConfig": endpoints,
                "selfLink": f"projects/{project}/locations/{inputs.get('location')}/clusters/{name}",
            }
        elif t == "gcp:storage/bucket:Bucket":
            extra = {"url": f"gs://{name}", "selfLink": f"https://www.googleapis.com/storage/v1/b/{name}"}
        elif t == "gcp:projects/iAMCustomRole:IAMCustomRole":
            extra = {"name": f"projects/{project}/roles/{inputs.get('roleId')}"}
        elif t.startswith("gcp:compute/"):
            extra = {"selfLink": f"projects/{project}/{t.split('/')[1].split(':')[0]}s/{name}"}
        elif t == "pulumi:pulumi:StackReference":
            # as the engine reads one: the stack's outputs, none if it has none (a stack not yet deployed)
            extra = {"outputs": self.stack_outputs.get(str(inputs.get("name")), {}), "secretOutputNames": []}
        elif t == "kubernetes:core/v1:Secret" and inputs.get("type") == "kubernetes.io/service-account-token":
            # the token controller fills it (the provider waits for it): a stand-in token, one per Secret and as long
            # as a real one's signature, made today (what the metrics adapter's certificate is derived from)
            meta = inputs.get("metadata") or {}
            token, created = stand_in_token(str(meta.get("namespace", "")), str(meta.get("name", args.name)))
            extra = {"data": {"token": token, **(inputs.get("data") or {})},
                     "metadata": {**(inputs.get("metadata") or {}), "creationTimestamp": created}}
        elif t == "random:index/randomPassword:RandomPassword":
            extra = {"result": f"offline-{args.name}"}
        resource_id = extra.get("name") if t == "gcp:projects/iAMCustomRole:IAMCustomRole" else f"{args.name}-id"
        return resource_id, {**inputs, **extra}

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict, Optional[list[tuple[str, str]]]]:
        # No failures is [], not None: the SDK's mock monitor iterates a tuple's failures.
        if args.token == "gcp:organizations/getProject:getProject":
            project = args.args.get("projectId") or self.project
            return {"projectId": project, "number": PROJECT_NUMBER, "name": project, "id": f"projects/{project}"}, []
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {"project": self.project, "accessToken": "offline", "id": "offline"}, []
        if args.token in RESERVATION_READS:
            a = args.args
            owner = a.get("project") or self.project
            # "<project>/<reservation>[/<block>[/<sub-block>]]", and the API's path of the same
            parts = [a["name"]] if "reservation" not in a else [a["reservation"], *([a["reservationBlock"]] if "reservationBlock" in a else []), a["name"]]
            key = "/".join([owner, *parts])
            if key not in self.reservations:
                # as the provider's error reaches the program: a failed invoke it can catch (a raise here would be an
                # RPC failure, which the SDK re-raises at the end whatever the program did)
                api = "/".join(f"{kind}/{part}" for kind, part in zip(("reservations", "reservationBlocks", "reservationSubBlocks"), parts, strict=False))
                return {}, [("name", f"googleapi: Error 404: The resource 'projects/{owner}/zones/{a.get('zone')}/{api}' "
                                     "was not found, notFound")]
            return self.reservations[key], []
        if args.token == "gcp:cloudquota/getSQuotaInfo:getSQuotaInfo":
            quota_id = args.args.get("quotaId")
            if quota_id not in self.quotas:
                return {}, [("quotaId", f"googleapi: Error 404: QuotaInfo {quota_id} not found for {args.args.get('parent')}, notFound")]
            return self.quotas[quota_id], []
        raise NotImplementedError(f"the offline engine has no stand-in for invoke {args.token}")


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """MockMonitor that also keeps what MockResourceArgs leaves out: parent, dependencies, options."""

    def __init__(self, mocks: pulumi_mocks.Mocks):
        super().__init__(mocks)
        self.registrations: dict[str, Registration] = {}
        self.stack_outputs: dict[str, Any] = {}
        self.revealed_outputs: dict[str, Any] = {}
        self.duplicate_urns: list[str] = []
        self._lock = threading.Lock()

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        options: dict[str, Any] = {
            "protect": bool(request.protect),
            "deleteBeforeReplace": bool(request.deleteBeforeReplace),
            "replaceOnChanges": sorted(request.replaceOnChanges),
            "ignoreChanges": sorted(request.ignoreChanges),
            "customTimeouts": _duration_options(request.customTimeouts),
            "provider": request.provider.rsplit("::", 1)[0] if request.provider else "",
            "retainOnDelete": bool(request.retainOnDelete),
        }
        digests: dict[str, str] = {}
        inputs = _plain(rpc.deserialize_properties(request.object), digests)
        reg = Registration(
            urn=response.urn,
            type=request.type,
            name=request.name,
            parent=request.parent,
            custom=bool(request.custom),
            inputs=inputs,
            dependencies=tuple(sorted(set(request.dependencies))),
            options=options,
            secret_digests=digests,
        )
        with self._lock:
            if response.urn in self.registrations:
                # the engine's own refusal (pkg/resource/deploy/step_generator.go): two resources of one URN fail
                # the whole update, so the offline plan fails the same way rather than keeping the last
                self.duplicate_urns.append(response.urn)
            self.registrations[response.urn] = reg
        return response

    def RegisterResourceOutputs(self, request):
        if request.urn.split("::")[2] == "pulumi:pulumi:Stack":
            outputs = rpc.deserialize_properties(request.outputs)
            self.stack_outputs = _plain(outputs)
            self.revealed_outputs = _revealed(outputs)
        return super().RegisterResourceOutputs(request)


def fleet_worker_outputs(config: Mapping[str, str], stacks_dir: Optional[Path] = None,
                         now: Optional[datetime] = None) -> dict[str, dict[str, Any]]:
    """A fleet manager's workers' outputs, from their own offline plans: each worker named <org>/<project>/<stack>
    whose stack file (Pulumi.<stack>.yaml) is beside the manager's, in `stacks_dir` (default stacks/). A worker
    without one has no outputs, as a stack not yet deployed, and the manager's rules say so."""
    try:
        fleet = json.loads(config.get("pathways:fleet", "null")) or {}
    except json.JSONDecodeError:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for w in fleet.get("workers") or [] if fleet.get("role") == "manager" else []:
        name = str(w.get("stack", ""))
        path = (stacks_dir or STACKS_DIR) / f"Pulumi.{name.rsplit('/', 1)[-1]}.yaml"
        if path.is_file():
            flat, secrets = load_config(path)
            out[name] = run(flat, path.name[len("Pulumi."):-len(".yaml")], secrets, stacks_dir=stacks_dir, now=now).revealed_outputs
    return out


@dataclass(frozen=True)
class PlanInputs:
    """Everything a plan depends on, explicitly: plan(inputs) reads nothing else (no file, environment variable, module
    state or wall clock), so two plans of equal inputs are equal and may be shared (shared_plans). run() is the
    boundary that gathers them from the files and the clock."""

    config: tuple[tuple[str, str], ...]
    """The flat Pulumi config ({"ns:key": "text"}), as sorted items."""
    stack: str
    now: datetime
    """The plan's clock: what the rules about the present judge against (infra/config.py PLANNED_AT)."""
    secret_keys: tuple[str, ...] = ()
    """The keys stackfile.flatten found secret (it refused secrets anywhere but workload env values)."""
    program: str = str(PROGRAM_DIR)
    """The program's directory: infra/ (the stack), bootstrap/ (the project's bootstrap), or a test's own."""
    bootstrap: Optional[tuple[str, str]] = None
    """The bootstrap config that sets up the stack, found beside its stack files: (file name, its config as JSON)."""
    stack_outputs: str = "{}"
    """Other stacks' outputs by fully qualified name (JSON), for stack references: a fleet manager's workers'."""
    reservations: Optional[str] = None
    """Recorded get_reservation(_block, _sub_block) responses (JSON); None: no live read is made."""
    quotas: Optional[str] = None
    """Recorded get_s_quota_info responses by quota ID (JSON); None: no live read is made."""

    @classmethod
    def of(cls, config: Mapping[str, str], stack: str, secret_keys: Sequence[str] = (), *, now: datetime,
           program: str = str(PROGRAM_DIR), bootstrap: Optional[tuple[str, dict[str, Any]]] = None,
           stack_outputs: Optional[Mapping[str, Any]] = None, reservations: Optional[Mapping[str, Any]] = None,
           quotas: Optional[Mapping[str, Any]] = None) -> "PlanInputs":
        def text(value: Any) -> str:
            return json.dumps(value, sort_keys=True, separators=(",", ":"))

        return cls(config=tuple(sorted((str(k), str(v)) for k, v in config.items())), stack=stack,
                   secret_keys=tuple(sorted(secret_keys)), now=now, program=program,
                   bootstrap=(bootstrap[0], text(bootstrap[1])) if bootstrap is not None else None,
                   stack_outputs=text(stack_outputs or {}),
                   reservations=text(reservations) if reservations is not None else None,
                   quotas=text(quotas) if quotas is not None else None)


def plan(inputs: PlanInputs) -> Plan:
    """Run the program on these inputs and return what it registered: a pure function of `inputs`.
    Raises whatever the program raises (InvalidStackConfig for bad config), or UnsupportedSdk."""
    check_sdk()
    shared = _SHARED.get()
    if shared is not None and inputs in shared:
        return shared[inputs]
    from infra.bucket_allowlist import BOOTSTRAP
    from infra.config import CHECKED_SECRET_PATHS, PLANNED_AT
    from infra.reservation_records import LIVE_READS

    config = dict(inputs.config)
    reservations = json.loads(inputs.reservations) if inputs.reservations is not None else None
    quotas = json.loads(inputs.quotas) if inputs.quotas is not None else None
    settings.ROOT.set(None)
    pulumi.runtime.set_all_config(config, list(inputs.secret_keys))
    # The stack file was read here, not by the CLI: infra/offline/stackfile.flatten refused every secret the stack
    # cannot keep secret (anything but workload env values) before these keys were made; the program need not look
    # for the file.
    tokens = (CHECKED_SECRET_PATHS.set({k: () for k in inputs.secret_keys}), PLANNED_AT.set(inputs.now),
              BOOTSTRAP.set((inputs.bootstrap[0], json.loads(inputs.bootstrap[1])) if inputs.bootstrap is not None else None),
              LIVE_READS.set(reservations is not None or quotas is not None))
    project = str(config.get("gcp:project", "offline-project"))
    monitor = RecordingMonitor(StandInMocks(project, reservations, json.loads(inputs.stack_outputs), quotas))
    pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT_NAME, stack=inputs.stack, preview=False, monitor=monitor)
    # set_mocks makes and finishes a root stack of its own; drop it so run_in_stack makes the one
    # the language host would, and its outputs reach RegisterResourceOutputs.
    settings.ROOT.set(None)
    # SDK internals (see SUPPORTED_PULUMI): the SDK's own stubs do not declare them.
    settings.SETTINGS.rpc_manager.clear()  # pyright: ignore[reportAttributeAccessIssue]
    settings.SETTINGS.outputs.clear()  # pyright: ignore[reportAttributeAccessIssue]
    def program() -> None:
        runpy.run_path(inputs.program, run_name="__main__")

    try:
        _sync_await(run_in_stack(program))
    finally:
        settings.ROOT.set(None)
        for var, token in zip((CHECKED_SECRET_PATHS, PLANNED_AT, BOOTSTRAP, LIVE_READS), tokens, strict=True):
            var.reset(token)  # pyright: ignore[reportArgumentType]
    if monitor.duplicate_urns:
        raise RuntimeError(f"Duplicate resource URN {monitor.duplicate_urns[0]!r}: the engine refuses the whole update "
                           f"({len(monitor.duplicate_urns)} such); give each resource a unique name")
    resources = sorted(monitor.registrations.values(), key=lambda r: r.urn)
    made = Plan(stack=inputs.stack, resources=resources, outputs=dict(sorted(monitor.stack_outputs.items())),
                revealed_outputs=monitor.revealed_outputs)
    if shared is not None:
        shared[inputs] = made
    return made


# Plans of equal inputs, shared while set (share_plans): a test suite makes the same plan from many tests. Off by
# default; a caller that changes what the program reads beyond its inputs (a test's monkeypatch) turns it off.
_SHARED: ContextVar[Optional[dict[PlanInputs, Plan]]] = ContextVar("shared_plans", default=None)


def share_plans() -> None:
    """Keep every plan made from now on and give it again for equal inputs. A shared Plan is one object for every
    caller: read it, never change it."""
    _SHARED.set({})


@contextlib.contextmanager
def unshared() -> Iterator[None]:
    """Plans made inside are made afresh and not kept (the shared ones stay for after): for a caller that changes
    what the program reads beyond its inputs."""
    token = _SHARED.set(None)
    try:
        yield
    finally:
        _SHARED.reset(token)


def run(config: Mapping[str, str], stack: str, secret_keys: Sequence[str] = (), program_dir: Path = PROGRAM_DIR,
        reservations: Optional[dict[str, dict[str, Any]]] = None, stack_outputs: Optional[dict[str, dict[str, Any]]] = None,
        stacks_dir: Optional[Path] = None, quotas: Optional[dict[str, dict[str, Any]]] = None,
        now: Optional[datetime] = None) -> Plan:
    """The plan of this flat Pulumi config ({"ns:key": "text"}): its inputs gathered from the files beside the stack
    and the clock (PlanInputs), then plan().
    `program_dir`: the program directory to run the same way (PROGRAM_DIR, or the bootstrap project, bootstrap/).
    `reservations`: recorded get_reservation responses ("<project>/<name>" -> the provider's outputs): the program
    then reads slices[].readReservation reservations through the mocks' invoke hook, as under `pulumi preview`.
    Without them the offline engine makes no read (reservationRecord is judged instead).

    `stack_outputs`: other stacks' outputs by fully qualified name, for stack references; by default a fleet
    manager's workers' offline plans (fleet_worker_outputs), read from `stacks_dir`: the folder of the stack's own
    file (default stacks/), beside which bootstrap/ holds the bootstrap configs.

    `quotas`: recorded get_s_quota_info responses (quota ID -> the provider's outputs): the program then judges
    pathways:readQuota against them, as under `pulumi preview`.

    `now`: the plan's clock; by default the present (components/model/cluster/cluster.py now, which tests fix).
    `secret_keys`: the keys stackfile.flatten found secret (it refused secrets anywhere but workload env values).
    """
    from components.model.cluster import cluster as cluster_rules
    from infra.bucket_allowlist import bootstrap_config

    check_sdk()
    now = now or cluster_rules.now()
    program = str(Path(program_dir).resolve())
    bootstrap = None
    if program == str(PROGRAM_DIR.resolve()):
        if stack_outputs is None:
            stack_outputs = fleet_worker_outputs(config, stacks_dir, now)
        found = bootstrap_config(str(config.get("gcp:project", "")), stack, (stacks_dir or STACKS_DIR).parent / "bootstrap")
        bootstrap = (found[0].name, found[1]) if found is not None else None
    return plan(PlanInputs.of(config, stack, secret_keys, now=now, program=program, bootstrap=bootstrap,
                              stack_outputs=stack_outputs, reservations=reservations, quotas=quotas))
