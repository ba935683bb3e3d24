"""The objects the stack's Helm charts create, rendered offline the way `pulumi up` renders them.

A helm.v4.Chart is a component: the Kubernetes provider expands it at deploy time and registers every object as
a child (pulumi-kubernetes v4.25.0 provider/pkg/provider/helm/v4/chart.go Construct): Helm's install action run
client-only, as `helm template` with the Chart's release name (its Pulumi name), namespace and values, crds/
included (skipCrds false), hooks left out (DisableHooks) and NOTES.txt not an object; then yaml/v2 Normalize
gives every namespaced object without a namespace the release namespace, and Register names each child
`<chart>:<namespace>/<name>` (`<chart>:<name>` when cluster-scoped), typed kubernetes:<group>/<version>:<Kind>,
with a v1 Secret's data and stringData marked secret (provider/pkg/provider/yaml/v2/yaml.go).

Here Helm's own Go SDK (helm-python-sdk, Helm v4 through ctypes) expands the same chart with the values the
program gave the Chart (components/manifests/controller_charts.py): the pinned charts `make crds` copied from the
controllers' Go modules into build/charts for an oci:// reference, or the stack's local chart directory. Without
build/charts this fails and says to run `make crds`: a render without the charts would hide what `pulumi up` does.
The provider links Helm v3.18.6 and helm-python-sdk 0.2.2 Helm v4.2.3; the pinned charts use no template function
whose output differs between them (no lookup, no random or certificate generators, Capabilities only behind values
the stack leaves off), and the real-engine tier installs them through the provider itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

import yaml

from components.constants import HELM_CHART
from infra.offline.engine import Plan, Registration
from infra.offline.stackfile import PROJECT_ROOT, SECRET

CHARTS = Path(os.environ.get("PATHWAYS_CHARTS") or PROJECT_ROOT / "build" / "charts")
HOOK_ANNOTATION = "helm.sh/hook"
# Expanding the charts is most of what they add to a plan: Helm's Go runtime, then 5 MB of YAML to parse (mostly
# CRDs: Kueue's Workload CRD alone is 1.4 MB). An expansion is kept as JSON under the digest of everything it is a
# function of (the Helm binding's version, the chart's files, the values, release and namespace; the charts use no
# random or time functions), which reads back ten times faster than the YAML parses.
EXPANDED = CHARTS / ".expanded"

# Which kinds are namespaced, as the provider decides it before asking the cluster (pulumi-kubernetes
# provider/pkg/kinds/kinds.go Kind.Namespaced, for the built-in API groups; then the scope of a CRD among the
# chart's own objects, provider/pkg/clients/clients.go IsNamespacedKind).
NAMESPACED_KINDS = frozenset({
    "Binding", "ConfigMap", "ControllerRevision", "CronJob", "CSIStorageCapacity", "DaemonSet", "Deployment", "Endpoints",
    "EndpointSlice", "Event", "HorizontalPodAutoscaler", "Ingress", "Job", "Lease", "LimitRange", "NetworkPolicy",
    "PersistentVolumeClaim", "Pod", "PodDisruptionBudget", "PodTemplate", "ReplicaSet", "ReplicationController",
    "ResourceQuota", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount", "StatefulSet",
})
CLUSTER_KINDS = frozenset({
    "APIService", "CertificateSigningRequest", "ClusterRole", "ClusterRoleBinding", "CSIDriver", "CSINode",
    "CustomResourceDefinition", "FlowSchema", "IngressClass", "MutatingWebhookConfiguration", "Namespace", "Node",
    "PersistentVolume", "PodSecurityPolicy", "PriorityClass", "PriorityLevelConfiguration", "RuntimeClass", "StorageClass",
    "ValidatingWebhookConfiguration", "VolumeAttachment",
})


class ChartError(ValueError):
    """A chart that cannot be rendered offline (one line, for `error:`)."""


@dataclass(frozen=True)
class ChartObject:
    chart: Registration
    """The helm.v4.Chart that creates it."""
    obj: dict[str, Any]

    @property
    def release(self) -> str:
        return self.chart.name

    @property
    def resource_name(self) -> str:
        """The child's Pulumi name (yaml/v2 register)."""
        meta = self.obj.get("metadata") or {}
        qualified = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        return f"{self.release}:{qualified}"

    @property
    def type(self) -> str:
        group, _, version = str(self.obj["apiVersion"]).rpartition("/")
        return f"kubernetes:{group or 'core'}/{version}:{self.obj['kind']}"


