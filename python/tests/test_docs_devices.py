"""Which devices each public function takes is documented twice, in its docstring ("Devices: ...")
and in python/README.md's Devices table; every public function that takes tensors is in both, and
the two say the same: CPU only, CUDA tensors with a CUDA build of the library, or CUDA tensors in
any build (torch code)."""
import inspect
import pathlib
import re

import lig

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"  # python/README.md, also the sdist's

# the public functions that take no tensor
TENSOR_FREE = {"check_errors", "set_num_threads", "get_num_threads", "kernel_sets", "set_kernel_set",
               "get_kernel_set"}

# what a docstring's "Devices:" paragraph starts with -> what the README's CUDA column starts with
_KINDS = {
    "Devices: CPU tensors only": "no",
    "Devices: CPU tensors; CUDA tensors too when the library was built with the CUDA backend": "CUDA build",
    "Devices: CPU or CUDA tensors, all on one device, in any build": "any build",
}


def _tensor_functions():
    return sorted(n for n in lig.__all__ if inspect.isfunction(getattr(lig, n)) and n not in TENSOR_FREE)


def _docstring_kind(name: str) -> str:
    doc = " ".join((getattr(lig, name).__doc__ or "").split())
    kinds = [kind for start, kind in _KINDS.items() if start in doc]
    assert len(kinds) == 1, f"lig.{name}: its docstring should say which devices it takes in one of the forms " \
                            f"{list(_KINDS)}, found {kinds}"
    return kinds[0]


def _readme_kinds() -> dict:
    text = README.read_text()
    section = text.split("\n### Devices\n", 1)[1].split("\n### ", 1)[0]
    kinds = {}
    for row in re.findall(r"^\|(.*)\|\s*$", section, re.M):
        cells = [c.strip() for c in row.split("|")]
        names = re.findall(r"`lig\.(\w+)`", cells[0])
        cuda = next((kind for kind in _KINDS.values() if cells[-1].startswith(kind)), None)
        for name in names:
            assert name not in kinds, f"python/README.md's Devices table lists lig.{name} twice"
            assert cuda is not None, f"python/README.md's Devices row of lig.{name}: unknown CUDA column {cells[-1]!r}"
            kinds[name] = cuda
    return kinds


def test_every_function_documents_its_devices():
    functions = _tensor_functions()
    assert len(functions) >= 10 and "indexer" in functions and "act_quant" in functions
    readme = _readme_kinds()
    assert sorted(readme) == functions, "python/README.md's Devices table and lig's public tensor functions differ"
    for name in functions:
        assert _docstring_kind(name) == readme[name], f"lig.{name}: docstring and README disagree on devices"
