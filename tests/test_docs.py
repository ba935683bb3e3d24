"""The documentation (README.md and docs/) says what the code does: the configuration reference is generated
from the config model, every relative link and anchor resolves, every config key a page names exists, the
commands pages show exist (make targets, `python -m` modules and their flags), and the exit codes, JSON field
lists and example policy config are what the tools print and accept."""

from __future__ import annotations

import argparse
import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.model.config import key_paths
from infra.offline.__main__ import _EXIT_CODES, EXIT_INVALID, EXIT_POLICY
from infra.offline.__main__ import main as offline_main
from infra.offline.stackfile import stack_names
from tests.conftest import EXAMPLE_STACKS, example_path
from tools import docs

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = ("components", "infra", "policies", "tools")
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]


def _text(path: Path) -> str:
    return path.read_text()


def _without_code(text: str) -> str:
    """The prose of a page: fenced blocks and inline code removed (links inside them are not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _code(text: str) -> list[str]:
    """Fenced blocks (line by line) and inline code spans: where commands are written."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return [line for block in fenced for line in block.splitlines()] + inline


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lowercased, punctuation dropped, spaces to '-', repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    body = re.sub(r"^```.*?^```", "", _text(path), flags=re.S | re.M)
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", body, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


# --- the generated configuration reference ----------------------------------------------------------


def test_the_configuration_reference_is_generated_from_the_model():
    committed = (DOCS / "configuration.md").read_text()
    assert committed == docs.render(), "docs/configuration.md is out of date: run `python -m tools.docs`"


