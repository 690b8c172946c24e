"""Test-only: a disk that fills up. Put this directory on PYTHONPATH of a subprocess with
NOVELTY_TEST_FULL_UNDER=<dir> and NOVELTY_TEST_FULL_AFTER=<n>: after n writes to files under <dir> (counted per
process), every further `os.write` to a file there fails with ENOSPC, as on a full disk (or with the errno named
by NOVELTY_TEST_FULL_ERRNO, e.g. EROFS for a file system remounted read-only). Nothing else changes."""

import errno
import os

_UNDER = os.environ.get("NOVELTY_TEST_FULL_UNDER")
if _UNDER:
    _under = os.path.realpath(_UNDER) + os.sep
    _after = int(os.environ.get("NOVELTY_TEST_FULL_AFTER", "0"))
    _errno = getattr(errno, os.environ.get("NOVELTY_TEST_FULL_ERRNO", "ENOSPC"))
    _written = [0]
    _write = os.write

    def _full_write(fd, data):
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        if path.startswith(_under):
            _written[0] += 1
            if _written[0] > _after:
                raise OSError(_errno, os.strerror(_errno))
        return _write(fd, data)

    os.write = _full_write
