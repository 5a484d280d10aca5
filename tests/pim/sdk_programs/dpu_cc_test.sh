#!/usr/bin/env bash
# pimopt-dpu-cc's command line (tests/CMakeLists.txt): a program that does not compile gets clang's diagnostics,
# exit 2 and no output file; so does a call of a function defined nowhere; a WRAM pointer kept in 32 bits is warned
# with its line; a program of two files, one compiled with -c first, links into one program with one WRAM layout;
# the SDK's command names answer (bin/clang with the DPU target too).
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
[[ $("$build/sdk/bin/dpu-pkg-config" --cflags --libs dpu) == *-lpimopt_dpu* ]] || fail "dpu-pkg-config --libs"
echo "pimopt-dpu-cc: PASS"
