"""probes.owners.find_overwritten_wheels at its edges: which files two wheels share, the folder
they are grouped by, whose files are there now, and the bytes each wheel lists there (issue 20).

Sources: PEP 376 / PEP 627 (``RECORD``: one ``path,sha256=<digest>,size`` line per file, paths
relative to the folder holding the ``.dist-info``; the ``.dist-info`` folder itself is the
distribution's own); docs/facts.md "Two cuDNNs at once" (``nvidia-cudnn-cu12`` and ``-cu13`` 9.x,
and the ``-jit-`` pair, install the same ``nvidia/cudnn*/lib/libcudnn*.so.9`` files; pip
overwrites the earlier install's files, keeps both ``RECORD``s and ``pip check`` says nothing).
The paths below are those of the real wheels' RECORDs (``nvidia/cudnn/lib/libcudnn.so.9``,
``nvidia/cudnn/include/cudnn.h``); the digests are distinct stand-ins, as the judgement is on
RECORD text only (the real wheels' case is tests/test_two_cudnns.py).
"""

from __future__ import annotations

import pytest

from cudnn_magic.probes.owners import DistRecord, RecordEntry, find_overwritten_wheels

SITE = "/env/lib/python3.12/site-packages"
LIB = f"{SITE}/nvidia/cudnn/lib"
SHIM, GRAPH, HEADER = "nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_graph.so.9", "nvidia/cudnn/include/cudnn.h"
CU12, CU13 = ("nvidia-cudnn-cu12", "9.10.2.21"), ("nvidia-cudnn-cu13", "9.13.0.50")


def _dist(key, *entries, root=SITE):
    return DistRecord(key[0], key[1], root, tuple(RecordEntry(p, d, s) for p, d, s in entries))


def _abs(rel):
    return f"{SITE}/{rel}"


def test_one_shared_file_groups_by_its_folder():
    a = _dist(CU12, (SHIM, "sha256=A", 100))
    b = _dist(CU13, (SHIM, "sha256=B", 120))
    (ow,) = find_overwritten_wheels([b, a], {})
    assert ow.directory == LIB  # one file: the folder holding it
    assert ow.files == (_abs(SHIM),)
    assert ow.distributions == (CU12, CU13)  # sorted, whatever the order given
    assert ow.present is None and ow.mixed is False and ow.evidence == ()
    assert ow.sizes == (100, 120)


def test_several_shared_files_group_by_their_common_folder():
    a = _dist(CU12, (SHIM, "sha256=A1", 100), (HEADER, "sha256=A2", 10))
    b = _dist(CU13, (SHIM, "sha256=B1", 120), (HEADER, "sha256=B2", 20))
    (ow,) = find_overwritten_wheels([a, b], {})
    assert ow.directory == f"{SITE}/nvidia/cudnn"
    assert ow.files == (_abs(HEADER), _abs(SHIM))
    assert ow.sizes == (110, 140)


def test_sizes_count_every_listed_file_in_the_folder_not_only_the_shared_ones():
    a = _dist(CU12, (SHIM, "sha256=A", 100), (GRAPH, "sha256=G", 5000), ("nvidia/other/x.so", "sha256=X", 7))
    b = _dist(CU13, (SHIM, "sha256=B", 120))
    (ow,) = find_overwritten_wheels([a, b], {})
    assert ow.directory == LIB
    assert ow.sizes == (5100, 120)  # nvidia/other is outside the folder; a missing size counts 0


def test_a_missing_size_counts_zero():
    a = _dist(CU12, (SHIM, "sha256=A", None))
    b = _dist(CU13, (SHIM, "sha256=B", 3))
    assert find_overwritten_wheels([a, b], {})[0].sizes == (0, 3)


@pytest.mark.parametrize("a_entries, b_entries", [
    ([(SHIM, "sha256=A", 1)], [(GRAPH, "sha256=B", 1)]),  # different files: nothing shared
    ([("nvidia_cudnn.dist-info/RECORD", None, None)], [("nvidia_cudnn.dist-info/RECORD", None, None)]),  # metadata
    ([], [(SHIM, "sha256=B", 1)]),
])
def test_nothing_shared_is_no_overwrite(a_entries, b_entries):
    assert find_overwritten_wheels([_dist(CU12, *a_entries), _dist(CU13, *b_entries)], {}) == ()


def test_a_different_root_is_a_different_place():
    a = _dist(CU12, (SHIM, "sha256=A", 1))
    b = _dist(CU13, (SHIM, "sha256=B", 1), root="/target")  # pip install --target /target
    assert find_overwritten_wheels([a, b], {}) == ()


C12, C13, NONE = "nvidia-cudnn-cu12 9.10.2.21", "nvidia-cudnn-cu13 9.13.0.50", "no distribution (changed after install)"
PRESENT = [
    # observed digests of (shim, header), who is there now, mixed, evidence in file order: (cudnn.h, libcudnn.so.9)
    (("sha256=A1", "sha256=A2"), CU12, False, (C12, C12)),
    (("sha256=B1", "sha256=B2"), CU13, False, (C13, C13)),
    (("sha256=B1", None), CU13, False, (None, C13)),  # one hashed file decides
    (("sha256=A1", "sha256=B2"), None, True, (C13, C12)),  # some files of each: mixed
    (("sha256=Z", None), None, False, (None, NONE)),
    (("sha256=A1", "sha256=Z"), None, False, (NONE, C12)),  # one file changed after install: undecided
    ((None, None), None, False, (None, None)),
]


