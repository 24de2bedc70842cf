#!/usr/bin/env bash
# The KB's regression over every labelled set it has: the fixtures, then each holdout that has been measured
# (holdout4 and holdout5 are two halves each, joined in a temporary folder). One line per set.
set -u
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# every set kept in quarters or halves (holdoutN-a, -b ...), whatever N the latest round reached
for n in $(ls -d holdout[0-9]*-? 2>/dev/null | sed -E 's/^holdout([0-9]+)-.$/\1/' | sort -un); do
  mkdir -p "$tmp/holdout$n"
  for half in holdout$n-?; do cp -r "$half"/*/ "$tmp/holdout$n/" 2>/dev/null; done
done
for d in fixtures holdout holdout2 holdout3 holdout3-new "$tmp"/holdout*; do
  [ -d "$d" ] || continue
  printf '%-14s %s\n' "$(basename "$d")" "$("$py" -m diagnose rules test --fixtures "$d" 2>&1 | grep -E 'labelled cases|healthy cases|examples:' | sed 's/labelled cases: //; s/healthy cases: /healthy /' | tr '\n' ' ')"
done
