"""Reading input files and writing output files: the one way the project does both.

Inputs are read only from regular files. A named pipe would block the reader until some other
process writes (forever, for a typo'd path), a device such as /dev/zero has no end, and a
directory cannot be read: each is refused by name before a byte is read. The file is opened
non-blocking and checked on the open descriptor, so a FIFO never blocks and nothing can swap the
file between the check and the read.

Outputs are written completely or not at all: into a temporary file beside the destination,
flushed to disk, then renamed over it. A full disk, a read-only folder or a destination that is
not a regular file (/dev/full, a FIFO, a directory) ends with one line naming the file and the
reason, and leaves no partial file behind (the destination keeps its old contents, if it had any).
"""
from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Any

from task_learning.errors import ConfigError, TaskLearningError


class OutputError(TaskLearningError):
    """A file the project writes could not be written completely (nothing was left behind)."""


def describe_kind(mode: int) -> str:
    """What a non-regular file is, in words a user recognises."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def require_regular_file(path: str | Path) -> Path:
    """`path` when it names an existing regular file (symlinks followed); ConfigError naming the
    file and what it is otherwise. For files a library opens itself (SQLite, a bag's storage)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {_reason(exc)}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(path, None, f"{describe_kind(mode)}, not a regular file: give a file")
    return path


def read_input_bytes(path: str | Path, *, max_bytes: int | None = None) -> bytes:
    """The whole content of a regular file; ConfigError naming the file when it is missing,
    unreadable, not a regular file, or larger than `max_bytes`."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise ConfigError(path, None, "a directory, not a regular file: give a file") from None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {_reason(exc)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(path, None, f"{describe_kind(info.st_mode)}, not a regular file: give a file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise ConfigError(path, None, f"{info.st_size} bytes: larger than any file this reads "
                                          f"({max_bytes} bytes at most)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {_reason(exc)}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if max_bytes is not None and len(data) > max_bytes:
        raise ConfigError(path, None, f"larger than any file this reads ({max_bytes} bytes at most)")
    return data


def _check_destination(path: Path, *, directory: bool) -> Path:
    """The existing folder a new `path` goes into; OutputError when `path` cannot be one."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {_reason(exc)}") from None
    if mode is not None:
        if directory:
            raise OutputError(f"cannot write {path}: it already exists (a new directory is written)")
        if not stat.S_ISREG(mode):
            raise OutputError(f"cannot write {path}: {describe_kind(mode)}, not a regular file")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: the folder {folder} does not exist")
    return folder


class AtomicOutput:
    """A temporary path beside `path` to write into (a file, or with `directory` a folder that
    does not exist yet): `commit()` renames it to `path`, `discard()` removes it. As a context
    manager it commits when the block ends without an error and discards when it raises. Any
    OSError while writing or at the rename becomes OutputError naming `path`.

    Permissions are those any tool gives: a new file is created 0666 and a folder 0777, less
    the umask (colleagues can read a shared export, as after `cp` or `> file`); a file written
    over keeps its mode. A destination that is a symbolic link is written through, as the shell's
    `> LINK` writes through: the link stays and the file it points to gets the new content (a
    link into a shared folder is how a user names the file there; replacing it by a regular file
    broke that silently). The temporary file goes beside the link's target, so the rename stays
    within one folder."""

    def __init__(self, path: str | Path, *, directory: bool = False) -> None:
        self.target = Path(path)
        if not directory and self.target.is_symlink():
            self.target = Path(os.path.realpath(self.target))
        self.directory = directory
        folder = _check_destination(self.target, directory=directory)
        try:
            if directory:
                self._holder = _new_temporary(folder, self.target.name, directory=True)
                self.path = self._holder / self.target.name
            else:
                self._holder = self.path = _new_temporary(folder, self.target.name, directory=False)
                _keep_mode(self.target, self.path)
        except OSError as exc:
            raise OutputError(f"cannot write {self.target}: {_reason(exc)} (folder {folder})") from None

    def commit(self) -> None:
        try:
            if self.directory:
                os.rename(self.path, self.target)
            else:
                _fsync(self.path)
                os.replace(self.path, self.target)
        except OSError as exc:
            self.discard()
            raise OutputError(f"cannot write {self.target}: {_reason(exc)}") from None
        self.discard()  # the (now empty) holder folder of a directory

    def discard(self) -> None:
        if self._holder.is_dir():
            shutil.rmtree(self._holder, ignore_errors=True)
        else:
            self._holder.unlink(missing_ok=True)

    def failed(self, exc: OSError) -> OutputError:
        """Discard, and the OutputError to raise for `exc` (a write into the temporary path)."""
        self.discard()
        return OutputError(f"cannot write {self.target}: {_reason(exc)}")

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, kind: Any, exc: Any, _tb: Any) -> None:
        if exc is None:
            self.commit()
        elif isinstance(exc, OSError):
            raise self.failed(exc) from None
        else:
            self.discard()


