#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# capture.sh [CASE...]: on the bed, run one receiver session per CASE and
# print each as the grader traces it for scripts/lib/chart.py: the
# receiver's -v stderr lines and its summary line, each prefixed by the
# time it was read ("<epoch.micro> <line>", the summary as "summary:
# <line>"), after a line "=== CASE".  CASE is "good" (./sender) or a mode
# of tests/evil-sender, with ":SIZE" for a file of SIZE bytes instead of
# 300000 (the modes that put the file in one REGION need one that fits a
# window: 64 KiB).  To refresh the fixtures:
#   flock /tmp/bed.lock scripts/rxe-run bash tests/chart-fixtures/capture.sh
set -u
[ $# -gt 0 ] || set -- good gone-after-info unwritten sparse bad-hash no-done \
	no-done:60000 id-before-verdict:60000 stop-mid-write out-of-order
dir=$(mktemp -d /tmp/capture.XXXXXX)
{ head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; echo; } >"$dir/secret"
chmod 600 "$dir/secret"
head -c 300000 /dev/urandom >"$dir/file.bin"
mkdir -p "$dir/out"

# stamp PREFIX: each line of stdin, after the time it was read.
stamp() {
	local line
	while IFS= read -r line; do
		printf '%s %s%s\n' "$EPOCHREALTIME" "$1" "$line"
	done
}

for case in "$@"; do
	echo "=== $case"
	mkfifo "$dir/rx.out" "$dir/rx.err"	# (no /dev/fd on the bed)
	stamp "" <"$dir/rx.err" >"$dir/trace" &
	stamper=$!
	./receiver -v -p 7471 -w 64K -n 2 -t 5 -k "$dir/secret" -o "$dir/out" \
		>"$dir/rx.out" 2>"$dir/rx.err" &
	rx=$!
	exec {fd}<"$dir/rx.out"
	IFS= read -r -t 30 line <&$fd	# "listening on ..."
	if [ "$case" = good ]; then
		./sender -i abc -t 5 "$RXE_ADDR" 7471 "$dir/file.bin" \
			>/dev/null 2>&1
	else
		size=300000
		case $case in *:*) size=${case#*:} ;; esac
		tests/evil-sender -s "$size" "${case%%:*}" "$RXE_ADDR" 7471 \
			>/dev/null 2>&1
	fi
	echo "sender_exit $?" >&2
	IFS= read -r -t 30 line <&$fd &&
		printf '%s summary: %s\n' "$EPOCHREALTIME" "$line" >"$dir/summary"
	kill -TERM $rx
	# (Each bounded: a receiver that does not end is killed, and the
	# stamper ends with its stderr.)
	timeout 30 tail --pid=$rx -s 0.05 -f /dev/null ||
		{ echo "the receiver still ran 30 s after SIGTERM" >&2; kill -KILL $rx; }
	wait $rx
	exec {fd}<&-
	timeout 10 tail --pid=$stamper -s 0.05 -f /dev/null ||
		{ echo "the trace's stamper still ran 10 s after the receiver" >&2; kill -KILL $stamper; }
	wait $stamper
	rm -f "$dir/rx.out" "$dir/rx.err"
	cat "$dir/trace" "$dir/summary"
	rm -rf "$dir/trace" "$dir/summary" "$dir"/out/*
done
