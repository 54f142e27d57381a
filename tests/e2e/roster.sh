# SPDX-License-Identifier: MIT
# The class's roster (receiver -r), over the bed:
# - an ID on the roster gets its key; one that is not (a typo of one that
#   is) gets none: the sender exits 4 naming the roster, the receiver's
#   summary and ledger record say why;
# - SIGHUP reads the roster again without dropping a session in progress,
#   and the ID added gets its key; a roster that cannot be read is refused
#   on SIGHUP, with one line, and the old one stays in force;
# - --ledger-summary -r lists every roster ID, those never seen with no
#   attempts, and marks the IDs in the ledger that are not on it;
# - without -r, SIGHUP only says so, and the receiver serves on;
# - a SIGHUP sent while main() reads the roster, before the handlers are
#   set, reads it again once the receiver serves, and it serves on; a
#   SIGTERM then stops it with exit 0.
. tests/e2e/lib.sh

roster=$TEST_TMP/roster
printf '# the class\nstudent42\nalice  # joined late\n\nbob\n' >"$roster"
make_file "$TEST_TMP/small.bin" 100000
make_file "$TEST_TMP/big.bin" $((128 << 20))
start_receiver -v -r "$roster" -k "$TEST_TMP/secret" -l "$TEST_TMP/ledger" ||
	fail "no receiver"
SESSION=0

# send ID FILE: one sender run with ID.
send() {
	run_sender -i "$1" "$RXE_ADDR" "$RX_PORT" "$2"
}

send alice "$TEST_TMP/small.bin"
expect_status 0 "$SENDER_STATUS" "alice, on the roster ($SENDER_ERR)"
expect_summary "id alice, .*verdict good, key sent" "alice, on the roster"

send stdent42 "$TEST_TMP/small.bin"
expect_sender_fails 4 "^sender: the receiver refused: ID 'stdent42' is not on this class's roster$" \
	"stdent42, not on the roster"
expect_summary "id stdent42, .*verdict good, .*failed: ID 'stdent42' is not on this class's roster" \
	"stdent42, not on the roster"
[[ $SUMMARY != *"key sent"* ]] || fail "stdent42 got a key: $SUMMARY"

# SIGHUP while a session is in progress (its first completion seen): it
# goes on, and the roster read again takes the ID added.
printf 'stdent42\n' >>"$roster"
./sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big.bin" \
	>"$TEST_TMP/c1.out" 2>"$TEST_TMP/c1.err" &
pid=$!
expect_stderr_line "completion: RECV" "the session of 128 MiB"
kill -HUP "$RX_PID"
expect_stderr_line "SIGHUP: roster $roster read again: 4 IDs" "SIGHUP"
expect_key "$pid" 1 "$(./receiver -k "$TEST_TMP/secret" --key-for alice)" \
	"alice's 128 MiB across the SIGHUP"
expect_summary "id alice, .*verdict good, key sent" "the session across the SIGHUP"
send stdent42 "$TEST_TMP/small.bin"
expect_status 0 "$SENDER_STATUS" "stdent42, added by SIGHUP ($SENDER_ERR)"
expect_summary "id stdent42, .*verdict good, key sent" "stdent42, added"

# A roster that cannot be read: refused, and the old one stays.
cp "$roster" "$TEST_TMP/roster.good"
printf 'carol\nd\001ve\n' >>"$roster"
kill -HUP "$RX_PID"
expect_stderr_line "SIGHUP: roster $roster, line 8: ID has a non-printable character; the roster of 4 IDs stays" \
	"SIGHUP with a bad roster"
send carol "$TEST_TMP/small.bin"
expect_sender_fails 4 "not on this class's roster" "carol, in the refused roster"
expect_summary "failed: ID 'carol' is not on this class's roster" "carol"
send stdent42 "$TEST_TMP/small.bin"
expect_status 0 "$SENDER_STATUS" "stdent42, under the old roster ($SENDER_ERR)"
expect_summary "id stdent42, .*key sent" "stdent42, under the old roster"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver, stopped"

grep -q '"id":"carol",.*"key_sent":false,"error":"ID '"'"'carol'"'"' is not on this class'"'"'s roster","saved_as":null}' \
	"$TEST_TMP/ledger" || fail "the ledger has no record of carol's refusal"

