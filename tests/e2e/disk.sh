# SPDX-License-Identifier: MIT
# A full disk takes no key away (over the bed, as root: a tmpfs of 12 MiB
# holds -o and -l): four senders of 5 MiB one after the other; each gets
# its key, or an ERROR (exit 4) that names the lack of room; the
# receiver keeps 1 MiB free for the ledger, which records all four
# attempts (the second refusal summed up at the end); two good transfers under one ID and name keep both files,
# and the ledger names each.
. tests/e2e/lib.sh

disk=$TEST_TMP/disk
mkdir "$disk"
mount -t tmpfs -o size=12m tmpfs "$disk" || fail "cannot mount a tmpfs on $disk"
# shellcheck disable=SC2064 # the path now
trap "umount '$disk' 2>/dev/null; rm -rf '$TEST_TMP'" EXIT
mkdir "$disk/out"
start_receiver -o "$disk/out" -l "$disk/ledger" -k "$TEST_TMP/secret" ||
	fail "no receiver"
make_file "$TEST_TMP/five" $((5 << 20))
keys=0 refused=0
for i in 1 2 3 4; do
	run_sender -i student "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/five"
	case $SENDER_STATUS in
	0)	keys=$((keys + 1))
		expect_summary "id student, 5242880 bytes, verdict good, key sent, saved as student/five$([ "$keys" -gt 1 ] && echo ".$keys")," \
			"sender $i" ;;
	4)	refused=$((refused + 1))
		expect_sender_fails 4 "refused: no room to save a file of 5242880 bytes: [0-9]+ bytes free, of which the receiver keeps 1048576$" \
			"sender $i, short of room"
		expect_summary "verdict none, .*failed: no room to save" "sender $i" ;;
	*)	fail "sender $i: exit status $SENDER_STATUS ($SENDER_ERR)" ;;
	esac
done
echo "$keys keys, $refused refused for room"
[ "$keys" -eq 2 ] && [ "$refused" -eq 2 ] ||
	fail "$keys keys and $refused refusals, expected 2 and 2"
cmp "$TEST_TMP/five" "$disk/out/student/five" &&
	cmp "$TEST_TMP/five" "$disk/out/student/five.2" ||
	fail "the two files saved under one ID and name are not both kept"
# The two refusals (no verdict, one address, within a minute): the first
# has a record, the second is summed up when the receiver stops.
[ "$(wc -l <"$disk/ledger")" -eq 3 ] ||
	fail "the ledger has $(wc -l <"$disk/ledger") records, expected 3"
# The ledger says which name each saved file got.
saved=$(grep -o '"key_sent":true,"error":null,"saved_as":"[^"]*"}$' \
	"$disk/ledger" | sed 's/.*"saved_as":"//; s/"}$//' | tr '\n' ' ')
[ "$saved" = "student/five student/five.2 " ] ||
	fail "the ledger names the saved files '$saved', expected student/five and student/five.2"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after SIGTERM"
# expect_summed_up LEDGER N WHAT: LEDGER's last record (its fourth) sums
# up N sessions from the bed's address that ended without a key.
expect_summed_up() {
	[ "$(wc -l <"$1")" -eq 4 ] &&
		tail -n 1 "$1" | grep -q "\"peer\":\"$RXE_ADDR\",.*\"error\":\"$2 sessions\\? from this address ended without a key since .* (recorded together); the last: no room to save" ||
		fail "$3: the ledger's last of $(wc -l <"$1") records does not sum up $2 refusal: $(tail -n 1 "$1")"
}
expect_summed_up "$disk/ledger" 1 "the full disk"

# --store-max 12M over a directory that holds 4 MiB already (counted at
# start): a file of 5 MiB fits, a second does not (RESOURCES, exit 4,
# naming the limit); once the 4 MiB are removed, a third is refused too
# until a SIGHUP counts them again, then fits; the ledger records the
# first refusal and the two keys, and sums up the second refusal at the
# end.
mkdir -p "$TEST_TMP/capped/earlier"
make_file "$TEST_TMP/capped/earlier/old" $((4 << 20))
start_receiver -o "$TEST_TMP/capped" --store-max 12M -l "$TEST_TMP/ledger2" \
	-k "$TEST_TMP/secret" || fail "no receiver with --store-max"
run_sender -i capped "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/five"
expect_status 0 "$SENDER_STATUS" "the first 5 MiB under --store-max 12M ($SENDER_ERR)"
run_sender -i capped "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/five"
expect_sender_fails 4 "refused: no room to save a file of 5242880 bytes: 9437184 of the receiver's --store-max 12582912 are taken$" \
	"the second 5 MiB under --store-max 12M"
# The instructor removes the 4 MiB that were there: a refusal never
# walks the disk (still refused), a SIGHUP (systemctl reload) counts the
# directory again, and the file fits.
rm -r "$TEST_TMP/capped/earlier"
run_sender -i capped "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/five"
expect_sender_fails 4 "refused: no room to save a file of 5242880 bytes: 9437184 of the receiver's --store-max 12582912 are taken$" \
	"5 MiB under --store-max 12M once 4 MiB were removed, before a reload"
kill -HUP "$RX_PID"
expect_stderr_line "^receiver: SIGHUP: -o $TEST_TMP/capped counted again: 0 files kept \(no quotas\)$" \
	"the SIGHUP after the 4 MiB were removed"
run_sender -i capped "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/five"
expect_status 0 "$SENDER_STATUS" "5 MiB under --store-max 12M once 4 MiB were removed ($SENDER_ERR)"
# The two refusals (no verdict) from one address within a minute: the
# first has its record, the second is summed up when the receiver stops.
[ "$(wc -l <"$TEST_TMP/ledger2")" -eq 3 ] ||
	fail "--store-max: the ledger has $(wc -l <"$TEST_TMP/ledger2") records, expected 3"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with --store-max after SIGTERM"
expect_summed_up "$TEST_TMP/ledger2" 1 "--store-max"
