"""pip's stash-folder rule, held against the real pip installed in this venv: every name its
``AdjacentTempDirectory._generate_names`` yields for a folder is recognised, and no other name of
the same shape is; and a mapped path in such a stash leads back to the path it was loaded by."""

from __future__ import annotations

import itertools

import pytest
from pip._internal.utils.temp_dir import AdjacentTempDirectory

from cudnn_magic.rules.pip_stash import LEADING_CHARS, is_adjacent_stash_name, stashed_folder


def test_the_leading_characters_are_pips():
    assert LEADING_CHARS == AdjacentTempDirectory.LEADING_CHARS


def _pips(original: str, longest: int) -> set[str]:
    """Every name pip tries for a folder ``original``, up to ``longest`` characters (the generator
    yields the names of the folder's length first, then longer ones, each length in turn)."""
    return set(itertools.takewhile(lambda n: len(n) <= longest, AdjacentTempDirectory._generate_names(original)))


@pytest.mark.parametrize("original", ["lib", "ab", "x", "a~b", "~ib", "l0"])
def test_exactly_the_names_pip_generates_are_stash_names(original):
    """Short folder names: every name of up to two characters more than the folder's, over the
    characters involved, against pip's own list: the rule says yes to exactly pip's."""
    longest = len(original) + 2
    pips = _pips(original, longest)
    alphabet = sorted(set(LEADING_CHARS + original + "xZ"))
    for size in range(1, longest + 1):
        for rest in itertools.product(alphabet, repeat=size - 1):
            name = "~" + "".join(rest)
            assert is_adjacent_stash_name(name, original) == (name in pips), (name, original)


@pytest.mark.parametrize("original", ["cudnn_jit", "lib64"])
def test_a_long_folder_name_gets_pips_names_and_none_one_character_off(original):
    """A longer name has too many candidates to list every string: each of pip's names up to two
    characters longer is recognised, and each of the first 2,000 with one character changed is
    recognised exactly when pip would generate it too."""
    pips = _pips(original, len(original) + 2)
    assert all(is_adjacent_stash_name(n, original) for n in pips)
    alphabet = sorted(set(LEADING_CHARS + original + "xZ"))
    for name in sorted(pips)[:2000]:
        for i in range(len(name)):
            for c in alphabet:
                near = name[:i] + c + name[i + 1:]
                assert is_adjacent_stash_name(near, original) == (near in pips), (near, original)


def test_names_that_do_not_start_with_a_tilde_or_equal_the_folder_are_not_stashes():
    assert not is_adjacent_stash_name("lib", "lib")
    assert not is_adjacent_stash_name("-ib", "lib")
    assert not is_adjacent_stash_name("~ib", "")
    assert not is_adjacent_stash_name("~" + "-" * 15 + "lib", "lib")  # pip stops at 14 leading characters
    assert is_adjacent_stash_name("~" + "-" * 14 + "lib", "lib")


def test_a_stashed_path_leads_back_to_the_folder_pip_moved():
    site = "/venv/lib/python3.11/site-packages"
    loaded = f"{site}/nvidia/cudnn_jit/lib/libcudnn.so.9"
    # the folder pip owns wholly is moved: lib (measured with nvidia-cudnn-jit-cu12), or a higher one
    assert stashed_folder(f"{site}/nvidia/cudnn_jit/~ib/libcudnn.so.9", loaded) == f"{site}/nvidia/cudnn_jit/lib"
    assert stashed_folder(f"{site}/nvidia/cudnn_jit/~-b/libcudnn.so.9", loaded) == f"{site}/nvidia/cudnn_jit/lib"
    assert stashed_folder(f"{site}/nvidia/~udnn_jit/lib/libcudnn.so.9", loaded) == f"{site}/nvidia/cudnn_jit"
    assert stashed_folder(f"{site}/nvidia/cudnn_jit//~ib/./libcudnn.so.9", loaded) == f"{site}/nvidia/cudnn_jit/lib"
    for other in (
        loaded,  # the same path: not moved
        f"{site}/nvidia/cudnn_jit/~ib/libcudnn_graph.so.9",  # another file
        f"{site}/nvidia/cudnn_jit/~ib/sub/libcudnn.so.9",  # another depth
        f"{site}/nvidia/cudnn/~ib/libcudnn.so.9",  # two folders differ
        f"{site}/nvidia/cudnn_jit/Xib/libcudnn.so.9",  # not a stash name
        "/tmp/pip-uninstall-abcd1234/libcudnn.so.9",  # pip's fallback in the temporary folder
        "~ib/libcudnn.so.9",  # not absolute
    ):
        assert stashed_folder(other, loaded) is None, other