def _builtin_group(api_version: str) -> bool:
    group = api_version.rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")


def _namespaced(obj: dict[str, Any], crd_scopes: dict[tuple[str, str], str], release: str) -> bool:
    kind, api_version = obj["kind"], str(obj["apiVersion"])
    if _builtin_group(api_version) and (kind in NAMESPACED_KINDS or kind in CLUSTER_KINDS):
        return kind in NAMESPACED_KINDS
    scope = crd_scopes.get((api_version.rpartition("/")[0], kind))
    if scope is None:
        raise ChartError(f"chart {release}: renders {api_version} {kind}, whose scope neither the provider's kind table nor a CRD "
                         "of the chart gives (the provider would ask the cluster)")
    return scope == "Namespaced"


def chart_dir(chart: Registration) -> Path:
    """The chart directory to expand: the pinned copy of an oci:// chart (its version checked), or the stack's
    local chart directory."""
    source, version = str(chart.input("chart") or ""), chart.input("version")
    if not source.startswith("oci://"):
        path = Path(source).expanduser()
        path = path if path.is_absolute() else PROJECT_ROOT / path
        if not (path / "Chart.yaml").is_file():
            raise ChartError(f"chart {chart.name}: the local chart directory {source} has no Chart.yaml")
        return path
    name = source.rstrip("/").rsplit("/", 1)[-1]
    # another release of the table (controller_versions, "offline") has its own copy beside the pinned one
    path = CHARTS / f"{name}@{version}" if (CHARTS / f"{name}@{version}" / "Chart.yaml").is_file() else CHARTS / name
    if not (path / "Chart.yaml").is_file():
        raise ChartError(f"{path} is missing: run `make crds` (it copies the pinned JobSet, Kueue and LWS charts from their Go modules)")
    meta = yaml.load((path / "Chart.yaml").read_text(), Loader=yaml.CSafeLoader) or {}
    # A module's chart directory carries the release in appVersion (LWS's Chart.yaml says version 0.1.0; its release
    # script stamps the version into the published chart, hack/push-chart.sh).
    held = {str(meta.get("version")), str(meta.get("appVersion")).removeprefix("v")}
    if version not in held:
        raise ChartError(f"chart {chart.name}: the stack installs {source} {version}, and {path} holds "
                         f"{meta.get('appVersion') or meta.get('version')}; the offline tools expand the charts of the releases they were tested with (make crds)")
    return path


def _digest(path: Path, release: str, namespace: str, values: dict[str, Any], post_renderer: Optional[dict[str, Any]]) -> str:
    h = hashlib.sha256(json.dumps([metadata.version("helm-python-sdk"), release, namespace, values, post_renderer], sort_keys=True).encode())
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f.relative_to(path).as_posix().encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


POST_RENDER_TIMEOUT_SECONDS = 120.0  # ours filters a few MB of YAML in well under a second


