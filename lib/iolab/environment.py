"""What this machine offers the lab: versions, cores, file-descriptor limit, Binder or local, optional tools."""

import importlib.metadata
import os
import platform
import resource
import sys

from .contract import find_program

PACKAGES = ("tornado", "aiohttp", "requests", "matplotlib", "ipywidgets", "ipykernel", "papermill", "simpy", "psutil")
OPTIONAL_TOOLS = {
    "ab": "ApacheBench (apache2-utils): lesson 02 reruns its experiment with it",
    "wrk": "wrk: the lab's client is compared with it; lessons 05-09 use it",
    "nginx": "nginx: lesson 06 puts Tornado processes behind it",
}
MIN_FILES = 1024  # lesson 07 wants thousands; below this even lesson 02 is cramped


def where():
    """'Binder', 'JupyterHub' or 'local', from the variables each sets."""
    if "BINDER_LAUNCH_HOST" in os.environ or "BINDER_REPO_URL" in os.environ:
        return "Binder"
    if "JUPYTERHUB_API_URL" in os.environ:
        return "JupyterHub"
    return "local"


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def versions():
    found = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def tools():
    """{tool: path or None} for the optional command-line tools."""
    return {tool: find_program(tool) for tool in OPTIONAL_TOOLS}


def report():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {
        "where": where(),
        "platform": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "cores": usable_cores(),
        "rlimit_nofile": {"soft": soft, "hard": hard},
        "versions": versions(),
        "tools": tools(),
    }


def problems(found):
    """What would stop the lessons from running, as sentences; an empty list means all is well."""
    issues = []
    if sys.version_info < (3, 11):  # noqa: UP036 (a kernel from another Python can still import lib/)
        issues.append(f"Python {found['versions']['python']} is too old: the lab needs 3.11 or newer")
    issues += [f"{name} is not installed: run `make lab` again" for name, v in found["versions"].items() if v is None]
    if found["rlimit_nofile"]["soft"] < MIN_FILES:
        issues.append(f"RLIMIT_NOFILE is {found['rlimit_nofile']['soft']}: raise it to at least {MIN_FILES} (ulimit -n)")
    return issues
