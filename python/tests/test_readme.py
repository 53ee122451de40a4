"""Every snippet of python/README.md runs as written, read from the README itself (so the two
cannot drift apart).

- ```python blocks run, each in a fresh interpreter, from a directory outside the checkout; a
  ``print(...)  # value`` line (indented ones too, e.g. in an ``except`` block) must print what its
  comment shows.
- ```sh blocks run line by line:
  * ``pip install ...`` into a fresh virtual environment (_venvs.py: offline, so pip also gets
    --no-deps --no-build-isolation), from the repository root; lig is then imported from outside
    the checkout;
  * ``python -m build python`` from the repository root, with --no-isolation and an output
    directory outside the checkout;
  * the examples (``python python/examples/...``, ``torchrun ...``) from the repository root;
  * the commands that run this suite (``make test-python``, ``... -m pytest ...``): they are what
    is running now.
  A line of any other kind fails the test, so that a new snippet cannot go unexecuted.
"""
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from _venvs import REPO, Venv, clean_env, run

README = REPO / "python" / "README.md"


def _blocks(lang):
    text = README.read_text()
    return re.findall(rf"^```{lang}[ \t]*\n(.*?)^```", text, flags=re.M | re.S)


def _sh_lines():
    lines = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                lines.append(words)
    return lines


def _kind(words):
    env_free = [w for w in words if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", w)]
    if env_free[:2] == ["pip", "install"]:
        return "pip"
    if env_free[:4] == ["python", "-m", "build", "python"]:
        return "build"
    if env_free[0] in ("python", "torchrun") and any(w.startswith("python/examples/") for w in env_free):
        return "example"
    if env_free == ["make", "test-python"] or "pytest" in env_free:
        return "suite"
    return None


def test_readme_has_snippets_of_every_kind():
    assert _blocks("python"), "no python block"
    kinds = [_kind(w) for w in _sh_lines()]
    unknown = [" ".join(w) for w, k in zip(_sh_lines(), kinds) if k is None]
    assert not unknown, f"README sh lines this test does not know how to run: {unknown}"
    assert {"pip", "build", "example", "suite"} <= set(kinds)


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_python_block_runs(index, tmp_path):
    code = _blocks("python")[index]
    out = run([sys.executable, "-c", code], cwd=tmp_path, env=clean_env())
    for shown in re.findall(r"^[ \t]*print\(.*\)[ \t]+#[ \t]*(.+?)[ \t]*$", code, flags=re.M):
        expected = shown.split("...")[0].strip()  # "tensor(-inf, ...)": the part before the ellipsis
        assert expected in out, f"README says {shown!r}, the snippet printed:\n{out}"


@pytest.mark.parametrize("words", [w for w in _sh_lines() if _kind(w) == "pip"], ids=" ".join)
def test_pip_install_line(words, tmp_path):
    venv = Venv(tmp_path / "venv")
    venv.pip_install(*words[2:], cwd=REPO)
    info = venv.check(cwd=tmp_path)
    editable = "-e" in words or "--editable" in words
    home = REPO / "python" / "src" / "lig" if editable else venv.root
    assert pathlib.Path(info["package"]).is_relative_to(home.resolve()), info
    assert pathlib.Path(info["library"]).is_relative_to(venv.root.resolve()), info


@pytest.mark.parametrize("words", [w for w in _sh_lines() if _kind(w) == "build"], ids=" ".join)
def test_build_line(words, tmp_path):
    run([sys.executable, *words[1:], "--no-isolation", "--outdir", tmp_path], cwd=REPO, env=clean_env())
    assert len(list(tmp_path.glob("lig-*.tar.gz"))) == 1 and len(list(tmp_path.glob("lig-*.whl"))) == 1


@pytest.mark.parametrize("words", [w for w in _sh_lines() if _kind(w) == "example"], ids=" ".join)
def test_example_line(words):
    env = dict(clean_env(), PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(words, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(words)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
