"""Refusals and outputs: a message and exit status 2 for bad input, and
files written whole, never through a symbolic link."""
import os


class Refused(Exception):
    """Bad input or a plot that would mislead: a message and exit status 2."""


def die(msg):
    raise Refused(msg)


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
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as err:
        die(f"{d}: cannot create the directory: {err.strerror}")
    if not os.path.isdir(d):
        die(f"{d}: not a directory")
    return d


def write_atomic(path, write):
    """Calls write(binary file) on a temporary file and renames it to path."""
    import tempfile
    d = output_dir(path)
    refuse_link(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    except OSError as err:
        die(f"{path}: cannot write: {err.strerror}")
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
        die(f"{path}: cannot write: {err.strerror}")
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
