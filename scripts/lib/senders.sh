# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# senders.sh: many senders at once to one receiver on the bed, timed, for
# scripts/bench (its concurrency runs, one host and two) and
# scripts/bench-ab (BENCH_AB_CONC=1).
# Sourced: scripts/bench
# sources it on the host and ships the functions to the bed with the
# rest of its own (`declare -f`); scripts/bench-ab sources it on the bed.
#
#   timed_sender LOG ARG...   one sender, each line of its stderr in LOG
#                             after the time it came
#   transfer_span LOG...      the senders' transfer span, from such logs
#   run_senders N FILE HOST PORT [OPTION...]
#                             N senders at once: "WALL SPAN" seconds
#   run_senders_wall N FILE HOST PORT [OPTION...]
#                             the same without -v: "WALL" seconds
#   wait_senders PID...       wait for them all, within TOOL_LIMIT
#   SENDER_BIN                the sender that runs (default ./sender)
#   TOOL_LIMIT                the seconds a sender may take (default 300)

# timed_sender LOG ARG...: run $SENDER_BIN ARG... with its stdout
# discarded and each line of its stderr written to LOG after the time it
# came ($EPOCHREALTIME); returns the sender's exit status.
timed_sender() {
	local log=$1 line
	shift
	"${SENDER_BIN:-./sender}" "$@" 2>&1 >/dev/null |
		while IFS= read -r line; do
			printf '%s %s\n' "$EPOCHREALTIME" "$line"
		done >"$log"
	return "${PIPESTATUS[0]}"
}

# transfer_span LOG...: the seconds from the first sender's first REGION
# to the last sender's last DONE completion, from timed_sender logs of
# senders run with -v: each sender's transfer ends VERIFY seconds
# before its "received VERDICT" line and began TRANSFER seconds before
# that (both from its summary line).
transfer_span() {
	awk '
	FNR == 1 { verdict = "" }
	/ received VERDICT / { verdict = $1 }
	/verdict good; hash / {
		match($0, /transfer [0-9.]+ s, verify [0-9.]+ s/)
		split(substr($0, RSTART, RLENGTH), f, " ")
		end = verdict - f[5]
		start = end - f[2]
		if (verdict == "") { bad = 1 }
		if (first == "" || start < first) first = start
		if (last == "" || end > last) last = end
		n++
	}
	END {
		if (bad || n != ARGC - 1) exit 1
		printf "%.3f\n", last - first
	}' "$@"
}

# run_senders N FILE HOST PORT [OPTION...]: start N senders of FILE at
# once to the receiver at HOST:PORT, each with -v and OPTION..., and wait
# for them all (wait_senders); prints the seconds from the first start
# to the last exit and the senders' transfer span (transfer_span).  A
# sender that fails: its log and which one on stderr, and status 1.
run_senders() {
	local n=$1 file=$2 host=$3 port=$4 start i wall span
	local pids=() logs=()
	shift 4

	start=$EPOCHREALTIME
	for ((i = 1; i <= n; i++)); do
		logs+=("/tmp/bench-conc$i.log")
		timed_sender "/tmp/bench-conc$i.log" -q -v -i "conc$i" "$@" \
			"$host" "$port" "$file" &
		pids+=($!)
	done
	wait_senders "${pids[@]}" || return 1
	wall=$(awk -v s="$start" -v e="$EPOCHREALTIME" \
		'BEGIN { printf "%.3f\n", e - s }')
	if ! span=$(transfer_span "${logs[@]}"); then
		echo "run_senders: FAILED: no transfer times in the logs of" \
			"$n concurrent senders" >&2
		return 1
	fi
	rm -f "${logs[@]}"
	echo "$wall $span"
}

# run_senders_wall N FILE HOST PORT [OPTION...]: as run_senders, but the
# senders run as they are, without -v nor timestamps, and only the wall
# time is printed: where only that counts (small files), so that the
# senders' own cost is all that the measurement adds.
run_senders_wall() {
	local n=$1 file=$2 host=$3 port=$4 start i
	local pids=()
	shift 4

	start=$EPOCHREALTIME
	for ((i = 1; i <= n; i++)); do
		"${SENDER_BIN:-./sender}" -q -i "conc$i" "$@" "$host" "$port" \
			"$file" >/dev/null 2>"/tmp/bench-conc$i.log" &
		pids+=($!)
	done
	wait_senders "${pids[@]}" || return 1
	awk -v s="$start" -v e="$EPOCHREALTIME" \
		'BEGIN { printf "%.3f\n", e - s }'
	rm -f /tmp/bench-conc*.log
}

# wait_senders PID...: wait for the senders PID... (the Ith's log in
# /tmp/bench-concI.log), all within ${TOOL_LIMIT:-300} s from now, timed
# by one watchdog rather than a poller each: on one host the pollers of
# 16 senders (wait_within's timeout and tail) took a sixth of the CPUs
# the receiver under test ran on.  At the limit the watchdog kills those
# still running, and first what each started: a PID may be a shell
# (timed_sender's) with the sender under it.  0; or 1 after showing the
# log of the first that failed and saying why.
wait_senders() {
	local n=$# i=0 pid status watchdog failed=0 fstatus=0

	(
		trap 'kill "${timer:-}" 2>/dev/null; exit 0' TERM
		sleep "${TOOL_LIMIT:-300}" &
		timer=$!
		wait "$timer" || exit 0
		for pid in "$@"; do
			pkill -KILL -P "$pid" 2>/dev/null
		done
		kill -KILL "$@" 2>/dev/null
	) &
	watchdog=$!
	for pid in "$@"; do
		i=$((i + 1))
		wait "$pid" 2>/dev/null
		status=$?
		if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
			failed=$i
			fstatus=$status
		fi
	done
	kill "$watchdog" 2>/dev/null
	wait "$watchdog" 2>/dev/null
	[ "$failed" -eq 0 ] && return 0
	echo "-- /tmp/bench-conc$failed.log:" >&2
	head -n 100 "/tmp/bench-conc$failed.log" >&2
	if [ "$fstatus" -eq 137 ]; then
		echo "run_senders: FAILED: concurrent sender $failed of $n" \
			"still ran after ${TOOL_LIMIT:-300} s (killed)" >&2
	else
		echo "run_senders: FAILED: concurrent sender $failed of $n" \
			"exited with $fstatus" >&2
	fi
	return 1
}
