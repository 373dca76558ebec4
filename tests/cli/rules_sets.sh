#!/bin/sh
# `rules list` filters and its rule-file format read back by `rules import`
# (round trip); `rules diff`; `rules merge` (the better status wins; proved
# against refuted is refused, writing nothing).
#   rules_sets.sh RULES WORK_DIR DB PYTHON
set -eu
rules=$1 work=$2 db=$3 python=$4
rm -rf "$work"
mkdir -p "$work"
strip() { sed -e 's/  #.*//' -e '/^#/d' "$1"; }

# Round trip: list --format rules, import into a new database, list again.
"$rules" --db "$db" list --format rules > "$work/a.rules"
total=$(strip "$work/a.rules" | wc -l)
test "$total" -gt 0
"$rules" --db "$work/b.db" import "$work/a.rules" | grep -q "^$total rules read, $total new, 0 already"
"$rules" list --format rules --db "$work/b.db" > "$work/b.rules"
strip "$work/a.rules" > "$work/a.txt"
strip "$work/b.rules" > "$work/b.txt"
cmp "$work/a.txt" "$work/b.txt"
echo "round trip: $total rules"

# Filters.
"$rules" --db "$db" list --operator conv2d --operator relu > "$work/conv_relu.txt"
test -s "$work/conv_relu.txt"
test "$(wc -l < "$work/conv_relu.txt")" -lt "$total"
! grep -v "conv2d.*relu\|relu.*conv2d" "$work/conv_relu.txt"
"$rules" --db "$db" list --axiom conv2d_relu_fusion --status proved > "$work/axiom.txt"
grep -q "conv2d\[act=relu\](i0, k0) => relu(conv2d(i0, k0))" "$work/axiom.txt"
test "$("$rules" --db "$db" list --axiom no_such_axiom | wc -l)" -eq 0

# diff: the same database; the imported copy (every rule a candidate there).
"$rules" diff "$db" "$db" | grep -q "^0 rules only in .*, 0 only in .*, 0 with another status, $total the same$"
set +e
"$rules" diff "$db" "$work/b.db" > "$work/diff.txt"; rc=$?
set -e
test $rc -eq 1
grep -q "^~ 1/1  proved -> candidate  " "$work/diff.txt"
grep -q ", $total with another status, 0 the same$" "$work/diff.txt"

# merge: the proved records win over the candidates; C must be new.
"$rules" merge "$work/b.db" "$db" -o "$work/c.db" | grep -q "^$total rules from "
"$rules" diff "$db" "$work/c.db" | grep -q ", 0 with another status, $total the same$"
set +e
"$rules" merge "$db" "$work/b.db" -o "$work/c.db" 2> "$work/exists.txt"; rc=$?
set -e
test $rc -eq 2
grep -q "^rules: error: -o '.*c.db' exists" "$work/exists.txt"

# A rule proved in one database and refuted in the other: refused, no file.
cp "$db" "$work/refuted.db"
"$python" -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE rules SET status = 'refuted' WHERE id = 1\"); c.commit()" "$work/refuted.db"
set +e
"$rules" merge "$db" "$work/refuted.db" -o "$work/d.db" 2> "$work/conflict.txt"; rc=$?
set -e
test $rc -eq 1
grep -q "^rules: error: the rule .* is proved in the first database (#1) and refuted in the second (#1)" "$work/conflict.txt"
test ! -e "$work/d.db"
echo "rules list, import, diff and merge agree"
