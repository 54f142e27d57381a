# SPDX-License-Identifier: MIT
# Files through small receiver windows (-w 64K): one window, two, many;
# odd sizes and exact multiples, the sender's memory registered once; a bad verdict on a many-window file; and
# a sender that writes into a window the receiver has taken back (both
# from tests/evil-sender).
. tests/e2e/lib.sh

out="$TEST_TMP/out"
mkdir "$out"
start_receiver -w 64K -n 3 -o "$out" -k "$TEST_TMP/secret" ||
	fail "no receiver"


# One window: exactly the lab's sequence, one REGION and one DONE.
make_file "$TEST_TMP/one" 65536
run_sender -v -i one "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/one"
expect_status 0 "$SENDER_STATUS" "a file of exactly one window"
regions=$(grep -c "received REGION" "$TEST_TMP/sender.err")
dones=$(grep -c "send DONE" "$TEST_TMP/sender.err")
[ "$regions" -eq 1 ] && [ "$dones" -eq 1 ] ||
	fail "one window: $regions REGIONs and $dones DONEs, expected 1 and 1"
expect_summary "verdict good, key sent, saved as one/one," "one window"
cmp "$TEST_TMP/one" "$out/one/one" || fail "one window: saved file differs"

# size name chunks: two windows, an odd many, an exact many.
for spec in "131072 two 2" "1060865 odd 17" "1310720 exact 20"; do
	set -- $spec
	make_file "$TEST_TMP/$2" "$1"
	run_sender -v -i "$2" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/$2"
	expect_status 0 "$SENDER_STATUS" "$2 ($1 bytes): $SENDER_ERR"
	[ "$SENDER_OUT" = "secret key: $(./receiver -k "$TEST_TMP/secret" --key-for "$2")" ] ||
		fail "$2: wrong key: $SENDER_OUT"
	regions=$(grep -c "received REGION" "$TEST_TMP/sender.err")
	[ "$regions" -eq "$3" ] ||
		fail "$2: $regions REGIONs for $1 bytes, expected $3"
	# Its memory is registered once, however many chunks (pieces.h).
	rings=$(grep -c "registered the staging ring" "$TEST_TMP/sender.err")
	[ "$rings" -eq 1 ] ||
		fail "$2: the sender registered its staging ring $rings times" \
			"over $3 chunks, expected once"
	expect_summary "id $2, $1 bytes, verdict good, key sent, saved as $2/$2," "$2"
	cmp "$TEST_TMP/$2" "$out/$2/$2" || fail "$2: saved file differs"
done
expect_saved_only "$out" one/one two/two odd/odd exact/exact

# evil_sender MODE NAME WHAT: tests/evil-sender MODE, sending 1060865
# bytes (17 windows) as NAME; it must exit 0, and its line goes in EVIL.
evil_sender() {
	EVIL=$(tests/evil-sender -s 1060865 -n "$2" -i "$2" "$1" "$RXE_ADDR" \
		"$RX_PORT")
	expect_status 0 $? "$3: tests/evil-sender $1 ($EVIL)"
	echo "$EVIL"
}

# A bad verdict on a many-window file (a wrong hash from tests/evil-sender,
# the file sent honestly through every window) saves nothing.
evil_sender bad-hash bad "a bad hash over 17 windows"
case $EVIL in
"evil-sender: bad-hash: 1060865 bytes in 17 chunks, "*", verdict bad") ;;
*) fail "a bad hash over 17 windows: '$EVIL'" ;;
esac
expect_summary "id -, 1060865 bytes, verdict bad, [0-9.]+ s$" \
	"bad hash over many windows"
expect_saved_only "$out" one/one two/two odd/odd exact/exact

# A write with a revoked window's rkey (tests/evil-sender stale-write:
# when the first window comes round again, 1 byte under its old rkey):
# the receiver's device refuses it, the session fails, nothing is saved.
# Over InfiniBand and RoCE the WRITE itself fails; over iWARP it completes
# once sent, and the refusal (a TERMINATE) breaks the connection after.
refused="remote access error"
iwarp && refused="the connection broke (work requests flushed)"
evil_sender stale-write stale "a write into a revoked window"
case $EVIL in
"evil-sender: stale-write: the write under the old rkey failed: "*"$refused"*) ;;
*) fail "a write into a revoked window: '$EVIL'" ;;
esac
expect_summary "id -, 1060865 bytes, verdict none, .*failed: " \
	"a write into a revoked window"
expect_saved_only "$out" one/one two/two odd/odd exact/exact

# And the receiver serves the next sender.
run_sender -i after "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/odd"
expect_status 0 "$SENDER_STATUS" "a transfer after the failures"
expect_summary "id after, 1060865 bytes, verdict good" "the transfer after"

stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"