summary=$(./receiver --ledger-summary "$TEST_TMP/ledger" -r "$TEST_TMP/roster.good")
expect_status 0 $? "--ledger-summary -r"
echo "$summary"
want_rows=$'ID\tFIRST SUCCESS\tATTEMPTS\tON ROSTER
alice\t* \t2\tyes
bob\tnever\t0\tyes
carol\tnever\t1\tNOT ON ROSTER
stdent42\t* \t3\tyes
student42\tnever\t0\tyes
roster: 4 IDs, 2 never succeeded; IDs not on it: 1'
mapfile -t want <<<"$want_rows"
mapfile -t got <<<"$summary"
for i in "${!want[@]}"; do
	# (a first success's time is any time: "* " in the table)
	pattern=${want[i]//\* /20[0-9-]*T[0-9:]*Z}
	[[ ${got[i]:-} == $pattern ]] ||
		fail "--ledger-summary -r, line $((i + 1)): '${got[i]:-}', expected '${want[i]}'"
done

# Without -r, SIGHUP (`systemctl reload`) stops nothing: one line says
# there is no roster to read again, and the receiver serves on.
start_receiver -k "$TEST_TMP/secret" || fail "no receiver without -r"
SESSION=0
kill -HUP "$RX_PID"
expect_stderr_line "^receiver: SIGHUP: no roster \(-r ROSTER\) to read again; serving on$" \
	"SIGHUP without -r"
send after-hup "$TEST_TMP/small.bin"
expect_status 0 "$SENDER_STATUS" "a sender after SIGHUP without -r ($SENDER_ERR)"
expect_summary "id after-hup, .*verdict good, key sent" "after SIGHUP without -r"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver without -r, after SIGHUP and SIGTERM"

# Signals in the receiver's first moments, before its handlers are set
# (held from main()'s first line): it is stopped in main() reading its
# roster from a FIFO (await_open), and signalled there.
# start_held ARGS...: ./receiver -p 0 ARGS, -r the FIFO $TEST_TMP/early,
# which the test holds open on HELD; RX_PID and RX_FD as start_receiver's.
start_held() {
	rm -f "$TEST_TMP/early" "$RX_DIR/stdout"
	mkfifo "$TEST_TMP/early" "$RX_DIR/stdout"
	exec {HELD}<>"$TEST_TMP/early"
	./receiver -p 0 -r "$TEST_TMP/early" "$@" >"$RX_DIR/stdout" \
		2>"$RX_DIR/stderr" {HELD}>&- &
	RX_PID=$!
	exec {RX_FD}<"$RX_DIR/stdout"
	await_open "$RX_PID" ./receiver "$TEST_TMP/early" \
		"the receiver reading its roster"
}
# listening WHAT: the receiver's first line is "listening on ...": RX_PORT.
listening() {
	local line
	line=$(next_line 30) || fail "$1: the receiver did not start listening"
	[[ $line == "listening on "* ]] || fail "$1: first line '$line'"
	RX_PORT=${line##*:}
}
# A SIGHUP is a reload once it serves: the roster read again is the file
# that replaced the FIFO (2 IDs, not the FIFO's 1), and it serves on.
start_held -k "$TEST_TMP/secret"
kill -HUP "$RX_PID"
kill -HUP "$RX_PID"
printf 'early\n' >&"$HELD"
printf 'early\nlater\n' >"$TEST_TMP/early.new"
mv "$TEST_TMP/early.new" "$TEST_TMP/early"
exec {HELD}>&-
listening "an early SIGHUP"
expect_stderr_line "^receiver: SIGHUP: roster $TEST_TMP/early read again: 2 IDs$" \
	"a SIGHUP sent before the handlers were set"
SESSION=0
send later "$TEST_TMP/small.bin"
expect_status 0 "$SENDER_STATUS" "later, after an early SIGHUP ($SENDER_ERR)"
expect_summary "id later, .*verdict good, key sent" "later, after an early SIGHUP"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after an early SIGHUP, then SIGTERM"
# A SIGTERM stops it cleanly once it serves: exit 0.
start_held -k "$TEST_TMP/secret"
kill -TERM "$RX_PID"
printf 'early\n' >&"$HELD"
exec {HELD}>&-
listening "an early SIGTERM"
wait_within 10 "$RX_PID" "the receiver after an early SIGTERM" ||
	fail "an early SIGTERM did not stop the receiver within 10 s"
expect_status 0 "$WAIT_STATUS" "the receiver after an early SIGTERM"
