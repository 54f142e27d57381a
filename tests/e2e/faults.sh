# SPDX-License-Identifier: MIT
# Faults in the middle of a transfer: a second sender while a session is
# in progress is refused as busy and does not disturb it; a sender killed
# with SIGKILL leaves a receiver that serves the next one; a receiver
# killed leaves a sender that ends with a clear line within its timeout,
# and a partial file that the next receiver on its -o removes, saying so.
. tests/e2e/lib.sh

make_file "$TEST_TMP/big" 67108864
make_file "$TEST_TMP/small" 4096

# start_writing_sender ARGS...: start ./sender -v ARGS in the background
# (SENDER_PID; `wait` for its status); return once it traces its first
# WRITE_CHUNK state, so the transfer is under way.  Its trace keeps being
# read into a.trace, so it never blocks on stderr.
start_writing_sender() {
	local line fd
	rm -f "$TEST_TMP/a.err"
	mkfifo "$TEST_TMP/a.err"
	./sender -v "$@" >"$TEST_TMP/a.out" 2>"$TEST_TMP/a.err" &
	SENDER_PID=$!
	exec {fd}<"$TEST_TMP/a.err"
	while IFS= read -r -t 30 line <&"$fd"; do
		case $line in *"state WRITE_CHUNK"*) break ;; esac
	done
	case $line in *"state WRITE_CHUNK"*) ;; *) fail "no transfer started" ;; esac
	cat <&"$fd" >"$TEST_TMP/a.trace" &
	TRACE_PID=$!
	exec {fd}<&-
}

mkdir "$TEST_TMP/out"
start_receiver -c 1 -o "$TEST_TMP/out" -k "$TEST_TMP/secret" ||
	fail "no receiver"

# A second sender during a session of a receiver that serves one at a
# time (-c 1): refused at once as busy, exit 4 (a refusal by the
# receiver).
start_writing_sender -i first "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
run_sender -t 5 -i second "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_sender_fails 4 "connect to .*: connection refused: receiver busy with another session$" \
	"a second sender during a session"
wait_within 120 "$SENDER_PID" "the first sender"
expect_status 0 "$WAIT_STATUS" "the first sender"
expect_summary "id first, 67108864 bytes, verdict good, key sent" \
	"the session the second sender tried to disturb"

# The same with --wait: the second sender says that it waits, waits its
# turn, and gets its key once the session in progress is over.
start_writing_sender -i first "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
run_sender --wait 60 -i patient "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_status 0 "$SENDER_STATUS" "a sender with --wait ($SENDER_ERR)"
case $SENDER_ERR in
*"receiver busy with another session; waiting up to 60 s for a turn (--wait)"*) ;;
*) fail "a sender with --wait did not say that it waits: $SENDER_ERR" ;;
esac
case $SENDER_OUT in
"secret key: "*) ;;
*) fail "a sender with --wait printed no key: $SENDER_OUT" ;;
esac
wait_within 120 "$SENDER_PID" "the sender the one with --wait waited for"
expect_status 0 "$WAIT_STATUS" "the sender that the one with --wait waited for"
expect_summary "id first, 67108864 bytes, verdict good, key sent" \
	"the session a sender with --wait waited for"
expect_summary "id patient, 4096 bytes, verdict good, key sent" \
	"the session of the sender with --wait"

# A sender killed in the middle: the receiver ends that session and
# serves the next sender.
start_writing_sender -i killed "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
kill -KILL "$SENDER_PID"
wait_within 30 "$SENDER_PID" "a sender after SIGKILL"
expect_summary "verdict none, .*failed: " "the session of a killed sender"
run_sender -i next "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_status 0 "$SENDER_STATUS" "a sender after a killed one ($SENDER_ERR)"
expect_summary "id next, 4096 bytes, verdict good, key sent" \
	"the sender after a killed one"

# The receiver killed in the middle: the sender ends with a connection
# error (exit 3) and one clear line, within its timeout.
start_writing_sender -t 5 -i orphan "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
kill -KILL "$RX_PID"
wait_within 30 "$RX_PID" "the receiver after SIGKILL"
wait_within 60 "$SENDER_PID" "a sender whose receiver was killed"
expect_status 3 "$WAIT_STATUS" "a sender whose receiver was killed"
wait_within 30 "$TRACE_PID" "the copy of the sender's trace"
grep -q "^sender: $RXE_ADDR:$RX_PORT: " "$TEST_TMP/a.trace" ||
	fail "no clear line from the sender: $(tail -n 3 "$TEST_TMP/a.trace")"
grep "^sender: $RXE_ADDR" "$TEST_TMP/a.trace"

# What the killed receiver was saving is left as a partial file; the next
# receiver with that -o removes it at its start, with one line.
ls -A "$TEST_TMP/out" | grep -q '^\.lab3-partial-' ||
	fail "the killed receiver left no partial file: $(ls -A "$TEST_TMP/out")"
start_receiver -c 1 -o "$TEST_TMP/out" -k "$TEST_TMP/secret" ||
	fail "no receiver after the killed one"
grep -q "^receiver: -o $TEST_TMP/out: removed 1 partial file that an earlier run left$" \
	"$RX_DIR/stderr" || fail "no line about the partial file: $(cat "$RX_DIR/stderr")"
ls -A "$TEST_TMP/out" | grep '^\.lab3-partial-' &&
	fail "a partial file is still there"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after the killed one, after SIGTERM"
