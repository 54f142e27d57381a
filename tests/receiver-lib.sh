# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Run a receiver in the background and follow its stdout line by line,
# without sleeping: its stdout is a FIFO that we read with a time limit.
# Source it in a script that runs on the bed (scripts/rxe-run), from the
# repository root.
#
#   start_receiver [ARGS...]   start ./receiver -p 0 ARGS (or RX_BIN instead
#                              of ./receiver, through the command in the
#                              array RX_RUN, if set); wait
#                              for its "listening on" line, RX_START_LIMIT
#                              seconds at most (default 30: more for a
#                              receiver under valgrind); set RX_PID,
#                              RX_PORT
#   next_line [SECONDS]        print the receiver's next stdout line
#                              (default limit 60 s); fail if none comes
#   stop_receiver [SECONDS]    SIGTERM it and wait for it to end, SECONDS
#                              at most (default 30); set RX_STATUS to its
#                              exit status, or else SIGKILL it, say so and
#                              set RX_STATUS to 124
#   wait_within SECONDS PID WHAT
#                              wait for process PID to end, SECONDS at
#                              most; its exit status in WAIT_STATUS, or
#                              else SIGKILL it, say that WHAT was still
#                              running and set WAIT_STATUS to 124

RX_DIR=$(mktemp -d /tmp/receiver.XXXXXX)
RX_RUN=()

start_receiver() {
	local line
	rm -f "$RX_DIR/stdout"
	mkfifo "$RX_DIR/stdout"
	"${RX_RUN[@]}" "${RX_BIN:-./receiver}" -p 0 "$@" >"$RX_DIR/stdout" \
		2>"$RX_DIR/stderr" &
	RX_PID=$!
	exec {RX_FD}<"$RX_DIR/stdout"
	if ! line=$(next_line "${RX_START_LIMIT:-30}"); then
		echo "the receiver did not start listening:" >&2
		cat "$RX_DIR/stderr" >&2
		return 1
	fi
	case $line in
	"listening on "*) RX_PORT=${line##*:} ;;
	*)
		echo "unexpected first line from the receiver: $line" >&2
		return 1
		;;
	esac
}

next_line() {
	local line
	if ! IFS= read -r -t "${1:-60}" line <&"$RX_FD"; then
		echo "no line from the receiver within ${1:-60}s" >&2
		return 1
	fi
	printf '%s\n' "$line"
}

stop_receiver() {
	kill -TERM "$RX_PID" 2>/dev/null
	wait_within "${1:-30}" "$RX_PID" "the receiver, after SIGTERM,"
	RX_STATUS=$WAIT_STATUS
}

wait_within() {
	# tail follows nothing: it only waits for the process to end.
	if ! timeout "$1" tail --pid="$2" -s 0.05 -f /dev/null; then
		echo "$3 still running after $1 s" >&2
		kill -KILL "$2" 2>/dev/null
		wait "$2" 2>/dev/null
		WAIT_STATUS=124
		return 1
	fi
	wait "$2" 2>/dev/null	# (no "Killed" line for one we killed)
	WAIT_STATUS=$?
}
