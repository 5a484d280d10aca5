#!/usr/bin/env bash
# pimopt-dpu-cc's command line (tests/CMakeLists.txt): a program that does not compile gets clang's diagnostics,
# exit 2 and no output file; so does a call of a function defined nowhere; a WRAM pointer kept in 32 bits is warned
# with its line; a program of two files, one compiled with -c first, links into one program with one WRAM layout;
# the SDK's command names answer (bin/clang with the DPU target too); objects linked alone record the command line's
# tasklets; the C library's and the SDK's names are listed once by the build, and a call works them out itself where
# that list is absent.
#   dpu_cc_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

"$build/pimopt-dpu-cc" -o "$work/bad.dpu" "$src/does_not_compile.c" 2> "$work/bad.err"
rc=$?
[[ $rc -eq 2 ]] || fail "a program that does not compile: exit $rc, expected 2"
[[ ! -e $work/bad.dpu ]] || fail "a program that does not compile left $work/bad.dpu"
grep -q "does_not_compile.c:5:.*error" "$work/bad.err" || fail "no clang diagnostic: $(cat "$work/bad.err")"

# A call of a function defined nowhere is refused at build time, naming it, not at dpu_load.
"$build/pimopt-dpu-cc" -o "$work/undefined.dpu" "$src/undefined_call.c" 2> "$work/undefined.err"
rc=$?
[[ $rc -eq 2 ]] || fail "a call of an undefined function: exit $rc, expected 2"
[[ ! -e $work/undefined.dpu ]] || fail "a call of an undefined function left $work/undefined.dpu"
grep -q "'gelu' is called but defined nowhere" "$work/undefined.err" || fail "no error naming gelu: $(cat "$work/undefined.err")"

# DPU assembly is refused, naming its line.
asm_line=$(grep -n "ASM" "$src/inline_asm.c" | tail -1 | cut -d: -f1)
"$build/pimopt-dpu-cc" -o "$work/asm.dpu" "$src/inline_asm.c" 2> "$work/asm.err"
rc=$?
[[ $rc -eq 2 && ! -e $work/asm.dpu ]] || fail "DPU assembly: exit $rc, expected 2 and no output"
grep -q "inline_asm.c:$asm_line: DPU assembly (\"cmpb4" "$work/asm.err" || fail "no error at inline_asm.c:$asm_line: $(cat "$work/asm.err")"

# The SDK's bin/clang with the DPU target is pimopt-dpu-cc.
"$build/sdk/bin/clang" --target=dpu-upmem-dpurte -DNR_TASKLETS=4 -O2 -o "$work/target.dpu" "$src/two_files_main.c" \
  "$src/two_files_helper.c" || fail "clang --target=dpu-upmem-dpurte did not build"
nm -D "$work/target.dpu" | grep -q " __pimopt_dpu_symbols$" || fail "clang --target=dpu-upmem-dpurte: not a DPU program"

line=$(grep -n "DATA MODEL" "$src/data_model.c" | cut -d: -f1)
"$build/pimopt-dpu-cc" -o "$work/data_model.dpu" "$src/data_model.c" 2> "$work/data_model.err" ||
  fail "data_model.c did not compile: $(cat "$work/data_model.err")"
grep -q "warning: data_model.c:$line: a WRAM pointer converted to a 32-bit integer" "$work/data_model.err" ||
  fail "no data-model warning at data_model.c:$line: $(cat "$work/data_model.err")"

(cd "$work" && "$build/sdk/bin/dpu-upmem-dpurte-clang" -DNR_TASKLETS=4 -c "$src/two_files_helper.c") ||
  fail "-c did not compile"
[[ -s $work/two_files_helper.o ]] || fail "-c wrote no two_files_helper.o"
"$build/sdk/bin/dpu-upmem-dpurte-clang" -DNR_TASKLETS=4 -o "$work/two.dpu" "$src/two_files_main.c" \
  "$work/two_files_helper.o" || fail "two files did not link"
symbols=$(nm -D "$work/two.dpu")
for s in __pimopt_dpu_symbols __pimopt_dpu_wram_bytes main; do
  grep -q " $s\$" <<< "$symbols" || fail "two.dpu has no $s"
done
# Objects alone: the tasklet count is the link's command line's.
(cd "$work" && "$build/pimopt-dpu-cc" -DNR_TASKLETS=4 -c "$src/two_files_main.c") || fail "-c of two_files_main.c"
"$build/pimopt-dpu-cc" -DNR_TASKLETS=5 -o "$work/objects.dpu" "$work/two_files_main.o" "$work/two_files_helper.o" ||
  fail "two objects did not link"
tasklets_of() {  # a .dpu file: the value of its __pimopt_dpu_nr_tasklets, as 8 hex digits (little-endian bytes)
  local address
  address=$(nm -D "$1" | awk '$3 == "__pimopt_dpu_nr_tasklets" {print $1}')
  [[ -n $address ]] || return 1
  objdump -s --start-address=$((16#$address)) --stop-address=$((16#$address + 4)) "$1" | awk 'NF >= 2 && $1 ~ /^[0-9a-f]+$/ {print $2}' | tail -1
}
[[ $(tasklets_of "$work/objects.dpu") == 05000000 ]] || fail "objects linked with NR_TASKLETS=5 record $(tasklets_of "$work/objects.dpu")"
[[ $(tasklets_of "$work/two.dpu") == 04000000 ]] || fail "two.dpu records $(tasklets_of "$work/two.dpu") tasklets"

# The names every call checks against: listed by the build; a call without the list works them out the same way.
grep -qx "c sqrtf" "$build/pimopt-dpu-cc.names" && grep -qx "sdk mram_read" "$build/pimopt-dpu-cc.names" ||
  fail "$build/pimopt-dpu-cc.names lacks sqrtf or mram_read"
sed "s|^names_file=.*|names_file=$work/absent|" "$build/pimopt-dpu-cc" > "$work/dpu-cc-without-names"
bash "$work/dpu-cc-without-names" -o "$work/undefined2.dpu" "$src/undefined_call.c" 2> "$work/undefined2.err"
[[ $? -eq 2 ]] && grep -q "'gelu' is called but defined nowhere" "$work/undefined2.err" ||
  fail "without the names file, gelu was not refused: $(cat "$work/undefined2.err")"
bash "$work/dpu-cc-without-names" -DNR_TASKLETS=4 -o "$work/two2.dpu" "$src/two_files_main.c" "$src/two_files_helper.c" ||
  fail "without the names file, two_files did not build"
[[ ! -e $work/absent ]] || fail "a call wrote the build's names file"
[[ $("$build/sdk/bin/dpu-pkg-config" --cflags --libs dpu) == *-lpimopt_dpu* ]] || fail "dpu-pkg-config --libs"
echo "pimopt-dpu-cc: PASS"
