"""Every notebook in notebooks/ runs top to bottom in a real Jupyter kernel (#15.1).

Each is executed afresh with nbclient in a kernel of this interpreter (a kernel spec written
for the test, so no other Python's ``python3`` spec is picked up), from the notebooks folder
as a user's Jupyter would; a cell that raises fails the test. The committed files keep
their outputs (so they read well on a code host): every code cell has been executed, in
order, and every cell that shows something has its output.

``python tests/test_notebooks.py [NAME ...]`` executes the notebooks (all, or those named)
and writes them back with their new outputs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
CELL_TIMEOUT = 120  # seconds, any one cell
KERNEL = "python3"


def use_this_interpreter(kernels: Path) -> None:
    """Make the ``python3`` kernel spec this interpreter's (JUPYTER_PATH comes first)."""
    spec = kernels / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"})
    )
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(kernels), *filter(None, [os.environ.get("JUPYTER_PATH")])]
    )


def execute(path: Path, *, extra_cell: str | None = None) -> Any:
    """Run the notebook at ``path`` (with ``extra_cell`` appended) in a fresh kernel; the
    executed notebook (nbformat)."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    if extra_cell is not None:
        notebook.cells.append(nbformat.v4.new_code_cell(extra_cell))
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
    )
    client.execute()
    return notebook


def test_there_are_the_five_notebooks() -> None:
    assert [path.name for path in PATHS] == [
        "01-quickstart.ipynb",
        "02-rx-pipelines.ipynb",
        "03-inspect-a-recording.ipynb",
        "04-steps-and-tools.ipynb",
        "05-benchmarks.ipynb",
    ]


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.stem)
def test_the_committed_notebook_was_run_top_to_bottom(path: Path) -> None:
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    shown = [cell for cell in code if cell.outputs]
    assert len(shown) >= len(code) // 2, "committed without most of its outputs"
    for cell in code:
        for output in cell.outputs:
            assert output.output_type != "error", cell.source
            assert output.get("name") != "stderr", (cell.source, output.text)


@pytest.fixture(scope="module")
def kernel_spec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    saved = os.environ.get("JUPYTER_PATH")
    use_this_interpreter(tmp_path_factory.mktemp("jupyter"))
    yield
    if saved is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = saved


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.stem)
def test_the_notebook_runs_in_a_real_kernel(path: Path, kernel_spec: None) -> None:
    started = time.monotonic()
    # a cell that raises fails here (CellExecutionError); the last cell asks the kernel
    # which interpreter it runs
    notebook = execute(path, extra_cell="import sys\nprint(sys.executable)")
    elapsed = time.monotonic() - started
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code)
    errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert not errors
    assert code[-1].outputs[0].text.strip() == sys.executable
    print(f"{path.name}: {elapsed:.1f} s")


def main(names: list[str]) -> None:
    """Execute the notebooks (all, or those named) and write them back with their outputs."""
    import tempfile

    import nbformat

    use_this_interpreter(Path(tempfile.mkdtemp()))
    for path in PATHS:
        if names and path.name not in names and path.stem not in names:
            continue
        started = time.monotonic()
        notebook = execute(path)
        nbformat.write(notebook, path)
        print(f"{path.name}: {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
