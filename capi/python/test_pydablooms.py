"""unittest suite of pydablooms over libdablooms.so (standard library only),
run from capi/python against the pydablooms that is importable: the
installed one (pip install ./capi/python; capi/install_test.sh), or
src/ with the library given (capi_test.go does):

    PYTHONPATH=src DABLOOMS_LIB=/path/libdablooms.so python3 -m unittest -v test_pydablooms

The original's files are read from $DABLOOMS_ORIGINALS (default: the module's testdata/dablooms-0.9.1).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

import pydablooms

HERE = os.path.dirname(os.path.abspath(__file__))
ORIGINALS = os.environ.get("DABLOOMS_ORIGINALS") or os.path.join(HERE, "..", "..", "testdata", "dablooms-0.9.1")


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pydablooms-")
        self.addCleanup(shutil.rmtree, self.dir)

    def path(self, name):
        return os.path.join(self.dir, name)

    def original(self, name):
        src = os.path.join(ORIGINALS, name)
        self.assertTrue(os.path.exists(src), "testdata of dablooms 0.9.1 missing: %s" % src)
        dst = self.path(name)
        shutil.copyfile(src, dst)
        return dst


class TestAPI(Base):
    def test_version(self):
        v = pydablooms.__version__
        self.assertTrue(v.startswith("0.9.1+go ("), v)
        # The build, as dabloomsctl version says it: module, revision, Go, formats.
        for part in ("github.com/dablooms/dablooms ", ", revision ", ", go1.", ", format 1."):
            self.assertIn(part, v)

    def test_nul_in_path(self):
        # C would end the path at the NUL and replace (or open) another file.
        victim = self.path("victim")
        with open(victim, "wb") as f:
            f.write(b"not a filter")
        for path in (victim + "\x00.new.dbl", os.fsencode(victim) + b"\x00.new.dbl"):
            with self.assertRaises(ValueError) as cm:
                pydablooms.Dablooms(capacity=100, error_rate=0.01, filepath=path)
            self.assertIn("null byte", str(cm.exception))
            self.assertRaises(ValueError, pydablooms.load_dabloom, capacity=100, error_rate=0.01, filepath=path)
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"not a filter")
        self.assertEqual(sorted(os.listdir(self.dir)), ["victim"])

    def test_readme_session(self):
        # The original's pydablooms/README.md session, with this library's answers.
        bloom = pydablooms.Dablooms(capacity=1000, error_rate=.05, filepath=self.path("bloom.bin"))
        self.assertEqual(bloom.add("foo", 2), 1)
        self.assertEqual(bloom.check("bar"), 0)
        self.assertEqual(bloom.delete("foo", 2), 1)
        self.assertEqual(bloom.check("foo"), 0)
        del bloom
        bloom = pydablooms.load_dabloom(capacity=1000, error_rate=.05, filepath=self.path("bloom.bin"))
        self.assertIsNone(bloom.conversion)
        self.assertEqual(bloom.check("foo"), 0)

    def test_keys_str_and_bytes(self):
        bloom = pydablooms.Dablooms(capacity=1000, error_rate=.01, filepath=self.path("k.bin"))
        self.assertEqual(bloom.add("héllo", 1), 1)
        self.assertIn("héllo".encode("utf-8"), bloom)
        self.assertEqual(bloom.add(b"\x00nul\x00", 2), 1)
        self.assertEqual(bloom.check(b"\x00nul\x00"), 1)
        self.assertIn(bytearray(b"\x00nul\x00"), bloom)
        self.assertEqual(bloom.add("", 3), 1)
        self.assertIn("", bloom)
        self.assertEqual(bloom.check(b"\x00nul"), 0)
        self.assertRaises(TypeError, bloom.check, 12)
        self.assertRaises(TypeError, lambda: 12 in bloom)
        self.assertRaises(ValueError, bloom.add, "x", -1)

    def test_add_check_delete_many(self):
        bloom = pydablooms.Dablooms(capacity=1000, error_rate=.01, filepath=self.path("many.bin"))
        m0 = bloom.mem_seqnum()
        n = 3000  # three times the capacity: the chain grows
        for i in range(n):
            self.assertEqual(bloom.add("key-%d" % i, i), 1)
        self.assertEqual(bloom.mem_seqnum(), m0 + n)
        for i in range(n):
            self.assertIn("key-%d" % i, bloom)
        fp = sum(bloom.check("absent-%d" % i) for i in range(n))
        self.assertLess(fp, n // 50)
        for i in range(0, n, 5):
            self.assertEqual(bloom.delete("key-%d" % i, i), 1)
        for i in range(n):
            if i % 5:
                self.assertEqual(bloom.check("key-%d" % i), 1, i)
        still = sum(bloom.check("key-%d" % i) for i in range(0, n, 5))
        self.assertLess(still, n // 5 // 20)
        # Refused removes change nothing and say why.
        if bloom.check("never") == 0:
            self.assertEqual(bloom.delete("never", 5), 0)
            self.assertIn("not present", pydablooms.last_error())
        self.assertEqual(bloom.delete("key-1", 2500), 0)
        self.assertEqual(bloom.check("key-1"), 1)
        self.assertEqual(bloom.add("x", 1 << 63), 0)
        self.assertIn("invalid id", pydablooms.last_error())

    def test_flush_and_seqnums(self):
        bloom = pydablooms.Dablooms(capacity=100, error_rate=.05, filepath=self.path("f.bin"))
        for i in range(10):
            bloom.add("k%d" % i, i)
        self.assertEqual(bloom.flush(), 0)
        self.assertEqual(bloom.disk_seqnum(), bloom.mem_seqnum())
        mem = bloom.mem_seqnum()
        bloom.add("one more", 11)
        self.assertEqual(bloom.disk_seqnum(), 0)
        self.assertEqual(bloom.mem_seqnum(), mem + 1)

    def test_reopen(self):
        p = self.path("r.bin")
        with pydablooms.Dablooms(capacity=500, error_rate=.05, filepath=p) as bloom:
            for i in range(1200):
                bloom.add("key-%d" % i, i)
            bloom.delete("key-3", 3)
            bloom.flush()
            mem = bloom.mem_seqnum()
        # Parameters come from the file: the arguments do not matter.
        bloom = pydablooms.load_dabloom(capacity=1, error_rate=.5, filepath=p)
        self.assertIsNone(bloom.conversion)
        self.assertEqual(bloom.mem_seqnum(), mem)
        self.assertEqual(bloom.disk_seqnum(), mem)
        for i in range(1200):
            if i != 3:
                self.assertIn("key-%d" % i, bloom)
        self.assertEqual(bloom.delete("key-4", 4), 1)
        bloom.close()
        self.assertRaises(ValueError, bloom.check, "key-5")
        bloom.close()  # twice is fine

    def test_errors(self):
        with self.assertRaises(pydablooms.DabloomsError) as cm:
            pydablooms.load_dabloom(1000, .05, self.path("missing"))
        # In words, naming the file once; the C function is in last_error().
        self.assertEqual(str(cm.exception), self.path("missing") + " does not exist")
        self.assertEqual(pydablooms.last_error(), "new_scaling_bloom_from_file: " + str(cm.exception))
        self.assertRaises(ValueError, pydablooms.Dablooms, capacity=0, error_rate=.05, filepath=self.path("c0"))
        with self.assertRaises(pydablooms.DabloomsError) as cm:
            pydablooms.Dablooms(capacity=10, error_rate=0, filepath=self.path("e0"))
        self.assertIn("error rate", str(cm.exception))
        self.assertRaises(TypeError, pydablooms.Dablooms, capacity=10, error_rate=.1)
        # A file open elsewhere is not replaced.
        p = self.path("busy.bin")
        bloom = pydablooms.Dablooms(capacity=10, error_rate=.1, filepath=p)
        bloom.add("kept", 1)
        with self.assertRaises(pydablooms.DabloomsError) as cm:
            pydablooms.Dablooms(capacity=10, error_rate=.1, filepath=p)
        self.assertEqual(str(cm.exception), p + " is open in another handle or process; close it first")
        self.assertIn("kept", bloom)


class TestOriginalFiles(Base):
    def test_scaling_file(self):
        p = self.original("scaling_1000_0.05.bin")
        size = os.path.getsize(p)
        self.assertRaises(pydablooms.DabloomsError, pydablooms.load_dabloom, 999, .05, p)
        self.assertIn("size", pydablooms.last_error())
        self.assertEqual(os.path.getsize(p), size)
        bloom = pydablooms.load_dabloom(capacity=1000, error_rate=.05, filepath=p)
        self.assertIn("converted", bloom.conversion)
        self.assertEqual(os.path.getsize(p + ".dablooms-0.9.1"), size)
        self.assertEqual(bloom.mem_seqnum(), 3001)
        self.assertEqual(bloom.disk_seqnum(), 3001)
        for i in range(2500):
            if i % 5:
                self.assertIn("key-%d" % i, bloom)
        self.assertLess(sum(bloom.check("key-%d" % i) for i in range(0, 2500, 5)), 50)
        self.assertEqual(bloom.delete("key-1", 1), 1)
        self.assertEqual(bloom.add("new", 2500), 1)
        bloom.close()
        bloom = pydablooms.load_dabloom(capacity=1000, error_rate=.05, filepath=p)
        self.assertIsNone(bloom.conversion)
        self.assertIn("new", bloom)
        self.assertIn("key-2", bloom)

    def test_dupids_file(self):
        p = self.original("scaling_dupids.bin")
        bloom = pydablooms.load_dabloom(capacity=100, error_rate=.1, filepath=p)
        self.assertIsNotNone(bloom.conversion)
        self.assertEqual(bloom.mem_seqnum(), 501)
        for i in range(500):
            self.assertIn("key-%d" % i, bloom)


def _worker(path, prefix, n, mode):
    """The other process: a script of its own, started with subprocess."""
    code = (
        "import sys, pydablooms\n"
        "path, prefix, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]\n"
        "b = pydablooms.load_dabloom(capacity=1, error_rate=.5, filepath=path)\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "if mode == 'add':\n"
        "    for i in range(n):\n"
        "        assert b.add('%s%d' % (prefix, i), 1000000 + i) == 1, pydablooms.last_error()\n"
        "        assert b.check('%s%d' % (prefix, i)) == 1\n"
        "else:\n"
        "    missing = [i for i in range(n) if ('%s%d' % (prefix, i)) not in b]\n"
        "    assert not missing, missing[:10]\n"
        "b.close()\n"
        "print('ok')\n"
    )
    env = dict(os.environ)
    # the child imports the module this process imported
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(pydablooms.__file__))) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.Popen([sys.executable, "-c", code, path, prefix, str(n), mode],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    line = p.stdout.readline()
    if line != b"ready\n":
        p.kill()
        raise AssertionError("worker did not start: %r %r" % (line, p.stderr.read()))
    return p


def _go(p):
    """Lets a ready worker start; returns its remaining output."""
    p.stdin.write(b"go\n")
    p.stdin.flush()


class TestConcurrency(Base):
    def test_threads_one_object(self):
        bloom = pydablooms.Dablooms(capacity=1000, error_rate=.01, filepath=self.path("t.bin"))
        m0 = bloom.mem_seqnum()
        errors = []
        lock = threading.Lock()
        next_id = [0]

        def work(t):
            try:
                ids = []
                for i in range(1000):
                    with lock:
                        next_id[0] += 1
                        ids.append(next_id[0])
                    k = "t%d-%d" % (t, i)
                    assert bloom.add(k, ids[-1]) == 1, pydablooms.last_error()
                    assert k in bloom
                for i in range(0, 1000, 2):
                    assert bloom.delete("t%d-%d" % (t, i), ids[i]) == 1, pydablooms.last_error()
                assert bloom.delete("t%d-x" % t, 1 << 63) == 0
                assert pydablooms.last_error().startswith("scaling_bloom_remove"), pydablooms.last_error()
                for i in range(1, 1000, 2):
                    assert ("t%d-%d" % (t, i)) in bloom
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        self.assertEqual(bloom.mem_seqnum(), m0 + 4 * 1500)

    def test_two_processes_one_file(self):
        p = self.path("shared.bin")
        bloom = pydablooms.Dablooms(capacity=1000, error_rate=.01, filepath=p)
        m0 = bloom.mem_seqnum()
        n = 20000  # 20 times the capacity: both processes grow the chain
        child = _worker(p, "child-", n, "add")
        _go(child)
        for i in range(n):  # at the same time as the child
            self.assertEqual(bloom.add("parent-%d" % i, i), 1)
        out, err = child.communicate(timeout=120)
        self.assertEqual(child.returncode, 0, err.decode())
        self.assertEqual(out.strip(), b"ok")
        # The child's adds are seen here without reopening, and the parent's there.
        for i in range(n):
            self.assertIn("child-%d" % i, bloom)
        self.assertEqual(bloom.mem_seqnum(), m0 + 2 * n)
        reader = _worker(p, "parent-", n, "check")
        _go(reader)
        out, err = reader.communicate(timeout=120)
        self.assertEqual(reader.returncode, 0, err.decode())
        self.assertEqual(out.strip(), b"ok")
        self.assertEqual(bloom.flush(), 0)
        self.assertEqual(bloom.disk_seqnum(), m0 + 2 * n)


if __name__ == "__main__":
    unittest.main()
