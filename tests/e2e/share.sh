# SPDX-License-Identifier: MIT
# One address cannot hold the class server (the per-address share), over
# the bed, which gives this host two addresses: its IPv4 one and its IPv6
# one.  Four slow senders from the IPv4 address (tests/evil-sender
# dribble: a chunk every 4 s) take every place of a receiver with -c 4;
# a fifth from that address is refused as busy; an honest sender from
# the IPv6 address, with --wait, gets its key at once: the slow session
# that had stored the least is ended, and told why.
# Then window memory (the per-address turns): with a budget of one
# window, three slow senders from the IPv4 address each hold it about 4 s
# a chunk; an honest sender of four chunks from the IPv6 address goes
# first whenever the window comes free (its address holds none): it
# waits about one slow chunk for each of its own, not three (first come,
# first served would make that about 48 s).
. tests/e2e/lib.sh

# sessions_reached STATE N WHAT: wait (polled: no event to block on; at
# most 30 s) until N sessions of the receiver's -v trace have entered
# STATE, or fail naming WHAT.
sessions_reached() {
	local reached=0
	for _ in $(seq 300); do
		reached=$(grep "state $1" "$RX_DIR/stderr" |
			grep -o "session [0-9]*:" | sort -u | wc -l)
		[ "$reached" -ge "$2" ] && return 0
		sleep 0.1
	done
	fail "$3 did not start ($reached of $2 in state $1)"
}

[ -n "${RXE_ADDR6:-}" ] || fail "RXE_ADDR6 is not set: the bed gave no IPv6 address"
start_receiver -v -c 4 -w 64K -n 2 -b 1M -k "$TEST_TMP/secret" || fail "no receiver"
pids=()
for i in 1 2 3 4; do
	tests/evil-sender -s 1M dribble "$RXE_ADDR" "$RX_PORT" \
		>"$TEST_TMP/dribble$i" &
	pids+=($!)
done
sessions_reached RECV_DONE 4 "the four slow sessions"

make_file "$TEST_TMP/one" 100000
run_sender -t 5 -i fifth "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/one"
expect_sender_fails 4 "receiver busy with 4 other sessions" \
	"a fifth sender from the address that holds every place"

start=$SECONDS
run_sender -t 10 --wait 60 -i other "$RXE_ADDR6" "$RX_PORT" "$TEST_TMP/one"
expect_status 0 "$SENDER_STATUS" "a sender from the other address ($SENDER_ERR)"
want=$(./receiver -k "$TEST_TMP/secret" --key-for other)
[ "$SENDER_OUT" = "secret key: ${want#*: }" ] ||
	fail "the sender from the other address: '$SENDER_OUT'"
echo "the sender from the other address got its key in $((SECONDS - start)) s"
[ $((SECONDS - start)) -le 20 ] ||
	fail "the sender from the other address waited $((SECONDS - start)) s"
ended=0 served=0
for _ in 1 2; do
	line=$(next_line 30) || fail "fewer than 2 summary lines"
	echo "$line"
	case $line in
	*"failed: ended for a sender from another address: yours held 4 of 4 places (the per-address share)") ended=1 ;;
	*"id other, 100000 bytes, verdict good, key sent"*) served=1 ;;
	*) fail "unexpected summary: $line" ;;
	esac
done
[ "$ended$served" = 11 ] || fail "no slow session ended for the other sender"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after SIGTERM"
for pid in "${pids[@]}"; do
	wait_within 60 "$pid" "a slow sender"
done

# The per-address turns.
start_receiver -v -c 8 -w 64K -n 2 -b 64K -k "$TEST_TMP/secret" ||
	fail "no receiver with a budget of one window"
pids=()
for i in 1 2 3; do
	tests/evil-sender -s 1M dribble "$RXE_ADDR" "$RX_PORT" \
		>"$TEST_TMP/turns$i" &
	pids+=($!)
done
sessions_reached SEND_REGION 3 "the three slow sessions"
make_file "$TEST_TMP/four" $((4 * 65536))
start=$SECONDS
run_sender -t 30 -i turns "$RXE_ADDR6" "$RX_PORT" "$TEST_TMP/four"
took=$((SECONDS - start))
expect_status 0 "$SENDER_STATUS" "a sender from the other address, short of window memory ($SENDER_ERR)"
echo "four chunks from the other address, one window for all: $took s"
[ "$took" -le 30 ] || fail "the sender from the other address took $took s \
for 4 chunks: it waited behind every slow session, not its address's turn"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with one window after SIGTERM"
for pid in "${pids[@]}"; do
	wait_within 60 "$pid" "a slow sender"
done
