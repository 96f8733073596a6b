"""The machine a run measured, and the versions it ran, for the printout and the JSON."""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("solon-events", "orjson", "reactivex", "aiohttp", "attrs")


def cpu_model() -> str:
    """The processor's model name (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def version(package: str) -> str | None:
    """The installed version of ``package``, None when it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def describe() -> dict[str, Any]:
    """The CPU, core count, memory, OS, Python and the versions of :data:`PACKAGES`."""
    memory = None
    with contextlib.suppress(ValueError, OSError, AttributeError):
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(memory / 2**30, 1) if memory else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "packages": {name: version(name) for name in PACKAGES},
    }


def summary(machine: dict[str, Any]) -> str:
    """One line: CPU, cores, memory, OS, Python and the package versions."""
    packages = ", ".join(f"{name} {v}" for name, v in machine["packages"].items() if v)
    return (
        f"{machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; "
        f"{machine['os']}; {machine['python']}; {packages}"
    )


def measured(measure: Callable[[bool], dict[str, Any]], quick: bool) -> dict[str, Any]:
    """The figures of ``measure(quick)``, with the machine's load average before and after
    the run (``load_before``, ``load_after``: what :func:`print_run_heading` prints)."""
    load_before = os.getloadavg()[0]
    figures = measure(quick)
    return {"load_before": load_before, **figures, "load_after": os.getloadavg()[0]}


def print_run_heading(figures: dict[str, Any], setting: str) -> None:
    """The first lines of a gateway benchmark's printout: the machine's load before and
    after the run, what the run set up (``setting``), and why LiteLLM's proxy was not
    measured, if it was not."""
    print(
        f"load average {figures['load_before']:.2f} before, {figures['load_after']:.2f} after; "
        + setting
    )
    if "litellm" in figures:
        print(f"LiteLLM's proxy not measured: {figures['litellm']}")
