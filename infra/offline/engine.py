"""Run the real Pulumi program under the SDK's mock runtime and record every registration.

The program is started the way the Python language host starts it (``run_in_stack`` around
``runpy.run_path("infra")``), so `pulumi up` and the offline tools share one code path. Calls that
would reach Google Cloud get deterministic stand-ins: the same config always gives the same plan.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import pickle
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
from pulumi.runtime import resource as resource_runtime
from pulumi.runtime import rpc, settings
from pulumi.runtime.proto import source_pb2
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

from infra.offline.stackfile import PROJECT_NAME, PROJECT_ROOT, SECRET, STACKS_DIR, load_config

# the stand-ins, named here too (tests and tools import them from the engine)
from infra.offline.stand_ins import CLUSTER_CA as CLUSTER_CA
from infra.offline.stand_ins import CLUSTER_ENDPOINT as CLUSTER_ENDPOINT
from infra.offline.stand_ins import CLUSTER_PRIVATE_ENDPOINT as CLUSTER_PRIVATE_ENDPOINT
from infra.offline.stand_ins import PROJECT_NUMBER as PROJECT_NUMBER
from infra.offline.stand_ins import RESERVATION_READS as RESERVATION_READS
from infra.offline.stand_ins import StandInMocks as StandInMocks
from infra.offline.stand_ins import stand_in_token as stand_in_token

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
    files: tuple[tuple[str, Optional[str]], ...] = ()
    """The files the config names that the program reads (infra/config.py INPUT_FILES): absolute path -> text, None
    for one that cannot be read."""

    @classmethod
    def of(cls, config: Mapping[str, str], stack: str, secret_keys: Sequence[str] = (), *, now: datetime,
           program: str = str(PROGRAM_DIR), bootstrap: Optional[tuple[str, dict[str, Any]]] = None,
           stack_outputs: Optional[Mapping[str, Any]] = None, reservations: Optional[Mapping[str, Any]] = None,
           quotas: Optional[Mapping[str, Any]] = None, files: Optional[Mapping[str, Optional[str]]] = None) -> "PlanInputs":
        def text(value: Any) -> str:
            return json.dumps(value, sort_keys=True, separators=(",", ":"))

        return cls(config=tuple(sorted((str(k), str(v)) for k, v in config.items())), stack=stack,
                   secret_keys=tuple(sorted(secret_keys)), now=now, program=program,
                   bootstrap=(bootstrap[0], text(bootstrap[1])) if bootstrap is not None else None,
                   stack_outputs=text(stack_outputs or {}),
                   reservations=text(reservations) if reservations is not None else None,
                   quotas=text(quotas) if quotas is not None else None, files=tuple(sorted((files or {}).items())))


def _no_stack_trace() -> source_pb2.StackTrace:
    return source_pb2.StackTrace()


def plan(inputs: PlanInputs) -> Plan:
    """Run the program on these inputs and return what it registered: a pure function of `inputs`.
    Raises whatever the program raises (InvalidStackConfig for bad config), or UnsupportedSdk."""
    check_sdk()
    shared = _SHARED.get()
    kept = shared.get(inputs) if shared is not None else None
    if kept is not None:
        return kept
    from infra.bucket_allowlist import BOOTSTRAP
    from infra.config import CHECKED_SECRET_PATHS, INPUT_FILES, PLANNED_AT
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
              LIVE_READS.set(reservations is not None or quotas is not None), INPUT_FILES.set(dict(inputs.files)))
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

    # SDK internals (see SUPPORTED_PULUMI): the source position of each resource, which only the real engine's
    # diagnostics show, walks the whole Python stack per registration (~7% of a plan); the mocks never read it
    stack_trace, resource_runtime._get_stack_trace = resource_runtime._get_stack_trace, _no_stack_trace
    try:
        _sync_await(run_in_stack(program))
    finally:
        resource_runtime._get_stack_trace = stack_trace
        settings.ROOT.set(None)
        for var, token in zip((CHECKED_SECRET_PATHS, PLANNED_AT, BOOTSTRAP, LIVE_READS, INPUT_FILES), tokens, strict=True):
            var.reset(token)  # pyright: ignore[reportArgumentType]
    if monitor.duplicate_urns:
        raise RuntimeError(f"Duplicate resource URN {monitor.duplicate_urns[0]!r}: the engine refuses the whole update "
                           f"({len(monitor.duplicate_urns)} such); give each resource a unique name")
    resources = sorted(monitor.registrations.values(), key=lambda r: r.urn)
    made = Plan(stack=inputs.stack, resources=resources, outputs=dict(sorted(monitor.stack_outputs.items())),
                revealed_outputs=monitor.revealed_outputs)
    if shared is not None:
        shared.put(inputs, made)
    return made


class SharedPlans:
    """Plans of equal inputs, made once: kept in this process and, with a folder, written there for the other
    processes of the same run (a test suite's workers), which read them back. A plan of secret inputs stays in its
    process."""

    def __init__(self, folder: Optional[Path] = None):
        self.kept: dict[PlanInputs, Plan] = {}
        self.folder = folder

    def _file(self, inputs: PlanInputs) -> Optional[Path]:
        if self.folder is None or inputs.secret_keys:
            return None  # the values of secret keys never go to a file
        return self.folder / f"{hashlib.sha256(repr(inputs).encode()).hexdigest()}.pickle"

    def get(self, inputs: PlanInputs) -> Optional[Plan]:
        if inputs in self.kept:
            return self.kept[inputs]
        path = self._file(inputs)
        if path is None or not path.is_file():
            return None
        found = pickle.loads(path.read_bytes())
        self.kept[inputs] = found
        return found

    def put(self, inputs: PlanInputs, made: Plan) -> None:
        self.kept[inputs] = made
        path = self._file(inputs)
        if path is not None:
            partial = path.with_suffix(f".{os.getpid()}.partial")
            partial.write_bytes(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(partial, path)  # whole or not at all, for a reader in another process


# Plans of equal inputs, shared while set (share_plans): a test suite makes the same plan from many tests. Off by
# default; a caller that changes what the program reads beyond its inputs (a test's monkeypatch) turns it off.
_SHARED: ContextVar[Optional[SharedPlans]] = ContextVar("shared_plans", default=None)


def share_plans(folder: Optional[Path] = None) -> None:
    """Keep every plan made from now on and give it again for equal inputs; with `folder` (a private one, of one run),
    across the processes that share it too. A shared Plan is one object for every caller: read it, never change it.
    The processes then key their secrets' digests alike (a key the first of them writes there), so that plans made
    in two of them compare."""
    global SECRET_DIGEST_KEY
    if folder is not None:
        key = folder / "secret-digest.key"
        try:
            with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
                f.write(SECRET_DIGEST_KEY)
        except FileExistsError:
            SECRET_DIGEST_KEY = key.read_bytes()
    _SHARED.set(SharedPlans(folder))


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
    bootstrap, files = None, None
    if program == str(PROGRAM_DIR.resolve()):
        files = named_files(config)
        if stack_outputs is None:
            stack_outputs = fleet_worker_outputs(config, stacks_dir, now)
        found = bootstrap_config(str(config.get("gcp:project", "")), stack, (stacks_dir or STACKS_DIR).parent / "bootstrap")
        bootstrap = (found[0].name, found[1]) if found is not None else None
    return plan(PlanInputs.of(config, stack, secret_keys, now=now, program=program, bootstrap=bootstrap,
                              stack_outputs=stack_outputs, reservations=reservations, quotas=quotas, files=files))


def _json(text: Optional[str]) -> Any:
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        return None  # the program refuses it, naming the key


def named_files(config: Mapping[str, str]) -> dict[str, Optional[str]]:
    """The files the config names that the program reads, read here (the plan's PlanInputs.files): each slice group's
    reservationRecord and reservationBlockRecord (relative to the project root, infra/reservation_records.py) and
    cluster.existing.kubeconfig (infra/program.py existing_cluster). A file that cannot be read is None."""
    paths: list[Path] = []
    groups = _json(config.get("pathways:slices"))
    for g in groups if isinstance(groups, list) else []:
        for key in ("reservationRecord", "reservationBlockRecord"):
            if isinstance(g, dict) and isinstance(g.get(key), str):
                paths.append(PROJECT_ROOT / g[key])
    cluster = _json(config.get("pathways:cluster"))
    existing = cluster.get("existing") if isinstance(cluster, dict) else None
    if isinstance(existing, dict) and isinstance(existing.get("kubeconfig"), str):
        path = Path(existing["kubeconfig"]).expanduser()
        paths.append(path if path.is_absolute() else PROJECT_ROOT / path)
    out: dict[str, Optional[str]] = {}
    for path in paths:
        try:
            out[str(path)] = path.read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            out[str(path)] = None
    return out
