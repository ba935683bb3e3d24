"""The policy pack publishes as one folder: `pulumi policy publish` archives only that folder."""

from __future__ import annotations

import json
import subprocess
import sys

from infra.offline.policy_pack import build


def test_the_built_pack_imports_only_from_itself(tmp_path):
    pack = build(tmp_path / "pack")
    assert sorted(p.name for p in pack.iterdir()) == ["PulumiPolicy.yaml", "__main__.py", "components", "policies", "requirements.txt"]
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from policies.rules import ALL_POLICIES;"
        "mods = {n: getattr(m, '__file__', '') or '' for n, m in sys.modules.items() if n.split('.')[0] in ('components', 'policies')};"
        "print(json.dumps({'rules': len(ALL_POLICIES), 'mods': mods, 'pulumi_sdk': 'pulumi_gcp' in sys.modules}))"
    )
    # -I: isolated; neither the repository nor the working directory is on sys.path
    proc = subprocess.run([sys.executable, "-I", "-c", script, str(pack)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["rules"] == 20
    assert doc["mods"] and all(path.startswith(str(pack)) for path in doc["mods"].values()), doc["mods"]
    assert doc["pulumi_sdk"] is False  # the rules never load a provider SDK
    compile((pack / "__main__.py").read_text(), "__main__.py", "exec")
