"""docs/architecture.md cannot go stale without a failure: it names every file of the trees in TREES,
and every file name written in a tree's entry of its layout exists in that tree.

A file is named when its name appears in the document as a word, written out (``_capi.py``,
``src/core/size.h``) or in shell form: alternatives in braces (``fwd_engine_{f32,bf16}.c``,
``executor.{h,c}``) and ``*`` for any characters (``tensor.*``). A tree's entry is its line of the
layout block (the line that starts with the folder, e.g. ``python/src/lig/``) and the indented lines
under it, up to the next line that starts in the first column.

Adding a tree is one line in TREES: its folder in the repository, where an unpacked sdist has it
(None when it has none) and the entries of the layout that describe it.
"""
from __future__ import annotations

import fnmatch
import pathlib
import re
from typing import Iterable, List, NamedTuple, Optional, Tuple

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
REPO = TESTS.parents[1]
IN_REPOSITORY = (REPO / "CMakeLists.txt").is_file() and (REPO / "python" / "pyproject.toml").is_file()
# the repository's docs/, or the copy an sdist carries beside tests/
DOC_PLACES = (REPO / "docs" / "architecture.md", TESTS.parent / "docs" / "architecture.md")


class Tree(NamedTuple):
    folder: str  # from the repository root
    in_sdist: Optional[str]  # from an unpacked sdist's root (the folder above tests/)
    entries: Tuple[str, ...]  # the layout lines that describe it (their first word)


TREES = (
    Tree("python/src/lig", "src/lig", ("python/src/lig/",)),
    Tree("src", "csrc/src", ("src/api/", "src/core/", "src/testing/", "src/backends/")),
)

# Made by builds and interpreters, never written by hand.
_GENERATED_DIRS = {"__pycache__"}
_GENERATED_SUFFIXES = (".pyc", ".pyo", ".so", ".dylib", ".dll")


# ---- the document, read --------------------------------------------------------------------------


def _split_outside_braces(text: str, separator: str = ",") -> List[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def expand_braces(word: str) -> List[str]:
    """``a{b,c}d{e,}`` -> ``abde, abd, acde, acd`` (as the shell does; nesting allowed)."""
    start = word.find("{")
    if start < 0:
        return [word]
    depth = 0
    for end in range(start, len(word)):
        depth += {"{": 1, "}": -1}.get(word[end], 0)
        if depth == 0:
            break
    else:
        return [word]  # unbalanced: taken as written
    head, body, tail = word[:start], word[start + 1:end], word[end + 1:]
    return [expanded for choice in _split_outside_braces(body) for expanded in expand_braces(head + choice + tail)]


def named_words(text: str, with_folders: bool = True) -> List[str]:
    """Every file name or pattern the text gives: the last path component of each word, braces
    expanded (a sentence's trailing punctuation dropped); with_folders=False leaves out the words
    written with a folder (``python/tests/test_capi.py``: a file of another tree)."""
    names = []
    for token in re.findall(r"[A-Za-z0-9_.{},*/+-]+", text):
        for part in _split_outside_braces(token):
            for word in expand_braces(part.strip(".,:;")):
                name = word.rstrip("/").rsplit("/", 1)[-1].strip(".,:;")
                if name and (with_folders or "/" not in word.rstrip("/")):
                    names.append(name)
    return names


def _names_files(word: str) -> bool:
    """A pattern names files only with a stem of its own ("tensor.*", "*__avx2.c"): "*" or "*.c"
    would name every file, and the check could not fail."""
    if "*" not in word:
        return True
    literal = word.replace("*", "")
    stem = pathlib.PurePath(literal).stem if "." in word.strip(".*") else literal
    return len(stem.strip(".")) >= 3


def _matches(name: str, word: str) -> bool:
    return _names_files(word) and fnmatch.fnmatchcase(name, word)


def layout_entry(doc: str, first_word: str) -> str:
    """The entry of the layout block that starts with first_word, with its indented lines."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.split(" ", 1)[0] == first_word:
            entry = [line]
            for following in lines[i + 1:]:
                if not following.startswith(" ") or not following.strip():
                    break
                entry.append(following)
            return "\n".join(entry)
    raise AssertionError(f"docs/architecture.md has no layout entry starting with {first_word!r}")


# ---- the trees ---------------------------------------------------------------------------------------


def tree_files(root: pathlib.Path) -> List[pathlib.Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not _GENERATED_DIRS & set(p.relative_to(root).parts)
                  and not p.name.endswith(_GENERATED_SUFFIXES))


def unnamed_files(files: Iterable[pathlib.Path], doc: str) -> List[pathlib.Path]:
    words = set(named_words(doc))
    return [f for f in files if not any(_matches(f.name, w) for w in words)]


def stale_names(entry: str, files: List[pathlib.Path]) -> List[str]:
    """The file names an entry gives bare (words with a suffix the tree's files have) that no file
    of the tree has."""
    suffixes = {f.suffix for f in files if f.suffix}
    return [w for w in named_words(entry, with_folders=False) if pathlib.PurePath(w).suffix in suffixes and _names_files(w)
            and not any(_matches(f.name, w) for f in files)]


def _locate(tree: Tree) -> Optional[pathlib.Path]:
    for place in (REPO / tree.folder, TESTS.parent / tree.in_sdist if tree.in_sdist else None):
        if place is not None and place.is_dir():
            return place
    return None


@pytest.fixture(scope="module")
def doc() -> str:
    for place in DOC_PLACES:
        if place.is_file():
            return place.read_text()
    if IN_REPOSITORY:
        pytest.fail("docs/architecture.md is missing from the repository")
    pytest.skip("SKIPPED test_docs_architecture: docs/architecture.md is not beside these tests")


@pytest.mark.parametrize("tree", TREES, ids=[t.folder for t in TREES])
def test_architecture_names_every_file(doc, tree):
    root = _locate(tree)
    if root is None:
        if IN_REPOSITORY:
            pytest.fail(f"{tree.folder} is missing from the repository")
        pytest.skip(f"SKIPPED test_docs_architecture: {tree.folder} is not beside these tests")
    files = tree_files(root)
    assert files, f"{root} holds no files"
    missing = [f.relative_to(root).as_posix() for f in unnamed_files(files, doc)]
    assert missing == [], f"docs/architecture.md does not name these files of {tree.folder}: {missing}"
    for first_word in tree.entries:
        stale = stale_names(layout_entry(doc, first_word), files)
        assert stale == [], f"docs/architecture.md's {first_word} entry names files {tree.folder} lacks: {stale}"


def test_the_check_can_fail(tmp_path):
    """A file the document does not name is reported; one named by a pattern is not; a name in the
    entry that no file has is stale."""
    for name in ("engine_f32.c", "engine_bf16.c", "tensor.h", "tensor.c", "plan.h", "unnamed.c", "_capi.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "_capi.cpython-311.pyc").write_text("")
    doc = ("```text\nsrc/x/   engine_{f32,bf16}.c and tensor.*; `plan.h`, src/* *.c *.*\n"
           "         _capi.py (_gone.py, see tests/test_x.py) old.{h,c}\nsrc/y/   other.c\n```\nunnamed.cc\n")
    files = tree_files(tmp_path)
    assert [f.name for f in unnamed_files(files, doc)] == ["unnamed.c"]
    assert stale_names(layout_entry(doc, "src/x/"), files) == ["_gone.py", "old.h", "old.c"]
    assert stale_names(layout_entry(doc, "src/y/"), files) == ["other.c"]
    assert expand_braces("sparse_kl_loss{,_plan}.c") == ["sparse_kl_loss.c", "sparse_kl_loss_plan.c"]
