"""Issue #36.3: a secret anywhere but a workload's env values is refused under `pulumi up` as the offline tools
refuse it, with the same line, and no secret value is ever quoted in an error.

The Pulumi CLI tells a program only which top-level keys hold a secret (the engine sends Config.SecureKeys(),
pulumi/pulumi pkg/resource/deploy/source_eval.go; a key is secure when any leaf below it is,
sdk/go/common/resource/config/object.go Secure()), with every value decrypted. These tests run the program's
config reader as the Python language host leaves it: the decrypted config and the secret keys set as the host
sets them, and the project root it passes as --root_directory (pulumi.get_root_directory()), where the stack file
`pulumi config set --secret --path` wrote is the only record of which leaf was the secret. The real CLI on the same
scenario: tests_e2e/test_secrets.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.model.cluster import cluster as cluster_rules
from components.model.config import secure_paths
from components.model.errors import ConfigError
from infra import config as infra_config
from infra.offline.stackfile import StackFileError, flatten
from tests.conftest import config_with

VERSION = "jax-0.9.0"
TOKEN = "hf_access_token=PLAINTEXT-hf_9a8b7c6d5e"
WEIGHTS = "gs://team-weights/llama3.1-8b"
SECURE = {"secure": "v1:AAAAciphertextAAAA"}


def serve(**extra: Any) -> dict:
    return {"name": "chat", "mode": "serve", "serve": {"model": "llama3.1-8b", "weights": WEIGHTS, **extra}}


def batch(**extra: Any) -> dict:
    return {"name": "train", "image": "example.com/trainer:1", **extra}


def _decrypted(value: Any, plaintext: str) -> Any:
    """The value as the CLI hands it to the program: every `secure:` leaf decrypted."""
    if isinstance(value, dict) and set(value) == {"secure"}:
        return plaintext
    if isinstance(value, dict):
        return {k: _decrypted(v, plaintext) for k, v in value.items()}
    if isinstance(value, list):
        return [_decrypted(v, plaintext) for v in value]
    return value


def under_the_cli(tmp_path: Path, monkeypatch, file_config: dict, *, stack: str = "dev", written: dict | None = None,
                  root: bool = True):
    """read_stack_config() as `pulumi up` runs it: `file_config` is the stack file (`written`, when given, is what
    is on disk instead, e.g. another file than the one the CLI read)."""
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True, exist_ok=True)
    (project / "Pulumi.yaml").write_text(yaml.safe_dump({"name": "pathways", "runtime": "python", "main": "infra", "stackConfigDir": "stacks"}))
    (project / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": written if written is not None else file_config}))
    flat = {k: json.dumps(v) if isinstance(v, (dict, list)) else str(v) for k, v in _decrypted(file_config, TOKEN).items()}
    secret_keys = [k for k, v in file_config.items() if secure_paths(k, v)]
    pulumi.runtime.set_all_config(flat, secret_keys)
    monkeypatch.setattr(pulumi, "get_root_directory", lambda: str(project) if root else None)
    monkeypatch.setattr(pulumi, "get_stack", lambda: stack)
    return infra_config.read_stack_config(cluster_rules.now())


def offline_line(config: dict) -> str:
    with pytest.raises(StackFileError) as err:
        flatten(config)
    return str(err.value)


LEAKS = [
    ("serve extra arg", config_with(pathwaysVersion=VERSION, workloads=[serve(extraArgs=[SECURE])]),
     "pathways:workloads[0].serve.extraArgs[0]"),
    ("batch args", config_with(pathwaysVersion=VERSION, workloads=[batch(args=["--steps=10", SECURE])]),
     "pathways:workloads[0].args[1]"),
    ("image", config_with(pathwaysVersion=VERSION, workloads=[batch(image=SECURE)]), "pathways:workloads[0].image"),
    ("slice reservation", config_with(slices=[{"name": "main", "tpu": "v6e-16", "reservation": SECURE}]), "pathways:slices[0].reservation"),
    ("whole workloads", config_with(pathwaysVersion=VERSION, workloads=SECURE), "pathways:workloads"),
]


@pytest.mark.parametrize("case,config,path", LEAKS, ids=[c[0] for c in LEAKS])
def test_finding_3_the_program_refuses_a_secret_where_it_would_leak_with_the_offline_line(tmp_path, monkeypatch, case, config, path):
    with pytest.raises(ConfigError) as err:
        under_the_cli(tmp_path, monkeypatch, config)
    text = str(err.value)
    assert text.splitlines() == [offline_line(config)], text  # one line, the offline tool's
    assert text.startswith(f"{path}: ")
    assert "PLAINTEXT" not in text and "hf_9a8b7c6d5e" not in text


def test_finding_3_a_secret_env_value_is_kept_secret_under_the_cli(tmp_path, monkeypatch):
    config = config_with(pathwaysVersion=VERSION, workloads=[batch(env={"HF_TOKEN": SECURE, "RUN": "r1"})])
    cfg = under_the_cli(tmp_path, monkeypatch, config)
    assert cfg.secret_env and cfg.workloads[0].env["HF_TOKEN"] == TOKEN  # it goes to the workload's Kubernetes Secret


def test_finding_3_without_the_stack_file_secret_workloads_are_refused(tmp_path, monkeypatch):
    # fail closed: the program cannot tell an env secret from a leaking one, so it lets none through
    config = config_with(pathwaysVersion=VERSION, workloads=[batch(env={"HF_TOKEN": SECURE})])
    elsewhere = config_with(pathwaysVersion=VERSION, workloads=[batch(env={"HF_TOKEN": "other"})])
    for written in ({}, elsewhere):
        with pytest.raises(ConfigError) as err:
            under_the_cli(tmp_path, monkeypatch, config, written=written)
        text = str(err.value)
        assert len(text.splitlines()) == 1 and text.startswith("pathways:workloads: holds a secret, but "), text
        assert "cannot be told and none may reach a resource" in text and "PLAINTEXT" not in text


def test_a_host_without_a_project_root_cannot_check_and_says_so(tmp_path, monkeypatch):
    # the Automation API's inline server (and tools/pulumi_real/host.py, built on it) passes no root: the stack
    # file cannot be found, and the program warns instead of refusing every env secret
    warnings = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warnings.append(message))
    config = config_with(pathwaysVersion=VERSION, workloads=[batch(env={"HF_TOKEN": SECURE})])
    assert under_the_cli(tmp_path, monkeypatch, config, root=False).secret_env
    assert len(warnings) == 1 and "no project root" in warnings[0] and "PLAINTEXT" not in warnings[0]


def test_finding_3_the_file_read_is_the_one_the_cli_read(tmp_path, monkeypatch):
    # a stack file that differs from the config this run uses (e.g. `--config-file` elsewhere) says nothing
    on_disk = config_with(pathwaysVersion=VERSION, workloads=[serve(extraArgs=["plain"])])
    used = config_with(pathwaysVersion=VERSION, workloads=[serve(extraArgs=[SECURE])])
    with pytest.raises(ConfigError) as err:
        under_the_cli(tmp_path, monkeypatch, used, written=on_disk)
    assert str(err.value).startswith("pathways:workloads: holds a secret, but ") and "PLAINTEXT" not in str(err.value)


@pytest.mark.parametrize("workloads", [
    [batch(image=SECURE, env={"TOKEN": SECURE})],  # a secret image: malformed as an image, refused before it is judged
    [serve(extraArgs=[SECURE], maxTargetLength=SECURE)],
    [batch(env={"BAD NAME": SECURE})],  # an env secret with a bad name: the name is shown, never the value
    [batch(env={"TOKEN": SECURE}), {"name": "nb", "mode": "interactive", "env": {"TOKEN": SECURE}}],
])
def test_finding_3_no_secret_value_is_ever_quoted_offline_or_under_the_cli(tmp_path, monkeypatch, workloads):
    config = config_with(pathwaysVersion=VERSION, workloads=workloads)
    texts = []
    try:
        flatten(config)
    except StackFileError as e:
        texts.append(str(e))
    with pytest.raises(ConfigError) as err:
        under_the_cli(tmp_path, monkeypatch, config)
    texts.append(str(err.value))
    for text in texts:
        assert "PLAINTEXT" not in text and "hf_9a8b7c6d5e" not in text and "hf_access_token" not in text, text


def test_a_secret_top_level_key_keeps_its_message_with_or_without_the_file(tmp_path, monkeypatch):
    config = config_with(pathwaysVersion=SECURE)
    for root in (True, False):
        with pytest.raises(ConfigError) as err:
            under_the_cli(tmp_path, monkeypatch, config, root=root)  # load() refuses it, file or none
        assert str(err.value).startswith("pathways:pathwaysVersion: is set as a secret, but only workload env values")
        assert "PLAINTEXT" not in str(err.value)