def _new_temporary(folder: Path, name: str, *, directory: bool) -> Path:
    """A new hidden file or folder in `folder`, created with the umask's permissions (tempfile's
    mkstemp makes 0600, and the rename kept that: exports nobody else could read)."""
    for _attempt in range(100):
        candidate = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            if directory:
                os.mkdir(candidate, 0o777)
            else:
                os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                                 0o666))
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


def _keep_mode(target: Path, temporary: Path) -> None:
    """A file written over keeps its permission bits."""
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return
    os.chmod(temporary, mode)


def atomic_output(path: str | Path, *, directory: bool = False) -> AtomicOutput:
    """`with atomic_output(path) as tmp:` write `tmp`; it becomes `path` when the block succeeds."""
    return AtomicOutput(path, directory=directory)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """All of `data` in `path`, or OutputError and `path` as it was."""
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)


def write_text_atomic(path: str | Path, text: str) -> None:
    """All of `text` (UTF-8) in `path`, or OutputError and `path` as it was."""
    write_bytes_atomic(path, text.encode("utf-8"))


class LineAppender:
    """Appends whole lines to a log-like file (a cassette, a response cache) that grows while a
    run goes on, so a temporary file and a rename do not fit: each line goes out in one write,
    and a write that fails part-way is cut back off, so the file never ends in half a line. A
    failed write raises OutputError naming the file."""

    def __init__(self, path: str | Path, *, create_folder: bool = True) -> None:
        self.path = Path(path)
        self.create_folder = create_folder  # False: a missing folder is an error naming it
        self._fd: int | None = None

    def check(self) -> None:
        """OutputError now when the file exists and is not a regular file."""
        try:
            mode = self.path.stat().st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {_reason(exc)}") from None
        if not stat.S_ISREG(mode):
            raise OutputError(f"cannot write {self.path}: {describe_kind(mode)}, not a regular file")

    def open(self) -> None:
        """Open (create) the file now: OutputError before the run when it cannot be written,
        not at its first line, after calls were paid for."""
        self._open()

    def _open(self) -> int:
        if self._fd is None:
            self.check()
            folder = self.path.parent if str(self.path.parent) else Path(".")
            if not self.create_folder and not folder.is_dir():
                raise OutputError(f"cannot write {self.path}: the folder {folder} does not exist")
            try:
                folder.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                                   0o666)  # the umask decides, as for any tool
            except OSError as exc:
                raise OutputError(f"cannot write {self.path}: {_reason(exc)}") from None
        return self._fd

    def append(self, line: str) -> None:
        fd = self._open()
        data = (line if line.endswith("\n") else line + "\n").encode("utf-8")
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        except OSError as exc:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass
            raise OutputError(f"cannot write {self.path}: {_reason(exc)}") from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def save_figure(figure: Any, path: str | Path, **options: Any) -> None:
    """A matplotlib figure saved as `path` (format from its suffix, PNG without one), atomically."""
    path = Path(path)
    with atomic_output(path) as tmp:
        figure.savefig(tmp, format=path.suffix[1:].lower() or "png", **options)
