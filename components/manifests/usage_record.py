"""The teams' usage record and budget enforcer (security #73.7): the program of the CronJob `usage-recorder` in the
namespace `pathways-usage`, shipped in a ConfigMap beside its settings. Python's standard library only: it runs in a
plain Python image and is imported, unchanged, by `python -m infra.run teams` and the tests.

Every minute it reads each team's Kueue Workloads and keeps, in a ConfigMap `usage-<team>` of its own namespace
(which no team may write), the team's TPU chip-seconds admitted in each calendar month (UTC): what the Workloads
still there have been admitted (Kueue's own account: status.accumulatedPastExecutionTimeSeconds plus the current
admission, kueue v0.19.2 apis/kueue/v1beta2/workload_types.go) plus what the ones deleted since had reached when it
last saw them. A team deleting its runs (or `--ttl 0s`) loses from the record at most the last minute of each.

A team over its budget (teams[].chipHoursPerMonth) has its ClusterQueue held with Kueue's own switch: stopPolicy
Hold at once (nothing new is admitted, running work goes on) and HoldAndDrain after teams[].drainAfterMinutes
(Kueue evicts what it admitted; the CRD: "Admitted workloads are evicted"); released (None) once the team is under
budget again, a new month. It touches only queues it held (its annotation), never one an operator holds. Its
identity may read Workloads in the teams' namespaces, get and patch the teams' ClusterQueues by name, and write
ConfigMaps in its own namespace: nothing else (components/manifests/usage.py).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Optional

TPU = "google.com/tpu"
HOLD_ANNOTATION = "pathways/budget-hold"
HELD_SINCE_ANNOTATION = "pathways/budget-held-since"
RECORD_PREFIX = "usage-"
RECORD_LABEL = "pathways/usage-record"
FIELD_MANAGER = "pathways-usage-recorder"
MONTHS_KEPT = 13
_SA = "/var/run/secrets/kubernetes.io/serviceaccount"
_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def record_name(team: str) -> str:
    return f"{RECORD_PREFIX}{team}"


def month_key(now: float) -> str:
    return datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime("%Y-%m")


def month_start(now: float) -> float:
    t = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
    return datetime.datetime(t.year, t.month, 1, tzinfo=datetime.timezone.utc).timestamp()


def _time(text: Optional[str]) -> Optional[float]:
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _amount(value: Any) -> float:
    text = str(value).strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIX[suffix]
    return float(text)


def _condition(wl: dict[str, Any], kind: str) -> Optional[dict[str, Any]]:
    return next((c for c in (wl.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def workload_chips(wl: dict[str, Any]) -> int:
    """TPU chips the workload's pods ask for: each PodSet's count times its containers' google.com/tpu."""
    total = 0.0
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        spec = ((ps.get("template") or {}).get("spec")) or {}
        per_pod = 0.0
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            res = c.get("resources") or {}
            amount = (res.get("requests") or {}).get(TPU) or (res.get("limits") or {}).get(TPU)
            if amount is not None:
                per_pod += _amount(amount)
        total += per_pod * int(ps.get("count") or 0)
    return int(total)


def chip_seconds(wl: dict[str, Any], start: float, end: float) -> float:
    """Chip-seconds the workload was admitted within [start, end): its current admission clipped to the window, plus
    Kueue's accumulated past admissions when it was created in the window (Kueue does not say when those were)."""
    status = wl.get("status") or {}
    seconds = 0.0
    admitted = _condition(wl, "Admitted")
    if admitted is not None and admitted.get("status") == "True":
        since = _time(admitted.get("lastTransitionTime")) or end
        finished = _condition(wl, "Finished")
        until = _time(finished.get("lastTransitionTime")) if finished is not None and finished.get("status") == "True" else end
        seconds += max(0.0, min(until or end, end) - max(since, start))
    created = _time((wl.get("metadata") or {}).get("creationTimestamp"))
    if created is not None and start <= created < end:
        seconds += float(status.get("accumulatedPastExecutionTimeSeconds") or 0)
    return seconds * workload_chips(wl)


def advance(month: Optional[dict[str, Any]], workloads: list[dict[str, Any]], start: float, now: float) -> dict[str, Any]:
    """The month's record after seeing `workloads` at `now`: a Workload gone since the last look keeps what it had
    reached (closed); one still there counts what it has now, never less than before."""
    month = month or {}
    before: dict[str, Any] = month.get("open") or {}
    closed = float(month.get("closedChipSeconds") or 0)
    seen: dict[str, Any] = {}
    for wl in workloads:
        meta = wl.get("metadata") or {}
        uid = meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"
        had = float((before.get(uid) or {}).get("chipSeconds") or 0)
        seen[uid] = {"name": meta.get("name", ""), "chipSeconds": round(max(had, chip_seconds(wl, start, now)), 3)}
    closed += sum(float(v.get("chipSeconds") or 0) for uid, v in before.items() if uid not in seen)
    total = closed + sum(v["chipSeconds"] for v in seen.values())
    return {"chipSeconds": round(total, 3), "closedChipSeconds": round(closed, 3), "open": seen, "updated": _iso(now)}