def _post_render(release: str, post_renderer: dict[str, Any], manifest: str) -> str:
    """What the Chart's post-renderer makes of the manifest, run as Helm runs it (helm v3.18.6 pkg/postrender/exec.go:
    the command found on PATH, the manifest on stdin, its stdout the new manifest; a failure is the install's)."""
    command = shutil.which(str(post_renderer.get("command") or ""))
    if command is None:
        raise ChartError(f"chart {release}: its post-renderer {post_renderer.get('command')!r} is not on PATH")
    try:
        proc = subprocess.run([command, *[str(a) for a in post_renderer.get("args") or []]], input=manifest, capture_output=True,
                              text=True, timeout=POST_RENDER_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise ChartError(f"chart {release}: its post-renderer did not finish in {POST_RENDER_TIMEOUT_SECONDS:g} s") from None
    if proc.returncode != 0:
        raise ChartError(f"chart {release}: its post-renderer failed: {(proc.stderr.strip().splitlines() or ['no output'])[-1]}")
    return proc.stdout


def _expand(path: Path, release: str, namespace: str, values: dict[str, Any],
            post_renderer: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
    """The chart's documents as Helm writes them into the release manifest: crds/ first, then the templates (in
    file order; NOTES.txt is not an object), through the Chart's post-renderer if it has one, empty documents
    dropped (releaseutil.SplitManifests)."""
    cached = EXPANDED / f"{_digest(path, release, namespace, values, post_renderer)}.json"
    try:
        return json.loads(cached.read_bytes())
    except (OSError, ValueError):
        pass
    import helm_python  # here: a plan whose charts are cached never starts Helm's Go runtime

    try:
        with helm_python.Chart.load(path) as chart:
            crds = [(c.get("filename") or c.get("name") or "crd", c["data"]) for c in chart.crds]
            templates = chart.render(values=values, name=release, namespace=namespace, is_install=True)
    except helm_python.HelmError as e:
        raise ChartError(f"chart {release} ({path}): {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    sources = crds + [(name, text) for name, text in sorted(templates.items()) if not name.endswith("NOTES.txt")]
    texts = [text for _, text in sources]
    if post_renderer:  # Helm hands it one buffer, each file after `---` and its `# Source:` line (pkg/action/action.go)
        texts = [_post_render(release, post_renderer, "".join(f"---\n# Source: {name}\n{text}\n" for name, text in sources))]
    docs = [doc for text in texts for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc]
    try:  # written whole or not at all: a concurrent reader never sees half a file
        EXPANDED.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=EXPANDED, suffix=".tmp", delete=False) as f:
            json.dump(docs, f)
        os.replace(f.name, cached)
    except (OSError, TypeError, ValueError):
        pass  # a read-only tree, or a document JSON cannot hold (a YAML date): expanded again next time
    return docs


def render_chart(path: Path, release: str, namespace: str, values: dict[str, Any],
                 post_renderer: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
    """Every object the chart at `path` creates, in the order Helm writes them (crds/ first), namespaced as Pulumi
    namespaces them."""
    objects = _expand(path, release, namespace, values, post_renderer)
    objects = [o for o in objects if HOOK_ANNOTATION not in ((o.get("metadata") or {}).get("annotations") or {})]
    crd_scopes = {(o["spec"]["group"], o["spec"]["names"]["kind"]): o["spec"].get("scope", "")
                  for o in objects if o.get("kind") == "CustomResourceDefinition"}
    for o in objects:
        if not o.get("kind") or not o.get("apiVersion") or not (o.get("metadata") or {}).get("name"):
            raise ChartError(f"chart {release}: an object without kind, apiVersion or metadata.name")
        # an object its template already places needs no scope (the provider asks the cluster only to place one)
        if not o["metadata"].get("namespace") and _namespaced(o, crd_scopes, release):
            o["metadata"]["namespace"] = namespace
    return objects


def chart_objects(plan: Plan) -> list[ChartObject]:
    """The objects of every Helm chart in the plan, chart by chart."""
    out = []
    for chart in plan.by_type(HELM_CHART):
        values = chart.input("values") or {}
        release = str(chart.input("name") or chart.name)
        objects = render_chart(chart_dir(chart), release, str(chart.input("namespace") or "default"), values,
                               chart.input("postRenderer") or None)
        out += [ChartObject(chart, o) for o in objects]
    return out


def _registration(plan: Plan, c: ChartObject) -> Registration:
    inputs = dict(c.obj)
    if c.type == "kubernetes:core/v1:Secret":
        inputs.update({k: SECRET for k in ("data", "stringData") if k in inputs})
    parent_types = c.chart.urn.split("::")[2]
    urn = f"urn:pulumi:{plan.stack}::{c.chart.urn.split('::')[1]}::{parent_types}${c.type}::{c.resource_name}"
    return Registration(urn=urn, type=c.type, name=c.resource_name, parent=c.chart.urn, custom=True, inputs=inputs,
                        dependencies=(), options={**c.chart.options, "protect": False})


def with_chart_objects(plan: Plan) -> Plan:
    """The plan with each chart's objects registered under it, as the Kubernetes provider registers them at
    `pulumi preview` (what the policy pack sees there)."""
    children = [_registration(plan, c) for c in chart_objects(plan)]
    return replace(plan, resources=sorted([*plan.resources, *children], key=lambda r: r.urn))
