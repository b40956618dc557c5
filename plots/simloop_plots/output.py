"""Refusals and outputs: a message and exit status 2 for bad input, 4 for an
output that could not be written, and files written whole, never through a
symbolic link."""
import errno
import os


class Refused(Exception):
    """Bad input or a plot that would mislead: a message and exit status 2."""
    status = 2


class WriteFailed(Refused):
    """An output that could not be written (a full disk, a read-only
    directory): not bad input; exit status 4, as simloop's own outputs."""
    status = 4


def die(msg):
    raise Refused(msg)


def reason(err):
    """The system's reason as simloop words it: "No space left on device
    (ENOSPC)", else the text and the number."""
    text = err.strerror or str(err)
    if err.errno == errno.ENOSPC:
        return f"{text} (ENOSPC)"
    return f"{text} ({err.errno})" if err.errno else text


def write_failed(path, what, err):
    raise WriteFailed(f"{path}: {what}: {reason(err)}")


# Outputs are never written through a symbolic link (a link planted where a
# picture goes would have it written over whatever the link points to), and
# each is written whole: to a temporary file of an unpredictable name in its
# own directory, then renamed into place. A missing directory is made, as
# simloop run makes its output directory. Only an ordinary file is ever
# replaced: a character device or a FIFO (or /dev/stdout, /dev/fd/N, this
# process's own descriptors) is written in place as a stream, and anything
# else is refused, as simloop's own outputs are.
OWN = {"/dev/stdout": 1, "/dev/stderr": 2}


def own_descriptor(path):
    if path in OWN:
        return OWN[path]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        rest = path[len(prefix):]
        if path.startswith(prefix) and rest.isdigit() and len(rest) <= 6:
            return int(rest)
    return None


def is_stream(path):
    """True for a path written in place; refuses what is never written."""
    import stat
    if own_descriptor(path) is not None:
        return True
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        die(f"{path}: is a symbolic link; simloop does not write through links")
    if stat.S_ISREG(st.st_mode):
        return False
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return True
    kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
            "a block device" if stat.S_ISBLK(st.st_mode) else
            "a socket" if stat.S_ISSOCK(st.st_mode) else "not an ordinary file")
    die(f"{path}: is {kind}; simloop writes only ordinary files, character devices and FIFOs")


def refuse_link(path):
    is_stream(path)


def write_stream(path, write):
    """Calls write(binary file) on a device, a FIFO or our own descriptor."""
    import stat
    try:
        own = own_descriptor(path)
        if own is not None:
            fd = os.dup(own)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC)
            st = os.fstat(fd)
            if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
                os.close(fd)
                die(f"{path}: changed while it was opened; not written")
        with os.fdopen(fd, "wb") as f:
            write(f)
    except OSError as err:
        write_failed(path, "cannot write", err)


def output_dir(path):
    d = os.path.dirname(path) or "."
    if os.path.exists(d) and not os.path.isdir(d):
        die(f"{d}: not a directory")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as err:
        write_failed(d, "cannot create the directory", err)
    return d


def write_atomic(path, write):
    """Calls write(binary file) on a temporary file and renames it to path
    (in place, for a stream)."""
    import tempfile
    if is_stream(path):
        write_stream(path, write)
        return
    d = output_dir(path)
    refuse_link(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    except OSError as err:
        write_failed(path, "cannot write", err)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if is_stream(path):  # a device or FIFO put there meanwhile is not replaced
            die(f"{path}: is not an ordinary file now; not replaced")
        os.replace(tmp, path)  # replaces a link planted meanwhile, never writes through it
    except OSError as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        write_failed(path, "cannot write", err)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save_figure(fig, stem):
    """The PNG and SVG of fig at stem; both refused before either is written.
    A stem given with either extension (-o plot.png) is the stem without it."""
    for ext in (".png", ".svg"):
        if stem.endswith(ext) and len(stem) > len(ext) and not stem.endswith("/" + ext):
            stem = stem[: -len(ext)]
    paths = [f"{stem}.{ext}" for ext in ("png", "svg")]
    for path in paths:
        if not is_stream(path):
            output_dir(path)
    for path, ext in zip(paths, ("png", "svg")):
        write_atomic(path, lambda f, ext=ext: fig.savefig(f, format=ext, dpi=120))
        print(f"wrote {path}")
