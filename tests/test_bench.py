"""`make bench` times the plan against xpk's dry runs of the same cluster and workload, measured, not stored."""

from __future__ import annotations

import re
from pathlib import Path

from tools import bench

ROOT = Path(__file__).resolve().parents[1]


def test_xpk_dry_runs_describe_the_reference_stack():
    cfg = bench.reference_config()
    cluster, workload = bench.xpk_commands(cfg)
    group, w, c = cfg["config"]["pathways:slices"][0], cfg["config"]["pathways:workloads"][0], cfg["config"]
    for cmd in (cluster, workload):
        flags = dict(zip(cmd[3::1], cmd[4::1], strict=False))
        assert flags["--tpu-type"] == group["tpu"] and flags["--num-slices"] == str(group["count"])
        assert flags["--zone"] == c["gcp:zone"] and flags["--project"] == c["gcp:project"]
        assert "--dry-run" in cmd and cmd[0] == str(bench.XPK_VENV / "bin" / "xpk")
    assert cluster[1:3] == ["cluster", "create-pathways"] and workload[1:3] == ["workload", "create-pathways"]
    assert workload[workload.index("--docker-image") + 1] == w["image"]
    assert workload[workload.index("--command") + 1] == " ".join(w["command"])


def test_xpk_runs_without_network(monkeypatch):
    monkeypatch.setattr(bench.os, "geteuid", lambda: 0)
    assert bench.sandboxed(["xpk", "x"]) == ["unshare", "--net", "xpk", "x"]
    monkeypatch.setattr(bench.os, "geteuid", lambda: 1000)
    assert bench.sandboxed(["xpk", "x"]) == ["unshare", "--net", "--map-root-user", "xpk", "x"]


def test_xpk_is_pinned_with_hashes():
    lock = (ROOT / "tools" / "xpk" / "requirements.lock").read_text()
    assert f"xpk=={bench.XPK_VERSION} \\\n    --hash=sha256:" in lock
    pins = re.findall(r"^([a-z0-9_.-]+)==\S+ \\$", lock, re.M | re.I)
    assert len(pins) > 20 and all(f"{p}==" in lock for p in pins)
    assert (ROOT / "tools" / "xpk" / "requirements.in").read_text().strip() == f"xpk=={bench.XPK_VERSION}"


def test_the_superpod_is_a_whole_ironwood_superpod_the_model_accepts():
    from components.model.capacity import dynamic_slicing
    from components.model.config import load
    from infra.offline import stackfile

    flat, secrets = stackfile.flatten(bench.superpod_config()["config"])
    cfg = load(stackfile.raw_values(flat), "bench", frozenset(secrets))
    [group] = cfg.slices
    assert len(group.sub_blocks) == bench.SUPERPOD_CUBES == 144
    assert group.tpu.chips * bench.SUPERPOD_CUBES == 9216 and group.tpu.hosts * bench.SUPERPOD_CUBES == 2304
    # from a sub-slice to a super-slice of 32 cubes
    shapes = [dynamic_slicing.parse(w.topology, sub_slicing=True, cubes=144) for w in cfg.workloads]
    assert max(s.cubes for s in shapes) == 32 and any(s.sub_slice for s in shapes)
