#!/usr/bin/env bash
# The repository stands alone: no citation of material a user of it cannot open (notes outside the repository,
# issue numbers), and every bracketed source key ([PrIM], [sdk-light], ...) in the docs, in code comments and in
# the hardware profiles that pimopt prints is defined in docs/sources.md.
# Usage: scripts/check_citations.sh PIMOPT
set -euo pipefail
pimopt=$1
cd "$(dirname "$0")/.."
status=0
if grep -rnIE 'shared/docs|[Ii]ssue [0-9]+|pimopt-reference|upmem-model' README.md docs src include bench examples; then
  echo "FAIL: the lines above cite material outside the repository"
  status=1
fi
defined=$(grep -oE '^### \[[^]]+\]' docs/sources.md | sed -E 's/^### //' | sort -u)
# Keys: bracketed words that start with a capital or contain a hyphen, not followed by '(' (a Markdown link).
keys() { grep -oE '\[[A-Za-z][A-Za-z0-9-]*\]([^(]|$)' | sed -E 's/\](.*)$/]/' | grep -E '^\[([A-Z]|[A-Za-z0-9]*-)' || true; }
used=$({
  cat README.md docs/*.md | keys
  grep -rhoIE '//.*' src include bench examples | keys
  "$pimopt" profile | awk 'NR > 1 {print $1}' | while read -r name; do "$pimopt" profile "$name"; done | keys
} | sort -u | grep -vxF -e '[NAME]' -e '[BENCHMARK]' || true)
for key in $used; do
  if ! grep -qxF -- "$key" <<<"$defined"; then
    echo "FAIL: $key is cited but not defined in docs/sources.md"
    status=1
  fi
done
echo "$(wc -w <<<"$used") source keys cited, all defined in docs/sources.md" >&2
exit $status
