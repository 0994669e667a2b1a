# Shared helpers of the FUSE end-to-end drivers (tests/e2e/*_test.sh), to be
# sourced. They need root: they mount tmpfs, create the test user, make
# /dev/fuse 0666 and run `poolfs mount` as root or as that user.
#
#   e2e_init POOLFS [E2E_PARITY]  work folder $W, cleanup on exit, root check
#   e2e_user                      creates the test user ($E2E_USER) once
#   e2e_init_mode POOLFS MODE     e2e_init, and for MODE "user" the test
#                                 user: $U runs the pool's commands ("" for
#                                 root); makes $W/pool and $W/state, $U's
#   user_dirs DIR...              mkdir -p, then $U's
#   mount_dirs DIR...             user_dirs, each unmounted on exit
#   pf ARGS... / u CMD...         poolfs ARGS / CMD as $U, bounded (60 s)
#   is_mounted MNT                a poolfs FUSE mount is on MNT
#   expect EXIT TEXT CMD...       CMD exits EXIT, saying TEXT; sets LAST_OUT
#   pool_create FILE SIZE [USER]  poolfs create, as USER when given
#   pool_mount FILE MNT [USER] [-o OPTS]
#                                 poolfs mount -f in the background; sets
#                                 $DAEMON_PID; returns when the mount is up
#   pool_unmount MNT              poolfs unmount, then waits for the daemon
#   pool_check FILE               poolfs check must say the pool is clean
#   fail MESSAGE                  records a failure (the script goes on)
#   must CMD...                   runs CMD, recording a failure if it fails
#   finish                        prints the verdict and exits 0 or 1
#
# Every mount made here is listed in $W/mounts and undone on exit, so a
# failed test leaves no mount behind.

E2E_USER=poolfs-e2e
E2E_GROUP2=poolfs-e2e-g2
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

ok() { echo "ok: $*"; }

# must CMD...: runs CMD; a failure is recorded with the command line.
must() {
  "$@" || fail "command failed ($?): $*"
}

finish() {
  if [[ $failures -gt 0 ]]; then
    echo "$(basename "$0"): $failures failure(s)" >&2
    exit 1
  fi
  echo "$(basename "$0"): all checks passed"
  exit 0
}

# is_child PID: PID is a live child of this shell.
is_child() {
  [[ "$(awk '/^PPid:/ {print $2}' "/proc/$1/status" 2>/dev/null)" == "$$" ]]
}

e2e_cleanup() {
  set +e
  if [[ -f "$W/mounts" ]]; then
    tac "$W/mounts" | while read -r m; do
      if mountpoint -q "$m" 2>/dev/null || grep -q " $m " /proc/mounts; then
        fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
      fi
    done
  fi
  # Daemons still running: only pids that are still this shell's children
  # (a pid already waited for may belong to someone else by now).
  if [[ -f "$W/pids" ]]; then
    local p
    while read -r p; do
      is_child "$p" && kill "$p" 2>/dev/null
    done <"$W/pids"
    sleep 0.5
    while read -r p; do
      is_child "$p" && kill -9 "$p" 2>/dev/null
    done <"$W/pids"
  fi
  rm -rf "$W"
}

# e2e_init POOLFS [E2E_PARITY]: checks root, makes $W.
e2e_init() {
  POOLFS=$(realpath "${1:?usage: $0 path/to/poolfs [path/to/e2e_parity]}")
  E2E_PARITY=${2:+$(realpath "$2")}
  if [[ $(id -u) -ne 0 ]]; then
    echo "$(basename "$0"): needs root (mounts, useradd, /dev/fuse); skipped" >&2
    exit 77
  fi
  if [[ ! -c /dev/fuse ]]; then
    echo "$(basename "$0"): no /dev/fuse; skipped" >&2
    exit 77
  fi
  if ! "$POOLFS" mount --help >/dev/null 2>&1; then
    echo "$(basename "$0"): $POOLFS has no mount subcommand yet; skipped" >&2
    exit 77
  fi
  # Under /var/tmp, not /tmp: the test user must reach it, and it is a disk.
  W=$(mktemp -d /var/tmp/poolfs-e2e.XXXXXX)
  chmod 755 "$W"
  trap e2e_cleanup EXIT
  # A signal (ctest's timeout, ^C) ends the script through exit, so that the
  # EXIT trap still undoes the mounts.
  trap 'exit 143' TERM
  trap 'exit 130' INT
  : >"$W/mounts"
  : >"$W/pids"
}

# e2e_user: the unprivileged test user, with a supplementary group, and a
# /dev/fuse that users may open. Safe when several drivers run at once.
e2e_user() {
  (
    flock 9
    getent group "$E2E_GROUP2" >/dev/null || groupadd "$E2E_GROUP2"
    id "$E2E_USER" >/dev/null 2>&1 ||
      useradd -M -N -g users -G "$E2E_GROUP2" -d /nonexistent -s /usr/sbin/nologin "$E2E_USER"
  ) 9>/var/lock/poolfs-e2e-user.lock
  chmod 666 /dev/fuse
}

