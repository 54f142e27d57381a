# A sender that takes none of the receiver's messages cannot freeze it
# (tests/evil-sender starve): the attacker asks for endless RNR retries,
# posts one receive, and announces exactly as many chunks as fill the
# receiver's send queue with REGIONs it never takes, so that the VERDICT
# finds no room; it sends a DONE for each chunk without writing a byte.
# For each receiver set up below:
#   - with the default -c, three honest senders started once the
#     receiver has the attack's DONEs (with 64K windows, its send queue is
#     then full) all get their keys, none refused as busy; with -c 1, an
#     honest sender is served once the attack has ended;
#   - the attacker's session ends by itself when the receiver's bounded
#     RNR retries run out ("RNR retries exhausted"), though it asked for
#     endless ones;
#   - SIGTERM sent then stops the receiver within 5 s, the attacker's
#     session "interrupted by a signal".
# And with -t 1 the attack's session ends sooner, its send queue full for
# 1 s ("timed out after 1 s with the send queue full").
#
#   tests/e2e/starve.sh quick  -w 64K -n 2 with the default -c, and -t 1
#                              (make test)
#   tests/e2e/starve.sh all    that, -w 64K -n 2 with -c 1, and the default
#                              windows with the default -c and -c 1
#                              (make test-long)
. tests/e2e/lib.sh

OVERRUN="failed: protocol error: the peer sent more messages than it may"
make_file "$TEST_TMP/h1" 0
make_file "$TEST_TMP/h2" 300000
make_file "$TEST_TMP/h3" $((3 << 20))

# attack DONES: start the attack on the receiver, and wait (polled: no
# event to block on; 30 s at most) until its -v trace shows DONES of the
# attack's 17 DONEs received.
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

# run_case SESSIONS FULL WINDOW_OPTIONS...: the three checks of the top,
# on a receiver with -c SESSIONS and the window options.  With FULL 1, the
# honest senders and SIGTERM come once the receiver has all the attack's
# DONEs, and the first attack must have filled its send queue: with 64K
# windows that is at once.  With FULL 0, they come at its first DONE: with
# 16 MiB chunks to hash for each DONE, the receiver takes them slowly, and
# the attack ends before the queue fills, either way bounded: by the RNR
# retries, or by the rules when DONEs for chunks it has not yet offered
# overrun its inbox (OVERRUN).  SIGTERM may then come after that end.
run_case() {
	local sessions=$1 full=$2 start ms dones=1
	shift 2
	[ "$full" -eq 0 ] || dones=17
	CASE="-c $sessions $*"
	echo "== $CASE"
	start_receiver -v -c "$sessions" "$@" -t 10 -k "$TEST_TMP/secret" ||
		fail "$CASE: no receiver"
	ATTACK_END="failed: SEND failed: the peer posted no receive for it \(RNR retries exhausted\)"
	[ "$full" -eq 1 ] || ATTACK_END="$ATTACK_END|$OVERRUN"
	attack "$dones"
	if [ "$sessions" -gt 1 ]; then
		honest 3
		summaries 5 1
		attacker_done
		# With the send queue full at once, the honest sessions, a
		# fraction of a second each, end long before the attack's
		# RNR retries run out: unless the receiver waited for it.
		[ "$full" -eq 0 ] || [ "$LATE_HONEST" -eq 0 ] ||
			fail "$CASE: $LATE_HONEST honest sessions ended after the attack's"
	else
		summaries 2 1
		attacker_done
		honest 1
		summaries 1 0
	fi
	[ "$full" -eq 0 ] || grep -q "the send queue is full" "$RX_DIR/stderr" ||
		fail "$CASE: the attack never filled the receiver's send queue"

	if [ "$full" -eq 1 ]; then
		ATTACK_END="failed: interrupted by a signal"
	else
		ATTACK_END="$ATTACK_END|failed: interrupted by a signal"
	fi
	attack "$dones"
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

# room_timeout_case: with -t 1, the attack's session ends before its RNR
# retries run out: its send queue stayed full for 1 s, no message taken.
room_timeout_case() {
	CASE="-t 1 -w 64K -n 2"
	echo "== $CASE"
	start_receiver -v -w 64K -n 2 -t 1 -k "$TEST_TMP/secret" ||
		fail "$CASE: no receiver"
	ATTACK_END="failed: timed out after 1 s with the send queue full: the sender took none of our last 16 messages"
	attack 17
	summaries 2 1
	attacker_done
	stop_receiver 5
	expect_status 0 "$RX_STATUS" "$CASE: the receiver after SIGTERM"
}

run_case 16 1 -w 64K -n 2
room_timeout_case
if [ "${1:-quick}" = all ]; then
	run_case 1 1 -w 64K -n 2
	run_case 16 0
	run_case 1 0
fi
