# SPDX-License-Identifier: MIT
# A sender that takes none of the receiver's messages cannot freeze it
# (tests/evil-sender starve): the attacker asks for endless RNR retries,
# posts one receive, announces as many chunks as once filled the
# receiver's send queue with REGIONs it never takes, and sends a DONE for
# each chunk without writing a byte.  Since the receiver plants canaries
# in each window, the first of those DONEs ends the session ("nothing was
# written"), and its ERROR, finding no receive, ends by the bounded RNR
# retries: the send queue can no longer fill (a peer gets a REGION past
# the windows only for a chunk it wrote, and each REGION it did not take
# holds one window).  For each receiver set up below:
#   - with the default -c, three honest senders started once the
#     receiver has the attack's first DONE all get their keys, none
#     refused as busy; with -c 1, an honest sender is served once the
#     attack has ended;
#   - the attacker's session ends by itself, though it asked for endless
#     RNR retries;
#   - SIGTERM sent then stops the receiver within 5 s.
#
#   tests/e2e/starve.sh quick  -w 64K -n 2 with the default -c (a quick look)
#   tests/e2e/starve.sh all    that, -w 64K -n 2 with -c 1, and the default
#                              windows with the default -c and -c 1
#                              (make test-long)
. tests/e2e/lib.sh

OVERRUN="failed: protocol error: the peer sent more messages than it may"
UNWRITTEN="failed: chunk at offset 0: none of its [0-9]+ places checked was written .*"
make_file "$TEST_TMP/h1" 0
make_file "$TEST_TMP/h2" 300000
make_file "$TEST_TMP/h3" $((3 << 20))

# attack DONES: start the attack on the receiver, and wait (polled: no
# event to block on; 30 s at most) until its -v trace shows DONES of the
# attack's DONEs received.
attack() {
	local want deadline=$((SECONDS + 30))
	want=$(($(grep -c "received DONE" "$RX_DIR/stderr") + $1))
	tests/evil-sender starve "$RXE_ADDR" "$RX_PORT" \
		>"$TEST_TMP/starve.out" 2>&1 &
	STARVE_PID=$!
	while [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(grep -c "received DONE" "$RX_DIR/stderr")" -ge "$want" ] &&
			return 0
		sleep 0.05
	done
	fail "$CASE: the receiver did not have $1 of the attack's DONEs" \
		"within 30 s: $(cat "$TEST_TMP/starve.out")"
}

# honest N: N honest senders at once (files h1..hN), -t 10; each gets the
# key of its ID, none is refused as busy.
honest() {
	local pids=() i want
	for i in $(seq "$1"); do
		./sender -t 10 -i "honest$i" "$RXE_ADDR" "$RX_PORT" \
			"$TEST_TMP/h$i" >"$TEST_TMP/h$i.out" \
			2>"$TEST_TMP/h$i.err" &
		pids+=($!)
	done
	for i in $(seq "$1"); do
		wait_within 60 "${pids[$((i - 1))]}" "honest sender $i"
		expect_status 0 "$WAIT_STATUS" \
			"$CASE: honest sender $i ($(cat "$TEST_TMP/h$i.err"))"
		want=$(./receiver -k "$TEST_TMP/secret" --key-for "honest$i")
		[ "$(cat "$TEST_TMP/h$i.out")" = "secret key: ${want#*: }" ] ||
			fail "$CASE: honest sender $i: $(cat "$TEST_TMP/h$i.out")"
	done
}

# summaries N ATTACKS: the receiver's next N summary lines, checked as
# they come: the probe's, ATTACKS (0 or 1) of the attack's session (which
# must match ATTACK_END), and honest ones with their keys, in any order;
# LATE_HONEST counts the honest ones after the attack's.
summaries() {
	local line attacker=0
	LATE_HONEST=0
	for _ in $(seq "$1"); do
		line=$(next_line 60) || fail "$CASE: fewer than $1 summary lines"
		echo "$line"
		case $line in
		*"id honest"*", verdict good, key sent,"*)
			LATE_HONEST=$((LATE_HONEST + attacker)) ;;
		*", failed: the sender gave up: a probe, nothing more") ;;
		*" 1114112 bytes, "* | *" 285212672 bytes, "*)
			printf '%s\n' "$line" |
				grep -Eq ", verdict none, .*($ATTACK_END)\$" ||
				fail "$CASE: the attack's session: $line"
			attacker=1 ;;
		*) fail "$CASE: unexpected summary: $line" ;;
		esac
	done
	[ "$attacker" -eq "$2" ] ||
		fail "$CASE: $attacker summaries of the attack's session, not $2"
}

# attacker_done: the evil sender saw the receiver end its session.
attacker_done() {
	wait_within 90 "$STARVE_PID" "the evil sender"
	expect_status 0 "$WAIT_STATUS" "$CASE: $(cat "$TEST_TMP/starve.out")"
	grep -q "the receiver ended the session" "$TEST_TMP/starve.out" ||
		fail "$CASE: $(cat "$TEST_TMP/starve.out")"
}

# run_case SESSIONS WINDOW_OPTIONS...: the checks of the top, on a
# receiver with -c SESSIONS and the window options.  The honest senders
# and SIGTERM come once the receiver has the attack's first DONE.  The
# attack's session ends by the canaries (UNWRITTEN), or, where its ERROR
# or a REGION finds no receive first, by the RNR retries, or by the rules
# when DONEs for chunks not yet offered overrun its inbox (OVERRUN).
# SIGTERM may come after that end.
run_case() {
	local sessions=$1 start ms
	shift
	CASE="-c $sessions $*"
	echo "== $CASE"
	start_receiver -v -c "$sessions" "$@" -t 10 -k "$TEST_TMP/secret" ||
		fail "$CASE: no receiver"
	ATTACK_END="$UNWRITTEN|failed: SEND failed: the peer posted no receive for it \(RNR retries exhausted\)|$OVERRUN"
	attack 1
	if [ "$sessions" -gt 1 ]; then
		honest 3
		summaries 5 1
		attacker_done
	else
		summaries 2 1
		attacker_done
		honest 1
		summaries 1 0
	fi

	ATTACK_END="$ATTACK_END|failed: interrupted by a signal"
	attack 1
	start=$EPOCHREALTIME
	kill -TERM "$RX_PID"
	wait_within 5 "$RX_PID" "$CASE: the receiver, 5 s after SIGTERM,"
	ms=$(awk -v a="$start" -v b="$EPOCHREALTIME" \
		'BEGIN { printf "%d", (b - a) * 1000 }')
	echo "$CASE: the receiver stopped $ms ms after SIGTERM"
	expect_status 0 "$WAIT_STATUS" "$CASE: the receiver after SIGTERM"
	summaries 2 1
	attacker_done
}

run_case 16 -w 64K -n 2
if [ "${1:-quick}" = all ]; then
	run_case 1 -w 64K -n 2
	run_case 16
	run_case 1
fi
