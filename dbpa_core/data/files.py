"""Writing output files whole or not at all.

A report, a results file or a requests file is written to a temporary file
beside its target and renamed over it only once it is complete
(``os.replace`` is atomic on one file system).  A full disk, a read-only
folder or an interruption midway therefore leaves the previous file (or no
file) behind, never half of a new one that a reader would take for whole.
A target that is not a regular file (``/dev/stdout``, a named pipe) is
written in place, never replaced; a symbolic link is followed.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _target(path: Path) -> tuple[Path, bool]:
    """The file to write (links followed) and whether it must be written in place (not a regular file)."""
    if path.exists() and not path.is_file():
        return path, True
    return (path.resolve() if path.is_symlink() else path), False


@contextmanager
def atomic_writer(path: str | Path, mode: str = "w") -> Iterator:
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path``.

    Parameters
    ----------
    path : str or Path
        The file to write (its folder must exist).
    mode : {"w", "wb"}
        Text (UTF-8) or bytes.

    Raises
    ------
    OSError
        Naming ``path`` (a full disk is otherwise reported without a file name); the temporary
        file is removed and ``path`` is left as it was.
    """
    path, in_place = _target(Path(path))
    encoding = {} if "b" in mode else {"encoding": "utf-8"}
    temporary = None
    try:
        if in_place:
            with open(path, mode, **encoding) as handle:
                yield handle
            return
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
        with os.fdopen(descriptor, mode, **encoding) as handle:
            yield handle
        os.replace(temporary, path)
        temporary = None
    except OSError as error:
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all (:func:`atomic_writer`)."""
    with atomic_writer(path) as handle:
        handle.write(text)
    return Path(path)


def write_texts(texts: dict[Path, str]) -> None:
    """Write several files as one: every text goes to a temporary file first, and only when all are
    complete are they renamed over their targets (a report's JSON, CSV and HTML never disagree)."""
    temporaries: dict[Path, str] = {}
    in_place = []
    try:
        for requested, text in texts.items():
            path, direct = _target(Path(requested))
            if direct:
                in_place.append((path, text))
                continue
            descriptor, temporaries[path] = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial",
                                                             dir=path.parent)
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                    handle.write(text)
            except OSError as error:
                raise OSError(error.errno, error.strerror or str(error), str(path)) from error
        for path, temporary in list(temporaries.items()):
            os.replace(temporary, path)
            del temporaries[path]
        for path, text in in_place:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
    finally:
        for temporary in temporaries.values():
            try:
                os.unlink(temporary)
            except OSError:
                pass


# ------------------------------------------------- checked before any work starts
REPORT_FILES = {"json": "report.json", "csv": "results.csv", "html": "report.html"}


