#!/usr/bin/env bash
# knockout.sh: what the exclusive writer's single Add and Remove pay for
# their guarantees, by builds that each give one more of them up
# (docs/PERFORMANCE.md, "What the exclusive path's guarantees cost"). The
# patches in knockout/ numbered 1 to 3 apply in order, each on the one
# before:
#
#   1-no-hold.patch    the straight path takes no hold (exclWriter.wmu):
#                      no goroutine safety
#   2-no-record.patch  ... and claims and finishes no record: no repair
#                      of an operation a kill cut short
#   3-no-undo.patch    ... and changes the counters with the floor's plain
#                      read-modify-writes, no undo block: nothing left of
#                      exact repair
#
# Given patches (paths from bench/), it builds each alone on HEAD instead:
# the alternatives measured there (knockout/alt-*.patch: a hold taken with
# a compare-and-swap and released with a plain store, unsafe for
# waiters; the count and the finish in one call; the record's stores as
# plain Go stores, unsafe).
#
# Each build is committed in a temporary worktree of HEAD (the commits
# belong to no branch) and run by turns with HEAD by interleave.sh:
#
#   bash bench/knockout.sh [-r ROUNDS] [PATCH...] -- [bench flags]
#   bash bench/knockout.sh -r 11 -- -n 1000000 -parallel 1 \
#       -systems ours-original-excl,ours-original-floor
#   bash bench/knockout.sh -r 11 knockout/alt-count-finish.patch -- -n 1000000 ...
#
# The builds are measurements, not libraries: they are unsafe by design.
# The patches were made at bc30609 (the library code of 30c864a); where
# HEAD has moved under them, git apply says which hunk no longer fits.
set -euo pipefail
args=()
if [[ ${1:-} == -r ]]; then args=(-r "$2"); shift 2; fi
patches=()
while [[ $# -gt 0 && $1 != -- ]]; do patches+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
cd "$(dirname "$0")"
chain=true
if [[ ${#patches[@]} -eq 0 ]]; then
  patches=(knockout/1-no-hold.patch knockout/2-no-record.patch knockout/3-no-undo.patch)
else
  chain=false
fi
top=$(git rev-parse --show-toplevel)
head=$(git -C "$top" rev-parse --short HEAD)
tmp=$(mktemp -d)
trap 'git -C "$top" worktree remove --force "$tmp/wt" 2>/dev/null || true; rm -rf "$tmp"' EXIT
git -C "$top" worktree add -q --detach "$tmp/wt" HEAD
revs=("$head")
for p in "${patches[@]}"; do
  $chain || git -C "$tmp/wt" checkout -q --detach "$head"
  git -C "$tmp/wt" apply "$PWD/$p"
  git -C "$tmp/wt" -c user.name=knockout -c user.email=knockout@localhost \
    commit -q -a -m "knockout: $(basename "$p" .patch)"
  revs+=("$(git -C "$tmp/wt" rev-parse --short HEAD)")
  echo "$(basename "$p" .patch): ${revs[-1]}"
done
bash interleave.sh "${args[@]}" "${revs[@]}" -- "$@"
