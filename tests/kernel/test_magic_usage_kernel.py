"""Bad input to any of our magics fails the cell, in a real ipykernel (nbclient): the reply's status
is "error" with ename ``UsageError`` (what a front end's Run All stops on), the cell shows one line,
``UsageError: ...``, and no traceback; the next cell runs. A good call still succeeds, and what is
not the input (a check that could not reach a cluster, pip finding no release) is one printed line
in a cell that succeeds. Each message keeps its wording (the ``write 'x==1'`` hint)."""

from __future__ import annotations

import importlib.util

import pytest
from nbclient.exceptions import CellExecutionError

from helpers.support import outputs_text, run_notebook

# (cell, words its one UsageError line holds); a good call (GOOD) follows each
BAD = [
    ("%cudnn_check --what-if 'x=1'",
     "what-if: 'x=1' is not a valid requirement: one '=' is no version operator (PEP 440): for an exact "
     "version write 'x==1'"),
    ("r = %cudnn_check --json --what-if 'x=1'", "what-if: 'x=1' is not a valid requirement"),
    ("%cudnn_check --what-if '-e ./src'", "what-if: -e makes pip build a package"),
    ("%cudnn_check --what-if ''", "what-if: no requirement given"),
    ("%cudnn_check --against missing.json", "cannot read missing.json: No such file or directory"),
    ("%cudnn_check --json --against not-a-manifest.json",
     'not-a-manifest.json is not a manifest: no "schema": "cudnn-magic-manifest" key'),
    ("%cudnn_check --against .", "cannot read .: not a regular file (a FIFO, a device or a folder)"),
    ("%cudnn_check --dask nosuchclient",
     "no variable 'nosuchclient' in this kernel, and 'nosuchclient' is not a scheduler address: pass a "
     "dask.distributed.Client variable or tcp://HOST:8786"),
    ("%cudnn_check --dask ''", "--dask needs the cluster's address"),
    ("%cudnn_check --ray --runtime-env '[1, 2]'", "--runtime-env: a runtime environment is a JSON object"),
    ("%cudnn_check --ray --runtime-env missing-env.json", "--runtime-env missing-env.json: not JSON and not a "
                                                          "readable file"),
    ("%%cudnn_explain\n\x7fELF\x02\x01\x01", "the text is an ELF binary"),
    ("%cudnn_fix remove-shadowing-dir --dry-run --kernel nosuchspec", "no kernelspec named 'nosuchspec' (known: "),
    # bad input that already failed the cell: kept so
    ("%cudnn_check --bogus", "unrecognized arguments: --bogus"),
    ("%cudnn_explain --bogus", "unknown option '--bogus'"),
    ("%cudnn_fix nosuchfix", "unknown fix id 'nosuchfix'"),
    ("%cudnn_guard maybe", "invalid choice: 'maybe'"),
    ("%cudnn_annotate maybe", "usage: %cudnn_annotate on|off"),
    ("%gpu_memory --interval 0", "argument --interval"),
]

SETUP = ("import json, cudnn_magic\njson.dump(cudnn_magic.manifest(), open('good.json', 'w'))\n"
         "open('not-a-manifest.json', 'w').write('{\"cudnn\": []}')\nprint('files written')")

# good calls, one after each bad cell in turn: (cell, words their output holds)
GOOD = [
    ("%cudnn_check --against good.json", "No drift"),
    ("%cudnn_explain CUDNN_STATUS_INTERNAL_ERROR", "CUDNN_STATUS_INTERNAL_ERROR"),
    ("%cudnn_fix remove-shadowing-dir --dry-run --kernel python3", "LD_LIBRARY_PATH"),
    ("%cudnn_guard status", "cudnn_guard is off"),
    ("%cudnn_annotate on", "cudnn-magic annotation: on"),
]

# not the input: pip found no release (--no-index: no network), nothing answers at the scheduler.
# One printed line each, and the cell succeeds.
NOT_INPUT = [
    ("%cudnn_check --what-if 'nvidia-cudnn-jit-cu12==1.0 --no-index'",
     "cudnn-magic: what-if: no release matches nvidia-cudnn-jit-cu12==1.0"),
    ("%cudnn_check --dask tcp://127.0.0.1:1 --timeout 2", "cudnn-magic: could not connect to the Dask scheduler"),
]

# The test extras install Dask; the ipykernel 6 lane (scripts/test-ipykernel6.sh) does not, and there
# "no Dask here" is the one printed line (not the input) that the scheduler row above would be.
if importlib.util.find_spec("distributed") is not None:
    BAD.append(("five = 5\n%cudnn_check --dask five", "expected a dask.distributed.Client or a scheduler address"))
else:
    NOT_INPUT[-1] = ("%cudnn_check --dask tcp://127.0.0.1:1 --timeout 2", "pip install 'cudnn-magic[dask]'")


@pytest.mark.kernel
def test_bad_input_to_every_magic_fails_its_cell_with_one_usage_error_line_and_the_next_cell_runs(tmp_path):
    cells = ["%load_ext cudnn_magic", SETUP]
    expect: list[tuple[str, str]] = [("ok", ""), ("ok", "files written")]
    for i, (bad, words) in enumerate(BAD):
        cells += [bad, GOOD[i % len(GOOD)][0]]
        expect += [("error", words), ("ok", GOOD[i % len(GOOD)][1])]
    for cell, words in NOT_INPUT:
        cells.append(cell)
        expect.append(("ok", words))
    cells.append("%cudnn_explain")  # a usage error of ours is never "the last error" it explains again
    expect.append(("ok", "no error to explain yet in this session"))
    replies: dict[int, dict] = {}
    nb = run_notebook(cells, tmp_path, timeout=300, replies=replies)
    for n, (cell, (status, words)) in enumerate(zip(nb.cells, expect)):
        reply, text = replies.get(n, {}), outputs_text(cell)
        assert reply.get("status") == status, (cell.source, reply.get("evalue"), text)
        assert words in (reply["evalue"] if status == "error" else text), (cell.source, reply.get("evalue"), text)
        if status == "error":
            assert reply["ename"] == "UsageError" and "\n" not in reply["evalue"], (cell.source, reply)
            # one line, IPython's own form for a usage error: no traceback, nothing else in the cell
            assert [(o["output_type"], o.get("name")) for o in cell.outputs] == [("stream", "stderr")], cell.outputs
            assert cell.outputs[0]["text"] == f"UsageError: {reply['evalue']}\n", cell.outputs
        else:
            assert "Traceback" not in text and "UsageError" not in text, (cell.source, text)
    for cell in nb.cells[-len(NOT_INPUT) - 1:-1]:
        assert [o.get("name") for o in cell.outputs] == ["stdout"], cell.outputs
        assert len(outputs_text(cell).strip().splitlines()) == 1, outputs_text(cell)


@pytest.mark.kernel
def test_run_all_stops_at_a_magic_given_bad_input(tmp_path):
    """Run All (nbclient without ``allow_errors``, as ``jupyter nbconvert --execute``) stops at the
    cell: the one after it never runs."""
    replies: dict[int, dict] = {}
    with pytest.raises(CellExecutionError) as info:
        run_notebook(["%load_ext cudnn_magic", "%cudnn_check --what-if 'x=1'", "print('not reached')"], tmp_path,
                     allow_errors=False, replies=replies)
    assert info.value.ename == "UsageError" and "write 'x==1'" in info.value.evalue, info.value
    assert sorted(replies) == [0, 1] and replies[1]["status"] == "error", replies
