# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the end-to-end scripts that run on the bed: tests/lib.sh's
# expectations, the receiver helpers, and one sender run at a time.
. tests/lib.sh
. tests/receiver-lib.sh

# fail MESSAGE: tests/lib.sh's fail, followed by the end of the current
# receiver's stderr (its -v trace where the script asked for one): what
# the receiver saw when the expectation broke.
fail() {
	echo "FAILED: $*" >&2
	if [ -s "$RX_DIR/stderr" ]; then
		echo "-- the receiver's stderr, last 40 lines:" >&2
		tail -n 40 "$RX_DIR/stderr" >&2
	fi
	exit 1
}

# run_sender [ARGS...]: run ./sender ARGS; keep its stdout, stderr and exit
# status in SENDER_OUT, SENDER_ERR and SENDER_STATUS.
run_sender() {
	./sender "$@" >"$TEST_TMP/sender.out" 2>"$TEST_TMP/sender.err"
	SENDER_STATUS=$?
	SENDER_OUT=$(cat "$TEST_TMP/sender.out")
	SENDER_ERR=$(cat "$TEST_TMP/sender.err")
}

# expect_done SECONDS PID WHAT: the process PID (WHAT) ends within SECONDS
# with exit status 0 (wait_within, tests/receiver-lib.sh).
expect_done() {
	wait_within "$1" "$2" "$3"
	expect_status 0 "$WAIT_STATUS" "$3"
}

# expect_key PID N KEY WHAT: the sender PID (WHAT), run in the background
# with its stdout and stderr in $TEST_TMP/cN.out and cN.err, ends within
# 120 s with exit status 0, having printed "secret key: KEY" alone.
expect_key() {
	wait_within 120 "$1" "$4"
	[ "$WAIT_STATUS" -eq 0 ] ||
		fail "$4: exit status $WAIT_STATUS ($(cat "$TEST_TMP/c$2.err"))"
	[ "$(cat "$TEST_TMP/c$2.out")" = "secret key: $3" ] ||
		fail "$4: wrong key: $(cat "$TEST_TMP/c$2.out")"
}

# expect_sender_fails STATUS PATTERN WHAT: the sender exited with STATUS,
# said one line on stderr matching PATTERN, and printed no key.
expect_sender_fails() {
	expect_status "$1" "$SENDER_STATUS" "$3 (stderr: $SENDER_ERR)"
	[ -z "$SENDER_OUT" ] || fail "$3: printed on stdout: $SENDER_OUT"
	[ "$(printf '%s\n' "$SENDER_ERR" | wc -l)" -eq 1 ] ||
		fail "$3: not one line on stderr: $SENDER_ERR"
	printf '%s\n' "$SENDER_ERR" | grep -Eq "$2" ||
		fail "$3: stderr '$SENDER_ERR' does not match '$2'"
}

# iwarp: succeed if RXE_DEV is an iWARP device (siw, RXE_PROVIDER=siw),
# where a few failures show differently from InfiniBand and RoCE.
iwarp() {
	ibv_devinfo -d "$RXE_DEV" 2>/dev/null | grep -q 'transport:.*iWARP'
}

# make_file PATH BYTES: a file of BYTES random bytes.
make_file() {
	head -c "$2" /dev/urandom >"$1" || fail "cannot create $1"
}

# expect_saved_only DIR ID/NAME...: DIR holds exactly the files
# ID/NAME... (the receiver saves each student's files in a directory of
# its own), with no temporary file left behind.
expect_saved_only() {
	local dir=$1 want got
	shift
	want=$(printf '%s\n' "$@" | sort)
	got=$(find "$dir" -mindepth 1 -type f -printf '%P\n' | sort)
	[ "$got" = "$want" ] ||
		fail "files in $dir: '$(echo $got)', expected '$(echo $want)'"
}

# expect_stderr_line PATTERN WHAT: within 10 s, a line of the receiver's
# stderr matches PATTERN.
expect_stderr_line() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -Eq "$1" "$RX_DIR/stderr" && return 0
		sleep 0.05
	done
	fail "$2: no line matching '$1' on the receiver's stderr in 10 s"
}

