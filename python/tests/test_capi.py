"""lig._capi against include/lig.h, read as text: every constant _capi defines has lig.h's value (and
each enum it mirrors is mirrored whole); every function it binds is declared in lig.h with as many
parameters, each of a matching C type, and the matching return type. And nothing else in the
package loads the library, binds a function or copies a constant.

A change to lig.h that _capi.py does not follow fails here (test_header_changes_are_caught makes
such changes to a copy of the header and checks that each is reported). The header is the
repository's include/lig.h, or csrc/include/lig.h in an unpacked sdist; outside both the header
tests are skipped by name, but inside the repository a missing header is a failure."""
from __future__ import annotations

import ast
import ctypes
import pathlib
import re
from typing import Dict, List, NamedTuple, Optional, Tuple

import pytest

from lig import _capi

TESTS = pathlib.Path(__file__).resolve().parent
REPO = TESTS.parents[1]
IN_REPOSITORY = (REPO / "CMakeLists.txt").is_file() and (REPO / "python" / "pyproject.toml").is_file()
HEADER_PLACES = (REPO / "include" / "lig.h", TESTS.parent / "csrc" / "include" / "lig.h")


@pytest.fixture(scope="module")
def header_text() -> str:
    for place in HEADER_PLACES:
        if place.is_file():
            return place.read_text()
    where = ", ".join(str(p) for p in HEADER_PLACES)
    if IN_REPOSITORY:
        pytest.fail(f"include/lig.h is missing from the repository (looked in {where})")
    pytest.skip(f"SKIPPED test_capi: lig.h is not beside these tests (looked in {where}); run them from the "
                "repository or an unpacked sdist")


# ---- lig.h, parsed --------------------------------------------------------------------------------


class CType(NamedTuple):
    base: str  # "int64_t", "lig_tensor", "char", "void", ... (const dropped)
    pointers: int  # how many '*'

    def __str__(self) -> str:
        return self.base + " " + "*" * self.pointers if self.pointers else self.base


class Function(NamedTuple):
    returns: CType
    params: List[CType]


class Header(NamedTuple):
    enums: Dict[str, Dict[str, int]]  # enum type -> member -> value
    defines: Dict[str, int]  # numeric #defines
    opaque: set  # struct types declared and never defined (handles)
    functions: Dict[str, Function]


def _c_type(declaration: str, named: bool) -> CType:
    """The type of `const lig_tensor *query` (named: the last word is the parameter's name)."""
    tokens = [t for t in re.findall(r"\w+|\*", declaration) if t not in ("const", "volatile", "restrict")]
    if named and len(tokens) > 1 and tokens[-1] != "*":
        tokens = tokens[:-1]
    words = [t for t in tokens if t != "*"]
    if not words:
        raise ValueError(f"cannot read the C type of {declaration!r}")
    return CType(" ".join(words), tokens.count("*"))


