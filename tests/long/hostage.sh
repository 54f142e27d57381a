# SPDX-License-Identifier: MIT
# No peer can hold the receiver hostage.  One receiver (-c 4) while it is
# under attack from the same host: a slow sender that keeps its session
# alive but moves far under the rate floor (evil-sender dribble), and a
# flood of idle connections that never send FILE_INFO (evil-sender
# silent, more of them than -c).  Six honest senders, one after another,
# each with --wait, all get their keys while the attack runs; each
# attacker's session ends for the documented reason: the idle limit (a
# full receiver ends the longest-idle session to take a new sender), the
# handshake limit (no FILE_INFO within 10 s), the rate floor.
. tests/e2e/lib.sh

out="$TEST_TMP/out"
mkdir "$out"
start_receiver -v -c 4 -t 10 -w 256K -n 2 -o "$out" \
	-k "$TEST_TMP/secret" || fail "no receiver"
make_file "$TEST_TMP/small" 100000

# traced N PATTERN: wait (20 s at most, looking every 0.1 s: there is no
# event to wait on) until the receiver's -v trace has N lines matching
# PATTERN.
traced() {
	local tries=0
	until [ "$(grep -c -- "$2" "$RX_DIR/stderr")" -ge "$1" ]; do
		tries=$((tries + 1))
		[ "$tries" -le 200 ] || fail "no $1 lines '$2' in the trace"
		sleep 0.1
	done
}

# The slow sender first, until its first chunk is under way; then the
# flood, until the receiver is full and refuses one as busy.  It
# announces 64 MiB: a floor on the whole file's time would give it 94 s;
# the floor over the last 30 s ends it after about 30.
dribble_start=$(date +%s)
(tests/evil-sender -s 64M dribble "$RXE_ADDR" "$RX_PORT"
 status=$?
 date +%s >"$TEST_TMP/dribble.end"
 exit $status) >"$TEST_TMP/dribble.out" &
dribble_pid=$!
traced 1 "session 1: state RECV_DONE"
flood_pids=()
for i in 1 2 3 4 5; do
	tests/evil-sender silent "$RXE_ADDR" "$RX_PORT" \
		>"$TEST_TMP/silent$i.out" &
	flood_pids+=($!)
done
traced 1 "refusing a connection: receiver busy"

for i in 1 2 3 4 5 6; do
	run_sender --wait 60 -t 60 -i "honest$i" "$RXE_ADDR" "$RX_PORT" \
		"$TEST_TMP/small"
	expect_status 0 "$SENDER_STATUS" "honest sender $i ($SENDER_ERR)"
	want=$(./receiver -k "$TEST_TMP/secret" --key-for "honest$i")
	[ "$SENDER_OUT" = "secret key: ${want#*: }" ] ||
		fail "honest sender $i: '$SENDER_OUT', expected $want"
	echo "honest sender $i: key; $SENDER_ERR"
	rm -r "$out/honest$i"
done

wait_within 120 "$dribble_pid" "tests/evil-sender dribble"
expect_status 0 "$WAIT_STATUS" "tests/evil-sender dribble ($(cat "$TEST_TMP/dribble.out"))"
cat "$TEST_TMP/dribble.out"
dribble_s=$(($(cat "$TEST_TMP/dribble.end") - dribble_start))
echo "the dribbling sender was stopped after $dribble_s s"
[ "$dribble_s" -lt 60 ] || fail "the dribbling sender of 64 MiB lasted \
$dribble_s s: the rate floor must look at the last 30 s, not the whole file"
for pid in "${flood_pids[@]}"; do
	# 0, or 2 when it was refused as busy: either is fine
	wait_within 120 "$pid" "a flooding evil sender"
done

keys=0 idle=0 handshake=0 rate=0 sessions=0
while line=$(next_line 5); do
	echo "$line"
	sessions=$((sessions + 1))
	case $line in
	*"id honest"*", key sent, saved as honest"*"/small"*) keys=$((keys + 1)) ;;
	*"failed: ended to make room for another sender: no FILE_INFO in "*" s while the receiver was full (the idle limit)")
		idle=$((idle + 1)) ;;
	*"failed: no FILE_INFO within 10 s of connecting (the handshake limit)")
		handshake=$((handshake + 1)) ;;
	*"failed: too slow: "*" bytes stored in the last 30 s (the rate floor: 1 MiB/s over any 30 s)")
		rate=$((rate + 1)) ;;
	*) fail "a session that ended for no documented reason: $line" ;;
	esac
	[ "$sessions" -lt 12 ] || break
done
echo "keys $keys, idle limit $idle, handshake limit $handshake, rate floor $rate"
[ "$keys" -eq 6 ] || fail "$keys honest senders got their keys, not 6"
[ "$idle" -ge 1 ] || fail "no idle connection was ended to make room"
[ "$rate" -eq 1 ] || fail "the dribbling sender was not ended by the rate floor"
[ $((idle + handshake)) -ge 3 ] ||
	fail "only $((idle + handshake)) idle connections ended by a limit"

stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after SIGTERM"
