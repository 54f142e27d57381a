# A sender that breaks the protocol (tests/evil-sender) in every way it
# knows, one session each (and one that breaks its own completions).
# For every case: the receiver logs one clear
# line (its summary, saying the session failed or the verdict was bad),
# no file appears in its output directory, no key is released, and the
# receiver completes a normal transfer right after.
. tests/e2e/lib.sh

out="$TEST_TMP/out"
mkdir "$out"
start_receiver -t 3 -m 1M -o "$out" -k "$TEST_TMP/secret" ||
	fail "no receiver"
make_file "$TEST_TMP/good" 100000

cases=0
for mode in bad-magic bad-version bad-length out-of-order over-limit \
	zero-then-write write-past-region write-after-done done-twice \
	id-before-verdict id-control id-too-long silent stop-mid-write \
	gone-after-info gone-after-region gone-after-done gone-after-verdict
do
	tests/evil-sender "$mode" "$RXE_ADDR" "$RX_PORT" ||
		fail "$mode: the evil sender could not run"
	expect_summary "(failed: |verdict bad)" "$mode"
	case $SUMMARY in *"key sent"*) fail "$mode: a key was released" ;; esac
	expect_saved_only "$out"

	run_sender -i good "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/good"
	expect_status 0 "$SENDER_STATUS" "a good sender after $mode ($SENDER_ERR)"
	expect_summary "id good, 100000 bytes, verdict good, key sent" \
		"the good sender after $mode"
	rm -r "$out/good"
	cases=$((cases + 1))
done
echo "$cases misbehaving senders, each followed by a good one"

# A sender that writes its chunk and never says DONE: the receiver gives
# up after its -t, and tells the sender (ERROR) which message it waited
# for, as its own summary does.
waited="timed out after 3 s waiting for DONE of the chunk at offset 0"
line=$(tests/evil-sender no-done "$RXE_ADDR" "$RX_PORT") ||
	fail "no-done: the evil sender could not run"
[ "$line" = "evil-sender: the receiver stopped it: $waited" ] ||
	fail "no-done: the sender was not told what the receiver waited for: $line"
expect_summary "verdict none, [0-9.]+ s, failed: $waited\$" "no-done"

# No RDMA at all (unwritten: FILE_INFO for zeros with their hash, then a
# DONE for the REGION, no WRITE), for a small file and one that fills
# its window: the receiver's canaries end it at that first DONE, and say
# where nothing was written.
unwritten="chunk at offset 0: nothing was written at window offset 0"
unwritten+=" (a DONE before its RDMA WRITEs, or none?)"
for size in 5000 1M; do
	line=$(tests/evil-sender -s "$size" unwritten "$RXE_ADDR" "$RX_PORT") ||
		fail "unwritten $size: the evil sender: $line"
	[ "$line" = "evil-sender: unwritten: the receiver stopped it after 1 DONE: $unwritten" ] ||
		fail "unwritten $size: $line"
	expect_summary "verdict none, [0-9.]+ s, failed: ${unwritten//[()?]/.}\$" \
		"unwritten $size"
	expect_saved_only "$out"
done

# A WRITE posted with a wr_id that names a receive: the sender's own
# completion handling says so, and does not blame the receiver.
line=$(tests/evil-sender wrong-wr-id "$RXE_ADDR" "$RX_PORT") ||
	fail "wrong-wr-id: $line"
case $line in
"evil-sender: wrong-wr-id: its own completion handling stopped it: our own RDMA_WRITE completed with wr_id 0x0, which names no RDMA_WRITE of ours"*) ;;
*) fail "wrong-wr-id: $line" ;;
esac
expect_summary "verdict none, [0-9.]+ s, failed: " "wrong-wr-id"
expect_saved_only "$out"

stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"

# --min-size: a file under it is refused at FILE_INFO (exit 4, saying
# so); one of its size goes through.
start_receiver -t 3 --min-size 8 -k "$TEST_TMP/secret" || fail "no receiver"
SESSION=0
make_file "$TEST_TMP/seven" 7
make_file "$TEST_TMP/eight" 8
run_sender -i small "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/seven"
expect_sender_fails 4 "refused: file of 7 bytes is under the receiver's minimum of 8 bytes$" \
	"a 7-byte file to --min-size 8"
expect_summary "verdict none, .*failed: file of 7 bytes is under" "seven"
run_sender -i small "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/eight"
expect_status 0 "$SENDER_STATUS" "an 8-byte file to --min-size 8 ($SENDER_ERR)"
expect_summary "id small, 8 bytes, verdict good, key sent" "eight"
stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"
