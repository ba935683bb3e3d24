"""Ad-hoc runs on a stack's cluster: submit, list, logs, delete, describe, why, profile (docs/runs.md).

    python -m infra.run submit   --stack NAME [--spec FILE] [--name N --image I ...] [--dry-run] [-- COMMAND ...]
    python -m infra.run list     --stack NAME [--json]
    python -m infra.run logs     --stack NAME RUN [--follow]
    python -m infra.run delete   --stack NAME RUN
    python -m infra.run describe --stack NAME RUN [--out FILE]
    python -m infra.run why      --stack NAME RUN [-v] [--json]    (or --file JOBSET.yaml: would the cluster take it?)
    python -m infra.run profile  --stack NAME RUN [--duration 10s] [--token-file F]
    python -m infra.run notebook --stack NAME RUN [--port 8888]
    python -m infra.run teams    --stack NAME [--team T] [--month YYYY-MM] [--json]

Every command takes --team T: the team's namespace and queue (pathways:teams) instead of the stack's own; for
`teams`, that team's line only.

A run is a Pathways JobSet built from a small spec with the stack's own model, rules and builder, created with your
kubeconfig (kubectl) in the stack's namespace, on the stack's run queue (pathways:runs). It carries no Pulumi
ownership: `pulumi up` leaves it alone. Exit status: 0 done; 1 the cluster refused or the run was not found;
2 an invalid spec, flag or stack file (one 'error:' line per problem).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

import yaml

from components.manifests.kueue_api import MAX_EXEC_TIME_LABEL
from components.model.workloads.ports import NOTEBOOK_PORT
from components.model.workloads.runs import TIME_LIMIT_KEY, time_limit
from infra.offline.stackfile import STACK_NAME, StackFileError, load_config, raw_values, shown, stack_name_for, stack_names, stack_path
from infra.run import hints, notebook_auth, notebook_save, submit_notes
from infra.run.cli import FLAG_KEYS, STACK_CONFIG_ENV, parser
from infra.run.kube import Kubectl, KubeError
from infra.run.logs import logs_command
from infra.run.notebook_save import SAVE_ANNOTATION
from infra.run.stack_args import INVOCATION, again, invocation, team_namespace
from infra.run.status import positions, rows, table

# JupyterLab on the head's loopback (the pod is hostNetwork), reached by `kubectl port-forward`; its login is a password
# made by `submit` on the researcher's machine (infra/run/notebook_auth.py), never a token in the pod's log.
NOTEBOOK_COMMAND = ["jupyter", "lab", "--ip=127.0.0.1", f"--port={NOTEBOOK_PORT}", "--no-browser"]
NOTEBOOK_ANNOTATION = "pathways/notebook-port"
IDLE_STOP_ANNOTATION = "pathways/notebook-idle-stop-seconds"
EXIT_CLUSTER = 1
EXIT_INVALID = 2
EXIT_WORKDIR = 4


class WorkdirShipError(KubeError):
    """The run's JobSet was made but its --workdir code could not be (exit 4): the JobSet is deleted again."""


def notebook_command(idle_stop_seconds: int) -> list[str]:
    """JupyterLab on the head's loopback; with an idle stop, Jupyter's own: kernels idle that long are culled (even
    with a browser tab open), then the server, without kernels or activity that long, exits 0 (jupyter_server 2.x
    ServerApp.shutdown_no_activity_timeout, MappingKernelManager.cull_*): the head's program ends, the JobSet completes
    and Kueue gives the slice back."""
    if idle_stop_seconds <= 0:
        return list(NOTEBOOK_COMMAND)
    return [*NOTEBOOK_COMMAND, f"--ServerApp.shutdown_no_activity_timeout={idle_stop_seconds}",
            f"--MappingKernelManager.cull_idle_timeout={idle_stop_seconds}", "--MappingKernelManager.cull_connected=True",
            f"--MappingKernelManager.cull_interval={min(300, max(60, idle_stop_seconds // 4))}"]


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors and aliases: the builders share dicts, a reader should not have to follow &id001."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _stack(args: argparse.Namespace) -> Any:
    """The stack's validated model (the stack file's own problems, if any, as for `plan`)."""
    from components.model.config import load

    if args.stack is not None and (not STACK_NAME.fullmatch(args.stack) or args.stack.startswith(".")):
        raise StackFileError(f"--stack {args.stack[:60]!r} is not a stack name; use letters, digits, '-', '_', '.' (stacks: {', '.join(stack_names())})")
    path = stack_path(args.stack) if args.stack else args.config or (Path(os.environ[STACK_CONFIG_ENV]) if os.environ.get(STACK_CONFIG_ENV) else None)
    if path is None:
        raise StackFileError(f"which stack? give --config FILE (its stack file), --stack NAME in the infrastructure checkout, "
                             f"or set {STACK_CONFIG_ENV}=FILE")
    if args.stack and not path.parent.is_dir():
        raise StackFileError(f"--stack {args.stack}: no stacks/ folder here ({shown(path.parent)}): this client runs outside the "
                             f"infrastructure checkout; give the stack file with --config FILE or {STACK_CONFIG_ENV}=FILE")
    config, secret_keys = load_config(path)
    return load(raw_values(config), args.stack or stack_name_for(path), frozenset(secret_keys))


