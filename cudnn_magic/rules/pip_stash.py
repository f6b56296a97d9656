"""pip's stash folders: where ``pip install -U`` and ``pip uninstall`` move a distribution's folder
before deleting it, so that the path a running process shows for a library it mapped from there can
be traced back to the folder it was loaded from (pure functions).

Source: pip 26.3, ``pip/_internal/req/req_uninstall.py`` (``StashedUninstallPathSet``) and
``pip/_internal/utils/temp_dir.py`` (``AdjacentTempDirectory``). An uninstall (an upgrade uninstalls
the old release first) renames every folder the distribution owns wholly (``compress_for_rename``:
``nvidia/cudnn_jit/lib`` of a cuDNN wheel) to a folder beside it, named by
``AdjacentTempDirectory._generate_names``, then deletes the stash once the install succeeded. For a
folder named ``name`` the names tried are, in this order:

* ``"~" + c + name[i:]`` for ``i`` from 1 to ``len(name) - 1`` and each ``c`` of
  ``itertools.combinations_with_replacement(LEADING_CHARS, i - 1)``: the same length, the first
  ``i`` characters replaced (``lib`` -> ``~ib``, then ``~-b``, ``~~b``...);
* then ``"~" + c + name`` for each ``c`` of ``combinations_with_replacement(LEADING_CHARS, k)``, ``k``
  from 0 to ``len(LEADING_CHARS) - 1``: longer names (``~lib``, ``~-lib``...);

skipping a name equal to ``name``, and taking the first that ``os.mkdir`` creates. When none can be
created, and for a single file whose folder pip does not own wholly, the stash is a
``pip-uninstall-*`` folder under the system's temporary folder instead: no folder beside the
original, so nothing here matches it.
"""

from __future__ import annotations

import posixpath

__all__ = ["LEADING_CHARS", "is_adjacent_stash_name", "stashed_folder"]

#: ``AdjacentTempDirectory.LEADING_CHARS`` (pip 26.3): characters valid in a file name but not
#: in a package name, so a stash never looks like an installed package.
LEADING_CHARS = "-~.=%0123456789"


def _is_combination(chars: str) -> bool:
    """Is ``chars`` one of ``itertools.combinations_with_replacement(LEADING_CHARS, len(chars))``
    (characters of ``LEADING_CHARS`` in non-decreasing order of their position there)?"""
    positions = [LEADING_CHARS.find(c) for c in chars]
    return all(p >= 0 for p in positions) and positions == sorted(positions)


def is_adjacent_stash_name(candidate: str, original: str) -> bool:
    """Is ``candidate`` a name pip's ``AdjacentTempDirectory`` gives the stash of a folder named
    ``original`` (module docstring: ``lib`` -> ``~ib``, ``~-b``..., ``~lib``, ``~-lib``...)?

    Decided without listing the names (a long name has millions). Pure."""
    if not candidate.startswith("~") or not original or candidate == original:
        return False
    if len(candidate) == len(original):  # "~" + combination of i - 1 characters + original[i:]
        i = next((i for i in range(1, len(original)) if candidate[i:] == original[i:]), None)
        return i is not None and _is_combination(candidate[1:i])
    k = len(candidate) - 1 - len(original)  # "~" + combination of k characters + original
    return 0 <= k < len(LEADING_CHARS) and candidate.endswith(original) and _is_combination(candidate[1:1 + k])


def stashed_folder(shown: str, loaded: str) -> str | None:
    """When ``shown`` (an absolute path a mapping has now) is the file ``loaded`` (the absolute path
    it was loaded by) moved with one of its folders into pip's stash for that folder: that folder of
    ``loaded`` (``/.../nvidia/cudnn_jit/lib`` for ``/.../nvidia/cudnn_jit/~ib/libcudnn.so.9`` and
    ``/.../nvidia/cudnn_jit/lib/libcudnn.so.9``); else None. The two paths must be the same but for
    one folder, whose name in ``shown`` is a stash name of its name in ``loaded``
    (:func:`is_adjacent_stash_name`); the file name is the same. Both are taken as written (no ``..``
    resolved, no symbolic link followed). Pure."""
    a, b = posixpath.normpath(shown).split("/"), posixpath.normpath(loaded).split("/")
    if len(a) != len(b) or len(a) < 3 or a[-1] != b[-1] or a[0] != "" or b[0] != "":
        return None
    differ = [i for i in range(1, len(a) - 1) if a[i] != b[i]]
    if len(differ) != 1 or not is_adjacent_stash_name(a[differ[0]], b[differ[0]]):
        return None
    return "/".join(b[:differ[0] + 1])
