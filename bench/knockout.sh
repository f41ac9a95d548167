#!/usr/bin/env bash
# knockout.sh: what the exclusive writer's single Add and Remove pay for
# their guarantees, by builds that each give one more of them up
# (docs/PERFORMANCE.md, "What the exclusive path's guarantees cost"). The
# patches in knockout/ apply in order, each on the one before:
#
#   1-no-hold.patch    the straight path takes no hold (exclWriter.wmu):
#                      no goroutine safety
#   2-no-record.patch  ... and claims and finishes no record: no repair
#                      of an operation a kill cut short
#   3-no-undo.patch    ... and changes the counters with the floor's plain
#                      read-modify-writes, no undo block: nothing left of
#                      exact repair
#
# Each build is committed in a temporary worktree of HEAD (the commits
# belong to no branch) and run by turns with HEAD by interleave.sh:
#
#   bash bench/knockout.sh [-r ROUNDS] -- [bench flags]
#   bash bench/knockout.sh -r 11 -- -n 1000000 -parallel 1 \
#       -systems ours-original-excl,ours-original-floor
#
# The builds are measurements, not libraries: they are unsafe by design.
# The patches were made at bc30609; where HEAD has moved under them, git
# apply says which hunk no longer fits.
set -euo pipefail
args=()
if [[ ${1:-} == -r ]]; then args=(-r "$2"); shift 2; fi
[[ ${1:-} == -- ]] && shift
cd "$(dirname "$0")"
top=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$top" worktree remove --force "$tmp/wt" 2>/dev/null || true; rm -rf "$tmp"' EXIT
git -C "$top" worktree add -q --detach "$tmp/wt" HEAD
revs=("$(git -C "$top" rev-parse --short HEAD)")
for p in knockout/1-no-hold.patch knockout/2-no-record.patch knockout/3-no-undo.patch; do
  git -C "$tmp/wt" apply "$PWD/$p"
  git -C "$tmp/wt" -c user.name=knockout -c user.email=knockout@localhost \
    commit -q -a -m "knockout: $(basename "$p" .patch)"
  revs+=("$(git -C "$tmp/wt" rev-parse --short HEAD)")
  echo "$(basename "$p" .patch): ${revs[-1]}"
done
bash interleave.sh "${args[@]}" "${revs[@]}" -- "$@"
