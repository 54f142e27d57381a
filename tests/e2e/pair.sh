# SPDX-License-Identifier: MIT
# tests/e2e/pair.sh server|client: the two sides of tests/long/e2e-pair.test,
# run by scripts/rxe-pair, the receiver on host A (server) and the sender
# on host B (client).  Three sessions through one receiver:
#   1. a transfer: the sender gets the key `receiver --key-for` gives, and
#      host A saves the very bytes host B sent;
#   2. the link cut during a transfer (host A's NIC loses its link; see
#      scripts/rxe-pair for how, and why not `ip link set eth0 down`): the
#      receiver ends the session within its timeout, with a summary line
#      saying why, no file saved and no key sent; the sender ends within
#      its timeout with exit status 3 and one clear line;
#   3. the link back up: the same receiver serves a transfer again;
#   4. eight senders at once from host B (files of 1 byte to 5 MB, through
#      a window budget that fits four of the receiver's 1 MiB windows):
#      each gets its key, host A saves each file as sent.
# The hosts tell each other what happened with marker files in RXE_SHARE.
. tests/e2e/lib.sh

PORT=7471
RX_TIMEOUT=3		# the receiver's -t
TX_TIMEOUT=3		# the cut sender's -t
CUT_BYTES=$((16 << 20))	# 16 chunks through the receiver's 1 MiB windows
# What either side may say when the link is cut: its silence limit ran
# out, or its NIC gave up resending.
SILENCE="timed out after [0-9]+ s waiting for [^,]+|(RDMA WRITE|SEND) failed: transport retry counter exceeded"

# While a transfer runs, starting a process in the VM takes 0.3 s to over
# a second (measured), and the 16 MiB take about 2 s: the waits on the way
# to the cut use builtins only.  nap: sleep 50 ms, as a read of a FIFO
# that nobody writes.
mkfifo "$TEST_TMP/never"
exec {NEVER_FD}<>"$TEST_TMP/never"
nap() {
	read -r -t 0.05 -u "$NEVER_FD"
}

# wait_for_file PATH SECONDS: wait until PATH exists (a marker from the
# other host; polled, as in scripts/rxe-wait).
wait_for_file() {
	local deadline=$((SECONDS + $2))
	until [ -e "$1" ]; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		nap
	done
	return 0	# not the status of the last nap
}

# wait_trace PATTERN SECONDS: wait until the receiver's -v trace (its
# stderr, a file that keeps growing) has a line matching the glob
# PATTERN, reading on from where the last call stopped.
wait_trace() {
	local deadline=$((SECONDS + $2)) line part=
	for (( ; ; )); do
		while IFS= read -r line <&"$TRACE_FD"; do
			line=$part$line
			part=
			# shellcheck disable=SC2254 # PATTERN is a glob
			case $line in $1) return 0 ;; esac
		done
		# At the end of the file: keep a line still being written.
		part=$part$line
		[ "$SECONDS" -lt "$deadline" ] || return 1
		nap
	done
}

# link down|up: have rxe-pair take this VM's link down or bring it back
# up, then wait until eth0's carrier and rxe0's port have followed.
link() {
	local want_carrier=1 want_port=ACTIVE carrier state
	local deadline=$((SECONDS + 10))
	[ "$1" = down ] && want_carrier=0 want_port=DOWN
	: >"$RXE_SHARE/link-$1.$RXE_ADDR"
	for (( ; ; )); do
		if [ ! -e "$RXE_SHARE/link-$1.$RXE_ADDR" ] &&
			read -r carrier </sys/class/net/eth0/carrier &&
			read -r state </sys/class/infiniband/rxe0/ports/1/state &&
			[ "$carrier" = "$want_carrier" ] &&
			[ "${state#*: }" = "$want_port" ]; then
			echo "link $1: eth0 carrier $carrier, rxe0 port $state"
			return 0
		fi
		[ "$SECONDS" -lt "$deadline" ] || break
		nap
	done
	echo "link $1: eth0 carrier ${carrier:-?}, rxe0 port ${state:-?} after 10 s" >&2
	return 1
}

