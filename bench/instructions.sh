#!/usr/bin/env bash
# instructions.sh: instructions per single Add and Remove, shared and
# exclusive handle, and the C original's, counted with valgrind's callgrind
# (a count, unlike a time, does not move with the machine's load).
#
#   bash bench/instructions.sh          # from the repository's top or bench/
#
# Ours: scaling's BenchmarkCachedAddRemove (an Add and a Remove of one
# key on a cached filter) at two lengths; the difference of the inclusive
# counts of its instrAdd and instrRemove, divided by the difference of
# the lengths, is the cost of one operation with the setup and the
# benchmark framework subtracted (the median of three runs of each
# length). The original: scaling_bloom_add and scaling_bloom_remove,
# inclusive, over 200,000 calls each in the harness the comparison tool
# builds (bench/coriginal/harness.c), with its source from
# ../shared/reference/dablooms-0.9.1-src. Needs valgrind and a C compiler.
# Budget (issue 40): at most 700 an exclusive and 1,000 a shared operation.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
src=${DABLOOMS_C_SRC:-$top/../shared/reference/dablooms-0.9.1-src}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v valgrind >/dev/null || { echo "instructions.sh needs valgrind (apt-get install valgrind)" >&2; exit 2; }

go test -c -o "$tmp/s.test" ./scaling
short=20000 long=120000 runs=3
for mode in shared excl; do
  for n in $short $long; do
    for r in $(seq $runs); do
      # asyncpreemptoff: callgrind asserts on the signals of Go's
      # asynchronous preemption.
      (cd "$tmp" && GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="cg.$mode.$n.$r" ./s.test \
        -test.run '^$' -test.bench "^BenchmarkCachedAddRemove\$/^$mode\$" -test.benchtime ${n}x -test.cpu 1 >"cg.$mode.$n.$r.log" 2>&1) ||
        { tail -20 "$tmp/cg.$mode.$n.$r.log" >&2; exit 1; }
    done
  done
done
# incl FILE FUNC: FUNC's inclusive instruction count in callgrind's file.
incl() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk -v f="$2" '!done && index($0, f) { gsub(",", "", $1); print $1; done = 1 }'
}
# median MODE N FUNC: the median over the runs of FUNC's inclusive count
# (a run now and then counts some thousand instructions more or less in
# one call of the thousands: the median leaves it out).
median() {
  for r in $(seq $runs); do incl "$tmp/cg.$1.$2.$r" "$3"; done | sort -n | sed -n "$(( (runs + 1) / 2 ))p"
}
per() { # mode func
  local a b
  a=$(median "$1" $short "$2")
  b=$(median "$1" $long "$2")
  echo $(( (b - a) / (long - short) ))
}
printf '%-22s %8s %8s\n' "instructions per op" add remove
for mode in excl shared; do
  printf '%-22s %8s %8s\n' "ours, $mode" "$(per $mode scaling.instrAdd)" "$(per $mode scaling.instrRemove)"
done

if [[ -d $src ]] && command -v cc >/dev/null; then
  cc -O2 -I"$src" -o "$tmp/charness" bench/coriginal/harness.c "$src/dablooms.c" "$src/murmur.c" -lm
  python3 -c "import struct,sys; open(sys.argv[1],'wb').write(struct.pack('<2I', 0, 0))" "$tmp/order.bin"
  (cd "$tmp" && echo "$tmp/c.dbl" | valgrind --tool=callgrind --callgrind-out-file=cgc.out \
    ./charness 200000 1 1 200000 order.bin >/dev/null 2>&1)
  ca=$(incl "$tmp/cgc.out" "scaling_bloom_add ")
  cr=$(incl "$tmp/cgc.out" "scaling_bloom_remove ")
  printf '%-22s %8s %8s\n' "C dablooms 0.9.1" $((ca / 200000)) $((cr / 200000))
else
  echo "(the C original's source is not at $src: its row is left out)"
fi
