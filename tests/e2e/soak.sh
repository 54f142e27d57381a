# Soak: SOAK_SESSIONS (default 300) sessions through one receiver, mixing
# good senders, and bad-hash and other misbehaving ones (tests/evil-sender).
# Every session must end as its kind says, and at the end the receiver's
# open file descriptors, registered memory regions and RSS must be what
# they were after the first few sessions: any growth fails.
. tests/e2e/lib.sh

total=${SOAK_SESSIONS:-300}
warmup=21
start_receiver -t 3 -k "$TEST_TMP/secret" || fail "no receiver"
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

stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"
