"""The Pod Security Standards, `baseline` and `restricted` at version `latest`, as the API server's PodSecurity
admission checks a pod (pure Python).

A port of k8s.io/pod-security-admission v0.36.3, package policy: each check_*.go file is one function here,
named by its check ID, with the same forbidden reason and detail text, so a refusal reads as the API server's:

    violates PodSecurity "restricted:latest": seccompProfile (pod or container "manager" must set
    securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")

Only `latest` (what components/manifests/guardrails.psa_labels writes) is implemented: for each check, the
newest of its versioned functions (v0.36.3's newest is 1.35; the API server clamps `latest` to that too,
registry.go EvaluatePod). The checks run in the order the evaluator runs them (registry.go populate): the
baseline IDs sorted, then the restricted ones sorted; at `restricted`, a restricted check replaces the baseline
check it overrides (OverrideCheckIDs). Pods read as the API server decodes them: a field that is absent or null
is Go's nil, `{}` is a set but empty struct. Before the checks, a pod gets what the API server does to it on
create before admission (`as_created`: the hostNetwork hostPort default, the AppArmor annotation copied to its
field), so a pod made from a template is judged as the API server judges it.

Over 500 lines: a port kept one to one with upstream's check files (one function per check ID, in its order), so
a new pod-security-admission release is diffed against one module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional

from components.manifests.guardrails import PSA

LEVELS = ("privileged", "baseline", "restricted")
VERSION = "latest"

Pod = Mapping[str, Any]


@dataclass(frozen=True)
class PodSecurityViolation:
    check: str
    """The upstream check ID (e.g. seccompProfile_restricted)."""
    reason: str
    """Its ForbiddenReason (e.g. seccompProfile), as the API server prints it."""
    detail: str

    def __str__(self) -> str:
        # checks.go AggregateCheckResult.ForbiddenDetail
        return f"{self.reason} ({self.detail})" if self.detail else self.reason


def forbidden_detail(violations: list[PodSecurityViolation]) -> str:
    """The reasons joined as the API server joins them (checks.go ForbiddenDetail)."""
    return ", ".join(str(v) for v in violations)


def forbidden_message(level: str, violations: list[PodSecurityViolation]) -> str:
    """The refusal's text (admission/admission.go EvaluatePod): `violates PodSecurity "<level>:latest": …`."""
    return f'violates PodSecurity "{level}:{VERSION}": {forbidden_detail(violations)}'


# --- Go's helpers (policy/helpers.go, visitor.go) ---------------------------------------------------------