def test_every_config_key_has_a_row_with_a_meaning():
    text = docs.render()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `((?:pathways|gcp):[^`]+)` \|.*\| ([^|]*) \|$", text, flags=re.M)}
    keys = key_paths()
    assert len(keys) > 80
    assert [k for k in keys if k not in rows] == []
    assert sorted(rows) == sorted(keys)  # and nothing else: one row per key
    assert [k for k, meaning in rows.items() if not meaning.strip()] == []


def test_the_check_mode_says_when_the_file_is_stale(tmp_path, capsys):
    out = tmp_path / "configuration.md"
    assert docs.main(["--out", str(out)]) == 0
    assert docs.main(["--check", "--out", str(out)]) == 0
    out.write_text(out.read_text().replace("`pathways:cluster.regional`", "`pathways:cluster.regionall`", 1))
    assert docs.main(["--check", "--out", str(out)]) == 1
    assert "run `python -m tools.docs`" in capsys.readouterr().err


def test_defaults_and_values_come_from_the_fields():
    text = docs.render()
    assert "| `pathways:cluster.nodePoolConcurrency` | `100` | 1–1,000 |" in text
    assert "| `pathways:slices[i].name` | required |" in text
    assert "| `pathways:workloads[i].mode` | `batch` | `batch`, `interactive`, `service`" in text
    assert "| `pathways:cluster.maintenance.window.recurrence` | `FREQ=WEEKLY;BYDAY=SA,SU` |" in text
    # an optional section gets its own table, headed by its description
    assert "### `pathways:workloads[i].profiling`" in text and "| `pathways:workloads[i].profiling.port` | `9999` |" in text
    # text in angle brackets is shown, not taken for HTML
    assert "pathways-&lt;stack&gt;" in text and "pathways-<stack>" not in _without_code(text)


# --- links and keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _without_code(_text(page))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (dest.suffix != ".md" or anchor not in _anchors(dest)):
            broken.append(f"{target}: no such heading")
    assert broken == []


def test_every_page_is_in_the_index():
    index = _text(DOCS / "README.md")
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert {p.name for p in DOCS.glob("*.md")} - {"README.md"} == linked
    assert "](docs/README.md)" in _text(README)


_TOP = ("cluster", "network", "headPool", "slices", "bucket", "kubernetes", "workloads", "monitoring", "prices")
_SHORT_KEY = re.compile(rf"(?:{'|'.join(_TOP)})(?:\[\w+\])?(?:\.[A-Za-z]\w*(?:\[\w+\])?)+")


def _documented_keys(text: str) -> set[str]:
    out = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        out |= {m.group(0) for m in re.finditer(r"(?<![\w/.-])(?:pathways|gcp):[A-Za-z][\w.\[\]]*+(?!:\w)", span)}
        if _SHORT_KEY.fullmatch(span):
            out.add(f"pathways:{span}")
    return {re.sub(r"\[\d+\]", "[i]", k.rstrip(".")) for k in out}


def _is_key(k: str, keys: list[str]) -> bool:
    # a key, a section of keys (pathways:cluster.existing), or a name inside a mapping key (workloads[i].env.TOKEN)
    return k in keys or any(x.startswith((k + ".", k + "[")) for x in keys) or any(k.startswith(x + ".") for x in keys)


def test_every_config_key_the_docs_name_exists():
    keys = key_paths()
    named = {p.relative_to(ROOT).as_posix(): _documented_keys(_text(p)) for p in PAGES}
    assert sum(len(v) for v in named.values()) > 120
    assert {page: sorted(k for k in ks if not _is_key(k, keys)) for page, ks in named.items() if any(not _is_key(k, keys) for k in ks)} == {}


# --- commands ---------------------------------------------------------------------------------------


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):(?!=)", makefile, flags=re.M))


def test_every_make_target_the_docs_show_exists():
    targets = _make_targets()
    shown = {t for p in PAGES for line in _code(_text(p)) for t in re.findall(r"(?:^|[\s(;&])make ([a-z][\w-]*)", line)}
    assert {"plan", "test", "diff", "render", "crds", "e2e", "toolchain", "bench", "mutation"} <= shown
    assert sorted(shown - targets) == []


def test_make_help_lists_every_target():
    makefile = (ROOT / "Makefile").read_text()
    phony = set(" ".join(re.findall(r"^\.PHONY:(.*)$", makefile, flags=re.M)).split())
    assert "help" in _make_targets()
    proc = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    listed = re.findall(r"^make ([a-z][\w-]*)", proc.stdout, flags=re.M)
    assert sorted(set(listed)) == sorted(phony) and len(listed) == len(set(listed))


def _python_commands() -> dict[tuple[str, str], set[str]]:
    """(module or script, subcommand) -> the --flags the docs pass to it."""
    out: dict[tuple[str, str], set[str]] = {}
    for page in PAGES:
        for line in _code(_text(page)):
            for m in re.finditer(r"python3? (?:-m ([\w.]+)|(tools/[\w/]+\.py))([^|;&#\n]*)", line):
                target = m.group(1) or m.group(2)
                rest = m.group(3).split()
                sub = rest[0] if rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]) else ""
                out.setdefault((target, sub), set()).update(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", m.group(3)))
    return out


def test_every_python_module_the_docs_run_exists():
    import importlib.util

    commands = _python_commands()
    assert {"infra.offline", "tools.bench", "tools.mutation", "tools.docs"} <= {t for t, _ in commands}
    missing = []
    for target, _ in commands:
        if target.split(".")[0] not in PROJECT_PACKAGES and not target.endswith(".py"):
            continue  # another environment's tool (pathwaysutils' client runs in its own venv)
        if target.endswith(".py"):
            if not (ROOT / target).is_file():
                missing.append(target)
        elif importlib.util.find_spec(target) is None:
            missing.append(target)
    assert missing == []
    # the subcommands of the offline tools are the ones it has
    from infra.offline.__main__ import _parser

    (subcommands,) = [a.choices for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert {sub for t, sub in commands if t == "infra.offline"} <= {"", *subcommands}


@pytest.mark.parametrize("target", sorted({t for (t, _), flags in _python_commands().items() if flags}))
@pytest.mark.filterwarnings("ignore:.*found in sys.modules after import of package:RuntimeWarning")  # runpy re-runs it as __main__
def test_every_flag_the_docs_pass_is_accepted(target, capsys, monkeypatch):
    # each `python -m <target> <sub> --help` is run as `python -m` runs it (runpy, __main__), in this process: the
    # interpreter's start and the imports it shares with the suite are paid once
    flags_by_sub = {sub: flags for (t, sub), flags in _python_commands().items() if t == target and flags}
    monkeypatch.chdir(ROOT)
    for sub, flags in flags_by_sub.items():
        argv = [target, *([sub] if sub else []), "--help"]
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as ended:
            if target.endswith(".py"):
                runpy.run_path(str(ROOT / target), run_name="__main__")
            else:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
        out, err = capsys.readouterr()
        assert ended.value.code in (0, None), err
        accepted = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", out))
        assert sorted(flags - accepted) == [], " ".join(argv)


# --- exit codes, JSON fields, the policy-config example --------------------------------------------


def _table_after(page: Path, marker: str) -> list[list[str]]:
    """The rows of the first Markdown table after `<!-- marker -->`, cells stripped, header and rule left out."""
    text = _text(page).split(f"<!-- {marker} -->", 1)[1]
    lines = [ln for ln in text.lstrip("\n").splitlines()]
    table = []
    for ln in lines:
        if not ln.startswith("|"):
            break
        table.append([c.strip() for c in re.split(r"(?<!\\)\|", ln.strip())[1:-1]])
    return table[2:]


def _codes(text: str) -> set[int]:
    return {int(c) for c in re.findall(r"(?:status:|;)\s+(\d) ", " ".join(text.split()))}


def test_the_exit_codes_the_docs_state_are_the_tools():
    assert (EXIT_POLICY, EXIT_INVALID) == (1, 2)
    rows = {r[0].strip("`"): r[1:] for r in _table_after(DOCS / "reading-a-plan.md", "exit-codes")}
    assert set(rows) == set(_EXIT_CODES)
    for command, cells in rows.items():
        documented = {code for code, cell in enumerate(cells) if cell not in ("–", "-", "")}
        assert documented == _codes(_EXIT_CODES[command]), command
    readme = " ".join(_text(README).split())
    m = re.search(r"`plan` exits 0 when every mandatory policy passed, (\d) when a mandatory policy failed and (\d) on an invalid config", readme)
    assert m and (int(m.group(1)), int(m.group(2))) == (EXIT_POLICY, EXIT_INVALID)


