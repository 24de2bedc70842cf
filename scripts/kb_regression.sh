#!/usr/bin/env bash
# The KB's regression over every labelled set it has: the fixtures, then each holdout that has been measured
# (holdout4 and holdout5 are two halves each, joined in a temporary folder). One line per set.
set -u
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for n in 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27; do
  ls -d holdout$n-? >/dev/null 2>&1 || continue
  mkdir -p "$tmp/holdout$n"
  for half in holdout$n-?; do cp -r "$half"/*/ "$tmp/holdout$n/" 2>/dev/null; done
done
for d in fixtures holdout holdout2 holdout3 holdout3-new "$tmp"/holdout*; do
  [ -d "$d" ] || continue
  printf '%-14s %s\n' "$(basename "$d")" "$("$py" -m diagnose rules test --fixtures "$d" 2>&1 | grep -E 'labelled cases|healthy cases|examples:' | sed 's/labelled cases: //; s/healthy cases: /healthy /' | tr '\n' ' ')"
done