# summary SECONDS PATTERN WHAT: expect_summary, with a time limit.
summary() {
	local line
	SESSION=$((SESSION + 1))
	line=$(next_line "$1") || fail "$3: no summary line within $1 s"
	echo "$line"
	case $line in
	"session $SESSION from "*) ;;
	*) fail "$3: summary '$line' is not session $SESSION's" ;;
	esac
	printf '%s\n' "$line" | grep -Eq "$2" ||
		fail "$3: summary '$line' does not match '$2'"
}

server() {
	local out=$TEST_TMP/out cut took stored

	mkdir "$out"
	for id in pair-student after-cut conc1 conc2 conc3 conc4 conc5 conc6 \
		conc7 conc8; do
		./receiver -k "$TEST_TMP/secret" --key-for "$id" \
			>"$RXE_SHARE/key.$id" || fail "no key for $id"
	done
	# -v: the trace tells when the cut transfer is under way.
	start_receiver -v -p "$PORT" -k "$TEST_TMP/secret" -o "$out" \
		-t "$RX_TIMEOUT" -w 1M -n 2 || fail "no receiver"
	exec {TRACE_FD}<"$RX_DIR/stderr"
	scripts/rxe-wait listen "$PORT" || fail "the receiver does not listen"

	# 1. A transfer.
	summary 120 "id pair-student, 5000000 bytes, verdict good, key sent, saved as pair-student/file," \
		"the first transfer"
	[ "$(sha256sum <"$out/pair-student/file")" = "$(cat "$RXE_SHARE/sha256.file")" ] ||
		fail "the saved file differs from the one sent"

	# 2. The link cut once the first chunk of 16 is stored: the sender
	# is writing the rest (seconds over this link).
	wait_trace "receiver: session 2: state STORE_CHUNK" 120 ||
		fail "the second transfer did not start"
	link down || fail "cannot cut host A's link"
	cut=$SECONDS
	: >"$RXE_SHARE/link-down"
	stored=$(grep -c "session 2: state STORE_CHUNK" "$RX_DIR/stderr")
	echo "$stored of 16 chunks stored by then"
	summary 30 "id -, $CUT_BYTES bytes, verdict none, [0-9.]+ s, failed: ($SILENCE)\$" \
		"the session whose link was cut"
	took=$((SECONDS - cut))
	echo "the receiver ended the session within $((took + 1)) s of the cut"
	# Its limit: -t of silence (1 MiB chunks add no time), then up to 2 s
	# to disconnect; 4 s more for a busy machine and whole seconds.
	[ "$took" -le $((RX_TIMEOUT + 6)) ] ||
		fail "the receiver ended the session $took s after the cut"
	expect_saved_only "$out" pair-student/file
	wait_for_file "$RXE_SHARE/sender-ended" 30 ||
		fail "the sender did not end within 30 s of the cut"
	took=$((SECONDS - cut))
	echo "the sender ended within $((took + 1)) s of the cut"
	# Its longest wait is -t and 2 s (the allowance for 8 MiB in flight),
	# then up to 2 s to disconnect; 4 s more as above.
	[ "$took" -le $((TX_TIMEOUT + 8)) ] ||
		fail "the sender ended $took s after the cut"

	# 3. The link back up: the same receiver serves again.
	link up || fail "cannot restore host A's link"
	: >"$RXE_SHARE/link-up"
	summary 60 "id after-cut, 3000000 bytes, verdict good, key sent, saved as after-cut/again," \
		"the transfer after the link came back"
	[ "$(sha256sum <"$out/after-cut/again")" = "$(cat "$RXE_SHARE/sha256.again")" ] ||
		fail "the file saved after the cut differs from the one sent"
	expect_saved_only "$out" pair-student/file after-cut/again

	# 4. Eight senders at once.
	for i in 1 2 3 4 5 6 7 8; do
		line=$(next_line 120) || fail "only $((i - 1)) of 8 concurrent sessions ended"
		echo "$line"
		case $line in
		*" id conc"?", "*", verdict good, key sent, saved as conc"?"/c"?", "*) ;;
		*) fail "a concurrent session: $line" ;;
		esac
	done
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(sha256sum <"$out/conc$i/c$i")" = "$(cat "$RXE_SHARE/sha256.c$i")" ] ||
			fail "concurrent file c$i differs from the one sent"
	done

	stop_receiver
	expect_status 0 "$RX_STATUS" "the receiver stopped by SIGTERM"
}