def decide(team: dict[str, Any], used_seconds: float, queue: dict[str, Any], now: float) -> tuple[Optional[dict[str, Any]], str]:
    """The merge patch for the team's ClusterQueue (or None) and one line saying what it does and why."""
    name, budget = team["name"], team.get("budgetChipHours")
    used = used_seconds / 3600
    annotations = (queue.get("metadata") or {}).get("annotations") or {}
    policy = (queue.get("spec") or {}).get("stopPolicy") or "None"
    held_by_us = HOLD_ANNOTATION in annotations
    month = month_key(now)
    if budget is not None and used > budget:
        note = f"{used:,.2f} of {budget:,} chip-hours in {month}"
        if not held_by_us:
            if policy != "None":  # an operator's hold: theirs to release
                return None, f"team {name}: over budget ({note}); its ClusterQueue is already held by someone else (stopPolicy {policy})"
            return ({"metadata": {"annotations": {HOLD_ANNOTATION: note, HELD_SINCE_ANNOTATION: _iso(now)}}, "spec": {"stopPolicy": "Hold"}},
                    f"team {name}: held (ClusterQueue {team['clusterQueue']} stopPolicy Hold): {note}")
        drain = team.get("drainAfterSeconds")
        since = _time(annotations.get(HELD_SINCE_ANNOTATION)) or now
        if drain is not None and policy == "Hold" and now - since >= drain:
            return ({"metadata": {"annotations": {HOLD_ANNOTATION: f"{note}; drained after {drain // 60} minutes held"}},
                     "spec": {"stopPolicy": "HoldAndDrain"}},
                    f"team {name}: drained (ClusterQueue {team['clusterQueue']} stopPolicy HoldAndDrain, held since {_iso(since)}): {note}")
        return None, f"team {name}: over budget, held ({note})"
    if held_by_us:
        return ({"metadata": {"annotations": {HOLD_ANNOTATION: None, HELD_SINCE_ANNOTATION: None}}, "spec": {"stopPolicy": "None"}},
                f"team {name}: released (under budget in {month}: {used:,.2f} chip-hours)")
    return None, f"team {name}: {used:,.2f} chip-hours in {month}" + (f" of {budget:,}" if budget is not None else "")


class Api:
    """The API server with a bearer token: in the pod its service account's, from outside any (the tests)."""

    def __init__(self, server: str, token: str, ca_file: Optional[str]):
        self.server, self.token = server.rstrip("/"), token
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()

    def call(self, method: str, path: str, body: Optional[dict[str, Any]] = None, content_type: str = "application/json") -> Optional[dict[str, Any]]:
        data = None if body is None else json.dumps(body).encode()
        if method != "GET":
            path += f"?fieldManager={FIELD_MANAGER}"
        request = urllib.request.Request(self.server + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Accept": "application/json", "Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as e:
            if e.code == 404 and method == "GET":
                return None
            raise RuntimeError(f"{method} {path}: HTTP {e.code}: {e.read()[:300].decode(errors='replace')}") from None


def _record_data(cm: Optional[dict[str, Any]]) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in ((cm or {}).get("data") or {}).items()}


def tick(api: Api, config: dict[str, Any], now: float) -> list[str]:
    """One pass: every team's record advanced to `now`, then its queue held, drained or released by its budget."""
    ns, kueue, lines = config["namespace"], config["kueueApi"], []
    start, month = month_start(now), month_key(now)
    for team in config["teams"]:
        listed = api.call("GET", f"/apis/{kueue}/namespaces/{team['namespace']}/workloads") or {}
        path = f"/api/v1/namespaces/{ns}/configmaps"
        cm = api.call("GET", f"{path}/{record_name(team['name'])}")
        months = _record_data(cm)
        months[month] = advance(months.get(month), listed.get("items") or [], start, now)
        kept = dict(sorted(months.items())[-MONTHS_KEPT:])
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": record_name(team["name"]), "namespace": ns, "labels": {RECORD_LABEL: "true", "pathways/team": team["name"]}},
            "data": {k: json.dumps(v, sort_keys=True) for k, v in kept.items()}}
        if cm is None:
            api.call("POST", path, body)
        else:
            body["metadata"]["resourceVersion"] = cm["metadata"]["resourceVersion"]
            api.call("PUT", f"{path}/{record_name(team['name'])}", body)
        queue = api.call("GET", f"/apis/{kueue}/clusterqueues/{team['clusterQueue']}")
        if queue is None:
            lines.append(f"team {team['name']}: ClusterQueue {team['clusterQueue']} not found")
            continue
        patch, line = decide(team, months[month]["chipSeconds"], queue, now)
        if patch is not None:
            api.call("PATCH", f"/apis/{kueue}/clusterqueues/{team['clusterQueue']}", patch, "application/merge-patch+json")
        lines.append(line)
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description="record the teams' TPU usage and hold the queues of teams over budget")
    p.add_argument("config", help="the settings JSON (the ConfigMap's config.json)")
    p.add_argument("--server", help="API server URL (default: the pod's, from KUBERNETES_SERVICE_HOST)")
    p.add_argument("--token-file", default=f"{_SA}/token")
    p.add_argument("--ca-file", default=f"{_SA}/ca.crt")
    args = p.parse_args(argv)
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    server = args.server or f"https://{f'[{host}]' if ':' in host else host}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"
    with open(args.config, encoding="utf-8") as f:
        config = json.load(f)
    with open(args.token_file, encoding="utf-8") as f:
        token = f.read().strip()
    for line in tick(Api(server, token, args.ca_file), config, time.time()):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
