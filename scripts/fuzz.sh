#!/usr/bin/env bash
# make fuzz: every fuzz target under libFuzzer (the toolchain's -sanitize=fuzzer, with
# AddressSanitizer) for FUZZ_SECONDS each (default 300), starting from the committed corpus in
# Tests/FuzzCorpus/<target>. New inputs go to .build-fuzz/corpus/<target>; a crash is written to
# .build-fuzz/artifacts/ and fails the run. Keep a crash as a regression input by copying it
# into Tests/FuzzCorpus/<target> once fixed (the tests replay that folder on every run).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-300}
targets=${FUZZ_TARGETS:-"FuzzOSC FuzzSessionFile FuzzOSCQuery FuzzHTTPWire"}
mkdir -p .build-fuzz/artifacts
status=0
for target in $targets; do
    # lld: the toolchain's gold crashes linking libFuzzer's driver next to our own main.
    swift build --product "$target" --build-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld
    mkdir -p ".build-fuzz/corpus/$target"
    echo "== $target: ${seconds}s"
    set +e
    ".build-fuzz/debug/$target" ".build-fuzz/corpus/$target" "Tests/FuzzCorpus/$target" \
        -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix=.build-fuzz/artifacts/ -print_final_stats=1 > ".build-fuzz/$target.log" 2>&1
    rc=$?
    set -e
    grep -E "Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb|ERROR|SUMMARY" ".build-fuzz/$target.log" || true
    echo "corpus: $(ls ".build-fuzz/corpus/$target" | wc -l) new inputs, $(ls "Tests/FuzzCorpus/$target" | wc -l) committed"
    if [ $rc -ne 0 ]; then
        echo "$target failed (exit $rc): see .build-fuzz/$target.log and .build-fuzz/artifacts/" >&2
        status=1
    fi
done
exit $status