client() {
	make_file "$TEST_TMP/file" 5000000
	sha256sum <"$TEST_TMP/file" >"$RXE_SHARE/sha256.file"
	make_file "$TEST_TMP/cut" "$CUT_BYTES"
	make_file "$TEST_TMP/again" 3000000
	sha256sum <"$TEST_TMP/again" >"$RXE_SHARE/sha256.again"
	scripts/rxe-wait peer "$PORT" || fail "the receiver does not listen"

	# 1. A transfer.
	run_sender -i pair-student "$RXE_PEER_ADDR" "$PORT" "$TEST_TMP/file"
	expect_status 0 "$SENDER_STATUS" "the first transfer ($SENDER_ERR)"
	echo "$SENDER_OUT"
	[ "$SENDER_OUT" = "secret key: $(cat "$RXE_SHARE/key.pair-student")" ] ||
		fail "the first transfer: wrong key: $SENDER_OUT"

	# 2. The link cut during a transfer: the sender hears nothing more.
	run_sender -t "$TX_TIMEOUT" -i cut-student "$RXE_PEER_ADDR" "$PORT" \
		"$TEST_TMP/cut"
	: >"$RXE_SHARE/sender-ended"
	[ -e "$RXE_SHARE/link-down" ] ||
		fail "the sender ended before the link was cut: status $SENDER_STATUS, $SENDER_ERR"
	echo "$SENDER_ERR"
	expect_sender_fails 3 "^sender: $RXE_PEER_ADDR:$PORT: ($SILENCE)\$" \
		"the sender whose link was cut"

	# 3. The link back up: a transfer again.
	wait_for_file "$RXE_SHARE/link-up" 60 ||
		fail "host A's link did not come back"
	run_sender -i after-cut "$RXE_PEER_ADDR" "$PORT" "$TEST_TMP/again"
	expect_status 0 "$SENDER_STATUS" "the transfer after the link came back ($SENDER_ERR)"
	echo "$SENDER_OUT"
	[ "$SENDER_OUT" = "secret key: $(cat "$RXE_SHARE/key.after-cut")" ] ||
		fail "after the cut: wrong key: $SENDER_OUT"

	# 4. Eight senders at once.
	local sizes=(1 70000 1000000 1048576 2500000 3000001 4194304 5000000)
	local pids=() i
	for i in 1 2 3 4 5 6 7 8; do
		make_file "$TEST_TMP/c$i" "${sizes[$((i - 1))]}"
		sha256sum <"$TEST_TMP/c$i" >"$RXE_SHARE/sha256.c$i"
	done
	for i in 1 2 3 4 5 6 7 8; do
		./sender -q -i "conc$i" "$RXE_PEER_ADDR" "$PORT" "$TEST_TMP/c$i" \
			>"$TEST_TMP/c$i.out" 2>"$TEST_TMP/c$i.err" &
		pids+=($!)
	done
	for i in 1 2 3 4 5 6 7 8; do
		expect_key "${pids[$((i - 1))]}" "$i" \
			"$(cat "$RXE_SHARE/key.conc$i")" "concurrent sender $i"
	done
	echo "8 concurrent senders: 8 keys"
}

case ${1:-} in
server) server ;;
client) client ;;
*)
	echo "usage: tests/e2e/pair.sh server|client" >&2
	exit 2
	;;
esac
