# SPDX-License-Identifier: MIT
# Many senders at once, as in a class before a deadline: one receiver
# (-c 20) serves 16 honest senders started together, files from 0 bytes
# to 16 MiB (many windows of a small -w), with three misbehaving senders
# mixed in (one silent until the receiver's handshake limit, one gone after
# FILE_INFO, one with a bad magic).  Every honest sender gets the key its
# ID should get, no sender is refused as busy, every saved file is
# byte-identical, each session has one summary line and one well-formed
# ledger record (but the second and third without a verdict, summed up
# in a later one), and the misbehaving sessions fail without holding up the
# others: every honest session lasts less than the silent one's 10 s.
# Then two students send files of the same name at once: each is saved
# under its ID.  Then 8 senders share a window budget (-b) far below
# what they would take: they take turns, and the registered memory stays
# within the budget.  Last, SIGTERM with six sessions in progress ends
# them all at once, each sender told why.
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
	wait_within 120 "${pids[$i]}" "sender $i of ${#sizes[@]}"
	expect_status 0 "$WAIT_STATUS" "sender $i of ${#sizes[@]} ($(cat "$TEST_TMP/s$i.err"))"
	want=$(./receiver -k "$TEST_TMP/secret" --key-for "student$i")
	[ "$(cat "$TEST_TMP/s$i.out")" = "secret key: ${want#*: }" ] ||
		fail "sender $i: '$(cat "$TEST_TMP/s$i.out")', expected $want"
done
for pid in "${evil_pids[@]}"; do
	expect_done 60 "$pid" "an evil sender"
done

sessions=$((${#sizes[@]} + ${#evil_pids[@]}))
keys=0 silent=0
for _ in $(seq "$sessions"); do
	line=$(next_line 60) || fail "fewer than $sessions summary lines"
	echo "$line"
	case $line in
	*"verdict good, key sent, saved as student"*"/f"*)
		# Its own time, from its connection: under the silent
		# one's 10 s, so it did not wait for it.  (Not "ended
		# before the silent one": a sender that hashes 16 MiB
		# under TCG, on a busy host, may connect 5 s late.)
		secs=$(sed -n 's/.*, \([0-9.]*\) s$/\1/p' <<<"$line")
		awk -v s="${secs:-99}" 'BEGIN { exit !(s < 10) }' ||
			fail "an honest session took ${secs:-?} s: it waited for the silent one"
		keys=$((keys + 1)) ;;
	*", failed: no FILE_INFO within 10 s of connecting (the handshake limit)")
		silent=1 ;;
	*", failed: "*) ;;
	*) fail "a summary line neither a key nor a failure: $line" ;;
	esac
done
[ "$keys" -eq "${#sizes[@]}" ] ||
	fail "$keys keys in the summary lines, expected ${#sizes[@]}"
[ "$silent" -eq 1 ] || fail "the silent session did not end by the handshake limit"
# A file is saved once its KEY has gone out, before its summary line: a
# sender may hold its key first (over iWARP, a SEND completes when sent).
for i in "${!sizes[@]}"; do
	cmp "$TEST_TMP/f$i" "$out/student$i/f$i" || fail "saved f$i differs"
done
grep -l "busy" "$TEST_TMP"/s*.err && fail "a sender was refused as busy"

# The three sessions without a verdict (silent, bad magic, gone after
# FILE_INFO) came from one address within a minute: the first has a
# record of its own, the other two are counted, to be summed up in one
# record a minute after the first of them, or when the receiver stops.
# Every other session has its own record.
own=$(grep -vc '(recorded together)' "$ledger")
[ "$own" -eq $((sessions - 2)) ] ||
	fail "the ledger has $own records of sessions, expected $((sessions - 2))"
records=$(wc -l <"$ledger")
summed=$((records - own))
summary=$(./receiver --ledger-summary "$ledger")
expect_status 0 $? "--ledger-summary of the concurrent sessions"
case $summary in
*"records: $records, without an ID: $((${#evil_pids[@]} - 2 + summed)), unreadable lines skipped: 0") ;;
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
expect_done 60 $! "bob's sender"
expect_done 60 $alice "alice's sender"
next_line >/dev/null && next_line >/dev/null || fail "no summary lines"
for id in alice bob; do
	cmp "$TEST_TMP/$id/report.bin" "$out/$id/report.bin" ||
		fail "$id's report.bin was not saved as $id/report.bin"
done

stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after SIGTERM"
total=$(sed -n 's/.*"error":"\([0-9]*\) sessions\{0,1\} from this address ended without a key since .*(recorded together).*/\1/p' "$ledger" |
	awk '{ n += $1 } END { print n + 0 }')
[ "$total" -eq 2 ] ||
	fail "the ledger's summing-up records count $total sessions, expected the 2 without a verdict: $(grep '(recorded together)' "$ledger")"

