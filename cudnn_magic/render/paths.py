"""Paths and lines as a person reads them: short names for the folders every path here starts
with, the whole path once, and text fitted to the terminal (pure: standard library only).

A report names the same few folders again and again: this environment (a venv or conda prefix,
80 characters deep in a home folder), its ``site-packages``, a wheel folder on ``LD_LIBRARY_PATH``.
:class:`PathNames` writes them as ``$VENV/...``, ``site-packages/...`` or ``~/...`` and says once,
in a legend, what each stands for; :meth:`PathNames.prose` shortens the paths in a sentence and
names a folder it has already given whole as "the cuDNN 9.12 folder" (when the report knows the
cuDNN there) the next time. Commands stay whole (they are copied and run). JSON never goes
through here: its paths are always whole.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULT_WIDTH", "PathNames", "cut_line", "names_html", "quote_rows", "terminal_width", "wrap"]

#: Paths shorter than this are repeated as they are (naming them would not save anything).
_LONG = 40

#: Columns when neither ``COLUMNS`` nor a terminal says (a notebook's ``text/plain``, a pipe, a log).
DEFAULT_WIDTH = 100

#: An absolute path in prose: starts at a ``/`` that follows a space, an opening bracket or quote,
#: or the start of the text; runs until white space or a closing bracket, quote, comma or semicolon.
_PATH = re.compile(r"(?:(?<=^)|(?<=[\s(\['\"=]))(/[^\s,;:()\[\]'\"]+)")


def terminal_width() -> int:
    """The columns to fit text to: ``COLUMNS`` when set, else the terminal's, else
    :data:`DEFAULT_WIDTH` (``shutil.get_terminal_size``'s own order: ``COLUMNS``, then the
    terminal of ``sys.__stdout__``), at least 40. Asked of ``os`` directly: ``shutil`` would bring
    bz2, lzma and zlib into every text command (7 M instructions) for these few lines."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return max(40, columns or DEFAULT_WIDTH)


def wrap(text: str, width: int, indent: str = "", hanging: str | None = None) -> list[str]:
    """``text`` as lines of at most ``width`` columns, the first indented by ``indent`` and the
    next by ``hanging`` (default: ``indent`` plus two spaces). Paths and words longer than a line
    are broken after a ``/`` only, never inside a name. Never returns an empty list."""
    hanging = indent + "  " if hanging is None else hanging
    words = []
    for w in text.split():
        room = max(10, width - len(hanging))
        while len(w) > room and "/" in w[1:room]:
            cut = w.rfind("/", 1, room) + 1
            words.append(w[:cut])
            w = w[cut:]
        words.append(w)
    import textwrap  # start-up cost: only text output is wrapped (JSON never comes here)

    lines = textwrap.wrap(" ".join(words), width=width, initial_indent=indent, subsequent_indent=hanging,
                          break_long_words=False, break_on_hyphens=False)
    return lines or [indent.rstrip()]


#: The prefix glog, absl and TensorFlow's logging put before a message (``I0000 00:00:1700000000.123456
#: 12345 cuda_dnn.cc:123] ``, ``2024-01-01 12:00:00.000000: E tensorflow/.../cuda_dnn.cc:389] ``):
#: the time, the thread and the source line, which a cut line drops first.
_LOG_PREFIX = re.compile(r"^[^\]\n]{0,160}?\.(?:cc|cpp|cu|c|h|py):\d+\]\s+")


def cut_line(line: str, width: int) -> str:
    """A quoted line (a native log line, evidence) fitted to ``width`` columns for text: whole when
    it fits; else without its logging prefix (:data:`_LOG_PREFIX`, shown as ``…]``), then its
    start and end around an ellipsis, and its whole size (``[408 bytes]``, bytes of UTF-8). The
    whole line stays in ``--json`` and HTML; a log line is never wrapped (it is not prose)."""
    if len(line) <= width:
        return line
    note = f" [{len(line.encode('utf-8', 'replace'))} bytes]"
    indent = line[: len(line) - len(line.lstrip(" >"))]
    body = line[len(indent):]
    m = _LOG_PREFIX.match(body)
    if m:
        body = "\u2026] " + body[m.end():]
    room = max(20, width - len(note) - len(indent))
    if len(body) > room:
        head = (room - 1) * 3 // 4
        body = body[:head] + "\u2026" + body[len(body) - (room - 1 - head):]
    return indent + body + note