def _spec(args: argparse.Namespace, idle_default: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if args.spec is not None:
        try:
            loaded = yaml.safe_load(args.spec.read_text(encoding="utf-8"))
        except OSError as e:
            raise StackFileError(f"--spec {shown(args.spec)}: cannot read it: {e.strerror}") from None
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise StackFileError(f"--spec {shown(args.spec)}: not YAML: {str(e).splitlines()[0]}") from None
        if not isinstance(loaded, dict):
            raise StackFileError(f"--spec {shown(args.spec)}: a run spec is a mapping of keys (name, image, command, ...)")
        spec.update(loaded)
    for attr, key in FLAG_KEYS.items():
        value = getattr(args, attr)
        if value is not None:
            spec[key] = value
    if args.env:
        if not isinstance(spec.get("env") or {}, dict):
            raise StackFileError(f"--spec {shown(args.spec)}: env is a mapping of NAME: value")
        env = dict(spec.get("env") or {})
        for item in args.env:
            name, sep, value = item.partition("=")
            if not sep:
                raise StackFileError(f"--env {item[:60]!r} is not NAME=VALUE")
            env[name] = value
        spec["env"] = env
    if args.mount:
        if not isinstance(spec.get("mounts") or [], list):
            raise StackFileError(f"--spec {shown(args.spec)}: mounts is a list of {{path, bucket or fileSystem}}")
        spec["mounts"] = [*(spec.get("mounts") or []), *(_mount(item) for item in args.mount)]
    command = list(args.command_)
    if command and command[0] == "--":
        command = command[1:]
    if args.ttl is not None:
        spec["ttlSecondsAfterFinished"] = args.ttl
    if args.time_limit is not None:
        spec[TIME_LIMIT_KEY] = args.time_limit
    for flag, what, value in (("--idle-stop", "stops an idle notebook", args.idle_stop), ("--save-to", "keeps a notebook's files", args.save_to)):
        if value is not None and not args.notebook:
            raise StackFileError(f"{flag} {what}: give it with --notebook")
    if args.notebook:
        if command or "command" in spec or spec.get("mode", "batch") != "batch":
            raise StackFileError("--notebook runs JupyterLab as the program of a batch run: give no command or mode")
        command = notebook_command(args.idle_stop if args.idle_stop is not None else idle_default)
    if command:
        spec["command"] = command
    return spec


def _mount(item: str) -> dict[str, Any]:
    """--mount PATH=gs://BUCKET[:rw] or PATH=NAME[:rw] (a pathways:storage file system) as a mounts entry."""
    path, sep, source = item.partition("=")
    if not sep or not path or not source:
        raise StackFileError(f"--mount {item[:60]!r} is not PATH=SOURCE (e.g. /data=gs://my-data or /shared=shared:rw)")
    scheme = "gs://" if source.startswith("gs://") else ""
    name, _, mode = source[len(scheme):].partition(":")
    if mode not in ("", "rw", "ro"):
        raise StackFileError(f"--mount {item[:60]!r}: {mode!r} is not a mode; use :rw to write, or nothing (read-only)")
    mount: dict[str, Any] = {"path": path, "readOnly": mode != "rw"}
    mount["bucket" if scheme else "fileSystem"] = name.rstrip("/")
    return mount


def _run_jobset(cfg: Any, spec: dict[str, Any], submitted_by: str, notebook: bool = False, saves_to: Optional[str] = None) -> dict[str, Any]:
    from components.manifests.admission import check_jobset
    from components.manifests.runs import run_jobset
    from components.model.config import ConfigError, as_run, load_run, resolve
    from components.model.errors import Problem

    spec = dict(spec)
    limit = time_limit(spec.pop(TIME_LIMIT_KEY, None), bool(cfg.kubernetes.kueue.enabled))
    with_run = load_run(cfg, spec)
    stack = resolve(with_run)
    run = stack.workloads[-1]
    obj = run_jobset(stack, as_run(stack, run), submitted_by)
    if limit is not None:
        obj["metadata"]["labels"][MAX_EXEC_TIME_LABEL] = str(limit)
    if notebook:
        idle = next((int(a.split("=", 1)[1]) for a in spec.get("command") or [] if a.startswith("--ServerApp.shutdown_no_activity_timeout=")), 0)
        obj["metadata"]["annotations"] = {**obj["metadata"].get("annotations", {}), NOTEBOOK_ANNOTATION: str(NOTEBOOK_PORT),
                                          IDLE_STOP_ANNOTATION: str(idle), **({SAVE_ANNOTATION: saves_to} if saves_to else {})}
    report = check_jobset(obj)
    if report.violations:
        raise ConfigError([Problem("run", str(v)) for v in report.violations])
    return obj


def _notebook_image(args: argparse.Namespace, cfg: Any) -> int:
    from infra.notebook_image import NotebookImageError, build_command, default_image

    try:
        print(default_image(cfg))
        print(f"  build it (Cloud Build; once per recipe change): {build_command(cfg)}", file=sys.stderr)
    except NotebookImageError as e:
        raise StackFileError(str(e)) from None
    return 0


def _secret_notes(spec: dict[str, Any]) -> list[str]:
    """A plain value that looks like a secret (security #73.15): a run's env and args are in its JobSet, readable by
    everyone who may read runs in the namespace, and in the API server's audit log."""
    from components.model.workloads.secrets import secret_looking_env

    names = [n for n, v in (spec.get("env") or {}).items() if secret_looking_env(str(n), v)]
    return [f"note: --env {n} looks like a secret: a run's env is written into its JobSet in plain text, which everyone who "
            "may read runs in the namespace reads; a run cannot read a Kubernetes Secret (pathways-runs-only), so give the "
            "program a reference it resolves itself (e.g. a Secret Manager name it reads as the node identity), or make "
            "it a declared workload with `pulumi config set --secret` (docs/runs.md)" for n in names]


def _submit(args: argparse.Namespace, cfg: Any) -> int:
    spec = _spec(args, cfg.runs.notebook_idle_stop_seconds if cfg.runs is not None else 0)
    for note in _secret_notes(spec):
        print(note, file=sys.stderr)
    if (args.notebook or args.workdir is not None) and not spec.get("image"):
        from infra.notebook_image import NotebookImageError, default_image

        try:
            # the recipe's (jax and pathwaysutils at the stack's release), built by Cloud Build (notebook-image): with
            # --workdir the code is all that changes between runs (#74.3)
            spec["image"] = default_image(cfg)
        except NotebookImageError as e:
            raise StackFileError(str(e)) from None
    packed = _workdir(args, cfg)
    notes = submit_notes.notes(spec, [f for f, _ in packed.files] if packed else None, cfg.jax_version, args.notebook)
    password = saved = None
    if args.notebook:  # JupyterLab gets the hash only (security #73.16)
        password = notebook_auth.new_password()
        spec["command"] = [*spec["command"], *notebook_auth.jupyter_flags(notebook_auth.hashed(password))]
        spec, saved = notebook_save.for_submit(cfg, spec, args.save_to, notes)
    if args.dry_run:
        obj = _with_workdir(_run_jobset(cfg, spec, "", args.notebook, saved), packed)
        for line in [*submit_notes.dry_run_summary(cfg, obj, f"{shown(args.workdir)} ({len(packed.files)} files)" if packed else None),
                     *notes]:  # once the run is valid: what it is, then what it accepted
            print(line, file=sys.stderr)
        sys.stdout.write(yaml.dump(obj, Dumper=_PlainDumper, sort_keys=False))
        if password is not None:
            print(f"the notebook's password (JupyterLab holds its hash only): {password}", file=sys.stderr)
        if packed is not None:
            print(f"--workdir {shown(args.workdir)} ships {packed.summary()}:", file=sys.stderr)
            for rel, size in packed.files[:50]:
                print(f"  {rel} ({size:,} bytes)", file=sys.stderr)
            if len(packed.files) > 50:
                print(f"  ... and {len(packed.files) - 50} more", file=sys.stderr)
        return 0
    kube = Kubectl(args.kubeconfig, args.context)
    obj = _with_workdir(_run_jobset(cfg, spec, kube.whoami(), args.notebook, saved), packed)
    for note in notes:
        print(note, file=sys.stderr)
    name, ns = obj["metadata"]["name"], obj["metadata"]["namespace"]
    created = kube.create(obj)
    kept = notebook_auth.remember(cfg.stack, ns, name, password) if password is not None else None
    if packed is not None:
        from infra.run.workdir import config_map

        # after the JobSet, owned by it: the garbage collector removes the code with the run (the head's pod waits
        # for its volume until then). If it cannot be made, the run goes: no run waits on code that is not its own
        # (the head checks the digest too, security #73.4).
        try:
            kube.create(config_map(name, ns, packed, created["metadata"]["uid"]))
        except KubeError as e:
            kube.delete_jobset(ns, name)
            raise WorkdirShipError(f"run {name}'s code was not shipped, so the run was deleted and nothing ran: {e}") from None
        print(f"  its code: {shown(args.workdir)}, {packed.summary()}")
    queue = obj["metadata"]["labels"].get("kueue.x-k8s.io/queue-name")
    team = f" --team {spec['team']}" if spec.get("team") else ""
    print(f"run {name} submitted to {ns}" + (f" on queue {queue}" if queue else ""))
    print(f"  where it stands: {again('list', cfg.stack)}{team}")
    print(f"  its output:      {again('logs', cfg.stack)}{team} {name} --follow")
    if args.notebook:
        print(f"  the notebook:    {again('notebook', cfg.stack)}{team} {name}  (it prints the address and the "
              f"password, kept for you alone in {shown(kept) if kept else 'your config directory'})")
        if saved:
            print(f"  its files:       saved to {saved}<time>/ when it stops (idle, deleted, preempted)")
    elif spec.get("mode") == "interactive":
        from components.manifests.connection import interactive_access
        from components.model.config import load_run, resolve

        access = interactive_access(resolve(load_run(cfg, spec)).workloads[-1], cfg.stack)
        print(f"  clients in the VPC: {access['clientEnv']}")
    return 0


def _workdir(args: argparse.Namespace, cfg: Any) -> Any:
    from infra.run.workdir import WorkdirError, for_submit

    try:
        return for_submit(args.workdir, tuple(args.exclude), cfg.fleet is not None and cfg.fleet.role == "manager", args.notebook)
    except WorkdirError as e:
        raise StackFileError(str(e)) from None


def _with_workdir(obj: dict[str, Any], packed: Any) -> dict[str, Any]:
    from infra.run.workdir import WorkdirError, checked_with_workdir

    try:
        return obj if packed is None else checked_with_workdir(obj, packed)
    except WorkdirError as e:
        raise StackFileError(str(e)) from None


def _cluster(args: argparse.Namespace, cfg: Any) -> tuple[Kubectl, str]:
    """kubectl with the user's kubeconfig, and the namespace where the runs live: the stack's, or --team's."""
    return Kubectl(args.kubeconfig, args.context), team_namespace(args, cfg)


def _list(args: argparse.Namespace, cfg: Any) -> int:
    from components.model.config import resolve
    from infra.run.gather import evidence, snapshot, stack_view
    from infra.run.why import diagnose

    kube, ns = _cluster(args, cfg)
    kueue = cfg.kubernetes.kueue.enabled
    snap = snapshot(kube, ns, kueue)
    view = stack_view(resolve(cfg), getattr(args, "team", None))
    reasons = {j["metadata"]["name"]: diagnose(evidence(snap, j["metadata"]["name"]), view).reason for j in snap.jobsets}
    pending = [p for items in snap.pending.values() for p in items]
    found = rows(snap.jobsets, snap.workloads, positions(pending), kueue, time.time(), reasons, snap.events)
    if args.json:
        for r in found:
            print(json.dumps(r.to_json(), sort_keys=True))
    else:
        sys.stdout.write(table(found) if found else f"no JobSets in namespace {ns}\n")
    for line in snap.unread:
        print(f"note: not read: {line}", file=sys.stderr)
    return 0


def _why(args: argparse.Namespace, cfg: Any) -> int:
    from components.model.config import resolve
    from infra.run.gather import evidence, snapshot, stack_view
    from infra.run.refusals import file_verdict
    from infra.run.why import diagnose

    kube, ns = _cluster(args, cfg)
    view = stack_view(resolve(cfg), getattr(args, "team", None))
    if args.file is not None:
        try:
            objs = [o for o in yaml.safe_load_all(args.file.read_text(encoding="utf-8")) if o]
        except OSError as e:
            raise StackFileError(f"--file {shown(args.file)}: cannot read it: {e.strerror}") from None
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise StackFileError(f"--file {shown(args.file)}: not YAML: {str(e).splitlines()[0]}") from None
        if not objs or not all(isinstance(o, dict) for o in objs):
            raise StackFileError(f"--file {shown(args.file)}: no Kubernetes object in it")
        answers = [file_verdict(o, kube.refusal({**o, "metadata": {"namespace": ns, **(o.get("metadata") or {})}}), view) for o in objs]
    else:
        snap = snapshot(kube, ns, cfg.kubernetes.kueue.enabled, only=args.run)
        answers = [diagnose(evidence(snap, args.run), view)]
        if snap.unread:
            answers = [dataclasses.replace(answers[0], detail=(*answers[0].detail, *(f"not read: {u}" for u in snap.unread)))]
    for d in answers:
        sys.stdout.write(json.dumps(d.to_json(), sort_keys=True) + "\n" if args.json else d.text(args.verbose))
    return 0


def _delete(args: argparse.Namespace, cfg: Any) -> int:
    from components.model.workloads.runs import MANAGED_BY_LABEL, RUN_MANAGER
    from infra.run.status import owner

    kube, ns = _cluster(args, cfg)
    if args.all:
        names = [j["metadata"]["name"] for j in kube.items("jobsets.jobset.x-k8s.io", ns, selector=f"{MANAGED_BY_LABEL}={RUN_MANAGER}")]
        for name in names:
            kube.delete_jobset(ns, name)
        print(f"deleted {len(names)} run(s) in {ns}" + (f": {', '.join(names)}" if names else ""))
        return 0
    jobset = kube.get_jobset(ns, args.run)
    if owner(jobset) != "run":
        raise KubeError(f"{args.run} is not an ad-hoc run: it is declared in the stack file and Pulumi manages it "
                        f"(set its state or remove it there, then pulumi up)")
    kube.delete_jobset(ns, args.run)
    print(f"run {args.run} deleted, with its Jobs and pods")
    return 0


def _describe(args: argparse.Namespace, cfg: Any) -> int:
    from infra.run.status import workload_of

    kube, ns = _cluster(args, cfg)
    jobset = kube.get_jobset(ns, args.run)
    workloads = kube.items("workloads.kueue.x-k8s.io", ns) if cfg.kubernetes.kueue.enabled else []
    workload = workload_of(jobset, workloads)
    pods = kube.items("pods", ns, selector=f"jobset.sigs.k8s.io/jobset-name={args.run}")
    names = {args.run, *(p["metadata"]["name"] for p in pods), *([workload["metadata"]["name"]] if workload else [])}
    names |= {r.get("name") for p in pods for r in p["metadata"].get("ownerReferences") or []}
    events = [e for e in kube.items("events", ns) if (e.get("involvedObject") or {}).get("name") in names]
    node_names = sorted({p["spec"].get("nodeName") for p in pods} - {None})
    nodes = [kube.get_node(n) for n in node_names]
    pending = {}
    if workload and (workload.get("spec") or {}).get("queueName"):
        answer = kube.pending_workloads(ns, workload["spec"]["queueName"])
        pending = {"pendingWorkloads": answer if isinstance(answer, list) else f"not answered: {answer}"}
    bundle = {"run": args.run, "namespace": ns, "stack": cfg.stack, "collected": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "jobset": jobset, "kueueWorkload": workload, **pending, "pods": pods,
              "events": sorted(events, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or ""), "nodes": nodes}
    out = args.out or Path(f"run-{args.run}-{time.strftime('%Y%m%dT%H%M%S')}.yaml")
    try:
        out.write_text(yaml.dump(bundle, Dumper=_PlainDumper, sort_keys=False), encoding="utf-8")
    except OSError as e:
        raise StackFileError(f"--out {shown(out)}: cannot write there: {e.strerror}") from None
    print(f"wrote {shown(out)}: the JobSet, its Kueue workload, {len(pods)} pod(s), {len(events)} event(s), {len(nodes)} node(s)")
    return 0


def _notebook(args: argparse.Namespace, cfg: Any) -> int:
    kube, ns = _cluster(args, cfg)
    jobset = kube.get_jobset(ns, args.run)
    port = ((jobset.get("metadata") or {}).get("annotations") or {}).get(NOTEBOOK_ANNOTATION)
    if port is None:
        raise KubeError(f"run {args.run} is not a notebook run (submit it with --notebook)")
    pod = kube.head_pod(ns, args.run)
    if pod is None or (pod.get("status") or {}).get("phase") != "Running":
        raise KubeError(f"run {args.run}'s head is not running yet; `{again('list', cfg.stack)}` says where it stands")
    password = notebook_auth.recall(cfg.stack, ns, args.run)
    login = (f"password {password}" if password is not None else
             f"the password `submit` kept where it ran ({shown(notebook_auth.store())}/{cfg.stack}/{ns}/{args.run})")
    saves = ((jobset.get("metadata") or {}).get("annotations") or {}).get(SAVE_ANNOTATION)
    print(f"forwarding 127.0.0.1:{args.port} to JupyterLab on {pod['metadata']['name']}: open http://127.0.0.1:{args.port}/lab, "
          f"{login}. Ctrl-C ends it." + (f" Its files are saved to {saves}<time>/ when it stops." if saves else
                                         " Its files are not kept when it stops (no --save-to bucket)."), flush=True)
    if not str(port).isdigit():
        raise KubeError(f"run {args.run}'s {NOTEBOOK_ANNOTATION} annotation {str(port)[:20]!r} is not a port")
    return kube.port_forward(ns, pod["metadata"]["name"], args.port, int(port))


def _profile(args: argparse.Namespace, cfg: Any) -> int:
    from infra.run.profile import profile_run

    if args.duration < 1:
        raise StackFileError("--duration 0 traces nothing; valid: 1s or more (10s, 2m)")
    kube, ns = _cluster(args, cfg)
    token = None
    if args.token_file is not None:
        try:
            token = args.token_file.read_text(encoding="utf-8").strip()
        except OSError as e:
            raise StackFileError(f"--token-file {shown(args.token_file)}: cannot read it: {e.strerror}") from None
    return profile_run(kube, ns, cfg.stack, args.run, args.duration, token)


def _teams(args: argparse.Namespace, cfg: Any) -> int:
    from components.model.config import resolve
    from infra.run.teams import month_bounds, report, report_table

    start, end = month_bounds(args.month, time.time())
    kube, stack = Kubectl(args.kubeconfig, args.context), resolve(cfg)
    found = report(kube, stack, start, min(end, time.time()), args.team)
    if args.json:
        for row in found:
            print(json.dumps(row, sort_keys=True))
    else:
        sys.stdout.write(report_table(found))
    return 0


def _fail(error: Exception, code: int) -> int:
    for line in str(error).splitlines():
        print(f"error: {line if line.isprintable() else repr(line)[1:-1]}", file=sys.stderr)
    return code


def main(argv: Optional[list[str]] = None) -> int:
    from components.model.errors import ConfigError

    args = parser().parse_args(argv)
    INVOCATION.set(invocation(args, sys.argv[0]))
    commands = {"submit": _submit, "list": _list, "logs": logs_command, "delete": _delete, "describe": _describe, "notebook": _notebook,
                "notebook-image": _notebook_image, "why": _why, "profile": _profile, "teams": _teams}
    cfg = None
    try:
        cfg = _stack(args)
        return commands[args.command](args, cfg)
    except (StackFileError, ConfigError) as e:
        return _fail(e, EXIT_INVALID)
    except WorkdirShipError as e:
        return _fail(e, EXIT_WORKDIR)
    except KubeError as e:
        said = hints.hint(str(e), cfg, getattr(args, "team", None)) if cfg is not None else None
        if said is None:
            return _fail(e, EXIT_CLUSTER)
        line, whole = said
        return _fail(KubeError(line if whole else f"{e}\n{line}"), EXIT_CLUSTER)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
