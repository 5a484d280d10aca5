#!/usr/bin/env bash
# PIMOPT_REPORT=FILE: a host program's launches, written as JSON when it exits (libpimopt_dpu). Usage:
#   report_test.sh HOST_PROGRAM
set -uo pipefail
host=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/pimopt-report.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

PIMOPT_REPORT="$work/report.json" "$host" > "$work/out.txt" 2>&1 || fail "the host program failed: $(cat "$work/out.txt")"
[[ -f $work/report.json ]] || fail "no report written"
ls "$work" | grep -q '\.tmp' && fail "a temporary file was left: $(ls "$work")"
python3 - "$work/report.json" <<'PY' || fail "the report is not what it should be"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["profile"], r
assert r["modeled_s"] > 0, r
assert len(r["launches"]) >= 1, r
for l in r["launches"]:
    assert l["program"].endswith(".dpu"), l
    assert l["dpus"] >= 1 and l["tasklets"] >= 1, l
    assert l["kernel_s"] > 0 and l["slowest_dpu_cycles"]["total"] > 0, l
    assert l["instructions"] > 0 and sum(l["op_counts"].values()) > 0, l
    c = l["slowest_dpu_cycles"]
    parts = c["issue"] + c["revolver"] + c["dma"] + c["sync"] + c["interference"]
    assert abs(parts - c["total"]) <= 1e-6 * c["total"] + 1, (parts, c)
assert sum(l["kernel_s"] + l["overhead_s"] for l in r["launches"]) <= r["modeled_s"] + 1e-12, r
PY
# A report that cannot be written is an error on stderr naming the variable; the program's own result stands.
PIMOPT_REPORT="$work/no/such/folder/report.json" "$host" > "$work/out2.txt" 2>&1 || fail "the host program failed"
grep -q "PIMOPT_REPORT" "$work/out2.txt" || fail "no error for an unwritable report: $(cat "$work/out2.txt")"
echo "report: PASS"
