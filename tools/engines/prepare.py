"""Prepare steps for engine wrappers whose upstream main package cannot be built straight from the
module cache (tools/engines/build.py calls `fn(workdir, module_dir)` before `go build`).

Each function reproduces one upstream generate step in a scratch copy of the wrapper (`workdir`): it
copies the upstream main package's files out of the Go module cache (`module_dir(module)` is the module's
directory at the version go.mod selects) and writes the files that upstream's `go generate` would have
produced. Nothing upstream is committed here: the wrapper holds go.mod, go.sum and engine.json only.
Standard library only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

ModuleDir = Callable[[str], Path]

KUBERNETES_PROVIDER = "github.com/pulumi/pulumi-kubernetes/provider/v4"


def _engine_version(workdir: Path) -> str:
    """The plugin version the wrapper pins (engine.json `version`, e.g. "4.34.2")."""
    spec: dict[str, Any] = json.loads((workdir / "engine.json").read_text())
    version = spec.get("version")
    if not isinstance(version, str) or not version:
        raise ValueError(f'{workdir / "engine.json"}: a prepare step needs a non-empty "version"')
    return version


def _compact_json(value: Any) -> str:
    """JSON the way Go's json.Marshal writes it: no spaces, non-ASCII kept, <, > and & escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _copy_main(src_dir: Path, dest_dir: Path) -> None:
    """Copy the upstream main package's Go files (not tests, not `//go:build ignore` generators)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    for src in sorted(src_dir.glob("*.go")):
        if src.name.endswith("_test.go") or "//go:build ignore" in src.read_text():
            continue
        shutil.copyfile(src, dest_dir / src.name)


def pulumi_kubernetes_provider(workdir: Path, module_dir: ModuleDir) -> None:
    """pulumi-kubernetes `make provider` → `go generate ./cmd/pulumi-resource-kubernetes` (generate.go).

    Upstream's generate.go reads cmd/pulumi-resource-kubernetes/schema.json, sets the package `version`
    (VERSION from the Makefile, no leading "v") and writes schema-embed.json; it re-marshals
    terraform-mapping.json to terraform-mapping-embed.json. main.go embeds both. Here main.go is copied
    from the provider module into workdir/cmd/pulumi-resource-kubernetes and the two embed files are
    written beside it, so `go build ./cmd/pulumi-resource-kubernetes` works in the wrapper module.
    Checked on provider/v4 v4.0.0-20260115033456-f47bc2d6f199 (tag v4.25.0): built, served GetSchema,
    and rendered a ConfigMap in an offline `pulumi preview`.
    """
    version = _engine_version(workdir)
    src = module_dir(KUBERNETES_PROVIDER) / "cmd" / "pulumi-resource-kubernetes"
    dest = workdir / "cmd" / "pulumi-resource-kubernetes"
    _copy_main(src, dest)
    schema = json.loads((src / "schema.json").read_text())
    schema["version"] = version
    (dest / "schema-embed.json").write_text(_compact_json(schema))
    mapping = json.loads((src / "terraform-mapping.json").read_text())
    (dest / "terraform-mapping-embed.json").write_text(_compact_json(mapping))
