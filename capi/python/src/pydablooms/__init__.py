"""pydablooms over libdablooms.so: the API of the original dablooms 0.9.1
Python module (Dablooms, load_dabloom, __version__), with ctypes over this
project's C library, so scripts written for the original run unchanged.

Install it with pip from a clone of the repository (Go and a C compiler
needed; the library is built then and installed inside this package):

    pip install ./capi/python

The library is looked for in $DABLOOMS_LIB, then as libdablooms.so in this
package's directory (where pip puts it), then on the system's library path.

Every method may be called from several threads; the GIL is released during
each call. Do not fork (os.fork, multiprocessing's "fork" start method)
after importing: the Go runtime inside the library does not survive fork.
Use subprocess or multiprocessing's "spawn" start method instead.
"""

import ctypes
import ctypes.util
import os

__all__ = ["Dablooms", "DabloomsError", "load_dabloom", "last_error", "__version__"]


def _load():
    env = os.environ.get("DABLOOMS_LIB")
    if env:
        candidates = [env]  # the one to use, nothing else
    else:
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libdablooms.so")
        candidates = [here] if os.path.exists(here) else []
        candidates += [ctypes.util.find_library("dablooms") or "libdablooms.so"]
    tried = []
    for c in candidates:
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            tried.append("%s: %s" % (c, e))
    raise ImportError(
        "pydablooms: cannot load libdablooms.so (%s); install the module with "
        "'pip install ./capi/python' from a clone of the repository, or set "
        "DABLOOMS_LIB to the library's path" % "; ".join(tried))


_lib = _load()


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_H = ctypes.c_void_p
_version = _fn("dablooms_version", ctypes.c_char_p)
_new = _fn("new_scaling_bloom", _H, ctypes.c_uint, ctypes.c_double, ctypes.c_char_p)
_from_file = _fn("new_scaling_bloom_from_file", _H, ctypes.c_uint, ctypes.c_double, ctypes.c_char_p)
_free = _fn("free_scaling_bloom", ctypes.c_int, _H)
_add = _fn("scaling_bloom_add", ctypes.c_int, _H, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64)
_remove = _fn("scaling_bloom_remove", ctypes.c_int, _H, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64)
_check = _fn("scaling_bloom_check", ctypes.c_int, _H, ctypes.c_char_p, ctypes.c_size_t)
_flush = _fn("scaling_bloom_flush", ctypes.c_int, _H)
_mem_seqnum = _fn("scaling_bloom_mem_seqnum", ctypes.c_uint64, _H)
_disk_seqnum = _fn("scaling_bloom_disk_seqnum", ctypes.c_uint64, _H)
_last_error = _fn("dablooms_last_error", ctypes.c_char_p)
_last_conversion = _fn("dablooms_last_conversion", ctypes.c_char_p)

__version__ = _version().decode()


class DabloomsError(OSError):
    """A filter could not be created, opened or closed; the text says why
    in the library's words (last_error() without the C function's name)."""


def last_error():
    """The text of the last failed call on this thread ('' if none), after
    the name of the C function that failed ("scaling_bloom_add: ...")."""
    return _last_error().decode("utf-8", "replace")


def _error():
    """A DabloomsError with the last error's text, less the C function's
    name, which means nothing to a Python caller."""
    text = last_error()
    name, sep, rest = text.partition(": ")
    if sep and name.replace("_", "").isalpha() and name.islower():
        text = rest
    return DabloomsError(text)


def _key(key):
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, bytes):
        return key
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    raise TypeError("key must be str or bytes, not %s" % type(key).__name__)


def _params(capacity, error_rate, filepath):
    if capacity is None or error_rate is None or filepath is None:
        raise TypeError("capacity, error_rate and filepath are required")
    capacity = int(capacity)
    if not 0 < capacity <= 0xFFFFFFFF:
        raise ValueError("capacity must be between 1 and 2**32-1, not %d" % capacity)
    return capacity, float(error_rate), _path(filepath)


def _path(filepath):
    """filepath as the bytes C gets; ValueError for a NUL byte, which C would
    take as the end of the path (open() refuses it the same way)."""
    path = os.fsencode(filepath)
    if b"\0" in path:
        raise ValueError("embedded null byte in filepath %r" % (filepath,))
    return path


def _id(id):
    id = int(id)
    if not 0 <= id < 1 << 64:
        raise ValueError("id must be between 0 and 2**64-1, not %d" % id)
    return id


class Dablooms(object):
    """A scaling, counting Bloom filter in the file filepath, created anew
    (an existing file is replaced). Use load_dabloom to open one.

    add, delete and check return the original's ints: add 1 (0 on failure),
    delete 1 if removed (0 if the filter for id does not hold the key),
    check 1 or 0, flush 0 (-1 on failure). last_error() tells why.
    """

    def __init__(self, capacity=None, error_rate=None, filepath=None):
        self._h = None
        capacity, error_rate, path = _params(capacity, error_rate, filepath)
        h = _new(capacity, error_rate, path)
        if not h:
            raise _error()
        self._h = h
        self.conversion = None

    def _handle(self):
        if self._h is None:
            raise ValueError("the filter is closed")
        return self._h

    def add(self, hash, id):
        k = _key(hash)
        return _add(self._handle(), k, len(k), _id(id))

    def delete(self, hash, id):
        k = _key(hash)
        return _remove(self._handle(), k, len(k), _id(id))

    def check(self, hash):
        k = _key(hash)
        return _check(self._handle(), k, len(k))

    def __contains__(self, hash):
        return self.check(hash) != 0

    def flush(self):
        return _flush(self._handle())

    def mem_seqnum(self):
        return _mem_seqnum(self._handle())

    def disk_seqnum(self):
        return _disk_seqnum(self._handle())

    def close(self):
        """Closes the file (also done when the object is collected)."""
        h, self._h = self._h, None
        if h is not None and _free(h) != 0:
            raise _error()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h is not None and _free is not None:
            _free(h)


def load_dabloom(capacity=None, error_rate=None, filepath=None):
    """Opens the filter in filepath. capacity and error_rate are used only for
    a file written by the original dablooms, which is converted in place
    (the original is kept beside it; the object's conversion attribute and
    stderr say so). This library's files carry their own parameters."""
    capacity, error_rate, path = _params(capacity, error_rate, filepath)
    h = _from_file(capacity, error_rate, path)
    if not h:
        raise _error()
    conv = _last_conversion()
    b = Dablooms.__new__(Dablooms)
    b._h = h
    b.conversion = conv.decode("utf-8", "replace") if conv else None
    return b
