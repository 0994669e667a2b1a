#!/usr/bin/env bash
# Checks that #include "..." lines follow the layering of ARCHITECTURE.md:
# a layer includes only itself and the layers below it.
#
#   core/<layer>/        its own layer, lower core layers, and poolfs/ (public API)
#   core/include/poolfs/ other poolfs/ headers only
#   fuse/                poolfs/ and fuse/ only
#   daemon/              poolfs/, daemon/, config/, and fuse/ (the daemon mounts)
#   config/              poolfs/ and config/ only
#   tests/, bench/       anything
#
# An include without a folder ("btree.h") is a sibling in the same folder and
# always allowed. An <...> include is checked the same way when its first
# folder is one of the project's (<dmu/objset.h>, <poolfs/fs.h>); the others
# are system headers (<sys/stat.h>, <spdlog/spdlog.h>) and not checked.
#
# Usage: scripts/check-layers.sh
# Prints each violation as `file:line: <layer> must not include <header>` and
# exits 1 if there is any; prints one summary line and exits 0 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Core layers, bottom up (the order of the table in ARCHITECTURE.md).
LAYERS=(util vdev space zio arc dmu txg pool zap zil send posix)

# Prints the rank of core layer $1, or nothing if it is not a core layer.
layer_rank() {
  local i
  for i in "${!LAYERS[@]}"; do
    if [[ "${LAYERS[$i]}" == "$1" ]]; then
      echo "$i"
      return
    fi
  done
}

# Returns 0 when $1 is a top folder of the project's headers.
project_folder() {
  [[ "$1" == poolfs || "$1" == fuse || "$1" == daemon || "$1" == config ]] && return 0
  [[ -n "$(layer_rank "$1")" ]]
}

# Returns 0 when a file of layer $1 may include header $2.
allowed() {
  local layer=$1 header=$2
  [[ "$header" != */* ]] && return 0  # a sibling in the same folder
  local top=${header%%/*}
  [[ "$top" == poolfs ]] && return 0
  case "$layer" in
    poolfs) return 1 ;;
    fuse) [[ "$top" == fuse ]] ;;
    daemon) [[ "$top" == daemon || "$top" == config || "$top" == fuse ]] ;;
    config) [[ "$top" == config ]] ;;
    *)
      local mine theirs
      mine=$(layer_rank "$layer")
      theirs=$(layer_rank "$top")
      [[ -n "$theirs" && "$theirs" -le "$mine" ]]
      ;;
  esac
}

# Prints the layer a source file belongs to, or nothing when it is not checked.
layer_of() {
  local path=$1
  case "$path" in
    core/include/poolfs/*) echo poolfs ;;
    core/*/*)
      local top=${path#core/}
      top=${top%%/*}
      if [[ -n "$(layer_rank "$top")" ]]; then
        echo "$top"
      else
        echo "check-layers.sh: $path: folder core/$top is not a layer of ARCHITECTURE.md" >&2
        echo "unknown"
      fi
      ;;
    fuse/*) echo fuse ;;
    daemon/*) echo daemon ;;
    config/*) echo config ;;
  esac
}

violations=0
files=0
while IFS= read -r -d '' file; do
  file=${file#./}
  layer=$(layer_of "$file")
  [[ -z "$layer" ]] && continue
  files=$((files + 1))
  if [[ "$layer" == unknown ]]; then
    violations=$((violations + 1))
    continue
  fi
  while IFS=: read -r line text; do
    header=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]+)[">].*/\1/' \
      <<<"$text")
    if [[ "$text" =~ include[[:space:]]*\< ]] && ! project_folder "${header%%/*}"; then
      continue  # a system header
    fi
    if ! allowed "$layer" "$header"; then
      echo "$file:$line: $layer must not include $header"
      violations=$((violations + 1))
    fi
  done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "$file" || true)
done < <(find core fuse daemon config -type f \
  \( -name '*.h' -o -name '*.hh' -o -name '*.hpp' -o -name '*.cc' -o -name '*.cpp' \
  -o -name '*.inc' \) -print0 2>/dev/null | sort -z)

if [[ $violations -gt 0 ]]; then
  echo "check-layers: $violations violation(s) in $files files" >&2
  exit 1
fi
echo "check-layers: OK ($files files)"