# A window budget (-b 1M) far below what 8 sessions of 4 windows of 256K
# would take: the sessions take turns, every sender gets its key, and the
# receiver's registered memory, sampled from outside (rdma res show mr)
# while they run, never exceeds the budget plus each session's message
# buffers (under 8 KiB).
start_receiver -c 8 -w 256K -n 4 -b 1M -k "$TEST_TMP/secret" ||
	fail "no receiver with -b 1M"
make_file "$TEST_TMP/eight" $((8 << 20))
pids=()
for i in 1 2 3 4 5 6 7 8; do
	./sender -q -i "budget$i" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/eight" \
		>"$TEST_TMP/b$i.out" 2>"$TEST_TMP/b$i.err" &
	pids+=($!)
done
most=0
while kill -0 "${pids[@]}" 2>/dev/null; do
	now=$(rdma res show mr | awk '/ comm receiver/ {
		for (i = 1; i < NF; i++) if ($i == "mrlen") sum += $(i + 1) }
		END { print sum + 0 }')
	[ "$now" -gt "$most" ] && most=$now
done
for i in "${!pids[@]}"; do
	wait_within 120 "${pids[$i]}" "budget sender $((i + 1))"
	[ "$WAIT_STATUS" -eq 0 ] ||
		fail "budget sender $((i + 1)): $(cat "$TEST_TMP/b$((i + 1)).err")"
done
echo "the receiver's registered memory peaked at $most bytes (-b 1M)"
[ "$most" -le $(((1 << 20) + 8 * 8192)) ] ||
	fail "registered memory reached $most bytes, over -b 1M"
[ "$most" -ge $((256 << 10)) ] ||
	fail "the sampling saw no window registered ($most bytes)"
for _ in 1 2 3 4 5 6 7 8; do
	line=$(next_line 30) || fail "fewer than 8 summary lines with -b"
	case $line in
	*"verdict good, key sent"*) ;;
	*) fail "with -b 1M: $line" ;;
	esac
done
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with -b 1M after SIGTERM"

# SIGTERM while sessions are in progress: four slow senders in the middle
# of their files (dribble) and two silent ones before FILE_INFO.  Every
# session ends at once with its summary line "interrupted by a signal",
# every sender is told why (an ERROR: "the receiver is stopping"), and the
# receiver exits 0 after disconnecting them all together: serially, each
# sleeping sender's disconnect would wait 2 s, more than the bound here.
start_receiver -v -c 8 -w 256K -n 2 -b 2M -k "$TEST_TMP/secret" ||
	fail "no receiver for the stop test"
stop_pids=()
for i in 1 2 3 4; do
	tests/evil-sender -s 1M dribble "$RXE_ADDR" "$RX_PORT" \
		>"$TEST_TMP/stop-dribble$i" &
	stop_pids+=($!)
done
for i in 1 2; do
	tests/evil-sender silent "$RXE_ADDR" "$RX_PORT" \
		>"$TEST_TMP/stop-silent$i" &
	stop_pids+=($!)
done
# (-b 2M: every slow session has its windows at once.)  Wait (polled:
# no event to block on; at most 30 s) until the receiver has all six sessions,
# four of them waiting for a DONE.
for _ in $(seq 300); do
	started=$(grep -o "session [0-9]*: state" "$RX_DIR/stderr" |
		sort -u | wc -l)
	writing=$(grep "state RECV_DONE" "$RX_DIR/stderr" |
		grep -o "session [0-9]*:" | sort -u | wc -l)
	[ "$started" -ge 6 ] && [ "$writing" -ge 4 ] && break
	sleep 0.1
done
[ "$started" -ge 6 ] && [ "$writing" -ge 4 ] ||
	fail "the stop test's sessions did not start ($started, $writing)"
stop_start=$EPOCHREALTIME
kill -TERM "$RX_PID"
for i in 1 2 3 4 5 6; do
	line=$(next_line 30) || fail "fewer than 6 summary lines after SIGTERM"
	case $line in
	*", failed: interrupted by a signal") ;;
	*) fail "after SIGTERM: $line" ;;
	esac
done
wait_within 30 "$RX_PID" "the receiver, after SIGTERM,"
RX_STATUS=$WAIT_STATUS
stop_ms=$(awk -v a="$stop_start" -v b="$EPOCHREALTIME" \
	'BEGIN { printf "%d", (b - a) * 1000 }')
echo "the receiver stopped $stop_ms ms after SIGTERM, with 6 sessions"
expect_status 0 "$RX_STATUS" "the receiver stopped with sessions in progress"
[ "$stop_ms" -lt 8000 ] ||
	fail "the receiver took $stop_ms ms to stop: disconnects one by one?"
for pid in "${stop_pids[@]}"; do
	expect_done 60 "$pid" "an evil sender of the stop test"
done
for f in "$TEST_TMP"/stop-*; do
	grep -q "the receiver is stopping" "$f" ||
		fail "$(basename "$f") was not told: $(cat "$f")"
done
