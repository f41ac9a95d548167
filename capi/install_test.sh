#!/usr/bin/env bash
# The C library and pydablooms installed the way their users install them,
# then used as installed (run by .ci/run; by hand: capi/install_test.sh):
#   - make install PREFIX DESTDIR into a temporary directory; the example
#     built with pkg-config (shared and static); make uninstall removes all;
#   - the original's tests/test_dablooms.c, unmodified, compiled against the
#     original's dablooms.h and linked against the installed library;
#   - pip install ./capi/python into a fresh venv; the unittests and the
#     original's tests/test_pydablooms.py, unmodified, against it; pip wheel
#     puts the library inside the wheel.
# The Go tests (go test ./capi) cover the same ground on the freshly built
# library; this covers the installation.
set -euo pipefail
cd "$(dirname "$0")/.."
REF=$(cd "${DABLOOMS_REFERENCE:-../shared/reference/dablooms-0.9.1-src}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Debian's python3 (not pyenv's, first on PATH on CI) has setuptools and
# wheel as packages; the package index is not reachable.
need=()
for p in python3-venv python3-setuptools python3-wheel pkg-config; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [[ ${#need[@]} -gt 0 ]]; then
  echo "installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# A words file as the original's tests read it: 150,000 distinct words make
# the scaling filter grow.
seq -f 'word-%06g' 0 149999 > "$tmp/words"

echo "-- make install into a temporary prefix"
prefix=/opt/dablooms dest="$tmp/dest"
make -s -C capi install PREFIX="$prefix" DESTDIR="$dest"
lib="$dest$prefix/lib"
for f in libdablooms.so libdablooms.so.0 libdablooms.so.0.9.1 libdablooms.a pkgconfig/dablooms.pc; do
  [[ -e $lib/$f ]] || { echo "not installed: $lib/$f"; exit 1; }
done
[[ -e $dest$prefix/include/dablooms.h && ! -e $dest$prefix/include/libdablooms.h ]] || { echo "headers installed wrong"; exit 1; }
readelf -d "$lib/libdablooms.so.0.9.1" | grep -q 'SONAME.*\[libdablooms.so.0\]' || { echo "no SONAME libdablooms.so.0"; exit 1; }
[[ ! -e capi/build/libdablooms.h ]] || { echo "cgo's libdablooms.h left in capi/build"; exit 1; }
export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
# shellcheck disable=SC2046
cc -o "$tmp/example" capi/example/example.c $(pkg-config --cflags --libs dablooms)
LD_LIBRARY_PATH="$lib" "$tmp/example" "$tmp/example.dbl" | grep -q 'http://spam.example/a: maybe spam'
# shellcheck disable=SC2046
cc -o "$tmp/example-static" capi/example/example.c $(pkg-config --cflags dablooms) "$lib/libdablooms.a" $(pkg-config --static --libs-only-l dablooms | sed 's/-ldablooms//')
"$tmp/example-static" "$tmp/example-static.dbl" | grep -q 'http://spam.example/a: maybe spam'
echo "example built with pkg-config (shared and static): ok"

echo "-- the original's test_dablooms.c, unmodified, against its own dablooms.h and the installed library"
mkdir "$tmp/orig-include"
cp "$REF/dablooms.h" "$tmp/orig-include/"
# shellcheck disable=SC2046
cc -O2 -I"$tmp/orig-include" -o "$tmp/test_dablooms" "$REF/tests/test_dablooms.c" $(pkg-config --libs dablooms)
LD_LIBRARY_PATH="$lib" "$tmp/test_dablooms" "$tmp/bloom.bin" "$tmp/words" > "$tmp/test_dablooms.out"
grep -q '^\*\* 0 failures, 0 warnings$' "$tmp/test_dablooms.out" || { cat "$tmp/test_dablooms.out"; exit 1; }
echo "test_dablooms: $(grep -c 'TEST PASS' "$tmp/test_dablooms.out") of 4 passed"

make -s -C capi uninstall PREFIX="$prefix" DESTDIR="$dest"
left=$(find "$dest" -type f -o -type l)
[[ -z $left ]] || { echo "make uninstall left: $left"; exit 1; }
echo "make uninstall: nothing left"

echo "-- pip install ./capi/python into a fresh venv"
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
py="$tmp/venv/bin/python"
"$py" -m pip install -q --no-build-isolation --no-index ./capi/python
# Imported as installed: from the venv, with the library inside the package.
(cd "$tmp" && env -u PYTHONPATH -u DABLOOMS_LIB "$py" -c '
import os, sys, pydablooms
d = os.path.dirname(pydablooms.__file__)
assert d.startswith(sys.prefix), d
assert os.path.exists(os.path.join(d, "libdablooms.so")), d
print("pydablooms", pydablooms.__version__, "from", d)')
# capi/python holds no pydablooms of its own (src/ layout): the tests import the installed one.
(cd capi/python && env -u PYTHONPATH -u DABLOOMS_LIB "$py" -m unittest test_pydablooms 2>&1) | tail -3 | tee "$tmp/unittest.out"
grep -q '^OK$' "$tmp/unittest.out"
(cd "$tmp" && env -u PYTHONPATH -u DABLOOMS_LIB "$py" "$REF/tests/test_pydablooms.py" "$tmp/py.bin" "$tmp/words" > "$tmp/test_pydablooms.out") \
  || { cat "$tmp/test_pydablooms.out"; exit 1; }
grep -q '^TEST PASS$' "$tmp/test_pydablooms.out" || { cat "$tmp/test_pydablooms.out"; exit 1; }
echo "the original's test_pydablooms.py: TEST PASS"

echo "-- pip wheel ./capi/python"
"$py" -m pip wheel -q --no-build-isolation --no-index --no-deps -w "$tmp/wheel" ./capi/python
"$py" - "$tmp/wheel" <<'PY'
import os, sys, zipfile
(w,) = os.listdir(sys.argv[1])
names = zipfile.ZipFile(os.path.join(sys.argv[1], w)).namelist()
assert "pydablooms/libdablooms.so" in names and "pydablooms/__init__.py" in names, names
assert "-py3-none-linux_" in w, w
print("wheel", w, "holds pydablooms/libdablooms.so")
PY
