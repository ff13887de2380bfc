"""The private directories that ``build_root(spill_dir=...)`` spills into, and reclaiming those of dead runs.

Each run makes ``<spill_dir>/mpt-build-root-XXXXXXXX/`` and deletes it when it ends. A run killed outright
(SIGKILL, a power cut) cannot, so every run directory holds a ``lock`` file (with the owner's PID, for people
reading it) on which the run holds an exclusive ``flock`` for as long as it lives. The kernel drops the lock when
the process dies, however it dies; the next run in the same ``spill_dir`` takes the lock of every run directory
it finds without waiting, and deletes those whose lock it got: their owner is gone.

The lock file is created under a temporary name, locked, and only then renamed to ``lock``: a ``lock`` file that
exists is therefore always locked while its owner lives, and a directory without one (a run starting this very
moment) is left alone. Where ``fcntl`` does not exist (Windows) nothing is reclaimed.
"""
import os
import shutil
import stat
import tempfile

try:
    import fcntl
except ImportError:         # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

PREFIX = "mpt-build-root-"
LOCK_NAME = "lock"


def _try_lock(fd):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:         # EWOULDBLOCK: a live run holds it
        return False


def reclaim(parent):
    """Delete the run directories under parent whose owner has died; returns their paths."""
    if fcntl is None:
        return []
    reclaimed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    for name in names:
        if not name.startswith(PREFIX):
            continue
        run_dir = os.path.join(parent, name)
        try:
            # O_NONBLOCK | O_NOFOLLOW: a FIFO or a symlink planted under that name in a shared spill directory
            # must not block this run or lead it elsewhere.
            fd = os.open(os.path.join(run_dir, LOCK_NAME),
                         os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:     # no lock file (yet, or not ours): leave it alone
            continue
        try:
            st = os.fstat(fd)
            # Only a regular lock file of this user's runs counts; anything else is not ours to delete.
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                continue
            if _try_lock(fd):
                shutil.rmtree(run_dir, ignore_errors=True)
                if not os.path.exists(run_dir):
                    reclaimed.append(run_dir)
        finally:
            os.close(fd)
    return reclaimed


class SpillDir:
    """A run's private directory under ``parent``, locked for the life of the run; ``close()`` deletes it."""

    def __init__(self, parent):
        reclaim(parent)
        self.path = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
        self._lock_fd = -1
        if fcntl is not None:
            try:
                fd, temp = tempfile.mkstemp(prefix=".lock-", dir=self.path)
                self._lock_fd = fd
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(fd, b"%d\n" % os.getpid())
                os.rename(temp, os.path.join(self.path, LOCK_NAME))
            except BaseException:
                self.close()
                raise

    def close(self):
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)     # releases the lock, after the directory is gone
            self._lock_fd = -1
