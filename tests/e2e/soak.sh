# SPDX-License-Identifier: MIT
# Soak: SOAK_SESSIONS (default 300) sessions through one receiver, mixing
# good senders, and bad-hash and other misbehaving ones (tests/evil-sender).
# Every session must end as its kind says, and at the end the receiver's
# open file descriptors, registered memory regions and RSS must be what
# they were after the first few sessions: any growth fails.
# Then SOAK_WAVES (default 10) waves of 16 sessions at once, of the same
# kinds and of sizes from 0 to 4 MiB, through the same receiver: after
# every wave its descriptors, memory regions and cm_ids are back at their
# baseline (taken after the first wave), and its RSS within 1 MiB of it.
. tests/e2e/lib.sh

total=${SOAK_SESSIONS:-300}
warmup=21
start_receiver -t 3 -w 1M -k "$TEST_TMP/secret" || fail "no receiver"
make_file "$TEST_TMP/file" 300000
evil=(bad-magic out-of-order write-past-region done-twice id-control
	stop-mid-write gone-after-region gone-after-verdict)

# usage_now: "FDS MRS CM_IDS RSS_KIB" of the receiver, from /proc and
# from `rdma resource show` (whose lines end "pid PID comm NAME ...").
usage_now() {
	local fds mrs ids rss
	fds=$(ls "/proc/$RX_PID/fd" | wc -l)
	mrs=$(rdma resource show mr 2>/dev/null | grep -c " pid $RX_PID ")
	ids=$(rdma resource show cm_id 2>/dev/null | grep -c " pid $RX_PID ")
	rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' \
		"/proc/$RX_PID/status")
	echo "$fds $mrs $ids $rss"
}

for i in $(seq "$total"); do
	case $((i % 3)) in
	0)
		run_sender -i "good$i" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/file"
		expect_status 0 "$SENDER_STATUS" "session $i, good ($SENDER_ERR)"
		expect_summary "verdict good, key sent" "session $i, good" \
			>/dev/null
		;;
	1)
		said=$(tests/evil-sender -s 300000 -i "bad$i" bad-hash \
			"$RXE_ADDR" "$RX_PORT")
		expect_status 0 $? "session $i, bad hash ($said)"
		case $said in
		*", verdict bad") ;;
		*) fail "session $i, bad hash: $said" ;;
		esac
		expect_summary "verdict bad" "session $i, bad hash" >/dev/null
		;;
	2)
		mode=${evil[$((i / 3 % ${#evil[@]}))]}
		tests/evil-sender "$mode" "$RXE_ADDR" "$RX_PORT" >/dev/null ||
			fail "session $i: evil-sender $mode could not run"
		expect_summary "failed: " "session $i, $mode" >/dev/null
		case $SUMMARY in *"key sent"*) fail "session $i: key" ;; esac
		;;
	esac
	[ "$i" -eq "$warmup" ] && read -r fds0 mrs0 ids0 rss0 <<<"$(usage_now)"
done
read -r fds mrs ids rss <<<"$(usage_now)"
echo "after $warmup sessions: $fds0 fds, $mrs0 MRs, $ids0 cm_ids, RSS $rss0 KiB"
echo "after $total sessions: $fds fds, $mrs MRs, $ids cm_ids, RSS $rss KiB"
[ "$ids0" -eq 1 ] || fail "not just the listening cm_id after $warmup sessions"
[ "$fds" -eq "$fds0" ] || fail "open file descriptors grew: $fds0 -> $fds"
[ "$mrs" -eq "$mrs0" ] || fail "registered memory regions grew: $mrs0 -> $mrs"
[ "$ids" -eq "$ids0" ] || fail "cm_ids grew: $ids0 -> $ids"
[ "$rss" -le $((rss0 + 1024)) ] || fail "RSS grew: $rss0 -> $rss KiB"

# wave N: 16 sessions at once: 11 good senders of sizes from 0 to 4 MiB
# (over many windows of the receiver's 1 MiB), 3 bad hashes and 2
# misbehaving senders of the modes above; each ends as its kind says.
wave_sizes=(0 1 4095 65536 300000 1048575 1048576 1048577 2500000 4194304 7)
for i in "${!wave_sizes[@]}"; do
	make_file "$TEST_TMP/w$i" "${wave_sizes[$i]}"
done
wave() {
	local n=$1 i pids=() good=0 bad=0 failed=0 line mode

	for i in "${!wave_sizes[@]}"; do
		./sender -q -i "wave$n-$i" "$RXE_ADDR" "$RX_PORT" \
			"$TEST_TMP/w$i" >"$TEST_TMP/w$i.out" 2>"$TEST_TMP/w$i.err" &
		pids+=($!)
	done
	for i in 1 2 3; do
		tests/evil-sender -s 3M -i "wavebad$n-$i" bad-hash \
			"$RXE_ADDR" "$RX_PORT" >"$TEST_TMP/wb$i.out" &
		pids+=($!)
	done
	for i in 0 1; do
		mode=${evil[$(((2 * n + i) % ${#evil[@]}))]}
		tests/evil-sender "$mode" "$RXE_ADDR" "$RX_PORT" >/dev/null &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait_within 120 "${pids[$i]}" "wave $n: process $i"
		[ "$WAIT_STATUS" -eq 0 ] ||
			fail "wave $n: process $i of ${#pids[@]}" \
			"exited with $WAIT_STATUS: $(cat "$TEST_TMP/w$i.err" 2>/dev/null)"
	done
	for i in "${!wave_sizes[@]}"; do
		grep -q "^secret key: " "$TEST_TMP/w$i.out" ||
			fail "wave $n: sender $i printed no key"
	done
	for _ in $(seq ${#pids[@]}); do
		line=$(next_line 60) || fail "wave $n: too few summary lines"
		case $line in
		*"verdict good, key sent"*) good=$((good + 1)) ;;
		*"verdict bad"*) bad=$((bad + 1)) ;;
		*", failed: "*) failed=$((failed + 1)) ;;
		*) fail "wave $n: $line" ;;
		esac
	done
	[ "$good $bad $failed" = "${#wave_sizes[@]} 3 2" ] ||
		fail "wave $n: $good good, $bad bad, $failed failed sessions"
}

waves=${SOAK_WAVES:-10}
for n in $(seq "$waves"); do
	wave "$n"
	read -r fds mrs ids rss <<<"$(usage_now)"
	echo "after wave $n: $fds fds, $mrs MRs, $ids cm_ids, RSS $rss KiB"
	if [ "$n" -eq 1 ]; then
		read -r fds0 mrs0 ids0 rss0 <<<"$fds $mrs $ids $rss"
		continue
	fi
	[ "$fds" -eq "$fds0" ] || fail "wave $n: descriptors $fds0 -> $fds"
	[ "$mrs" -eq "$mrs0" ] || fail "wave $n: memory regions $mrs0 -> $mrs"
	[ "$ids" -eq 1 ] || fail "wave $n: $ids cm_ids, not just the listener"
	[ "$rss" -le $((rss0 + 1024)) ] || fail "wave $n: RSS $rss0 -> $rss KiB"
done

stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"