def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _join_quote(items: list[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def _go_quote(text: str) -> str:
    """fmt's %q for the strings a pod carries: Go escapes, printable characters kept."""
    escapes = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    out = []
    for ch in text:
        if ch in escapes:
            out.append(escapes[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _set(value: Any) -> bool:
    """A Go pointer or slice field that is set (present and not null)."""
    return value is not None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _containers(spec: Pod) -> list[Mapping[str, Any]]:
    """visitContainers: init containers, containers, then ephemeral containers."""
    return [_map(c) for key in ("initContainers", "containers", "ephemeralContainers") for c in spec.get(key) or []]


def _name(container: Mapping[str, Any]) -> str:
    return str(container.get("name") or "")


def _security_context(obj: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    sc = obj.get("securityContext")
    return _map(sc) if _set(sc) else None


def _windows(spec: Pod) -> bool:
    """pod.spec.os.name == windows: exempts the pod from the Linux-only restricted checks (their 1.25 versions)."""
    return _map(spec.get("os")).get("name") == "windows"


def _user_namespace(spec: Pod) -> bool:
    """helpers.go relaxPolicyForUserNamespacePod: hostUsers set to false."""
    return spec.get("hostUsers") is False


def _is_true(value: Any) -> bool:
    return value is True


def _setters(pod_bad: bool, containers: list[str]) -> list[str]:
    """"pod", "container \"a\"" / "containers \"a\", \"b\"": who set a forbidden value (joined with " and ")."""
    setters = ["pod"] if pod_bad else []
    if containers:
        setters.append(f"{_plural('container', 'containers', len(containers))} {_join_quote(containers)}")
    return setters


CheckFn = Callable[[Pod, Pod], Optional[tuple[str, str]]]
"""(pod metadata, pod spec) -> None when allowed, else (forbidden reason, forbidden detail)."""


# --- baseline --------------------------------------------------------------------------------------------

def _allowed_app_armor_annotation(value: Any) -> bool:
    return not value or value == "runtime/default" or str(value).startswith("localhost/")


def app_armor_profile(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_appArmorProfile.go appArmorProfile_1_0: the profile types of pod and containers, and the deprecated
    # per-container annotations, may only name the runtime default or a localhost profile.
    allowed = ("RuntimeDefault", "Localhost")
    bad_values: set[str] = set()
    pod_profile = (_security_context(spec) or {}).get("appArmorProfile")
    pod_bad = _set(pod_profile) and _map(pod_profile).get("type") not in allowed
    if pod_bad:
        bad_values.add(str(_map(pod_profile).get("type") or ""))
    bad_containers = []
    for c in _containers(spec):
        profile = (_security_context(c) or {}).get("appArmorProfile")
        if _set(profile) and _map(profile).get("type") not in allowed:
            bad_containers.append(_name(c))
            bad_values.add(str(_map(profile).get("type") or ""))
    setters = _setters(pod_bad, bad_containers)
    prefix = "container.apparmor.security.beta.kubernetes.io/"
    annotations = sorted(f"{k}={_go_quote(str(v))}" for k, v in _map(meta.get("annotations")).items()
                         if k.startswith(prefix) and not _allowed_app_armor_annotation(v))
    values = sorted(bad_values) + annotations
    if annotations:
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if setters:
        return (_plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
                f"{' and '.join(setters)} must not set AppArmor profile type to {_join_quote(values)}")
    return None


_DEFAULT_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                                   "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def capabilities_baseline(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_capabilities_baseline.go capabilitiesBaseline_1_0: only the container runtime's default set may be added.
    bad_containers, added = [], set()
    for c in _containers(spec):
        sc = _security_context(c)
        if sc is None or not _set(sc.get("capabilities")):
            continue
        extra = [str(cap) for cap in _map(sc.get("capabilities")).get("add") or [] if cap not in _DEFAULT_CAPABILITIES]
        if extra:
            bad_containers.append(_name(c))
            added.update(extra)
    if bad_containers:
        return ("non-default capabilities", f"{_plural('container', 'containers', len(bad_containers))} {_join_quote(bad_containers)} "
                f"must not include {_join_quote(sorted(added))} in securityContext.capabilities.add")
    return None


def host_namespaces(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_hostNamespaces.go hostNamespaces_1_0
    used = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if _is_true(spec.get(key))]
    return ("host namespaces", ", ".join(used)) if used else None


def host_path_volumes(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_hostPathVolumes.go hostPathVolumes_1_0
    names = [str(_map(v).get("name") or "") for v in spec.get("volumes") or [] if _set(_map(v).get("hostPath"))]
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)}") if names else None


def host_ports(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_hostPorts.go hostPorts_1_0: the ports are listed as sorted strings (sets.String.List).
    bad_containers, ports = [], set()
    for c in _containers(spec):
        used = [str(p.get("hostPort")) for p in (_map(p) for p in c.get("ports") or []) if p.get("hostPort") not in (None, 0)]
        if used:
            bad_containers.append(_name(c))
            ports.update(used)
    if bad_containers:
        return ("hostPort", f"{_plural('container', 'containers', len(bad_containers))} {_join_quote(bad_containers)} "
                f"{_plural('uses', 'use', len(bad_containers))} {_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")
    return None


def host_probes_and_host_lifecycle(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_hostProbesAndhostLifecycle.go hostProbesAndHostLifecycleV1Dot34: no probe or lifecycle handler may
    # name a host (httpGet.host, tcpSocket.host); containers and hosts are listed sorted and once each.
    bad_containers, hosts = set(), set()
    for c in _containers(spec):
        lifecycle = _map(c.get("lifecycle"))
        handlers = [_map(c.get(k)) for k in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [_map(lifecycle.get(k)) for k in ("postStart", "preStop")]
        for handler in handlers:
            for action in ("httpGet", "tcpSocket"):
                host = _map(handler.get(action)).get("host")
                if host:
                    bad_containers.add(_name(c))
                    hosts.add(str(host))
    if bad_containers:
        return ("probe or lifecycle host",
                f"{_plural('container', 'containers', len(bad_containers))} {_join_quote(sorted(bad_containers))} "
                f"{_plural('uses', 'use', len(bad_containers))} "
                f"{_plural('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} {_join_quote(sorted(hosts))}")
    return None


def privileged(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_privileged.go privileged_1_0
    bad = [_name(c) for c in _containers(spec) if _is_true((_security_context(c) or {}).get("privileged"))]
    if bad:
        return ("privileged", f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} must not set securityContext.privileged=true")
    return None


def _proc_mount_unmasked(spec: Pod) -> Optional[tuple[str, str]]:
    # check_procMount_baseline.go procMount_1_0: a procMount other than Default.
    bad, types = [], set()
    for c in _containers(spec):
        value = (_security_context(c) or {}).get("procMount")
        if value is not None and value != "Default":
            bad.append(_name(c))
            types.add(str(value))
    if bad:
        return ("procMount", f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} must not set securityContext.procMount to "
                f"{_join_quote(sorted(types))}")
    return None


def proc_mount(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_procMount_baseline.go procMount1_35baseline: any procMount in a user namespace (hostUsers: false).
    return None if _user_namespace(spec) else _proc_mount_unmasked(spec)


_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})


def se_linux_options(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_seLinuxOptions.go seLinuxOptions1_31: a type from the container types only; no user, no role.
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(opts: Mapping[str, Any]) -> bool:
        ok = True
        if str(opts.get("type") or "") not in _SELINUX_TYPES:
            ok = False
            bad_types.add(str(opts.get("type") or ""))
        for key in ("user", "role"):
            if opts.get(key):
                ok = False
                flags[key] = True
        return ok

    pod_sc = _security_context(spec)
    pod_bad = pod_sc is not None and _set(pod_sc.get("seLinuxOptions")) and not valid(_map(pod_sc.get("seLinuxOptions")))
    bad = [_name(c) for c in _containers(spec)
           if (sc := _security_context(c)) is not None and _set(sc.get("seLinuxOptions")) and not valid(_map(sc.get("seLinuxOptions")))]
    setters = _setters(pod_bad, bad)
    if setters:
        data = [f"{_plural('type', 'types', len(bad_types))} {_join_quote(sorted(bad_types))}"] if bad_types else []
        data += [f"{key} may not be set" for key in ("user", "role") if flags[key]]
        return ("seLinuxOptions", f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}")
    return None


_SECCOMP_TYPES = ("RuntimeDefault", "Localhost")


def seccomp_profile_baseline(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_seccompProfile_baseline.go seccompProfileBaseline_1_19: a profile, where set, is the runtime default
    # or a localhost one (the 1.0 check of the alpha annotations applies only to versions before 1.19).
    bad_values: set[str] = set()
    pod_profile = (_security_context(spec) or {}).get("seccompProfile")
    pod_bad = _set(pod_profile) and _map(pod_profile).get("type") not in _SECCOMP_TYPES
    if pod_bad:
        bad_values.add(str(_map(pod_profile).get("type") or ""))
    bad = []
    for c in _containers(spec):
        profile = (_security_context(c) or {}).get("seccompProfile")
        if _set(profile) and _map(profile).get("type") not in _SECCOMP_TYPES:
            bad.append(_name(c))
            bad_values.add(str(_map(profile).get("type") or ""))
    setters = _setters(pod_bad, bad)
    if setters:
        return ("seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_join_quote(sorted(bad_values))}")
    return None


# check_sysctls.go sysctlsV1Dot32: the namespaced, isolated sysctls.
_SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
})


def sysctls(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_sysctls.go sysctlsV1Dot32: listed in the pod's order, repeats kept.
    names = [str(_map(s).get("name") or "") for s in (_security_context(spec) or {}).get("sysctls") or []]
    bad = [n for n in names if n not in _SAFE_SYSCTLS]
    return ("forbidden sysctls", ", ".join(bad)) if bad else None


def windows_host_process(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_windowsHostProcess.go windowsHostProcess_1_0
    def host_process(sc: Optional[Mapping[str, Any]]) -> bool:
        return sc is not None and _is_true(_map(sc.get("windowsOptions")).get("hostProcess"))

    bad = [_name(c) for c in _containers(spec) if host_process(_security_context(c))]
    setters = _setters(host_process(_security_context(spec)), bad)
    if setters:
        return ("hostProcess", f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true")
    return None


# --- restricted ------------------------------------------------------------------------------------------

def allow_privilege_escalation(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_allowPrivilegeEscalation.go allowPrivilegeEscalation_1_25: every container sets it to false
    # (Windows pods exempt).
    if _windows(spec):
        return None
    bad = [_name(c) for c in _containers(spec) if (_security_context(c) or {}).get("allowPrivilegeEscalation") is not False]
    if bad:
        return ("allowPrivilegeEscalation != false",
                f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} must set securityContext.allowPrivilegeEscalation=false")
    return None


def capabilities_restricted(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_capabilities_restricted.go capabilitiesRestricted_1_25: every container drops ALL and adds at most
    # NET_BIND_SERVICE (Windows pods exempt).
    if _windows(spec):
        return None
    missing_drop, adding, added = [], [], set()
    for c in _containers(spec):
        sc = _security_context(c)
        if sc is None or not _set(sc.get("capabilities")):
            missing_drop.append(_name(c))
            continue
        caps = _map(sc.get("capabilities"))
        if "ALL" not in (caps.get("drop") or []):
            missing_drop.append(_name(c))
        extra = [str(cap) for cap in caps.get("add") or [] if cap != "NET_BIND_SERVICE"]
        if extra:
            adding.append(_name(c))
            added.update(extra)
    details = []
    if missing_drop:
        details.append(f'{_plural("container", "containers", len(missing_drop))} {_join_quote(missing_drop)} must set '
                       'securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_plural('container', 'containers', len(adding))} {_join_quote(adding)} must not include "
                       f"{_join_quote(sorted(added))} in securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


def proc_mount_restricted(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_procMount_restricted.go: procMount_1_0 whatever hostUsers says.
    return _proc_mount_unmasked(spec)


# check_restrictedVolumes.go restrictedVolumes_1_0: the allowed inline sources, then the forbidden ones in the
# order the Go switch names them (the first one set is the volume's type).
_ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret")
_FORBIDDEN_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
                      "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
                      "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")


def restricted_volumes(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    bad, types = [], set()
    for v in (_map(v) for v in spec.get("volumes") or []):
        if any(_set(v.get(k)) for k in _ALLOWED_VOLUMES):
            continue
        bad.append(str(v.get("name") or ""))
        types.add(next((k for k in _FORBIDDEN_VOLUMES if _set(v.get(k))), "unknown"))
    if bad:
        return ("restricted volume types",
                f"{_plural('volume', 'volumes', len(bad))} {_join_quote(bad)} {_plural('uses', 'use', len(bad))} "
                f"{_plural('restricted volume type', 'restricted volume types', len(types))} {_join_quote(sorted(types))}")
    return None


def run_as_non_root(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_runAsNonRoot.go runAsNonRoot1_35: true on the pod or on every container; anything in a user namespace.
    if _user_namespace(spec):
        return None
    pod_value = (_security_context(spec) or {}).get("runAsNonRoot")
    pod_bad, pod_non_root = pod_value is False, pod_value is True
    explicit, implicit = [], []
    for c in _containers(spec):
        value = (_security_context(c) or {}).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicit.append(_name(c))
        elif not pod_non_root:
            implicit.append(_name(c))
    setters = _setters(pod_bad, explicit)
    if setters:
        return ("runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false")
    if implicit:
        return ("runAsNonRoot != true", f"pod or {_plural('container', 'containers', len(implicit))} {_join_quote(implicit)} "
                "must set securityContext.runAsNonRoot=true")
    return None


def run_as_user(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_runAsUser.go runAsUser1_35: no runAsUser 0 (root); anything in a user namespace.
    if _user_namespace(spec):
        return None

    def root(sc: Optional[Mapping[str, Any]]) -> bool:
        value = (sc or {}).get("runAsUser")
        return isinstance(value, int) and not isinstance(value, bool) and value == 0

    setters = _setters(root(_security_context(spec)), [_name(c) for c in _containers(spec) if root(_security_context(c))])
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def seccomp_profile_restricted(meta: Pod, spec: Pod) -> Optional[tuple[str, str]]:
    # check_seccompProfile_restricted.go seccompProfileRestricted_1_25: RuntimeDefault or Localhost on the pod or on
    # every container (Windows pods exempt).
    if _windows(spec):
        return None
    bad_values: set[str] = set()
    pod_profile = (_security_context(spec) or {}).get("seccompProfile")
    pod_bad = pod_set = False
    if _set(pod_profile):
        if _map(pod_profile).get("type") not in _SECCOMP_TYPES:
            pod_bad = True
            bad_values.add(str(_map(pod_profile).get("type") or ""))
        else:
            pod_set = True
    explicit, implicit = [], []
    for c in _containers(spec):
        profile = (_security_context(c) or {}).get("seccompProfile")
        if _set(profile):
            if _map(profile).get("type") not in _SECCOMP_TYPES:
                explicit.append(_name(c))
                bad_values.add(str(_map(profile).get("type") or ""))
        elif not pod_set:
            implicit.append(_name(c))
    setters = _setters(pod_bad, explicit)
    if setters:
        return ("seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_join_quote(sorted(bad_values))}")
    if implicit:
        return ("seccompProfile", f"pod or {_plural('container', 'containers', len(implicit))} {_join_quote(implicit)} must set "
                'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
    return None


# Check ID -> its newest version, per level (registry.go).
BASELINE_CHECKS: dict[str, CheckFn] = {
    "appArmorProfile": app_armor_profile,
    "capabilities_baseline": capabilities_baseline,
    "hostNamespaces": host_namespaces,
    "hostPathVolumes": host_path_volumes,
    "hostPorts": host_ports,
    "hostProbesAndHostLifecycle": host_probes_and_host_lifecycle,
    "privileged": privileged,
    "procMount": proc_mount,
    "seLinuxOptions": se_linux_options,
    "seccompProfile_baseline": seccomp_profile_baseline,
    "sysctls": sysctls,
    "windowsHostProcess": windows_host_process,
}
RESTRICTED_CHECKS: dict[str, CheckFn] = {
    "allowPrivilegeEscalation": allow_privilege_escalation,
    "capabilities_restricted": capabilities_restricted,
    "procMount_restricted": proc_mount_restricted,
    "restrictedVolumes": restricted_volumes,
    "runAsNonRoot": run_as_non_root,
    "runAsUser": run_as_user,
    "seccompProfile_restricted": seccomp_profile_restricted,
}
# OverrideCheckIDs of the restricted checks' newest versions: the baseline check each one replaces.
OVERRIDES = {"capabilities_restricted": "capabilities_baseline", "procMount_restricted": "procMount",
             "restrictedVolumes": "hostPathVolumes", "seccompProfile_restricted": "seccompProfile_baseline"}


def checks(level: str) -> list[tuple[str, CheckFn]]:
    """The checks `level` runs at `latest`, in the evaluator's order (Go's byte-wise sort of the IDs)."""
    if level not in LEVELS:
        raise ValueError(f"{level!r} is not a Pod Security level; valid: {', '.join(LEVELS)}")
    if level == "privileged":
        return []
    baseline = sorted(BASELINE_CHECKS.items())
    if level == "baseline":
        return baseline
    overridden = set(OVERRIDES.values())
    return [(k, f) for k, f in baseline if k not in overridden] + sorted(RESTRICTED_CHECKS.items())


# --- What the API server does to a pod before PodSecurity sees it -----------------------------------------

_APP_ARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def _app_armor_field(annotation: str) -> Optional[dict[str, str]]:
    """pkg/api/pod/util.go ApparmorFieldForAnnotation, then pkg/apis/core/validation ValidateAppArmorProfileField
    (an invalid result is not copied)."""
    if annotation == "unconfined":
        return {"type": "Unconfined"}
    if annotation == "runtime/default":
        return {"type": "RuntimeDefault"}
    name = annotation.removeprefix("localhost/")
    if annotation.startswith("localhost/") and name and name == name.strip() and len(name) <= 4095:
        return {"type": "Localhost", "localhostProfile": name}
    return None


def as_created(metadata: Pod, spec: Pod) -> dict[str, Any]:
    """The pod spec as PodSecurity admission sees it on create (kubernetes v1.36.3): defaulted, then prepared.

    - pkg/apis/core/v1/defaults.go SetDefaults_Pod: with hostNetwork, every port of a container or init container
      without a hostPort gets its containerPort as hostPort (a Pod's default, not a template's: the pods a controller
      makes from a template get it);
    - pkg/registry/core/pod/strategy.go applyAppArmorVersionSkew (not for Windows pods): a container's deprecated
      AppArmor annotation becomes its securityContext.appArmorProfile when it sets none and the value differs
      from the pod's profile."""
    out = {**spec}
    for key in ("initContainers", "containers", "ephemeralContainers"):
        if isinstance(spec.get(key), list):
            out[key] = [{**_map(c)} for c in spec[key]]
    if _is_true(spec.get("hostNetwork")):
        for c in (c for key in ("initContainers", "containers") for c in out.get(key) or []):
            if isinstance(c.get("ports"), list):
                c["ports"] = [{**_map(p), "hostPort": _map(p).get("containerPort")} if _map(p).get("hostPort") in (None, 0) else p
                              for p in c["ports"]]
    if not _windows(spec):
        annotations = _map(metadata.get("annotations"))
        pod_profile = _map((_security_context(spec) or {}).get("appArmorProfile"))
        for c in (c for key in ("initContainers", "containers", "ephemeralContainers") for c in out.get(key) or []):
            annotation = annotations.get(_APP_ARMOR_ANNOTATION + _name(c))
            if annotation is None or _set((_security_context(c) or {}).get("appArmorProfile")):
                continue
            profile = _app_armor_field(str(annotation))
            same_as_pod = profile is not None and _set((_security_context(spec) or {}).get("appArmorProfile")) and \
                {k: v for k, v in pod_profile.items() if v is not None} == profile
            if profile is not None and not same_as_pod:
                c["securityContext"] = {**_map(c.get("securityContext")), "appArmorProfile": profile}
    return out


def check_pod(level: str, metadata: Pod, spec: Pod) -> list[PodSecurityViolation]:
    """The checks a pod (its metadata and spec, as written) fails at `level` once the API server has defaulted and
    prepared it (as_created), in the API server's order; [] when admitted."""
    found = []
    prepared = as_created(_map(metadata), _map(spec))
    for check_id, check in checks(level):
        result = check(_map(metadata), prepared)
        if result is not None:
            found.append(PodSecurityViolation(check_id, *result))
    return found


# --- Which pods an object makes, and what its namespace enforces -------------------------------------------

DEFAULT_LEVEL = "privileged"
"""What a namespace without an enforce label gets (admission/api/v1/defaults.go SetDefaults_PodSecurityDefaults;
GKE keeps the default)."""
ENFORCE_LABEL = f"{PSA}/enforce"
ENFORCE_VERSION_LABEL = f"{PSA}/enforce-version"

# kind -> path of its pod template (admission/admission.go DefaultPodSpecExtractor for the built-in kinds).
_TEMPLATE_PATHS = {
    "PodTemplate": ("template",), "ReplicationController": ("spec", "template"), "ReplicaSet": ("spec", "template"),
    "Deployment": ("spec", "template"), "DaemonSet": ("spec", "template"), "StatefulSet": ("spec", "template"),
    "Job": ("spec", "template"), "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def pod_templates(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """(path, pod metadata, pod spec) of each pod `obj` is or makes: a Pod, the built-in workloads' templates, a
    JobSet's replicated jobs' pod templates and a LeaderWorkerSet's leader and worker templates (the CRD controllers
    create Jobs and StatefulSets from them, whose pods PodSecurity checks when they are created)."""
    kind, spec = obj.get("kind"), _map(obj.get("spec"))
    if kind == "Pod":
        return [("", _map(obj.get("metadata")), spec)]
    found: list[tuple[str, Any]] = []
    if kind in _TEMPLATE_PATHS:
        node: Any = obj
        for key in _TEMPLATE_PATHS[kind]:
            node = _map(node).get(key)
        found.append((".".join(_TEMPLATE_PATHS[kind]), node))
    elif kind == "JobSet":
        found += [(f"spec.replicatedJobs[{i}].template.spec.template", _map(_map(_map(rj).get("template")).get("spec")).get("template"))
                  for i, rj in enumerate(spec.get("replicatedJobs") or [])]
    elif kind == "LeaderWorkerSet":
        lwt = _map(spec.get("leaderWorkerTemplate"))
        found += [(f"spec.leaderWorkerTemplate.{role}", lwt.get(role)) for role in ("leaderTemplate", "workerTemplate")]
    # extractPodSpecFromTemplate: no template, no pod to check.
    return [(path, _map(_map(t).get("metadata")), _map(_map(t).get("spec"))) for path, t in found if t is not None]


@dataclass(frozen=True)
class NamespacePolicy:
    level: str
    version: str
    """The enforce-version label; only `latest` is implemented here (what psa_labels writes)."""


def namespace_policies(objects: Iterable[Mapping[str, Any]]) -> dict[str, NamespacePolicy]:
    """What each namespace the objects label (a Namespace, or a patch of one) enforces; an unknown level is enforced
    as `restricted` and an unknown version as `latest`, as the API server parses them (api/helpers.go ParseLevel,
    ParseVersion)."""
    policies = {}
    for obj in objects:
        if obj.get("kind") == "Namespace":
            meta = _map(obj.get("metadata"))
            labels = _map(meta.get("labels"))
            level = labels.get(ENFORCE_LABEL)
            if level is not None:
                policies[str(meta.get("name"))] = NamespacePolicy(level if level in LEVELS else "restricted",
                                                                  str(labels.get(ENFORCE_VERSION_LABEL) or VERSION))
    return policies
