"""Temporary folders that name their wrapper, removed once it is gone.

A wrapper SIGKILLed by itself (not through its parent, whose death it
watches) cannot remove its own folder. Each folder therefore holds its
wrapper's pid, and the next wrapper of the same kind removes the folders
whose wrapper no longer runs.
"""

import glob
import os
import shutil
import tempfile
import time
from collections.abc import Iterator

OWNER_FILE = "wrapper.pid"
UNOWNED_FOR_S = 60  # a folder with no owner written yet is one being made, unless it is older than this


def abandoned(prefix: str, tmp: str | None = None) -> Iterator[str]:
    """The folders named prefix* in `tmp` whose wrapper is gone."""
    for folder in glob.glob(os.path.join(tmp or tempfile.gettempdir(), prefix + "*")):
        try:
            with open(os.path.join(folder, OWNER_FILE)) as file:
                os.kill(int(file.read()), 0)
            continue  # its wrapper is running
        except ProcessLookupError:
            pass
        except PermissionError:  # another user's wrapper, running
            continue
        except (OSError, ValueError):  # no owner written yet, or not readable
            try:
                if time.time() - os.stat(folder).st_mtime < UNOWNED_FOR_S:
                    continue
            except OSError:
                continue
        yield folder


def make(prefix: str, tmp: str | None = None) -> str:
    """A new folder named prefix* holding our pid, after removing those of wrappers that are gone."""
    for folder in abandoned(prefix, tmp):
        shutil.rmtree(folder, ignore_errors=True)
    folder = tempfile.mkdtemp(prefix=prefix, dir=tmp)
    with open(os.path.join(folder, OWNER_FILE), "w") as file:
        file.write(str(os.getpid()))
    return folder
