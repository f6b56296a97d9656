"""What-if: ``cudnn-magic check --what-if`` with real pip in a real venv holding the
real ``nvidia-cudnn-jit-cu13==9.24.0.43`` wheel, and the pure prediction on described inputs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from cudnn_magic.engines.whatif import CUDNN_FOLDERS, Environment, cudnn_folder, framework_from_metadata, predict
from cudnn_magic.model import Driver
from cudnn_magic.probes.owners import DistRecord, RecordEntry, read_record
from helpers.prevention_env import closed_port, freeze, make_venv, run_cli
from helpers.real_wheels import installed_dist_info
from helpers.support import outputs_text, run_notebook


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("whatif"), "nvidia-cudnn-jit-cu13==9.24.0.43")


@pytest.mark.parametrize("dist,version", [("nvidia-cudnn-jit-cu12", "9.27.0.42"), ("nvidia-cudnn-jit-cu13", "9.24.0.43"),
                                          ("nvidia-cudnn-jit-cu13", "9.25.0.15")])
def test_folder_table_matches_the_record_of_real_wheels(dist, version):
    info = installed_dist_info(dist, version)
    rec = read_record(str(info))
    libs = [e.path for e in rec.entries if os.path.basename(e.path).startswith("libcudnn")]
    assert libs, "the wheel ships cuDNN libraries"
    folder = cudnn_folder(dist)
    assert folder is not None
    assert all(p.startswith(folder + "/lib/") for p in libs), (folder, libs)
    # every file outside .dist-info lies in that one folder
    assert all(e.path.startswith(folder + "/") for e in rec.entries if ".dist-info/" not in e.path)


def test_folder_table_families():
    assert dict(CUDNN_FOLDERS)  # patterns compile
    assert cudnn_folder("nvidia_cudnn_cu12") == "nvidia/cudnn"
    assert cudnn_folder("nvidia-cudnn-jit-cu13") == "nvidia/cudnn_jit"
    assert cudnn_folder("torch") is None


def test_other_cuda_family_predicts_overwrite_and_installs_nothing(venv):
    before = freeze(venv)
    proc = run_cli(venv, "check", "--json", "--what-if", "nvidia-cudnn-jit-cu12==9.27.0.42")
    after = freeze(venv)
    assert before == after, "a what-if must install nothing"
    assert "nvidia-cudnn-jit-cu13==9.24.0.43" in after and "nvidia-cudnn-jit-cu12" not in after
    assert proc.returncode == 1, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert {"name": "nvidia-cudnn-jit-cu12", "from": None, "to": "9.27.0.42"} in data["changes"]
    new = [f for f in data["predicted_findings"] if f["new"]]
    ow = [f for f in new if f["id"] == "cudnn-wheel-overwritten"]
    assert len(ow) == 1 and ow[0]["severity"] == "error" and ow[0]["predicted"] is True
    assert "nvidia-cudnn-jit-cu13 9.24.0.43" in ow[0]["title"] and "nvidia-cudnn-jit-cu12 9.27.0.42's files are there now" in ow[0]["title"]
    assert not any(f["id"] == "cudnn-wheel-overwritten" for f in data["present_findings"])
    pw = data["predicted_wheels_overwritten"][0]
    assert pw["directory"].endswith(os.path.join("nvidia", "cudnn_jit"))
    assert pw["present"] == {"name": "nvidia-cudnn-jit-cu12", "version": "9.27.0.42"}
    # the safer requirement was itself resolved by pip and predicted clean
    assert data["safer_requirement"] and data["safer_requirement"].startswith("nvidia-cudnn-jit-cu13")
    assert data["error"] is True


def test_later_same_family_predicts_only_the_version_change(venv):
    before = freeze(venv)
    proc = run_cli(venv, "check", "--what-if", "nvidia-cudnn-jit-cu13==9.25.0.15 --no-deps")
    assert freeze(venv) == before
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Would change: nvidia-cudnn-jit-cu13 9.24.0.43 -> 9.25.0.15\n" in proc.stdout
    assert "Predicted findings: none new." in proc.stdout
    assert "cudnn-wheel-overwritten" not in proc.stdout


@pytest.mark.parametrize("reqs,words", [
    ("nvidia-cudnn-jit-cu12=9.27", "is not a valid requirement"),
    ("nvidia-cudnn-jit-cu12 --target /tmp/x", "is not an option a what-if passes to pip"),
    ("nvidia-cudnn-jit-cu13==9.24.0.43 nvidia-cudnn-jit-cu13==9.25.0.15 --no-deps", "resolver found a conflict"),
    ("nvidia-cudnn-jit-cu13==0.0.1 --no-deps", "no release matches nvidia-cudnn-jit-cu13==0.0.1"),
])
def test_bad_input_is_one_line_and_exit_2(venv, reqs, words):
    before = freeze(venv)
    proc = run_cli(venv, "check", "--what-if", reqs)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert words in lines[0], proc.stderr
    if "conflict" in words:  # the one-line summary, then pip's own explanation (at most 6 lines)
        assert 2 <= len(lines) <= 7, proc.stderr
        assert "The conflict is caused by:" in lines[1]
        assert any("The user requested nvidia-cudnn-jit-cu13==9.24.0.43" in ln for ln in lines[2:]), proc.stderr
        assert any("The user requested nvidia-cudnn-jit-cu13==9.25.0.15" in ln for ln in lines[2:]), proc.stderr
    else:
        assert len(lines) == 1, proc.stderr
    assert proc.stdout == ""
    assert freeze(venv) == before


def test_conflict_keeps_pips_explanation_bounded_and_clean():
    from cudnn_magic.probes.pip_report import classify_failure

    reqs = [f"pkg{i}==1.{i}" for i in range(12)]
    out = ("ERROR: Cannot install a and b because these package versions have conflicting dependencies.\n\n"
           "The conflict is caused by:\n" + "".join(f"    The user requested {r}\x1b]8;;x\x07\n" for r in reqs) +
           "\nTo fix this you could try to:\n1. loosen the range\n\n"
           "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/x\n")
    err = classify_failure(out)
    lines = err.message.splitlines()
    assert err.kind == "conflict" and lines[0].startswith("pip's resolver found a conflict: ")
    assert lines[1].strip() == "The conflict is caused by:" and "The user requested pkg0==1.0" in lines[2]
    assert len(lines) <= 7 and "more lines from pip" in lines[-1]
    assert "\x1b" not in err.message and "\x07" not in err.message and "To fix" not in err.message


def test_only_words_that_cannot_be_a_what_if_are_bad_input():
    """``PipError.bad_input``: the magic raises ``UsageError`` for these (the cell fails). What pip
    answered (a conflict, no release) and pip or the index not answering are said in one line and
    the cell goes on; the command line exits 2 for all of them."""
    from cudnn_magic.probes.pip_report import PipError, classify_failure, split_requirements

    for text in ("x=1", "", "x --target /tmp/x", "x -i", "-e ./src", "./dist/x-1.0.tar.gz", "'x"):
        err = split_requirements(text)
        assert isinstance(err, PipError) and err.bad_input, (text, err)
    assert classify_failure("ERROR: Invalid requirement: 'x=1'").bad_input  # pip refused the words
    for output in ("Failed to establish a new connection", "ERROR: ResolutionImpossible",
                   "ERROR: No matching distribution found for x==9", "ERROR: something else"):
        assert not classify_failure(output).bad_input, output
    assert not PipError("pip-too-old", "pip 21.0 is too old").bad_input


def test_unreachable_index_is_a_clear_error(venv):
    url = f"http://127.0.0.1:{closed_port()}/simple"
    # pip's configuration isolated: a pip.conf find-links/extra-index-url (or PIP_FIND_LINKS) is another
    # source, and pip would resolve from it exactly as the real install would (README)
    proc = run_cli(venv, "check", "--json", "--what-if", f"nvidia-cudnn-jit-cu12==9.27.0.42 --index-url {url}",
                   isolate_pip_config=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"cudnn-magic: what-if: the package index cannot be reached ({url}): nothing was "
                                   "resolved, nothing installed")
    assert json.loads(proc.stdout)["error"]["kind"] == "index-unreachable"


# ----------------------------------------------------------------------- pure prediction, described inputs

SITE = "/venv/lib/python3.12/site-packages"


def _cu13_env(frameworks=()):
    files = ("nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_graph.so.9", "nvidia/cudnn/include/cudnn.h")
    rec = DistRecord("nvidia-cudnn-cu13", "9.24.0.43", SITE, tuple(RecordEntry(p, "sha256=cu13-" + p, 1) for p in files))
    return Environment({"nvidia-cudnn-cu13": "9.24.0.43", "torch": "2.14.1"}, (rec,), {}, tuple(frameworks))


def test_framework_from_metadata_reads_the_exact_pin():
    fw = framework_from_metadata("torch", "2.14.1", ["nvidia-cudnn-cu13==9.24.0.43; platform_system == 'Linux'", "filelock"])
    assert (fw.name, fw.cudnn_compiled, fw.cuda_compiled, fw.checker) == ("PyTorch", "9.24.0", "13", "pytorch")
    assert framework_from_metadata("requests", "2.0", []) is None


def test_tf_cuda12_wheel_over_torch_cuda13_names_the_framework():
    torch = framework_from_metadata("torch", "2.14.1", ["nvidia-cudnn-cu13==9.24.0.43"])
    tf_reqs = ["nvidia-cudnn-cu12<10,>=9.3.0.75; extra == \"and-cuda\""]
    r = predict([("tensorflow", "2.21.0", tf_reqs), ("nvidia-cudnn-cu12", "9.28.0.42", [])], _cu13_env([torch]),
                site=SITE, driver=Driver("580.65.06", "13.0"))
    assert [str(c) for c in r.changes] == ["tensorflow 2.21.0 (new)", "nvidia-cudnn-cu12 9.28.0.42 (new)"]
    ow = [f for f in r.introduced if f.id == "cudnn-wheel-overwritten"]
    assert len(ow) == 1 and ow[0].severity == "error"
    assert "PyTorch 2.14.1 (built for CUDA 13, wants nvidia-cudnn-cu13 9.24.0.43) now runs nvidia-cudnn-cu12 9.28.0.42's files" in ow[0].detail
    assert r.error and r.introduces_error


def test_new_cuda_major_on_an_old_driver_is_predicted():
    torch = framework_from_metadata("torch", "2.14.1", ["nvidia-cudnn-cu13==9.24.0.43"])
    r = predict([("torch", "2.14.1", torch.pins), ("nvidia-cudnn-cu13", "9.24.0.43", [])],
                Environment({}, (), {}, ()), site=SITE, driver=Driver("550.54.15", "12.4"))
    drv = [f for f in r.introduced if f.id == "cuda-driver-too-old"]
    assert drv and "580" in drv[0].detail
    pt = next(f for f in r.predicted.frameworks if f.name == "PyTorch")
    assert pt.verdict == "ok" and pt.cudnn_used == "9.24.0"


def test_prevention_engines_import_no_ipython_widgets_or_native_library():
    """The what-if and manifest engines (and their renderers and command line) import neither
    IPython, ipykernel nor ipywidgets, and importing them loads no native library (no libcudnn,
    no libnvidia-ml: NVML is opened when a what-if probes the driver, not on import)."""
    import subprocess
    import sys

    code = ("import sys, json\n"
            "import cudnn_magic.engines.whatif, cudnn_magic.engines.manifest, cudnn_magic.render.whatif, cudnn_magic.render.manifest\n"
            "import cudnn_magic.probes.pip_report, cudnn_magic.cli.whatif, cudnn_magic.cli.manifest, cudnn_magic.model.prevention\n"
            "mods = sorted(m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipywidgets', 'ipykernel', 'traitlets'))\n"
            "libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l or 'libnvidia-ml' in l})\n"
            "print(json.dumps([mods, libs]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[], []]


def test_pip_older_than_22_2_is_refused_before_it_runs(tmp_path):
    """A real venv whose pip is 22.1.2 (no install --report): one clear line, nothing run."""
    import subprocess
    import sys

    from cudnn_magic.probes.pip_report import PipError, pip_dry_run

    venv = tmp_path / "oldpip"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    py = venv / "bin" / "python"
    p = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "pip==22.1.2"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"could not install pip 22.1.2: {p.stderr.strip().splitlines()[-1:]}")
    r = pip_dry_run("nvidia-cudnn-jit-cu12==9.27.0.42", python=str(py))
    assert isinstance(r, PipError) and r.kind == "pip-too-old"
    assert r.message == (f"pip 22.1 in {py} is too old: the what-if needs pip 22.2 or newer (install --dry-run "
                         "--report); upgrade pip first")


def test_in_process_inventory_matches_pip_inspect(venv):
    """For its own interpreter the what-if reads the installed distributions with
    importlib.metadata instead of starting ``pip inspect``: the same names, versions,
    ``Requires-Dist`` and ``.dist-info`` folders."""
    import subprocess

    code = ("import json\nfrom cudnn_magic.probes.pip_report import installed_here, pip_inspect\n"
            "rows = lambda i: sorted((d.name.lower(), d.version, d.dist_info, sorted(d.requires_dist)) for d in i.dists)\n"
            "a, b = installed_here(), pip_inspect()\n"
            "print(json.dumps([rows(a) == rows(b), a.site_dirs == b.site_dirs, len(a.dists), "
            "[r[0] for r in rows(a)], [r for r in rows(a) if r not in rows(b)], [r for r in rows(b) if r not in rows(a)]]))")
    out = subprocess.run([str(venv), "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    same, sites, n, names, only_here, only_pip = json.loads(out.stdout)
    assert same, (only_here, only_pip)
    assert sites and n >= 4 and "nvidia-cudnn-jit-cu13" in names


@pytest.mark.parametrize("text,reqs,opts", [
    ("numpy; python_version<'3'", ["numpy; python_version<'3'"], []),
    ("numpy; python_version<'3' nvidia-cudnn-jit-cu13 --no-deps", ["numpy; python_version<'3'", "nvidia-cudnn-jit-cu13"],
     ["--no-deps"]),
    ("numpy ; sys_platform=='linux' -i http://x/simple", ["numpy ; sys_platform=='linux'"], ["-i", "http://x/simple"]),
    ("'numpy; python_version<\"3\"'", ['numpy; python_version<"3"'], []),
])
def test_a_marker_split_on_spaces_is_one_requirement(text, reqs, opts):
    from cudnn_magic.probes.pip_report import split_requirements

    assert split_requirements(text) == (reqs, opts)


def test_an_unparsable_marker_says_to_quote_it():
    from cudnn_magic.probes.pip_report import PipError, split_requirements

    err = split_requirements("numpy; python_version<3")  # the shell ate the quotes around 3
    assert isinstance(err, PipError) and err.kind == "bad-requirement"
    assert "'numpy;' is not a valid requirement" in err.message and "quote it" in err.message
    assert "--what-if \"'numpy; python_version<\\\"3\\\"'\"" in err.message
    assert "quote it" not in split_requirements("nvidia-cudnn-jit-cu12=9.27").message


def test_marker_requirement_resolves_with_real_pip(venv):
    before = freeze(venv)
    proc = run_cli(venv, "check", "--json", "--what-if", "numpy; python_version<'3'")
    assert freeze(venv) == before
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["changes"] == [] and data["error"] is False  # the marker is false: pip installs nothing


def test_safer_requirement_never_downgrades_the_installed_family():
    from packaging.specifiers import SpecifierSet

    from cudnn_magic.engines.whatif import _same_family, downgrades
    from cudnn_magic.model.prevention import Change

    below = [t for t, _ in _same_family("nvidia-cudnn-jit-cu12", "9.27.0.42", SpecifierSet("==9.25.0.15"), "nvidia/cudnn_jit")]
    assert below == ["nvidia-cudnn-jit-cu12>=9.27.0.42"]  # keep what is there, never ==9.25.0.15
    above = [t for t, _ in _same_family("nvidia-cudnn-jit-cu13", "9.24.0.43", SpecifierSet("==9.27.0.42"), "nvidia/cudnn_jit")]
    assert above == ["nvidia-cudnn-jit-cu13==9.27.0.42", "nvidia-cudnn-jit-cu13>=9.24.0.43"]
    rng = [t for t, _ in _same_family("nvidia-cudnn-jit-cu12", "9.27.0.42", SpecifierSet(">=9.20"), "nvidia/cudnn_jit")]
    assert SpecifierSet(rng[0].split("cu12", 1)[1]) == SpecifierSet(">=9.20,>=9.27.0.42")
    assert downgrades([Change("nvidia-cudnn-jit-cu12", "9.25.0.15", "9.27.0.42")])
    assert not downgrades([Change("nvidia-cudnn-jit-cu12", "9.27.0.42", "9.25.0.15"), Change("numpy", "1.0", "2.0")])


def test_safer_requirement_with_real_pip_keeps_the_newer_installed_wheel(venv):
    """venv: nvidia-cudnn-jit-cu13 9.24.0.43. Asking for the cu12 wheel at an OLDER release used to
    offer nvidia-cudnn-jit-cu13==9.23.0.39 (9.24.0.43 -> 9.23.0.39) as "safer"; then
    ``nvidia-cudnn-jit-cu13>=9.24.0.43``, which pip resolves to nothing at all
    ("install X instead" where X is installed is no advice)."""
    before = freeze(venv)
    proc = run_cli(venv, "check", "--json", "--what-if", "nvidia-cudnn-jit-cu12==9.23.0.39 --no-deps")
    assert freeze(venv) == before
    assert proc.returncode == 1, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["safer_requirement"] is None, data["safer_requirement"]
    why = data.get("safer_why") or ""
    assert "nothing to install instead" in why and "nvidia-cudnn-jit-cu13>=9.24.0.43" in why, why
    assert "pip would change nothing" in why and "->" not in why, why
    text = run_cli(venv, "check", "--what-if", "nvidia-cudnn-jit-cu12==9.23.0.39 --no-deps").stdout
    assert "Safer requirement: none (nothing to install instead" in text, text[-3000:]


# --------------------------------------------------------------------------------------------------
# A prediction runs no package's code.
#
# A prediction never executes a package's code, and the guard passes the user's words to pip
# exactly as IPython's ``%pip`` would. A source tree whose ``setup.py`` leaves a ``.pth`` file in
# site-packages (it would run at every start of that Python) and a marker file: ``cudnn-magic check
# --what-if "'pkg @ file:///dir' --no-index --no-build-isolation"`` must not let pip run it to read
# metadata. The what-if refuses what needs a build before pip starts, and every dry run has
# ``--only-binary :all:``, so a source distribution found on an index is never built either. Real
# pip in a real venv (a bare one: ``bare_venv``), real ``setup.py`` files; the proof is on disk.
# --------------------------------------------------------------------------------------------------


SETUP = """\
import os, sysconfig
from setuptools import setup
open({marker!r}, "w").write("setup.py ran")
open(os.path.join(sysconfig.get_paths()["purelib"], "zz_attack.pth"), "w").write("import os\\n")
setup(name="evilpkg", version="1.0", py_modules=[])
"""


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("hard-whatif"))


def _site(py: Path) -> Path:
    return Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


def _tree(tmp: Path) -> tuple[Path, Path]:
    src = tmp / "evilpkg"
    src.mkdir()
    marker = tmp / "marker"
    (src / "setup.py").write_text(SETUP.format(marker=str(marker)))
    return src, marker


@pytest.mark.parametrize("words", [
    "'evilpkg @ file://{src}' --no-index --no-build-isolation",
    "evilpkg @ file://{src} --no-index",
    "{src} --no-index",
    "-e {src} --no-index",
    "'evilpkg @ git+file://{src}' --no-index",
    "evilpkg --no-binary :all: --no-index --find-links {src}",
])
def test_a_source_tree_is_refused_and_nothing_runs(bare_venv, tmp_path, words):
    src, marker = _tree(tmp_path)
    site = _site(bare_venv)
    proc = run_cli(bare_venv, "check", "--json", "--what-if", words.format(src=src), isolate_pip_config=True)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    err = json.loads(proc.stdout)["error"]
    assert err["kind"] == "needs-build", err
    assert "ran nothing" in err["message"]
    assert not marker.exists(), "setup.py ran"
    assert not (site / "zz_attack.pth").exists()


def test_an_sdist_on_an_index_is_never_built(bare_venv, tmp_path):
    """``evilpkg`` exists only as a source distribution in a find-links folder: pip (wheels only)
    finds no release, and says so; its setup.py never runs."""
    src, marker = _tree(tmp_path)
    links = tmp_path / "links"
    links.mkdir()
    with tarfile.open(links / "evilpkg-1.0.tar.gz", "w:gz") as tf:
        for name, data in (("evilpkg-1.0/setup.py", (src / "setup.py").read_bytes()),
                           ("evilpkg-1.0/PKG-INFO", b"Metadata-Version: 2.1\nName: evilpkg\nVersion: 1.0\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    proc = run_cli(bare_venv, "check", "--json", "--what-if", f"evilpkg --no-index --find-links {links}",
                   isolate_pip_config=True)
    assert proc.returncode == 2, proc.stdout[-2000:]
    err = json.loads(proc.stdout)["error"]
    assert err["kind"] == "no-match" and "as a wheel" in err["message"] and "never runs" in err["message"], err
    assert not marker.exists(), "setup.py ran"
    assert not (_site(bare_venv) / "zz_attack.pth").exists()
    # and plain pip (what the what-if did before) does run it: the attack is real
    subprocess.run([str(bare_venv), "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", str(links),
                    "--no-build-isolation", "evilpkg"], capture_output=True, text=True, timeout=300,
                   env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert marker.exists()
    (_site(bare_venv) / "zz_attack.pth").unlink(missing_ok=True)


def test_a_direct_reference_to_a_wheel_is_still_predicted(bare_venv, tmp_path):
    from helpers.real_wheels import wheel_file

    whl = wheel_file("nvidia-cudnn-jit-cu13", "9.24.0.43")
    proc = run_cli(bare_venv, "check", "--json", "--what-if", f"'nvidia-cudnn-jit-cu13 @ {whl.as_uri()}' --no-deps",
                   isolate_pip_config=True, env_extra={"XDG_CACHE_HOME": str(tmp_path / "c")})
    data = json.loads(proc.stdout)
    assert "error" not in data or not isinstance(data["error"], dict), data
    assert {"name": "nvidia-cudnn-jit-cu13", "from": None, "to": "9.24.0.43"} in data["changes"]
    assert any("file list read from the wheel's own RECORD" in n for n in data["notes"]), data["notes"]


@pytest.mark.parametrize("line,words", [
    ("install --force \"pip; python_version>'3'\"", ["install", "pip; python_version>'3'"]),
    ("install --force numpy", ["install", "numpy"]),
    ("install numpy --force", ["install", "numpy"]),
    ("install --force *.whl", ["install", "*.whl"]),
    ("install --force-reinstall --force x", ["install", "--force-reinstall", "x"]),
    ("install \"--force\" 'a b'", ["install", "a b"]),
])
def test_without_force_keeps_every_other_word_as_typed(line, words):
    import shlex

    from cudnn_magic.shell.guard import without_force

    out = without_force(line)
    assert shlex.split(out) == words
    if "*" in line:
        assert "*.whl" in out and "'*.whl'" not in out, "a glob reaches the shell unquoted, as typed"


@pytest.mark.kernel
def test_the_guard_hands_a_quoted_marker_to_pip_as_one_requirement(tmp_path):
    """Before: ``%pip install --force ... "pip; python_version>'3'"`` reached pip as ``'pip;'
    'python_version>3'`` (pip: "Invalid requirement"). The bare kernel's ``%pip`` is the reference."""
    cell = "%pip install --dry-run --no-deps --no-index \"pip; python_version>'3'\""
    bare = run_notebook([cell], tmp_path / "bare", env={"PIP_CONFIG_FILE": os.devnull}, timeout=300)
    ours = run_notebook(["%load_ext cudnn_magic\n%cudnn_guard on", cell.replace("install ", "install --force ", 1)],
                        tmp_path / "ours", env={"PIP_CONFIG_FILE": os.devnull}, timeout=300)
    want = outputs_text(bare.cells[0])
    got = outputs_text(ours.cells[1])
    assert "Requirement already satisfied: pip" in want, want
    assert "--force given" in got and "Requirement already satisfied: pip" in got, got
    assert "Invalid requirement" not in got