# expect_summary PATTERN WHAT: the receiver's next summary line is for the
# next session (counted in SESSION) and matches the regex PATTERN; the
# line is left in SUMMARY.
SESSION=0
expect_summary() {
	local line
	SESSION=$((SESSION + 1))
	line=$(next_line) || fail "$2: no summary line"
	SUMMARY=$line
	echo "$line"
	case $line in
	"session $SESSION from "*) ;;
	*) fail "$2: summary '$line' is not session $SESSION's" ;;
	esac
	printf '%s\n' "$line" | grep -Eq "$1" ||
		fail "$2: summary '$line' does not match '$1'"
}

# expect_json WHAT: the sender's stdout (SENDER_OUT) is exactly one line,
# one flat JSON object: fields whose values are strings (with JSON's
# escapes and no raw control character), numbers or null.
expect_json() {
	local string='"([^"\\[:cntrl:]]|\\["\\/bfnrt]|\\u[0-9a-f]{4})*"'
	local field="\"[a-z_]+\": (null|-?[0-9]+(\\.[0-9]+)?|$string)"
	[ "$(printf '%s\n' "$SENDER_OUT" | wc -l)" -eq 1 ] &&
		printf '%s\n' "$SENDER_OUT" |
		grep -Eq "^\\{$field(, $field)*\\}\$" ||
		fail "$1: stdout is not one JSON object: $SENDER_OUT"
}

# json_field NAME: the value of the field NAME in the sender's JSON object,
# as written (a string with its quotes and escapes); nothing if absent.
json_field() {
	printf '%s\n' "$SENDER_OUT" |
		grep -Eo "(\\{|, )\"$1\": (null|-?[0-9.]+|\"([^\"\\\\]|\\\\.)*\")" |
		sed 's/^[{, ]*"[a-z_]*": //'
}

# expect_json_field NAME VALUE WHAT: the field NAME is VALUE, as written.
expect_json_field() {
	local got
	got=$(json_field "$1")
	[ "$got" = "$2" ] ||
		fail "$3: \"$1\" is '$got', expected '$2' in $SENDER_OUT"
}

# expect_json_failure STATUS WHAT: a sender run with --json exited with
# STATUS after one line on stderr, and its JSON object carries that line
# (without "sender: ") as "error", STATUS as "exit_status", and no key.
expect_json_failure() {
	expect_status "$1" "$SENDER_STATUS" "$2 (stderr: $SENDER_ERR)"
	expect_json "$2"
	[ "$(printf '%s\n' "$SENDER_ERR" | wc -l)" -eq 1 ] ||
		fail "$2: not one line on stderr: $SENDER_ERR"
	expect_json_field error "\"${SENDER_ERR#sender: }\"" "$2"
	expect_json_field exit_status "$1" "$2"
	expect_json_field key null "$2"
}

# run_sender_to_evil MODE FILE [OPTION...]: start tests/evil-receiver MODE
# on a free port of its own, next to any receiver start_receiver started
# (which goes on as it was), and run_sender OPTION... to it with FILE.
# Then wait for the evil receiver to end: its last line and its exit
# status in EVIL_LINE and EVIL_STATUS.  (The locals stand in for
# start_receiver's variables while it runs.)
run_sender_to_evil() {
	local mode=$1 file=$2
	local RX_BIN=tests/evil-receiver RX_DIR RX_PID RX_PORT RX_FD
	shift 2
	RX_DIR=$(mktemp -d "$TEST_TMP/evil-receiver.XXXXXX")
	start_receiver "$mode" || fail "tests/evil-receiver $mode did not start"
	run_sender "$@" "$RXE_ADDR" "$RX_PORT" "$file"
	if EVIL_LINE=$(next_line); then
		echo "$EVIL_LINE"
	else
		EVIL_LINE=
		kill -TERM "$RX_PID"	# never served: the sender did not come
	fi
	wait_within 60 "$RX_PID" "tests/evil-receiver $mode"
	EVIL_STATUS=$WAIT_STATUS
	exec {RX_FD}<&-
}
