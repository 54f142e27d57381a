# Files of many sizes through one receiver, one session after another.
# Each transfer: the sender exits 0 and prints exactly one line, the key;
# the key equals `receiver --key-for ID`; the saved file equals the one
# sent; the receiver's summary says good and key sent.
. tests/e2e/lib.sh

mkdir "$TEST_TMP/out"
start_receiver -o "$TEST_TMP/out" -k "$TEST_TMP/secret" || fail "no receiver"

# size name: 0 B, 1 B, 4 KiB, 1 MiB, an odd size, 64 MiB (several RDMA
# WRITEs: rxe's largest message is 8 MiB).
saved=()
for size in 0 1 4096 1048576 3145745 67108864; do
	file="$TEST_TMP/file-$size.bin"
	id="student-$size"
	make_file "$file" "$size"
	run_sender -i "$id" "$RXE_ADDR" "$RX_PORT" "$file"
	expect_status 0 "$SENDER_STATUS" "sender of $size bytes ($SENDER_ERR)"
	want="secret key: $(./receiver -k "$TEST_TMP/secret" --key-for "$id")"
	[ "$SENDER_OUT" = "$want" ] ||
		fail "$size bytes: stdout '$SENDER_OUT', expected '$want'"
	# Not a terminal: no progress bar, just the one summary line.
	[ "$(printf '%s\n' "$SENDER_ERR" | wc -l)" -eq 1 ] &&
		printf '%s\n' "$SENDER_ERR" | grep -Eq "verdict good; hash .* MB/s$" ||
		fail "$size bytes: stderr is not one summary line: $SENDER_ERR"
	summary=$(next_line) || fail "no summary line for $size bytes"
	echo "$summary"
	case $summary in
	*"id $id, $size bytes, verdict good, key sent, saved as file-$size.bin"*) ;;
	*) fail "$size bytes: summary '$summary'" ;;
	esac
	cmp "$file" "$TEST_TMP/out/file-$size.bin" ||
		fail "$size bytes: the saved file differs"
	saved+=("file-$size.bin")
	rm "$file"
done
expect_saved_only "$TEST_TMP/out" "${saved[@]}"

# Stopping: SIGTERM ends the receiver cleanly.
stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"
