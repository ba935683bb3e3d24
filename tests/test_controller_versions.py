"""#75.5: the controller releases a stack may install (components/model/cluster/controller_versions.py). The table
agrees with what is built and fetched; a release outside it is one line; each "offline" release plans with its own
chart and every object the example stacks render passes that release's CRDs (the admission checks of `render`, run
with build/crds laid out as that release's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.model.cluster import controller_versions
from components.model.cluster.controller_versions import OFFLINE, REAL_ENGINES, TESTED
from tests.conftest import config_with, example_path, plan_of, write_stack_file

ROOT = Path(__file__).resolve().parents[1]
KEYS = {"jobset": ("jobsetVersion",), "kueue": ("kueue", "version"), "lws": ("lwsVersion",)}


def test_the_table_is_what_the_tier_builds_and_what_crds_fetches():
    built = json.loads((ROOT / "tools" / "engines" / "control-plane" / "engine.json").read_text())["controllerVersions"]
    assert {name: v for name, rows in TESTED.items() for v, how in rows.items() if how == REAL_ENGINES} == built
    wrappers = {p.name for p in (ROOT / "tools" / "engines" / "versions").iterdir() if (p / "go.mod").is_file()}
    assert {f"{name}-{v}" for name, rows in TESTED.items() for v, how in rows.items() if how == OFFLINE} == wrappers
    for name in TESTED:  # the default is the one the tier runs
        assert TESTED[name][controller_versions.default(name)] == REAL_ENGINES


def _kubernetes(name: str, version: str) -> dict:
    key = KEYS[name]
    return {key[0]: {key[1]: version}} if len(key) == 2 else {key[0]: version}


@pytest.mark.parametrize("name", sorted(TESTED))
def test_a_release_outside_the_table_is_refused_in_one_line(tmp_path, capsys, name):
    from infra.offline.__main__ import main

    path = write_stack_file(tmp_path, config_with(kubernetes=_kubernetes(name, "0.99.0")))
    assert main(["plan", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    listed = ", ".join(f"{v} ({how})" for v, how in TESTED[name].items())
    key = "pathways:kubernetes." + ".".join(KEYS[name])
    assert err == [f"error: {key}: 0.99.0 is not a {controller_versions.TITLES[name]} release this product has been tested "
                   f"with: {listed}; docs/operating.md, Controller versions"]


@pytest.mark.parametrize("name,version", [(n, v) for n, rows in TESTED.items() for v, how in rows.items() if how == OFFLINE])
def test_an_offline_release_plans_with_its_own_chart(name, version):
    from infra.offline.charts import CHARTS, chart_dir

    plan = plan_of(config_with(pathwaysVersion="jax-0.11.2" if name == "lws" else "jax-0.9.0", kubernetes=_kubernetes(name, version),
                               **({"workloads": [{"name": "chat", "mode": "serve", "serve": {"model": "meta-llama/Llama-3.1-8B-Instruct"}}]}
                                  if name == "lws" else {})))
    chart = plan.one("kubernetes:helm.sh/v3:Release", name) if any(
        r.name == name for r in plan.by_type("kubernetes:helm.sh/v3:Release")) else plan.one("kubernetes:helm.sh/v4:Chart", name)
    assert chart.input("version") == version
    assert chart_dir(chart) == CHARTS / f"{name}@{version}"


def test_every_object_the_examples_render_passes_the_offline_releases_crds(tmp_path):
    # build/crds laid out as those releases': the admission checks read PATHWAYS_CRDS/<name>
    crds = tmp_path / "crds"
    crds.mkdir()
    offline = {n: v for n, rows in TESTED.items() for v, how in rows.items() if how == OFFLINE}
    for entry in (ROOT / "build" / "crds").iterdir():
        if "@" not in entry.name and entry.name not in offline:
            (crds / entry.name).symlink_to(entry)
    for name, version in offline.items():
        source = ROOT / "build" / "crds" / f"{name}@{version}"
        assert any(source.glob("*.yaml")), f"{source}: run make crds"
        (crds / name).symlink_to(source)
    stacks = []
    for example in ("teams", "serving"):  # between them: JobSet, Kueue (teams, cohorts, fair sharing) and LWS
        config = yaml.safe_load(example_path(example).read_text())["config"]
        kube = config.setdefault("pathways:kubernetes", {})
        kube.update(jobsetVersion=offline["jobset"], lwsVersion=offline["lws"])
        kube["kueue"] = {**kube.get("kueue", {}), "version": offline["kueue"]}
        stacks.append(write_stack_file(tmp_path, config, name=f"Pulumi.{example}.yaml"))
    script = ("import sys\nfrom infra.offline.__main__ import main\n"
              "sys.exit(max(main(['render', '--config', p, '--out', p + '.out']) for p in sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", script, *map(str, stacks)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATHWAYS_CRDS": str(crds)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "schema check skipped" not in proc.stdout + proc.stderr  # every schema was there to check against
    for stack in stacks:
        written = json.loads((Path(str(stack) + ".out") / ".pathways-render.json").read_text())
        assert written, stack
