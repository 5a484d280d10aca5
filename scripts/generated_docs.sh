#!/usr/bin/env bash
# The tables in README.md and docs/*.md that are printed by pimopt itself (parameters, hardware profiles) sit
# between
#   <!-- generated: pimopt ARGS -->   and   <!-- end generated -->
# Usage: scripts/generated_docs.sh PIMOPT check    (exit 1 and show the difference when a block is stale)
#        scripts/generated_docs.sh PIMOPT update   (rewrite every block from the binary)
set -euo pipefail
pimopt=$1 mode=$2
cd "$(dirname "$0")/.."
status=0
for file in README.md docs/*.md; do
  grep -q '<!-- generated: pimopt ' "$file" || continue
  out=$(mktemp)
  # Copy the file, replacing each block's body by what the command prints now.
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$out"
    if [[ $line =~ ^'<!-- generated: pimopt '(.*)' -->'$ ]]; then
      read -r -a args <<<"${BASH_REMATCH[1]}"
      "$pimopt" "${args[@]}" >>"$out"
      while IFS= read -r skip && [[ $skip != '<!-- end generated -->' ]]; do :; done
      printf '%s\n' '<!-- end generated -->' >>"$out"
    fi
  done <"$file"
  if ! cmp -s "$file" "$out"; then
    if [[ $mode == update ]]; then
      cp "$out" "$file"
      echo "updated $file"
    else
      echo "STALE: $file differs from what pimopt prints now (run scripts/generated_docs.sh build/pimopt update):"
      diff "$file" "$out" || true
      status=1
    fi
  fi
  rm -f "$out"
done
exit $status
