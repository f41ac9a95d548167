#!/usr/bin/env bash
# interleave.sh: the comparison tool of several commits, run by turns, so
# that a machine's drift lands on every build alike; it prints each
# system's median thread-CPU ns per operation by build, and where the run
# includes ours-original-floor, each run's ratio to it (median and range).
#
#   bash bench/interleave.sh [-r ROUNDS] REV... -- [bench flags]
#
#   bash bench/interleave.sh -r 7 d6388ad HEAD -- -n 1000000 -parallel 1 \
#       -systems ours-original,ours-original-excl,ours-original-floor,c-original
#
# Each round runs every build once with -reps 1 (a build's medians are over
# the rounds). Builds come from temporary worktrees of the repository this
# script is in; the C original's source is found from bench/ as the tool
# finds it. Needs git, go and python3.
set -euo pipefail
rounds=7
if [[ ${1:-} == -r ]]; then rounds=$2; shift 2; fi
revs=()
while [[ $# -gt 0 && $1 != -- ]]; do revs+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
[[ ${#revs[@]} -gt 0 ]] || { echo "usage: interleave.sh [-r ROUNDS] REV... -- [bench flags]" >&2; exit 2; }
cd "$(dirname "$0")"
top=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'for w in "$tmp"/wt-*; do [[ -d $w ]] && git -C "$top" worktree remove --force "$w"; done; rm -rf "$tmp"' EXIT
for r in "${revs[@]}"; do
  h=$(git -C "$top" rev-parse --short "$r")
  git -C "$top" worktree add -q --detach "$tmp/wt-$h" "$h"
  (cd "$tmp/wt-$h/bench" && go build -mod=mod -o "$tmp/bench-$h" .)
  echo "$h" >>"$tmp/builds"
done
for i in $(seq "$rounds"); do
  while read -r h; do
    "$tmp/bench-$h" -reps 1 -json "$@" >"$tmp/out.$h.$i.json" 2>"$tmp/err.$h.$i" ||
      { tail -5 "$tmp/err.$h.$i" >&2; exit 1; }
  done <"$tmp/builds"
done
python3 - "$tmp" <<'EOF'
import collections, glob, json, os, statistics, sys
tmp = sys.argv[1]
ops = ('add', 'remove', 'contains_present', 'contains_absent')
ns = collections.defaultdict(list)    # (system, op, build) -> ns per run
ratio = collections.defaultdict(list)  # (system, op, build) -> ratio to the floor per run
for f in sorted(glob.glob(os.path.join(tmp, 'out.*.json'))):
    build = os.path.basename(f).split('.')[1]
    rows = {r['system']: r for r in json.load(open(f))['rows'] if r['goroutines'] == 1}
    floor = rows.get('ours-original-floor')
    for s, r in rows.items():
        for op in ops:
            v = r[op + '_cpu_ns_per_op']
            ns[(s, op, build)].append(v)
            if floor and s != 'ours-original-floor' and op in ('add', 'remove'):
                ratio[(s, op, build)].append(v / floor[op + '_cpu_ns_per_op'])
print('thread CPU ns per operation, medians of %d rounds' % max(len(v) for v in ns.values()))
for k in sorted(ns):
    print('%-24s %-17s %-10s %8.1f' % (k[0], k[1], k[2], statistics.median(ns[k])))
if ratio:
    print('\neach round\'s ratio to ours-original-floor: median (range)')
    for k in sorted(ratio):
        v = ratio[k]
        print('%-24s %-7s %-10s %.2f (%.2f-%.2f)' % (k[0], k[1], k[2], statistics.median(v), min(v), max(v)))
EOF
