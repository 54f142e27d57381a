# What can go wrong, each checked for its exit status, its one clear line,
# no key, and nothing saved; the receiver keeps serving throughout.
. tests/e2e/lib.sh

out="$TEST_TMP/out"
mkdir "$out"
chmod 755 "$TEST_TMP"	# some senders below run as nobody
start_receiver -o "$out" -k "$TEST_TMP/secret" -m 1M || fail "no receiver"
make_file "$TEST_TMP/small" 1000
make_file "$TEST_TMP/big" 1048577


# A wrong hash: bad verdict, no key, nothing saved (test-only switch).
LAB3_TEST_BAD_HASH=1 run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_sender_fails 5 "verdict bad" "sender claiming a wrong hash"
expect_summary "id -, 1000 bytes, verdict bad, [0-9.]+ s$" "bad hash"
expect_saved_only "$out"

# Over the receiver's limit: refused before anything is allocated.
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
expect_sender_fails 4 "refused: file of 1048577 bytes is over the receiver's limit of 1048576 bytes" \
	"sender of an oversize file"
expect_summary "verdict none, .*failed: file of 1048577 bytes is over" "oversize"
expect_saved_only "$out"

# Local errors come before any connection: no session appears for them.
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/missing"
expect_sender_fails 2 "missing: No such file or directory" "missing file"
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP"
expect_sender_fails 2 "is a directory" "a directory as the file"
chmod 000 "$TEST_TMP/small"
setpriv --reuid=65534 --regid=65534 --clear-groups \
	./sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small" \
	>"$TEST_TMP/sender.out" 2>"$TEST_TMP/sender.err"
SENDER_STATUS=$? SENDER_OUT=$(cat "$TEST_TMP/sender.out")
SENDER_ERR=$(cat "$TEST_TMP/sender.err")
expect_sender_fails 2 "small: Permission denied" "an unreadable file"
chmod 644 "$TEST_TMP/small"

# Usage errors.
run_sender -i "$(printf 'bad\tid')" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_status 1 "$SENDER_STATUS" "an ID with a tab"
printf '%s\n' "$SENDER_ERR" | grep -q "non-printable" ||
	fail "no clear line for a bad ID: $SENDER_ERR"
run_sender -i "$(printf 'x%.0s' $(seq 64))" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_status 1 "$SENDER_STATUS" "a 64-character ID"
run_sender "$RXE_ADDR" "$RX_PORT"
expect_status 1 "$SENDER_STATUS" "a missing argument"
run_sender -t 0 "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_status 1 "$SENDER_STATUS" "-t 0"

# Connection errors, each within the sender's timeout.
run_sender -t 5 -i alice "$RXE_ADDR" 1 "$TEST_TMP/small"
expect_sender_fails 3 "connect to $RXE_ADDR:1: connection refused" \
	"nothing listening on the port"
run_sender -t 5 -i alice 127.0.0.1 "$RX_PORT" "$TEST_TMP/small"
expect_sender_fails 3 "no RDMA device reachable for that address" \
	"an address no RDMA device reaches"
run_sender -t 3 -i alice 198.18.0.99 "$RX_PORT" "$TEST_TMP/small"
expect_sender_fails 3 "connect to 198.18.0.99:$RX_PORT: .*(timed out|unreachable)" \
	"an address where no receiver answers"

# run_sender_as_nobody MEMLOCK ARGS...: run_sender as user nobody, with
# a locked-memory limit (`ulimit -l`) of MEMLOCK bytes.
run_sender_as_nobody() {
	local memlock=$1
	shift
	prlimit --memlock="$memlock" \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		./sender "$@" >"$TEST_TMP/sender.out" 2>"$TEST_TMP/sender.err"
	SENDER_STATUS=$?
	SENDER_OUT=$(cat "$TEST_TMP/sender.out")
	SENDER_ERR=$(cat "$TEST_TMP/sender.err")
}

# Not root, with a locked-memory limit far below the file and the
# receiver's window: the sender registers smaller pieces and succeeds.
make_file "$TEST_TMP/locked" 1000000
run_sender_as_nobody 65536 -i nobody "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/locked"
expect_status 0 "$SENDER_STATUS" "not root, ulimit -l 64 KiB ($SENDER_ERR)"
expect_summary "id nobody, 1000000 bytes, verdict good, key sent" \
	"a sender under a 64 KiB locked-memory limit"
rm "$out/locked"

# With no locked memory at all it cannot register even its message
# buffers: one clear line naming `ulimit -l` (libibverbs adds a warning of
# its own about the limit, which is not ours to silence).
run_sender_as_nobody 0 -i nobody "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/locked"
SENDER_ERR=$(printf '%s\n' "$SENDER_ERR" | grep -v '^libibverbs: \|^ *This will')
expect_sender_fails 2 "ulimit -l" "not root, ulimit -l 0"
# (it fails before it connects: the receiver sees no session)

# After all that, a normal transfer still works.
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_status 0 "$SENDER_STATUS" "a good transfer after the failures ($SENDER_ERR)"
expect_summary "id alice, 1000 bytes, verdict good, key sent, saved as small" \
	"the good transfer"
expect_saved_only "$out" small

stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"

# A receiver that is not root, under a usual 8 MiB locked-memory limit:
# its default windows (4 x 16 MiB) shrink to fit, and a transfer works;
# windows given with -w that cannot fit are refused with one clear line.
RX_RUN=(prlimit --memlock=8388608
	setpriv --reuid=65534 --regid=65534 --clear-groups)
secret=$(mktemp -u /tmp/nobody-secret.XXXXXX)
start_receiver -k "$secret" || fail "no receiver as nobody"
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
expect_status 0 "$SENDER_STATUS" "a receiver as nobody ($SENDER_ERR)"
SESSION=0
expect_summary "id alice, 1048577 bytes, verdict good, key sent" \
	"a receiver as nobody under ulimit -l 8 MiB"
stop_receiver
expect_status 0 "$RX_STATUS" "receiver as nobody after SIGTERM"
"${RX_RUN[@]}" ./receiver -p 0 -k "$secret" -w 16M \
	>"$TEST_TMP/rx.out" 2>"$TEST_TMP/rx.err"
expect_status 2 $? "a receiver as nobody with -w 16M"
[ "$(wc -l <"$TEST_TMP/rx.err")" -eq 1 ] &&
	grep -q "ulimit -l" "$TEST_TMP/rx.err" ||
	fail "no one clear line naming ulimit -l: $(cat "$TEST_TMP/rx.err")"
