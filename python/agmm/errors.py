"""agmm's errors as Python exceptions.

Every failing C call raises a subclass of agmm.Error carrying the status
(`status`, the agmm_status_t value; `status_name`, e.g.
"AGMM_ERR_TIMEOUT") and the library's one-line message (`message`, from
agmm_last_error() right after the call). Arguments the package checks
itself (an array of the wrong dtype or shape) raise InvalidArgument with
status AGMM_ERR_INVALID_ARG, before any C call. The subclasses also derive
from the matching built-in exception where there is one (InvalidArgument
is a ValueError, Timeout a TimeoutError, OutOfMemory a MemoryError,
Unsupported a NotImplementedError), so generic handlers keep working.
"""
from . import _lib


class Error(Exception):
    """An agmm failure: `status` (int), `status_name`, `message`."""

    status = -1

    def __init__(self, message, status=None):
        if status is not None:
            self.status = status
        self.message = message
        super().__init__(message)

    @property
    def status_name(self):
        if 0 <= self.status < len(_lib.STATUS_NAMES):
            return _lib.STATUS_NAMES[self.status]
        return "AGMM_STATUS_%d" % self.status

    def __str__(self):
        return "%s: %s" % (self.status_name, self.message)


class InvalidArgument(Error, ValueError):
    status = _lib.STATUS["AGMM_ERR_INVALID_ARG"]


class OutOfMemory(Error, MemoryError):
    status = _lib.STATUS["AGMM_ERR_NO_MEMORY"]


class TooLarge(Error):
    status = _lib.STATUS["AGMM_ERR_TOO_LARGE"]


class SystemCallError(Error, OSError):
    status = _lib.STATUS["AGMM_ERR_SYSTEM"]


class Timeout(Error, TimeoutError):
    status = _lib.STATUS["AGMM_ERR_TIMEOUT"]


class Aborted(Error):
    """Another rank failed and aborted the world (the message names it)."""
    status = _lib.STATUS["AGMM_ERR_ABORTED"]


class Mismatch(Error):
    """Ranks disagree: plan descriptions, world size."""
    status = _lib.STATUS["AGMM_ERR_MISMATCH"]


class BadState(Error):
    """An object used after close(), or a call overlapping another."""
    status = _lib.STATUS["AGMM_ERR_BAD_STATE"]


class Unsupported(Error, NotImplementedError):
    """Not built in (MPI, oneDNN) or not in this version of the library."""
    status = _lib.STATUS["AGMM_ERR_UNSUPPORTED"]


class TransportError(Error):
    status = _lib.STATUS["AGMM_ERR_TRANSPORT"]


class CheckFailed(Error):
    status = _lib.STATUS["AGMM_ERR_CHECK_FAILED"]


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgument, OutOfMemory, TooLarge, SystemCallError, Timeout,
    Aborted, Mismatch, BadState, Unsupported, TransportError, CheckFailed)}


def from_status(status, what=""):
    """The exception for a non-zero status, with agmm_last_error()."""
    message = _lib.text(_lib.fn.agmm_last_error())
    if not message:  # a query-style failure that recorded no message
        message = _lib.text(_lib.fn.agmm_status_describe(status))
        if what:
            message = "%s: %s" % (what, message)
    cls = _BY_STATUS.get(status, Error)
    return cls(message, status)


def check(status, what=""):
    """Raise the matching Error unless status is AGMM_OK."""
    if status != 0:
        raise from_status(status, what)


def missing(name):
    """The error for a C function this libagmm.so does not have."""
    return Unsupported("%s is not in this libagmm.so (%s)" % (name, _lib.path))
