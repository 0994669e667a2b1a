#!/usr/bin/env bash
# The object allocation policy (dmu.metadnode_backfill) switches on a
# mounted pool, without a remount, through `poolfs tune` and through a
# config file edit + SIGHUP, and the next creates follow the new policy, as
# `poolfs status` and the new files' inode numbers (object ids) show: after
# `on`, new files take free ids below the high-water mark, removed files'
# among them (the reused count grows by every create, the high-water mark
# stays, the density rises); after `off`, ids only grow (reused unchanged,
# the high-water mark rises, no new file has a removed file's inode
# number).
#
# The pool is mounted with `off` from its config file; 3000 files are
# created, 2500 of them removed and the removals synced (so that their ids
# are free); then, K = 300 files at a time (createmany -o -t 4):
#   off   (the config at mount)          ids grow: the baseline, no reuse
#   on    (poolfs tune)                  ids reused
#   off   (config file edit + SIGHUP)    ids grow again
#   on    (config file edit + SIGHUP)    ids reused
#   off   (poolfs tune)                  ids grow
# A switch that did nothing leaves the previous policy in place, and the
# step's check fails. Then the pool unmounts and `poolfs check` is clean.
# All of it as root, then again as an unprivileged user (the daemon runs as
# that user; the test sends it SIGHUP as root).
#
# Usage: tests/e2e/backfill_live_test.sh path/to/poolfs path/to/createmany
# Exit 77 (skipped) when not root.
set -uo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
source "$HERE/lib.sh"
e2e_init "$1"
CREATEMANY=$(realpath "${2:?usage: $0 path/to/poolfs path/to/createmany}")
e2e_user

FILES=3000
REMOVE=2500
K=300

# stats USER MNT: reads `poolfs status MNT` (as USER) into MODE, ALLOCATED,
# REUSED, HIGH and DENSITY; false when status fails or a field is missing.
stats() {
  local out
  out=$(as "$1" "$POOLFS" status "$2" 2>&1) || {
    echo "poolfs status $2 failed: $out" >&2
    return 1
  }
  MODE=$(sed -nE 's/^object allocation: *backfill ([a-z]+);.*/\1/p' <<<"$out")
  ALLOCATED=$(sed -nE 's/^object allocation:.*; ([0-9]+) allocated,.*/\1/p' <<<"$out")
  REUSED=$(sed -nE 's/^object allocation:.* ([0-9]+) reused,.*/\1/p' <<<"$out")
  HIGH=$(sed -nE 's/^object ids: *high-water ([0-9]+),.*/\1/p' <<<"$out")
  DENSITY=$(sed -nE 's/^object ids:.*density ([0-9.]+),.*/\1/p' <<<"$out")
  if [[ -z "$MODE" || -z "$ALLOCATED" || -z "$REUSED" || -z "$HIGH" || -z "$DENSITY" ]]; then
    echo "poolfs status $2 lacks the object allocation lines:" >&2
    echo "$out" >&2
    return 1
  fi
}

# synced USER MNT: everything done in MNT so far is in a synced txg (a new
# file's txg is no older than any earlier change; its fsync waits for it),
# so that freed ids are reusable.
synced() {
  as "$1" dd if=/dev/null of="$2/sync-marker.$RANDOM$RANDOM" conv=fsync status=none
}

# create USER DIR N: N files with createmany, 4 threads.
create() {
  as "$1" "$CREATEMANY" -o -i 0 -t 4 -D "$2" "$3" >"$W/createmany.log" 2>&1 || {
    cat "$W/createmany.log" >&2
    return 1
  }
}

# wait_mode USER MNT MODE: status shows MODE within 10 s.
wait_mode() {
  for _ in $(seq 100); do
    stats "$1" "$2" && [[ "$MODE" == "$3" ]] && return 0
    sleep 0.1
  done
  return 1
}

gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# step USER MNT N MODE HOW: switches to MODE by HOW (mount: already set;
# tune: poolfs tune; sighup: config file + SIGHUP), creates K files in
# MNT/stepN and checks the policy took effect.
step() {
  local user=$1 mnt=$2 n=$3 want=$4 how=$5 who=${1:-root}
  case $how in
    tune) as "$user" "$POOLFS" tune "$mnt" "dmu.metadnode_backfill=$want" >"$W/tune.log" 2>&1 ||
      fail "$who: poolfs tune $mnt dmu.metadnode_backfill=$want: $(cat "$W/tune.log")" ;;
    sighup)
      printf '[dmu]\nmetadnode_backfill = "%s"\n' "$want" >"$W/$who.toml"
      kill -HUP "$DAEMON_PID" || fail "$who: SIGHUP to the daemon ($DAEMON_PID) failed" ;;
  esac
  if ! wait_mode "$user" "$mnt" "$want"; then
    fail "$who step $n: poolfs status shows backfill '${MODE:-?}' 10 s after switching to $want by $how"
    return
  fi
  local reused0=$REUSED high0=$HIGH density0=$DENSITY alloc0=$ALLOCATED
  create "$user" "$mnt/step$n" "$K" || {
    fail "$who step $n: createmany of $K files failed"
    return
  }
  stats "$user" "$mnt" || {
    fail "$who step $n: poolfs status failed"
    return
  }
  # The new files' inode numbers (object ids): how many are a removed
  # file's, how many are at or above the high-water mark before the step.
  local old_ids above
  as "$user" find "$mnt/step$n" -type f -printf '%i\n' | sort >"$W/$who.new-ids"
  old_ids=$(comm -12 "$W/$who.new-ids" "$W/$who.freed-ids" | wc -l)
  above=$(awk -v h="$high0" '$1 >= h' "$W/$who.new-ids" | wc -l)
  local made=$((ALLOCATED - alloc0)) dr=$((REUSED - reused0)) dh=$((HIGH - high0))
  local what="$who step $n ($want by $how): $made objects allocated, reused +$dr, high-water $high0 -> $HIGH, density $density0 -> $DENSITY; of $K new files, $old_ids have a removed file's inode number, $above one at or above the old high-water mark"
  if ((made < K)); then
    fail "$what: expected at least $K allocations"
  elif [[ $want == on ]]; then
    # Free ids below the high-water mark are the removed files' and the
    # unused rest of the chunks threads held when the mode changed; lowest
    # first mixes both.
    if ((dr >= made && dh <= 0 && above == 0 && old_ids > 0)) && gt "$DENSITY" "$density0"; then
      ok "$what"
    else
      fail "$what: with backfill on every new object should take a free id below the high-water mark (reused +$made, high-water not rising, density rising, removed files' inode numbers among them)"
    fi
  else
    # Not "high-water + made": ids a thread's chunk held back below the
    # high-water mark (never used, not freed) may be used first.
    if ((dr == 0 && dh > 0 && old_ids == 0)); then
      ok "$what"
    else
      fail "$what: with backfill off ids should only grow (reused unchanged, high-water rising, no removed file's inode number)"
    fi
  fi
}

# scenario USER: the whole sequence on a fresh pool, as USER ("" = root).
scenario() {
  local user=$1 who=${1:-root}
  local d=$W/$who
  mkdir -p "$d"
  [[ -n "$user" ]] && chown "$user" "$d"
  local pool=$d/pool mnt=$d/mnt
  printf '[dmu]\nmetadnode_backfill = "off"\n' >"$W/$who.toml"
  chmod 644 "$W/$who.toml"
  pool_create "$pool" 512M "$user" || {
    fail "$who: poolfs create"
    return
  }
  pool_mount "$pool" "$mnt" "$user" --config "$W/$who.toml" || {
    fail "$who: poolfs mount"
    return
  }
  create "$user" "$mnt/first" "$FILES" || fail "$who: createmany of $FILES files failed"
  # As USER: root may not enter another user's FUSE mount (no allow_other).
  as "$user" find "$mnt/first" -type f -printf '%i\t%p\n' | shuf -n "$REMOVE" >"$W/$who.removed"
  cut -f2 "$W/$who.removed" | as "$user" xargs -d '\n' rm -f ||
    fail "$who: removing $REMOVE files failed"
  cut -f1 "$W/$who.removed" | sort >"$W/$who.freed-ids"
  [[ $(wc -l <"$W/$who.freed-ids") -eq $REMOVE ]] || fail "$who: $REMOVE files should have been removed"
  synced "$user" "$mnt" || fail "$who: fsync of a marker file failed"
  stats "$user" "$mnt" || fail "$who: poolfs status failed"
  ok "$who: mounted with backfill $MODE; $FILES files created, $REMOVE removed: high-water $HIGH, density $DENSITY"
  step "$user" "$mnt" 1 off mount
  step "$user" "$mnt" 2 on tune
  step "$user" "$mnt" 3 off sighup
  step "$user" "$mnt" 4 on sighup
  step "$user" "$mnt" 5 off tune
  pool_unmount "$mnt" "$user" || fail "$who: poolfs unmount"
  pool_check "$pool" || fail "$who: poolfs check after the switches"
}

scenario ""
scenario "$E2E_USER"
finish
