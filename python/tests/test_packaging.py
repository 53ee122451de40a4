"""The package as a user installs it: `python -m build` makes an sdist and a wheel, and the wheel,
the sdist and an editable install each work in a fresh virtual environment, imported from a
directory outside the checkout (helpers in _venvs.py)."""
import pathlib
import sys
import tarfile
import zipfile

import pytest

from _venvs import REPO, Venv, clean_env, run


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """sdist and wheel of python/, as `python -m build` makes them (the wheel is built from the
    unpacked sdist, away from the repository)."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, REPO / "python"], cwd=out, env=clean_env())
    sdists, wheels = sorted(out.glob("lig-*.tar.gz")), sorted(out.glob("lig-*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in out.iterdir())
    return sdists[0], wheels[0]


def test_sdist_carries_the_c_library_and_the_contract(dists):
    sdist, _ = dists
    with tarfile.open(sdist) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
        pkg_info = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/PKG-INFO"))).read().decode()
    for needed in ("csrc/CMakeLists.txt", "csrc/include/lig.h", "LICENSE", "docs/contract.md", "CMakeLists.txt",
                   "pyproject.toml", "src/lig/py.typed"):
        assert needed in names, f"{needed} missing from {sdist.name}"
    # every C source of the repository's library, wherever it moves inside src/
    repo_sources = {p.relative_to(REPO).as_posix() for p in (REPO / "src").rglob("*") if p.is_file()}
    assert repo_sources and {"csrc/" + s for s in repo_sources} <= names
    assert "License-Expression: MIT" in pkg_info and "Classifier: Typing :: Typed" in pkg_info


def test_wheel_contents(dists):
    _, wheel = dists
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {"lig/liblig.so", "lig/py.typed", "lig/__init__.py"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.endswith((".h", ".a", ".pc", ".cmake")) for n in names), "only the shared library goes in"


def _assert_installed(info, venv, package_dir=None):
    package_dir = package_dir or pathlib.Path(info["prefix"])
    assert pathlib.Path(info["package"]).is_relative_to(package_dir), info
    assert pathlib.Path(info["library"]).is_relative_to(venv.root.resolve()), info
    assert info["version"] == info["metadata_version"]
    assert info["license_files"] and info["typed"], info


def test_wheel_installs_into_a_clean_environment(dists, tmp_path):
    _, wheel = dists
    venv = Venv(tmp_path / "venv")
    venv.pip_install(wheel, cwd=tmp_path)
    _assert_installed(venv.check(cwd=tmp_path), venv)


def test_sdist_installs_into_a_clean_environment(dists, tmp_path):
    """`pip install lig-<version>.tar.gz` used to fail on ../include/lig.h: the sdist held no C sources."""
    sdist, _ = dists
    local = tmp_path / sdist.name  # away from the repository: nothing around it to fall back on
    local.write_bytes(sdist.read_bytes())
    venv = Venv(tmp_path / "venv")
    venv.pip_install(local.name, cwd=tmp_path)
    _assert_installed(venv.check(cwd=tmp_path), venv)


def test_editable_install(tmp_path):
    """`pip install -e ./python` used to install fine and then fail on import: the library was
    looked for beside the sources only, but the build puts it in site-packages."""
    venv = Venv(tmp_path / "venv")
    venv.pip_install("-e", REPO / "python", cwd=tmp_path)
    info = venv.check(cwd=tmp_path)
    _assert_installed(info, venv, package_dir=REPO / "python" / "src" / "lig")
    assert not (REPO / "python" / "src" / "lig" / "liblig.so").exists()
