# Many senders at once, as in a class before a deadline: one receiver
# (-c 20) serves 16 honest senders started together, files from 0 bytes
# to 16 MiB (many windows of a small -w), with three misbehaving senders
# mixed in (one silent until the receiver's handshake limit, one gone after
# FILE_INFO, one with a bad magic).  Every honest sender gets the key its
# ID should get, no sender is refused as busy, every saved file is
# byte-identical, each session has one summary line and one well-formed
# ledger record, and the misbehaving sessions fail without holding up the
# others: every honest session ends before the silent one times out.
# Then two students send files of the same name at once: each is saved
# under its ID.
. tests/e2e/lib.sh

out="$TEST_TMP/out"
ledger="$TEST_TMP/ledger"
mkdir "$out"
start_receiver -c 20 -w 256K -n 4 -t 20 -o "$out" -k "$TEST_TMP/secret" \
	-l "$ledger" || fail "no receiver"

sizes=(0 1 4095 4096 65537 262144 262145 1000000 1048576 3000001 4194304
	5242881 8388608 12345678 16777216 7)
for i in "${!sizes[@]}"; do
	make_file "$TEST_TMP/f$i" "${sizes[$i]}"
done

evil_pids=()
tests/evil-sender silent "$RXE_ADDR" "$RX_PORT" >"$TEST_TMP/evil-silent" &
evil_pids+=($!)
pids=()
for i in "${!sizes[@]}"; do
	./sender -q -i "student$i" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/f$i" \
		>"$TEST_TMP/s$i.out" 2>"$TEST_TMP/s$i.err" &
	pids+=($!)
done
for mode in gone-after-info bad-magic; do
	tests/evil-sender "$mode" "$RXE_ADDR" "$RX_PORT" \
		>"$TEST_TMP/evil-$mode" &
	evil_pids+=($!)
done

for i in "${!sizes[@]}"; do
	wait "${pids[$i]}"
	expect_status 0 $? "sender $i of ${#sizes[@]} ($(cat "$TEST_TMP/s$i.err"))"
	want=$(./receiver -k "$TEST_TMP/secret" --key-for "student$i")
	[ "$(cat "$TEST_TMP/s$i.out")" = "secret key: ${want#*: }" ] ||
		fail "sender $i: '$(cat "$TEST_TMP/s$i.out")', expected $want"
	cmp "$TEST_TMP/f$i" "$out/student$i/f$i" || fail "saved f$i differs"
done
for pid in "${evil_pids[@]}"; do
	wait "$pid" || fail "an evil sender could not run"
done

sessions=$((${#sizes[@]} + ${#evil_pids[@]}))
keys=0 silent_ended=0
for _ in $(seq "$sessions"); do
	line=$(next_line 60) || fail "fewer than $sessions summary lines"
	echo "$line"
	case $line in
	*"verdict good, key sent, saved as student"*"/f"*)
		[ "$silent_ended" -eq 0 ] ||
			fail "an honest session waited for the silent one"
		keys=$((keys + 1)) ;;
	*", failed: no FILE_INFO within 10 s of connecting (the handshake limit)")
		silent_ended=1 ;;
	*", failed: "*) ;;
	*) fail "a summary line neither a key nor a failure: $line" ;;
	esac
done
[ "$keys" -eq "${#sizes[@]}" ] ||
	fail "$keys keys in the summary lines, expected ${#sizes[@]}"
grep -l "busy" "$TEST_TMP"/s*.err && fail "a sender was refused as busy"

[ "$(wc -l <"$ledger")" -eq "$sessions" ] ||
	fail "the ledger has $(wc -l <"$ledger") lines, expected $sessions"
summary=$(./receiver --ledger-summary "$ledger")
expect_status 0 $? "--ledger-summary of the concurrent sessions"
case $summary in
*"records: $sessions, without an ID: ${#evil_pids[@]}, unreadable lines skipped: 0") ;;
*) fail "--ledger-summary: $summary" ;;
esac
expect_saved_only "$out" $(for i in "${!sizes[@]}"; do echo "student$i/f$i"; done)

# Two students send different files of the same name at once: each is
# saved under its own ID, neither overwrites the other.
mkdir "$TEST_TMP/alice" "$TEST_TMP/bob"
make_file "$TEST_TMP/alice/report.bin" 300000
make_file "$TEST_TMP/bob/report.bin" 500000
./sender -q -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/alice/report.bin" \
	>/dev/null 2>"$TEST_TMP/alice.err" &
alice=$!
./sender -q -i bob "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/bob/report.bin" \
	>/dev/null 2>"$TEST_TMP/bob.err" &
wait $! || fail "bob's sender: $(cat "$TEST_TMP/bob.err")"
wait $alice || fail "alice's sender: $(cat "$TEST_TMP/alice.err")"
next_line >/dev/null && next_line >/dev/null || fail "no summary lines"
for id in alice bob; do
	cmp "$TEST_TMP/$id/report.bin" "$out/$id/report.bin" ||
		fail "$id's report.bin was not saved as $id/report.bin"
done

stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after SIGTERM"