@pytest.mark.parametrize("seen, present, mixed, who", PRESENT, ids=[f"{s[0]}-{s[1]}" for s, *_ in PRESENT])
def test_whose_files_are_there_now(seen, present, mixed, who):
    a = _dist(CU12, (SHIM, "sha256=A1", 100), (HEADER, "sha256=A2", 10))
    b = _dist(CU13, (SHIM, "sha256=B1", 120), (HEADER, "sha256=B2", 20))
    observed = {p: d for p, d in zip((_abs(SHIM), _abs(HEADER)), seen) if d is not None}
    (ow,) = find_overwritten_wheels([a, b], observed)
    assert ow.present == present
    assert ow.mixed is mixed
    assert ow.evidence == tuple(f"{name}: sha256 matches the RECORD of {w}"
                                for name, w in zip(("cudnn.h", "libcudnn.so.9"), who) if w is not None)


def test_identical_bytes_decide_nothing():
    # both wheels list the same digest for a file (a header unchanged between releases): its hash
    # cannot tell them apart, so it is no evidence either way
    a = _dist(CU12, (SHIM, "sha256=A", 100), (HEADER, "sha256=SAME", 10))
    b = _dist(CU13, (SHIM, "sha256=B", 120), (HEADER, "sha256=SAME", 10))
    (ow,) = find_overwritten_wheels([a, b], {_abs(HEADER): "sha256=SAME"})
    assert ow.present is None and ow.mixed is False and ow.evidence == ()
    (ow,) = find_overwritten_wheels([a, b], {_abs(HEADER): "sha256=SAME", _abs(SHIM): "sha256=B"})
    assert ow.present == CU13
    assert ow.evidence == ("libcudnn.so.9: sha256 matches the RECORD of nvidia-cudnn-cu13 9.13.0.50",)


def test_three_wheels_two_groups_sorted_by_folder():
    jit12, jit13 = ("nvidia-cudnn-jit-cu12", "9.12.0.46"), ("nvidia-cudnn-jit-cu13", "9.13.0.50")
    jit = "nvidia/cudnn_jit/lib/libcudnn.so.9"
    dists = [_dist(jit13, (jit, "sha256=J13", 5)), _dist(CU13, (SHIM, "sha256=B", 1)),
             _dist(jit12, (jit, "sha256=J12", 4)), _dist(CU12, (SHIM, "sha256=A", 2))]
    first, second = find_overwritten_wheels(dists, {_abs(jit): "sha256=J13"})
    assert (first.directory, first.distributions, first.present) == (LIB, (CU12, CU13), None)
    assert (second.directory, second.distributions, second.present) == (f"{SITE}/nvidia/cudnn_jit/lib", (jit12, jit13), jit13)
    assert second.sizes == (4, 5)


def test_three_wheels_on_one_file_are_one_group():
    cu11 = ("nvidia-cudnn-cu11", "9.1.0.70")
    dists = [_dist(CU12, (SHIM, "sha256=A", 1)), _dist(CU13, (SHIM, "sha256=B", 1)), _dist(cu11, (SHIM, "sha256=C", 1))]
    (ow,) = find_overwritten_wheels(dists, {_abs(SHIM): "sha256=C"})
    assert ow.distributions == (cu11, CU12, CU13)
    assert ow.present == cu11 and ow.mixed is False


def test_the_order_of_a_record_does_not_matter():
    # pip writes the .dist-info lines last, but RECORD order is not specified (PEP 376): a
    # metadata line or a file of one wheel only, before the shared file, hides nothing
    a = _dist(CU12, ("nvidia_cudnn_cu12-9.10.2.21.dist-info/METADATA", "sha256=M", 9), ("nvidia/cudnn/lib/own.so", "sha256=O", 1),
              (SHIM, "sha256=A", 100))
    b = _dist(CU13, ("nvidia/cudnn/lib/also_own.so", "sha256=P", 1), (SHIM, "sha256=B", 120))
    (ow,) = find_overwritten_wheels([a, b], {})
    assert ow.files == (_abs(SHIM),)


def test_groups_come_sorted_by_folder_not_by_name():
    # stand-in names chosen so that name order and folder order differ
    za, zb, ya, yb = ("a-first", "1"), ("a-second", "1"), ("z-first", "1"), ("z-second", "1")
    dists = [_dist(za, ("zzz/lib.so", "sha256=1", 1)), _dist(zb, ("zzz/lib.so", "sha256=2", 1)),
             _dist(ya, ("aaa/lib.so", "sha256=3", 1)), _dist(yb, ("aaa/lib.so", "sha256=4", 1))]
    assert [ow.directory for ow in find_overwritten_wheels(dists, {})] == [f"{SITE}/aaa", f"{SITE}/zzz"]


def test_two_wheels_with_the_same_bytes_both_match():
    # cu11 and cu12 list the same digest for the shim, cu13 another: the file on disk matches both
    cu11 = ("nvidia-cudnn-cu11", "9.1.0.70")
    dists = [_dist(CU12, (SHIM, "sha256=A", 1)), _dist(CU13, (SHIM, "sha256=B", 1)), _dist(cu11, (SHIM, "sha256=A", 1))]
    (ow,) = find_overwritten_wheels(dists, {_abs(SHIM): "sha256=A"})
    assert ow.evidence == ("libcudnn.so.9: sha256 matches the RECORD of nvidia-cudnn-cu11 9.1.0.70 and "
                           "nvidia-cudnn-cu12 9.10.2.21",)
    assert ow.present is None  # the hashes cannot tell cu11 from cu12
