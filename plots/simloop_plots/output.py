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
# simloop run makes its output directory.
def refuse_link(path):
    if os.path.islink(path):
        die(f"{path}: is a symbolic link; simloop does not write through links")


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
    """Calls write(binary file) on a temporary file and renames it to path."""
    import tempfile
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
    """The PNG and SVG of fig at stem; both refused before either is written."""
    paths = [f"{stem}.{ext}" for ext in ("png", "svg")]
    for path in paths:
        output_dir(path)
        refuse_link(path)
    for path, ext in zip(paths, ("png", "svg")):
        write_atomic(path, lambda f, ext=ext: fig.savefig(f, format=ext, dpi=120))
        print(f"wrote {path}")
