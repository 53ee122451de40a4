"""Fresh virtual environments for the packaging tests, fast and offline.

A new environment gets no pip and no packages of its own. It reuses the test environment's
packages (torch, numpy, the build tools) through a directory of links to them, listed in a .pth
file: no download, and no copy of torch. lig itself is left out of that directory, so the lig the
new environment imports is the one installed into it (pip would otherwise see the test
environment's lig as already installed). pip is the test environment's, pointed at the new
interpreter with --python, always with --no-deps and --no-build-isolation (nothing fetched).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import sysconfig
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[2]

# Run by the new environment's interpreter, from a directory outside the checkout: where lig was
# imported from, and one differentiable call through the C library.
CHECK = textwrap.dedent(
    """
    import importlib.metadata, json, pathlib, sys
    import torch, lig
    q = torch.randn(1, 6, 2, 8, requires_grad=True)
    k = torch.randn(1, 6, 1, 8, requires_grad=True)
    w = torch.rand(1, 6, 2, requires_grad=True)
    idx, val = lig.lightning_indexer(q, k, w, 3)
    torch.where(idx >= 0, val, 0.0).sum().backward()
    assert q.grad.abs().sum() > 0 and k.grad.abs().sum() > 0 and w.grad.abs().sum() > 0
    dist = importlib.metadata.distribution("lig")
    print(json.dumps({
        "package": str(pathlib.Path(lig.__file__).resolve().parent),
        "library": str(pathlib.Path(lig._capi.lib._name).resolve()),
        "version": lig.__version__,
        "metadata_version": dist.version,
        "license_files": [str(f) for f in dist.files or [] if f.name == "LICENSE"],
        "typed": (pathlib.Path(lig.__file__).parent / "py.typed").is_file(),
        "prefix": sys.prefix,
    }))
    """
)


def run(cmd, cwd, env=None, timeout=600) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def clean_env() -> dict:
    """The environment of a user's shell: no override of the library, no virtualenv activated."""
    return {k: v for k, v in os.environ.items() if k not in ("LIG_LIBRARY", "PYTHONPATH", "VIRTUAL_ENV")}


def _is_lig(name: str) -> bool:
    return name == "lig" or name.startswith(("lig-", "_editable_skbc_lig")) or name.endswith(".pth")


class Venv:
    def __init__(self, root: pathlib.Path):
        self.root = root
        run([sys.executable, "-m", "venv", "--without-pip", root], cwd=root.parent)
        self.python = root / "bin" / "python"
        purelib = pathlib.Path(
            run([self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root)
            .strip())
        reused = root / "reused-packages"
        reused.mkdir()
        ours = dict.fromkeys(pathlib.Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib"))
        for site in ours:
            for entry in site.iterdir():
                if not _is_lig(entry.name) and not (reused / entry.name).exists():
                    (reused / entry.name).symlink_to(entry)
        (purelib / "_lig_test_reuse.pth").write_text(f"{reused}\n")

    def pip_install(self, *args, cwd) -> str:
        return run([sys.executable, "-m", "pip", "--python", self.python, "install", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "--no-input", "-q", *args],
                   cwd=cwd, env=clean_env())

    def check(self, cwd) -> dict:
        import json

        out = run([self.python, "-c", CHECK], cwd=cwd, env=clean_env())
        return json.loads(out.strip().splitlines()[-1])
