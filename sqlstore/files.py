"""Private files and directories: what sqlstore creates is readable by its owner only."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable

from sqlstore.errors import StoreReadOnly, UnsafePath

DIR_MODE = 0o700


def make_private_dirs(parent: str) -> list[str]:
    """Create ``parent`` and each missing ancestor with mode 0700, whatever the umask.

    Returns the directories this call created, outermost first. A relative
    ``parent`` (``out``, ``./out``, ``a/b``) is created under the working directory.
    When one cannot be created, those this call created are removed again
    before the error is raised (a failed open leaves no directory behind).

    ``os.makedirs(mode=...)`` applies the mode to the last directory only; the
    intermediate ones would get 0777 minus the umask (world-writable under umask 0).

    Raises:
        StoreReadOnly: a directory cannot be created for lack of permission.
        UnsafePath: a component of the path exists and is not a directory, or the
            OS refused the name (longer than 255 bytes, ...).
    """
    missing: list[str] = []
    current = parent or os.curdir
    while not os.path.isdir(current):
        missing.append(current)
        # A relative path runs out of components ("out" -> ""): it hangs off the cwd.
        up = os.path.dirname(current.rstrip(os.sep) or os.sep) or os.curdir
        if up == current:
            break  # "." or "/" itself is missing or not a directory: mkdir reports it
        current = up
    created: list[str] = []
    try:
        _make_each(reversed(missing), created)
    except BaseException:
        remove_dirs(created)
        raise
    return created


def remove_dirs(created: list[str]) -> None:
    """Remove directories :func:`make_private_dirs` created (innermost first), if still empty."""
    for directory in reversed(created):
        try:
            os.rmdir(directory)
        except OSError:
            return  # not empty (another process wrote into it) or gone: leave it and its parents


def _make_each(directories: Iterable[str], created: list[str]) -> None:
    for directory in directories:
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise UnsafePath(f"{directory} exists and is not a directory") from None
            continue  # created meanwhile by another process; its mode is its creator's
        except PermissionError as exc:
            raise StoreReadOnly(f"cannot create directory {directory}: {exc.strerror}") from exc
        except NotADirectoryError as exc:
            raise UnsafePath(f"cannot create directory {directory}: {exc.strerror}") from exc
        except OSError as exc:  # a name too long, a read-only or full file system, ...
            hint = "Each path component must be at most 255 bytes; choose a shorter name."
            raise UnsafePath(
                f"cannot create directory {directory}: {exc.strerror}",
                hint=hint if exc.errno == errno.ENAMETOOLONG else None,
            ) from exc
        created.append(directory)
        os.chmod(directory, DIR_MODE)