# e2e_init_mode POOLFS MODE: e2e_init POOLFS; for MODE "user" (else
# "root", the default) the test user. Sets MODE, and U to the user the
# pool's commands run as (empty for root). Makes $W/pool (for pool files)
# and $W/state (pf's XDG_STATE_HOME), both $U's.
e2e_init_mode() {
  e2e_init "$1"
  MODE=${2:-root}
  U=""
  if [[ $MODE == user ]]; then
    e2e_user
    U=$E2E_USER
  fi
  user_dirs "$W/pool" "$W/state"
}

# user_dirs DIR...: makes each DIR, owned by $U when set.
user_dirs() {
  local d
  for d in "$@"; do
    mkdir -p "$d"
    if [[ -n "$U" ]]; then chown "$U" "$d"; fi
  done
}

# mount_dirs DIR...: user_dirs, and each is unmounted on exit.
mount_dirs() {
  local d
  user_dirs "$@"
  for d in "$@"; do echo "$d" >>"$W/mounts"; done
}

# pf ARGS...: poolfs ARGS as $U; u CMD...: CMD as $U. Each has a bound: a
# hang fails the test, not the run. A background daemon logs under
# XDG_STATE_HOME (the user's HOME is none).
pf() { as "$U" env XDG_STATE_HOME="$W/state" timeout 60 "$POOLFS" "$@"; }
u() { as "$U" timeout 60 "$@"; }

is_mounted() { grep -q " $1 fuse.poolfs " /proc/mounts; }

# expect EXIT TEXT CMD...: CMD exits EXIT and its output holds TEXT; the
# output is then in LAST_OUT.
expect() {
  local want=$1 text=$2
  shift 2
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$* exited $rc, expected $want; output: $out"
  elif [[ -n "$text" && "$out" != *"$text"* ]]; then
    fail "$* did not say '$text'; output: $out"
  else
    ok "$* -> $rc"
  fi
  LAST_OUT=$out
}

# as_prefix USER: sets AS to the command prefix that runs a program as USER
# with its groups (setpriv and env exec, so "${AS[@]}" CMD & gives CMD's own
# pid in $!); empty for root.
as_prefix() {
  AS=()
  if [[ -n "$1" ]]; then
    # HOME and XDG_* are root's: give the user's programs none.
    AS=(setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups --
      env -u XDG_RUNTIME_DIR -u XDG_CONFIG_HOME -u XDG_STATE_HOME HOME=/nonexistent)
  fi
}

# as USER CMD...: runs CMD as USER (as root when USER is empty).
as() {
  local AS
  as_prefix "$1"
  shift
  "${AS[@]}" "$@"
}

# mount_tmpfs DIR: a fresh tmpfs (the parity reference), undone on exit.
mount_tmpfs() {
  mkdir -p "$1"
  mount -t tmpfs -o size=512m,mode=0755 tmpfs "$1" || return 1
  echo "$1" >>"$W/mounts"
}

# pool_create FILE SIZE [USER]: poolfs create (as USER, who gets FILE's
# folder).
pool_create() {
  local file=$1 size=$2 user=${3:-}
  [[ -n "$user" ]] && chown "$user" "$(dirname "$file")"
  as "$user" "$POOLFS" create "$file" --size "$size" >"$W/create.log" 2>&1 || {
    cat "$W/create.log" >&2
    return 1
  }
}

# pool_mount FILE MNT [USER] [-o OPTIONS]
pool_mount() {
  local file=$1 mnt=$2 user=${3:-}
  shift 3 2>/dev/null || shift $#
  mkdir -p "$mnt"
  [[ -n "$user" ]] && chown "$user" "$mnt"
  echo "$mnt" >>"$W/mounts"
  local log="$W/daemon.$(basename "$mnt").log"
  # Not through the `as` function: "func &" forks a subshell, and $! would
  # be the subshell's pid, not the daemon's.
  local AS
  as_prefix "$user"
  "${AS[@]}" "$POOLFS" mount -f "$file" "$mnt" "$@" >>"$log" 2>&1 &
  DAEMON_PID=$!
  echo "$DAEMON_PID" >>"$W/pids"
  local i
  for i in $(seq 1 200); do
    if grep -q " $mnt fuse" /proc/mounts; then return 0; fi
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
      echo "poolfs mount of $file on $mnt exited; its log:" >&2
      cat "$log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "poolfs mount of $file on $mnt: no mount after 20 s; its log:" >&2
  cat "$log" >&2
  return 1
}

# pool_unmount MNT [USER]: poolfs unmount (final sync and export), then the
# daemon started by the last pool_mount must exit 0.
pool_unmount() {
  local mnt=$1 user=${2:-}
  if ! as "$user" "$POOLFS" unmount "$mnt" >"$W/unmount.log" 2>&1; then
    cat "$W/unmount.log" >&2
    return 1
  fi
  local rc=0
  wait "$DAEMON_PID" || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "the daemon of $mnt exited $rc; its log:" >&2
    cat "$W/daemon.$(basename "$mnt").log" >&2
    return 1
  fi
  if grep -q " $mnt fuse" /proc/mounts; then
    echo "$mnt is still mounted after poolfs unmount" >&2
    return 1
  fi
}

# pool_check FILE: `poolfs check` exits 0.
pool_check() {
  local out rc=0
  out=$("$POOLFS" check "$1" 2>&1) || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "poolfs check $1 exited $rc:" >&2
    echo "$out" >&2
    return 1
  fi
}
