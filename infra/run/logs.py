"""`python -m infra.run logs`: the head's program output, a worker's Pathways server (--worker), the last attempt
(--previous), or the Cloud Logging query and link that outlive the run (--cloud); a known first-program error said
once after the output (known_errors)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from infra.run.kube import Kubectl, KubeError
from infra.run.stack_args import again, team_namespace


def logs_command(args: argparse.Namespace, cfg: Any) -> int:
    from components.manifests.jobset import USER_CONTAINER
    from infra.run.cloud_logs import link, query

    if args.cloud:  # no cluster needed: the logs outlive the run in Cloud Logging
        ns = team_namespace(args, cfg)
        q = query(cfg.cluster_name, ns, args.run, worker=args.worker)
        print(q)
        print(f"  open: {link(q, cfg.project)}", file=sys.stderr)
        print(f"  or:   gcloud logging read '{q}' --project {cfg.project} --freshness 7d --order asc", file=sys.stderr)
        return 0
    kube, ns = Kubectl(args.kubeconfig, args.context), team_namespace(args, cfg)
    team = f" --team {args.team}" if getattr(args, "team", None) else ""
    worker_flag = f" --worker {args.worker}" if args.worker is not None else ""
    try:
        kube.get_jobset(ns, args.run)  # no such run: one line, before looking for its pods
    except KubeError as e:
        if not str(e).startswith("no run "):
            raise
        # deleted, or gone after its ttl: its containers' logs stay in Cloud Logging (#74.5)
        raise KubeError(f"{e}; a run deleted (or removed after its ttl) keeps its logs in Cloud Logging: "
                        f"{again('logs', cfg.stack)}{team} {args.run}{worker_flag} --cloud") from None
    if args.worker is not None:
        worker = kube.worker_pod(ns, args.run, args.worker, args.host)
        if worker is None:
            raise KubeError(f"run {args.run} has no pod for slice {args.worker}, host {args.host} (list its pods: "
                            f"{again('describe', cfg.stack)}{team} {args.run}); its logs after its pods went: "
                            f"{again('logs', cfg.stack)}{team} {args.run}{worker_flag} --cloud")
        return kube.stream_logs(ns, worker["metadata"]["name"], "pathways-worker", args.follow, args.previous)
    pod = kube.head_pod(ns, args.run)
    if pod is None:
        raise KubeError(f"run {args.run} has no head pod yet; `{again('list', cfg.stack)}` says where it stands")
    containers = [c["name"] for c in pod["spec"].get("containers") or []]
    container = USER_CONTAINER if USER_CONTAINER in containers else "pathways-proxy"
    code = kube.stream_logs(ns, pod["metadata"]["name"], container, args.follow, args.previous)
    # a known first-program error, said once after the output (the container's status keeps the output's end: #74.3)
    from infra.run import known_errors

    known = known_errors.match(known_errors.terminated_messages([kube.head_pod(ns, args.run) or pod]))
    if known is not None:
        print(f"{known.reason}: {known.summary}; fix: {known.fix}", file=sys.stderr)
    return code