def parse_header(text: str) -> Header:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    defines = {m.group(1): int(m.group(2), 0) for m in re.finditer(
        r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+\(?(-?(?:0[xX][0-9a-fA-F]+|\d+))[uUlL]*\)?[ \t]*$", text, re.M)}
    code = re.sub(r"^[ \t]*#[^\n]*", " ", text, flags=re.M)  # the preprocessor's lines are not declarations
    enums = {}
    for m in re.finditer(r"typedef\s+enum\s+\w*\s*\{(.*?)\}\s*(\w+)\s*;", code, re.S):
        members, value = {}, -1
        for item in filter(None, (i.strip() for i in m.group(1).split(","))):
            name, _, given = (s.strip() for s in item.partition("="))
            value = int(given, 0) if given else value + 1  # C's rule: one more than the previous
            members[name] = value
        enums[m.group(2)] = members
    opaque = set(re.findall(r"typedef\s+struct\s+\w+\s+(\w+)\s*;", code))
    functions = {}
    for m in re.finditer(r"\bLIG_API\s+([\w\s\*]+?)\s*\b(\w+)\s*\(([^)]*)\)\s*;", code):
        params = m.group(3).strip()
        functions[m.group(2)] = Function(
            _c_type(m.group(1), named=False),
            [] if params in ("", "void") else [_c_type(p, named=True) for p in params.split(",")])
    return Header(enums, defines, opaque, functions)


# ---- what ctypes must say for each C type -----------------------------------------------------------

_SCALARS = {
    "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64, "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32,
    "int16_t": ctypes.c_int16, "uint16_t": ctypes.c_uint16, "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8,
    "int": ctypes.c_int, "unsigned int": ctypes.c_uint, "unsigned": ctypes.c_uint, "size_t": ctypes.c_size_t,
    "bool": ctypes.c_bool, "_Bool": ctypes.c_bool, "float": ctypes.c_float, "double": ctypes.c_double,
}


def expected_ctype(t: CType, header: Header):
    """The ctypes type a binding must give C type t (None for void), or raises for one this test
    does not know (extend the table rather than let it pass unchecked)."""
    handle = t.base in header.opaque or t.base == "void"
    scalar = ctypes.c_int if t.base in header.enums else _SCALARS.get(t.base)  # a C enum is an int
    if t.pointers == 0:
        if t.base == "void":
            return None
        if scalar is not None:
            return scalar
    elif t.pointers == 1:
        if t.base == "char":
            return ctypes.c_char_p
        if handle:
            return ctypes.c_void_p
        if scalar is not None:
            return ctypes.POINTER(scalar)
    elif t.pointers == 2:
        if handle:
            return ctypes.POINTER(ctypes.c_void_p)  # e.g. lig_executor **: where a handle is written
        if t.base == "char":
            return ctypes.POINTER(ctypes.c_char_p)
    raise AssertionError(f"C type {t} has no ctypes spelling in test_capi.py's table")


def _name(ctype) -> str:
    return "None (void)" if ctype is None else ctype.__name__


# ---- the comparisons --------------------------------------------------------------------------------


def _constants(module) -> Dict[str, object]:
    return {k: v for k, v in vars(module).items() if k.startswith("LIG_")}


def _bound_functions(module) -> Dict[str, ctypes._CFuncPtr]:
    return {k: v for k, v in vars(module).items() if isinstance(v, ctypes._CFuncPtr)}


def constant_mismatches(header: Header, module=_capi) -> List[str]:
    known: Dict[str, Tuple[int, Optional[str]]] = {name: (v, None) for name, v in header.defines.items()}
    for enum, members in header.enums.items():
        known.update({name: (v, enum) for name, v in members.items()})
    problems, mirrored = [], set()
    for name, value in _constants(module).items():
        if name not in known:
            problems.append(f"{name}: defined by _capi but not a constant of lig.h")
        elif type(value) is not int or value != known[name][0]:
            problems.append(f"{name}: _capi has {value!r}, lig.h {known[name][0]}")
        else:
            mirrored.add(known[name][1])
    for enum in sorted(e for e in mirrored if e is not None):
        missing = [m for m in header.enums[enum] if m not in _constants(module)]
        if missing:
            problems.append(f"{enum}: _capi mirrors this enum but lacks {', '.join(missing)}")
    return problems


def function_mismatches(header: Header, module=_capi) -> List[str]:
    problems = []
    for attribute, f in _bound_functions(module).items():
        name = f.__name__
        if attribute != name:
            problems.append(f"_capi.{attribute} binds {name}: bind each function under its C name")
        if name not in header.functions:
            problems.append(f"{name}: bound by _capi but not declared in lig.h")
            continue
        c = header.functions[name]
        want = expected_ctype(c.returns, header)
        if f.restype is not want:
            problems.append(f"{name}: returns {c.returns} in lig.h ({_name(want)}), _capi says {_name(f.restype)}")
        if f.argtypes is None:
            problems.append(f"{name}: _capi gives no argtypes (lig.h: {len(c.params)} parameters)")
            continue
        if len(f.argtypes) != len(c.params):
            problems.append(f"{name}: lig.h has {len(c.params)} parameters, _capi {len(f.argtypes)}")
            continue
        for i, (t, got) in enumerate(zip(c.params, f.argtypes)):
            want = expected_ctype(t, header)
            if got is not want:
                problems.append(f"{name}: parameter {i} is {t} in lig.h ({_name(want)}), _capi says {_name(got)}")
    return problems


# ---- the tests ----------------------------------------------------------------------------------------


def test_header_is_parsed(header_text):
    """The parser sees what lig.h declares (a parser that found nothing would pass everything)."""
    h = parse_header(header_text)
    assert {"lig_status", "lig_dtype", "lig_device", "lig_kl_target"} <= set(h.enums), sorted(h.enums)
    assert h.enums["lig_status"]["LIG_SUCCESS"] == 0 and {"lig_tensor", "lig_executor"} <= h.opaque
    assert h.defines["LIG_MAX_DIMS"] >= 1 and "LIG_WORKSPACE_STATUS_BYTES" in h.defines
    grad = h.functions["lig_indexer_grad_get_workspace_size"]
    assert grad.returns == CType("lig_status", 0) and len(grad.params) == 18, grad
    assert grad.params[0] == CType("lig_tensor", 1) and grad.params[8] == CType("char", 1)
    assert grad.params[-1] == CType("lig_executor", 2) and grad.params[-2] == CType("uint64_t", 1)
    assert h.functions["lig_get_num_threads"].params == [] and h.functions["lig_destroy_tensor"].returns.base == "void"


def test_constants_match_the_header(header_text):
    assert constant_mismatches(parse_header(header_text)) == []
    # what the package relies on is mirrored (and so checked): statuses, dtypes, devices, KL targets
    mirrored, enums = set(_constants(_capi)), parse_header(header_text).enums
    for enum in ("lig_status", "lig_dtype", "lig_device", "lig_kl_target"):
        assert set(enums[enum]) <= mirrored, enum
    assert {"LIG_MAX_DIMS", "LIG_WORKSPACE_STATUS_BYTES"} <= mirrored
    assert _capi.INT64_MAX == 2 ** (8 * ctypes.sizeof(ctypes.c_int64) - 1) - 1


def test_functions_match_the_header(header_text):
    assert len(_bound_functions(_capi)) >= 25
    assert function_mismatches(parse_header(header_text)) == []


_MUTATIONS = [  # (what, old text of lig.h, new text, a name the report must give)
    ("a status code's value", "LIG_ERR_INNER = 561000", "LIG_ERR_INNER = 561001", "LIG_ERR_INNER"),
    ("a dtype added", "LIG_UINT8 = 7", "LIG_UINT8 = 7,\n    LIG_FLOAT8_E5M2 = 8", "lig_dtype"),
    ("a #define's value", "#define LIG_WORKSPACE_STATUS_BYTES 192", "#define LIG_WORKSPACE_STATUS_BYTES 256",
     "LIG_WORKSPACE_STATUS_BYTES"),
    ("a parameter added", "const lig_tensor *key_end, int64_t block_size, int64_t workers,",
     "const lig_tensor *key_end, int64_t block_size, int64_t workers, int64_t flags,", "lig_quant_logits_schedule"),
    ("a parameter's type", "int64_t head_num, const char *layout", "int head_num, const char *layout",
     "lig_indexer_grad_get_workspace_size"),
    ("bool for int64_t", "bool compressed, const lig_tensor *logits /* may be NULL */, int64_t sparse_count",
     "bool compressed, const lig_tensor *logits /* may be NULL */, bool sparse_count",
     "lig_quant_logits_get_workspace_size"),
    ("double for float", "double scale, const char *layout", "float scale, const char *layout",
     "lig_sparse_indexer_grad_kl_loss_get_workspace_size"),
    ("a return type", "LIG_API int lig_get_num_threads(void);", "LIG_API int64_t lig_get_num_threads(void);",
     "lig_get_num_threads"),
    ("a string return", "LIG_API const char *lig_version(void);", "LIG_API lig_status lig_version(void);",
     "lig_version"),
    ("a function renamed", "lig_status lig_destroy_executor(", "lig_status lig_executor_destroy(",
     "lig_destroy_executor"),
]


@pytest.mark.parametrize("what, old, new, named", _MUTATIONS, ids=[m[0] for m in _MUTATIONS])
def test_header_changes_are_caught(header_text, what, old, new, named):
    """Each change to a copy of lig.h, not followed by _capi, is reported by name."""
    assert old in header_text, f"the mutation {what!r} no longer applies to lig.h: update it"
    changed = parse_header(header_text.replace(old, new, 1))
    problems = constant_mismatches(changed) + function_mismatches(changed)
    assert any(named in p for p in problems), (what, problems)


def bindings_outside_capi(package: pathlib.Path) -> List[str]:
    """What the modules of `package` other than _capi.py do that only _capi may: load a library,
    set or read argtypes / restype, make a function prototype, bind, or assign a LIG_* name; and
    any import of _capi.py's beyond the standard library's few (it needs no torch)."""
    loaders = {"CDLL", "PyDLL", "WinDLL", "OleDLL", "LoadLibrary", "CFUNCTYPE", "PYFUNCTYPE", "WINFUNCTYPE", "_bind"}
    problems = []
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        if path.name == "_capi.py":
            imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                         if isinstance(n, ast.ImportFrom) and n.module and not n.level}
            allowed = {"__future__", "ctypes", "os", "pathlib", "sys"}
            problems += [f"_capi.py imports {m}" for m in sorted(imported - allowed)]
            continue
        for node in ast.walk(tree):
            where = f"{path.name}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Attribute) and node.attr in ("argtypes", "restype"):
                problems.append(f"{where}: sets or reads .{node.attr}")
            elif isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called in loaders:
                    problems.append(f"{where}: calls {called}")
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                problems += [f"{where}: assigns {n} (lig.h's constants live in _capi)" for n in names
                             if n.startswith("LIG_")]
    return problems


def test_only_capi_loads_binds_or_copies():
    """The other modules of the package take the library, its functions and its constants from
    _capi, and _capi imports only the standard library."""
    package = pathlib.Path(_capi.__file__).parent
    assert len(list(package.glob("*.py"))) > 10 and (package / "_capi.py").is_file()
    assert bindings_outside_capi(package) == []


def test_bindings_outside_capi_are_caught(tmp_path):
    (tmp_path / "_capi.py").write_text("import ctypes\nimport torch\n")
    (tmp_path / "_other.py").write_text(
        "import ctypes\n"
        "from ._capi import lib\n"
        "LIG_INT8 = 6\n"
        "f = lib.lig_version\n"
        "f.restype = ctypes.c_char_p\n"
        "g = ctypes.CFUNCTYPE(ctypes.c_int)((\"lig_version\", lib))\n"
        "h = ctypes.CDLL(\"liblig.so\")\n")
    found = bindings_outside_capi(tmp_path)
    assert sorted(found) == ["_capi.py imports torch", "_other.py:3: assigns LIG_INT8 (lig.h's constants live in _capi)",
                     "_other.py:5: sets or reads .restype", "_other.py:6: calls CFUNCTYPE",
                     "_other.py:7: calls CDLL"], found