def write_report_files(folder: str | Path, texts: dict[str, str]) -> dict[str, Path]:
    """report.json, results.csv and report.html (``texts`` by kind: json, csv, html) into ``folder``.

    All three or none (:func:`write_texts`): a full disk midway leaves the previous reports, never a mix of
    old and new, and folders made for nothing go again.  Returns the path of each kind.
    """
    folder = Path(folder)
    paths = {kind: folder / name for kind, name in REPORT_FILES.items()}
    created = [parent for parent in (folder, *folder.parents) if not parent.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        write_texts({paths[kind]: text for kind, text in texts.items()})
    except BaseException:
        for parent in created:  # innermost first
            try:
                parent.rmdir()
            except OSError:
                break
        raise
    return paths


def can_write_in(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (tried and removed: permission bits do not tell for root,
    a read-only mount or an immutable folder)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def check_path_length(path: str | Path, option: str) -> Path:
    """``path`` as it is, or a ValueError naming ``option`` when the system would refuse it as too long (a
    name over NAME_MAX bytes, usually 255, or the whole over PATH_MAX, usually 4 096): said before anything
    is computed, as bad input, never as a failed run ("File name too long" from the first write)."""
    path = Path(path)
    existing = Path(os.path.abspath(path))
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    try:
        name_max, path_max = os.pathconf(existing, "PC_NAME_MAX"), os.pathconf(existing, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if longest > name_max or len(os.fsencode(os.path.abspath(path))) >= path_max:
        too_long = (f"a name of {longest:,} bytes, over the {name_max:,} allowed" if longest > name_max
                    else f"{len(os.fsencode(os.path.abspath(path))):,} bytes, over the {path_max - 1:,} allowed")
        raise ValueError(f"`{option}`: the path is too long ({too_long}); give a shorter one.")
    return path


def writable_folder(path: Path, option: str) -> Path:
    """``path`` as a folder that exists or can be created and written (checked before any sampling)."""
    check_path_length(path, option)
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"`{option}`: {existing} is a file; give a folder for the reports.")
    if not can_write_in(existing):
        raise ValueError(f"`{option}`: {existing} is read-only; give a folder you can write to.")
    return path


def writable_file(path: Path, option: str) -> Path:
    """``path`` as a file that can be written: not a folder, in a folder that exists and is writable (checked
    before any work, so that a result is never computed for nothing)."""
    check_path_length(path, option)
    if path.is_dir():
        raise ValueError(f"`{option}`: {path} is a folder; give a file name such as {path / 'result.json'}.")
    if not path.parent.is_dir():
        raise ValueError(f"`{option}`: the folder {path.parent} does not exist; create it or give another path.")
    if not can_write_in(path.parent):
        raise ValueError(f"`{option}`: the folder {path.parent} is read-only; give a path you can write to.")
    return path


# ------------------------------------------------- type before open
def file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (None for a regular file or a folder)."""
    for test, words in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return None


def stat_or_none(path: str | Path, name: str, *, cannot: str = "cannot be read",
                 fix: str = "give another path") -> os.stat_result | None:
    """``os.stat`` of ``path`` (links followed), None when nothing is there; a path the system refuses is a
    ValueError naming ``name`` (too long, or ``cannot`` with the reason, then ``fix``)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            raise ValueError(f"`{name}`: the path is too long ({len(os.fsencode(str(path))):,} bytes, or a name in "
                             "it over 255); give a shorter one.") from None
        raise ValueError(f"`{name}`: {path} {cannot} ({error.strerror}); {fix}.") from None


def check_kind(path: str | Path, name: str, *, folder_ok: bool = False) -> os.stat_result | None:
    """Refuse (ValueError naming ``name``) a path that is a named pipe, a device or a socket, checked with
    ``stat`` before anything opens it: opening a FIFO blocks until a writer comes, and a device such as
    ``/dev/zero`` never ends.  Returns the stat of an existing path, None when it does not exist."""
    info = stat_or_none(path, name)
    if info is None:
        return None
    kind = file_kind(info.st_mode)
    if kind:
        raise ValueError(f"`{name}`: {path} is {kind}, not a regular file; give a file path.")
    if stat.S_ISDIR(info.st_mode) and not folder_ok:
        raise ValueError(f"`{name}`: {path} is a folder; give a file.")
    return info


def read_bounded(path: str | Path, name: str, max_bytes: int, *, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, refused (ValueError naming ``name``) when it is missing, not a
    regular file, or larger than ``max_bytes`` — all decided before a byte is read.  Opened without blocking
    and checked again on the open descriptor (a path swapped for a FIFO between the two checks)."""
    info = check_kind(path, name)
    if info is None:
        raise ValueError(f"`{name}`: {path}: file not found.")
    if info.st_size > max_bytes:
        raise ValueError(f"`{name}`: {path} is {info.st_size:,} bytes; a {what} is read only up to "
                         f"{max_bytes:,} bytes. Is it the right file?")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise ValueError(f"`{name}`: {path} cannot be read ({error.strerror}).") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError(f"`{name}`: {path} is not a regular file; give a file path.")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"`{name}`: {path} is larger than {max_bytes:,} bytes (the bound of a {what}).")
    return data