def quote_rows(line: str, width: int, indent: str, rows: int = 2) -> list[str]:
    """A quoted line (decisive evidence) in at most ``rows`` rows of ``width`` columns: whole in one
    row when it fits; else without its logging prefix (``…]``), broken at a space near the width
    (else at the width) with the next rows aligned under the first's text, the last row cut as
    :func:`cut_line` cuts (with the whole line's size). Whole in ``--json`` and HTML."""
    first = indent + line
    if len(first) <= width:
        return [first]
    m = _LOG_PREFIX.match(line)
    body = "\u2026] " + line[m.end():] if m else line
    out: list[str] = []
    pad = indent
    while body and len(out) < rows - 1:
        room = max(20, width - len(pad))
        if len(body) <= room:
            break
        cut = body.rfind(" ", room - 20, room) + 1 or room  # at a space near the width, else at the width
        out.append((pad + body[:cut]).rstrip())
        body = body[cut:]
        pad = " " * len(indent)
    if body:
        last = pad + body
        if len(last) > width:
            note = f" [{len(line.encode('utf-8', 'replace'))} bytes]"
            last = last[: max(len(pad) + 10, width - len(note) - 1)] + "\u2026" + note
        out.append(last)
    return out


@dataclass
class PathNames:
    """Short names for paths, with a legend of what each stands for.

    Attributes:
        venv: the environment's prefix when it is a virtual or conda environment (``sys.prefix``
            differs from ``sys.base_prefix``, or ``CONDA_PREFIX``), written ``$VENV``.
        site: the environment's own ``site-packages`` folders, written ``site-packages``.
        home: the user's home folder, written ``~``.
        folders: real folder path -> the cuDNN version of the copy there ("9.12.0"), to name a
            folder "the cuDNN 9.12 folder" after its first mention.
        used: the names a text has used so far (for :meth:`legend`).
        met: every path :meth:`prose` has met so far: a path written short ("…/cudnn_jit/lib")
            keeps as many of its last parts as tell it apart from each of them.
    """

    venv: str | None = None
    site: tuple[str, ...] = ()
    home: str | None = None
    folders: Mapping[str, str] = field(default_factory=dict)
    used: dict[str, str] = field(default_factory=dict)
    met: set[str] = field(default_factory=set)

    @classmethod
    def here(cls, folders: Mapping[str, str] | None = None) -> PathNames:
        """The names of this process's own environment (``sys.prefix``, its ``purelib`` and
        ``platlib``, ``~``)."""
        prefix = sys.prefix if sys.prefix != getattr(sys, "base_prefix", sys.prefix) else os.environ.get("CONDA_PREFIX")
        sites: list[str] = []
        import sysconfig  # start-up cost: only text and HTML views name folders (JSON paths stay whole)

        try:
            paths = sysconfig.get_paths()
            sites = [paths[k] for k in ("purelib", "platlib") if paths.get(k)]
        except Exception:  # noqa: BLE001 - no short name then
            pass
        home = os.path.expanduser("~")
        return cls(venv=prefix or None, site=tuple(dict.fromkeys(sites)), home=home if home not in ("", "/", "~") else None,
                   folders=dict(folders or {}))

    @classmethod
    def for_copies(cls, copies: Iterable[object]) -> PathNames:
        """:meth:`here`, knowing the cuDNN release of each folder that holds a main library among
        ``copies`` (:class:`~cudnn_magic.model.LibraryCopy` rows)."""
        folders: dict[str, str] = {}
        for c in copies:
            version, directory = getattr(c, "version", None), getattr(c, "directory", "")
            if version and directory and getattr(c, "is_main", False):
                folders.setdefault(os.path.realpath(directory), version)
        return cls.here(folders)

    # -- one path --------------------------------------------------------------------------
    def _under(self, path: str, root: str | None) -> str | None:
        if not root:
            return None
        root = root.rstrip("/")
        for p in (path, os.path.realpath(path)):
            if p == root:
                return ""
            if p.startswith(root + "/"):
                return p[len(root):]
        return None

    def short(self, path: str) -> str:
        """``path`` with the longest known prefix replaced by its name (``site-packages/nvidia/...``,
        ``$VENV/bin/python``, ``~/data``), remembered for :meth:`legend`; other paths unchanged."""
        for s in sorted(self.site, key=len, reverse=True):
            rest = self._under(path, s)
            if rest is not None:
                name = os.path.basename(s.rstrip("/")) or "site-packages"
                self.used[name] = self._outer(s)
                return name + rest
        return self._outer(path)

    def _outer(self, path: str) -> str:
        rest = self._under(path, self.venv)
        if rest is not None:
            self.used.setdefault("$VENV", self.venv or "")
            return "$VENV" + rest
        rest = self._under(path, self.home)
        if rest:
            return "~" + rest
        return path

    def folder_name(self, path: str) -> str | None:
        """"the cuDNN 9.12 folder" for a folder (or a file in one) whose cuDNN release is known,
        when no other folder known holds that release (then the name would not tell them apart)."""
        real = os.path.realpath(path)
        for cand in (real, os.path.dirname(real)):
            v = self.folders.get(cand)
            if v:
                release = ".".join(v.split(".")[:2])
                if any(d != cand and ".".join(w.split(".")[:2]) == release for d, w in self.folders.items()):
                    return None
                what = f"the cuDNN {release} folder"
                return what if cand == real else f"{os.path.basename(real)} in {what}"
        return None

    def tail(self, path: str) -> str:
        """``path`` as "…/" and its last parts: two, or as many more as tell it apart from every
        other path met (:attr:`met`: "…/cudnn_jit/lib" names two wheels' folders alike); the path
        itself when it has no more parts than that."""
        parts = [p for p in path.split("/") if p]
        others = [[p for p in o.split("/") if p] for o in self.met if o.rstrip("/") != path.rstrip("/")]
        for k in range(2, len(parts)):
            if not any(o[-k:] == parts[-k:] for o in others):
                return "…/" + "/".join(parts[-k:])
        return path

    # -- prose -------------------------------------------------------------------------------
    def prose(self, text: str, seen: set[str] | None = None) -> str:
        """``text`` with every absolute path shortened (:meth:`short`); a long path already given
        in this block (``seen``, shared between the sentences of one finding or diagnosis) is
        named by its folder's cuDNN release when known ("the LD_LIBRARY_PATH entry holding cuDNN
        9.12", "libcudnn.so.9 in the cuDNN 9.12 folder"), else by its last two parts."""
        seen = set() if seen is None else seen
        for m in _PATH.finditer(text):  # every path of the text (and a file's folder) is one a short form
            met = m.group(1).rstrip(".)").rstrip("/") or "/"  # must not be mistaken for
            self.met.add(met)
            if "." in os.path.basename(met):
                self.met.add(os.path.dirname(met))

        def one(m: re.Match[str]) -> str:
            path = m.group(1)
            trail = ""
            while len(path) > 1 and path[-1] in ".)":  # a sentence's full stop is not part of the path
                trail = path[-1] + trail
                path = path[:-1]
            key = path.rstrip("/") or "/"
            again = key in seen or os.path.dirname(key) in seen
            seen.add(key)
            if "." in os.path.basename(key):  # a file: its folder has been given whole too
                seen.add(os.path.dirname(key))
            if not again or len(path) < _LONG:
                return self.short(path) + trail
            named = self.folder_name(path)
            if named:
                if m.string[:m.start()].endswith("entry ") and named.startswith("the cuDNN "):
                    return "holding cuDNN " + named[len("the cuDNN "):-len(" folder")] + trail
                return named + trail
            return self.tail(path) + trail

        return _PATH.sub(one, text)

    def legend(self) -> str:
        """"$VENV is /home/me/venv; site-packages is $VENV/lib/python3.11/site-packages" for the
        names used so far, or ""."""
        return "; ".join(f"{k} is {v}" for k, v in self.used.items())


def names_html(text: str) -> str:
    """``text`` escaped for HTML, each ``$VENV`` set as code: JupyterLab typesets the text between
    two ``$`` signs of an HTML output as LaTeX (MathJax leaves ``<code>`` alone)."""
    import html  # start-up cost: only the notebook's HTML view escapes here

    return html.escape(text).replace("$VENV", "<code>$VENV</code>")