# Keyed by data, not by fields: stack outputs, resource inputs and options, images by container, labels, changed values.
OPAQUE = {"outputs", "resources[].inputs", "resources[].options", "summary.workloads[].images", "summary.labels", "summary.runs.queues",
          "summary.cpuQuota",
          "changes[].values"}


def _objects(value, path: str = "", out: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """Every object path of a JSON document (`a.b[].c`) with the union of its keys, opaque ones left closed."""
    out = {} if out is None else out
    if isinstance(value, dict) and path not in OPAQUE:
        out.setdefault(path, set()).update(value)
        for k, v in value.items():
            _objects(v, f"{path}.{k}" if path else k, out)
    elif isinstance(value, list):
        for item in value:
            _objects(item, f"{path}[]", out)
    return out


def _documented_objects(marker: str, page: Path) -> dict[str, set[str]]:
    rows = _table_after(page, marker)
    return {("" if r[0] == "(top level)" else r[0].strip("`")): set(re.findall(r"`(\w+)`", r[1])) for r in rows}


def _json_of(argv: list[str], capsys, expect: int = 0) -> dict:
    assert offline_main(argv) == expect
    return json.loads(capsys.readouterr().out)


def test_the_plan_json_fields_are_documented(tmp_path, capsys):
    # the example stacks (their copies) between them have every field the docs describe
    docs_ = [_json_of(["plan", "--config", str(path), "--json"], capsys) for path in sorted(EXAMPLE_STACKS.glob("Pulumi.*.yaml"))]
    # what the committed stacks lack: a shared service (proxyPool), flex-start (whenUsed), a policy violation
    service = tmp_path / "Pulumi.svc.yaml"
    service.write_text(yaml.safe_dump({"config": {
        "gcp:project": "test-proj-123", "gcp:region": "us-east5", "gcp:zone": "us-east5-b", "pathways:pathwaysVersion": "jax-0.9.0",
        "pathways:slices": [{"name": "main", "tpu": "v6e-16", "flexStart": True}],
        "pathways:workloads": [{"name": "sps", "mode": "service"}],
    }}))
    docs_.append(_json_of(["plan", "--config", str(service), "--json"], capsys))
    pool_set = tmp_path / "Pulumi.ps.yaml"  # and a pool set (dynamic slicing), which no example stack has yet
    pool_set.write_text(yaml.safe_dump({"config": {
        "gcp:project": "test-proj-123", "gcp:region": "us-central1", "gcp:zone": "us-central1-c", "pathways:pathwaysVersion": "jax-0.9.0",
        "pathways:cluster": {"releaseChannel": "RAPID"},
        "pathways:slices": [{"name": "cubes", "tpu": "tpu7x-128", "reservation": "r/reservationBlocks/b", "subBlocks": ["s0"]}],
        "pathways:workloads": [{"name": "nb", "mode": "interactive", "topology": "2x2x2"}],
    }}))
    docs_.append(_json_of(["plan", "--config", str(pool_set), "--json"], capsys))
    split = tmp_path / "Pulumi.split.yaml"  # and a split prefill/decode endpoint (serve.split), which no example has
    split.write_text(yaml.safe_dump({"config": {
        "gcp:project": "test-proj-123", "gcp:region": "us-east5", "gcp:zone": "us-east5-b",
        "pathways:slices": [{"name": "serve", "tpu": "v6e-8", "count": 3}],
        "pathways:workloads": [{"name": "chat", "mode": "serve", "sliceGroup": "serve", "serve": {
            "model": "Qwen/Qwen3-8B", "split": {"prefill": {"replicas": 1}, "decode": {"replicas": 2}}}}],
    }}))
    docs_.append(_json_of(["plan", "--config", str(split), "--json"], capsys))
    strict = tmp_path / "policy.json"
    strict.write_text(json.dumps({"pathways-cluster-hardening": {"protectedStacks": ["dev"]}}))
    violated = _json_of(["plan", "--config", str(example_path("dev")), "--json", "--policy-config", str(strict)], capsys, expect=EXIT_POLICY)
    assert violated["policyViolations"]
    docs_.append(violated)
    actual: dict[str, set[str]] = {}
    for d in docs_:
        _objects(d, "", actual)
    assert actual["summary.proxyPool"] and actual["summary.cost.whenUsed[]"]
    assert _documented_objects("json-fields:plan", DOCS / "reading-a-plan.md") == actual


def test_the_diff_json_fields_are_documented(tmp_path, capsys):
    prod = example_path("prod")
    after = tmp_path / "Pulumi.prod.yaml"
    # replaces both JobSets: refused, protected (the sidecar is built for the same JAX)
    after.write_text(prod.read_text().replace("jax-0.9.0", "jax-0.7.3").replace("jax_0.9.0", "jax_0.7.3"))
    doc = _json_of(["diff", "--config", str(after), "--before", str(prod), "--json"], capsys, expect=EXIT_POLICY)
    assert doc["changes"] and doc["guard"]["refusals"]
    assert _documented_objects("json-fields:diff", DOCS / "changing.md") == _objects(doc)


@pytest.mark.every_stack
def test_the_example_policy_config_passes_every_committed_stack(tmp_path, capsys):
    text = _text(DOCS / "policy-pack.md").split("<!-- policy-config-example -->", 1)[1]
    example = json.loads(text.split("```json", 1)[1].split("```", 1)[0])
    path = tmp_path / "policy-config.json"
    path.write_text(json.dumps(example))
    for stack in stack_names():
        assert offline_main(["plan", "--stack", stack, "--policy-config", str(path)]) == 0, stack
        capsys.readouterr()
