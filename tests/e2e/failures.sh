# SPDX-License-Identifier: MIT
# What can go wrong, each checked for its exit status, its one clear line,
# no key, and nothing saved; the receiver keeps serving throughout.  At
# the end, the receiver's own usage errors, and a ledger that cannot grow.
. tests/e2e/lib.sh

out="$TEST_TMP/out"
mkdir "$out"
chmod 755 "$TEST_TMP"	# some senders below run as nobody
start_receiver -o "$out" -k "$TEST_TMP/secret" -m 1M -l "$TEST_TMP/ledger" ||
	fail "no receiver"
make_file "$TEST_TMP/small" 1000
make_file "$TEST_TMP/big" 1048577


# A wrong hash (tests/evil-sender bad-hash): bad verdict, no key, nothing
# saved.
said=$(tests/evil-sender -s 1000 -n small -i alice bad-hash "$RXE_ADDR" \
	"$RX_PORT")
expect_status 0 $? "tests/evil-sender bad-hash"
echo "$said"
case $said in
"evil-sender: bad-hash: 1000 bytes in 1 chunk, "*", verdict bad") ;;
*) fail "tests/evil-sender bad-hash: '$said'" ;;
esac
expect_summary "id -, 1000 bytes, verdict bad, [0-9.]+ s$" "bad hash"
expect_saved_only "$out"

# A bad verdict, the sender's side (tests/evil-receiver bad-verdict on a
# port of its own): exit status 5, one line, no key, and the sender hangs
# up after the verdict.
run_sender_to_evil bad-verdict "$TEST_TMP/small" -i alice
expect_sender_fails 5 "small: verdict bad: the receiver's SHA-256 of the 1000 bytes differs$" \
	"sender given a bad verdict"
expect_status 0 "$EVIL_STATUS" "tests/evil-receiver bad-verdict"
case $EVIL_LINE in
*": 1000 bytes received, SHA-256 $(sha256sum "$TEST_TMP/small" | cut -c 1-64), verdict bad sent, the sender hung up; FILE_INFO of 1000 bytes, SHA-256 "*) ;;
*) fail "tests/evil-receiver bad-verdict: '$EVIL_LINE'" ;;
esac

# A KEY with an ERROR right behind it (tests/evil-receiver
# key-then-error): the key has come, so the run succeeded: exit 0 and the
# key printed, every time (it used to be dropped when both arrived in
# one batch); the ERROR, if the sender saw it, on stderr.
key=$(printf 'ee%.0s' $(seq 32))
for try in $(seq 10); do
	run_sender_to_evil key-then-error "$TEST_TMP/small" -i alice
	expect_status 0 "$SENDER_STATUS" "a KEY, then an ERROR (try $try): $SENDER_ERR"
	[ "$SENDER_OUT" = "secret key: $key" ] ||
		fail "a KEY, then an ERROR (try $try): stdout '$SENDER_OUT'"
	# (stderr: its summary line, and maybe the ERROR's)
	printf '%s\n' "$SENDER_ERR" | grep -v ", verdict good; hash " |
		grep -v "after the key, the receiver sent ERROR: evil receiver: an ERROR right after the KEY$" |
		grep . && fail "a KEY, then an ERROR (try $try): stderr '$SENDER_ERR'"
done

# A receiver that sends ERROR and at once revokes its window while the
# sender writes (tests/evil-receiver refuse-mid-write): the sender's
# WRITEs fail around the time the ERROR arrives, in either order.  It
# must report the ERROR's reason (exit 4), never the failed WRITEs.
# Three times, since the order varies.
make_file "$TEST_TMP/thirty-two" $((32 << 20))
for try in 1 2 3; do
	run_sender_to_evil refuse-mid-write "$TEST_TMP/thirty-two" -i alice
	expect_sender_fails 4 "refused: evil receiver refuses mid-write$" \
		"sender refused mid-write (try $try)"
	expect_status 0 "$EVIL_STATUS" \
		"tests/evil-receiver refuse-mid-write (try $try)"
done
rm "$TEST_TMP/thirty-two"

# Over the receiver's limit: refused before anything is allocated.
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
expect_sender_fails 4 "refused: file of 1048577 bytes is over the receiver's limit of 1048576 bytes" \
	"sender of an oversize file"
expect_summary "verdict none, .*failed: file of 1048577 bytes is over" "oversize"
expect_saved_only "$out"
# Its ledger record: what FILE_INFO announced, no verdict, no key, and why.
record=$(tail -n 1 "$TEST_TMP/ledger")
want=',"id":null,"file":"big","bytes":1048577,"sha256":"'
want+=$(sha256sum <"$TEST_TMP/big" | cut -d' ' -f1)
want+="\",\"verdict\":null,\"key_sent\":false,\"error\":\"file of 1048577"
want+=" bytes is over the receiver's limit of 1048576 bytes\",\"saved_as\":null}"
case $record in
*"$want") ;;
*) fail "oversize: ledger record $record" ;;
esac

# The same with --json: the same exit status, and the JSON object carries
# the receiver's reason in the error line.
run_sender --json -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
echo "$SENDER_OUT"
expect_json_failure 4 "sender --json of an oversize file"
expect_json_field verdict null "sender --json of an oversize file"
expect_summary "verdict none, .*failed: file of 1048577 bytes is over" \
	"oversize, --json"

# Local errors come before any connection: no session appears for them.
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/missing"
expect_sender_fails 2 "missing: No such file or directory" "missing file"

# --json with a missing file whose name holds a quote, a backslash, a
# tab, a control character and a byte that is not UTF-8: exit status 2 as
# without --json, and each escaped in the JSON object.
run_sender --json -i alice "$RXE_ADDR" "$RX_PORT" \
	"$TEST_TMP/$(printf 'no"such\\file\tx\001\377')"
echo "$SENDER_OUT"
expect_status 2 "$SENDER_STATUS" "sender --json of a missing file"
expect_json "sender --json of a missing file"
name="\"$TEST_TMP/"'no\"such\\file\u0009x\u0001\ufffd'
expect_json_field file "$name\"" "sender --json of a missing file"
expect_json_field error "$name: No such file or directory\"" \
	"sender --json of a missing file"
expect_json_field exit_status 2 "sender --json of a missing file"
for field in verdict key bytes hash_seconds transfer_seconds \
	goodput_mb_per_s; do
	expect_json_field $field null "sender --json of a missing file"
done
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
# (--json does not change how usage errors are told: plain text, exit 1.)
run_sender --json "$RXE_ADDR" "$RX_PORT"
expect_status 1 "$SENDER_STATUS" "a missing argument"
[ -z "$SENDER_OUT" ] || fail "a usage error printed on stdout: $SENDER_OUT"
run_sender -t 0 "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_status 1 "$SENDER_STATUS" "-t 0"

# --version and --help.
release=$(sed -n '1s/^lab3 (\([^)]*\)) .*/\1/p' debian/changelog)
protocol=$(sed -n 's/^#define LAB3_VERSION \([0-9]*\).*/\1/p' protocol.h)
run_sender --version
expect_status 0 "$SENDER_STATUS" "sender --version"
[ "$SENDER_OUT" = "sender $release (Lab 3 protocol version $protocol)" ] ||
	fail "sender --version printed '$SENDER_OUT'"
run_sender --help
expect_status 0 "$SENDER_STATUS" "sender --help"
[ -z "$SENDER_ERR" ] && printf '%s\n' "$SENDER_OUT" | grep -q -- "--json" &&
	printf '%s\n' "$SENDER_OUT" | grep -q -- "--version" &&
	[ "$(printf '%s\n' "$SENDER_OUT" | wc -l)" -le 24 ] ||
	fail "sender --help does not show --json and --version on one screen of stdout"

# Connection errors, each within the sender's timeout.
run_sender -t 5 -i alice "$RXE_ADDR" 1 "$TEST_TMP/small"
expect_sender_fails 3 "connect to $RXE_ADDR:1: connection refused" \
	"nothing listening on the port"
run_sender --json -t 5 -i alice "$RXE_ADDR" 1 "$TEST_TMP/small"
echo "$SENDER_OUT"
expect_json_failure 3 "sender --json, nothing listening on the port"
expect_json_field bytes 1000 "sender --json, nothing listening on the port"
expect_json_field port 1 "sender --json, nothing listening on the port"
expect_json_field transfer_seconds null \
	"sender --json, nothing listening on the port"
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
# receiver's window: the sender registers a smaller ring and succeeds.
make_file "$TEST_TMP/locked" 1000000
run_sender_as_nobody 65536 -i nobody "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/locked"
expect_status 0 "$SENDER_STATUS" "not root, ulimit -l 64 KiB ($SENDER_ERR)"
expect_summary "id nobody, 1000000 bytes, verdict good, key sent" \
	"a sender under a 64 KiB locked-memory limit"
rm -r "$out/nobody"

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
expect_summary "id alice, 1000 bytes, verdict good, key sent, saved as alice/small" \
	"the good transfer"
expect_saved_only "$out" alice/small

stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"

# A receiver that is not root, under a usual 8 MiB locked-memory limit:
# its default windows (4 x 16 MiB) shrink to fit, and a transfer works;
# windows given with -w, or a budget given with -b, that cannot fit are
# refused with one clear line.
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
# A window budget given with -b beyond the limit: refused at start the
# same way (the sessions could never register it all).
"${RX_RUN[@]}" ./receiver -p 0 -k "$secret" -w 1M -n 2 -b 16M \
	>"$TEST_TMP/rx.out" 2>"$TEST_TMP/rx.err"
expect_status 2 $? "a receiver as nobody with -b 16M"
[ "$(wc -l <"$TEST_TMP/rx.err")" -eq 1 ] &&
	grep -q "^receiver: -b 16384 KiB .*ulimit -l" "$TEST_TMP/rx.err" ||
	fail "-b over ulimit -l: no one clear line: $(cat "$TEST_TMP/rx.err")"

# The receiver's own command line: --version; --help on one screen; a
# ledger (-l) that cannot be opened and a ledger summary that cannot be
# read, each refused at once with one line and exit status 2 (the timeout
# catches a receiver that would start serving instead).
RX_RUN=()
release=$(sed -n '1s/^lab3 (\([^)]*\)) .*/\1/p' debian/changelog)
protocol=$(sed -n 's/^#define LAB3_VERSION \([0-9]*\).*/\1/p' protocol.h)
./receiver --version >"$TEST_TMP/rx.out" 2>"$TEST_TMP/rx.err"
expect_status 0 $? "receiver --version"
expect_file_is "$TEST_TMP/rx.out" \
	"receiver $release (Lab 3 protocol version $protocol)" "receiver --version"
./receiver --help >"$TEST_TMP/rx.out" 2>"$TEST_TMP/rx.err"
expect_status 0 $? "receiver --help"
[ -s "$TEST_TMP/rx.err" ] && fail "receiver --help wrote to stderr"
for option in "-l LEDGER" "--ledger-summary LEDGER" "--version" \
	"--keep-failed" "-r ROSTER"; do
	grep -qF -- "$option" "$TEST_TMP/rx.out" ||
		fail "receiver --help does not show $option"
done
[ "$(wc -l <"$TEST_TMP/rx.out")" -le 24 ] ||
	fail "receiver --help is $(wc -l <"$TEST_TMP/rx.out") lines"

# expect_receiver_refuses WHAT PATTERN ARGS...: ./receiver ARGS exits 2
# with one line on stderr matching PATTERN, and nothing on stdout.
expect_receiver_refuses() {
	local what=$1 pattern=$2
	shift 2
	timeout 30 ./receiver "$@" >"$TEST_TMP/rx.out" 2>"$TEST_TMP/rx.err"
	expect_status 2 $? "$what"
	[ ! -s "$TEST_TMP/rx.out" ] ||
		fail "$what: printed on stdout: $(cat "$TEST_TMP/rx.out")"
	[ "$(wc -l <"$TEST_TMP/rx.err")" -eq 1 ] &&
		grep -qF -- "$pattern" "$TEST_TMP/rx.err" ||
		fail "$what: no one line '$pattern': $(cat "$TEST_TMP/rx.err")"
}
expect_receiver_refuses "a ledger in a missing directory" \
	"receiver: cannot open ledger $TEST_TMP/missing/ledger: No such file or directory" \
	-p 0 -k "$TEST_TMP/secret" -l "$TEST_TMP/missing/ledger"
expect_receiver_refuses "--ledger-summary of a missing file" \
	"receiver: --ledger-summary $TEST_TMP/missing: No such file or directory" \
	--ledger-summary "$TEST_TMP/missing"
expect_receiver_refuses "a missing roster" \
	"receiver: roster $TEST_TMP/missing: No such file or directory" \
	-p 0 -k "$TEST_TMP/secret" -r "$TEST_TMP/missing"
printf 'alice\n\nbob smith\n%070d\n' 0 >"$TEST_TMP/bad-roster"
expect_receiver_refuses "a roster with an ID too long" \
	"receiver: roster $TEST_TMP/bad-roster, line 4: ID of 70 characters (1 to 63 allowed)" \
	-p 0 -k "$TEST_TMP/secret" -r "$TEST_TMP/bad-roster"
expect_receiver_refuses "--ledger-summary with a bad roster" \
	"receiver: roster $TEST_TMP/bad-roster, line 4: ID of 70" \
	--ledger-summary /dev/null -r "$TEST_TMP/bad-roster"

# A ledger that cannot take the record of a session about to get its key:
# no record, no key.  The sender is refused, the session fails with one
# clear reason, and the ledger is as it was.  (A file size limit makes the
# append fail with EFBIG; SIGXFSZ is ignored, as the receiver inherits,
# so that the write returns the error instead of killing the receiver.)
printf '%099d\n' 0 >"$TEST_TMP/full-ledger"
trap '' XFSZ
RX_RUN=(prlimit --fsize=100)
start_receiver -k "$TEST_TMP/secret" -l "$TEST_TMP/full-ledger" ||
	fail "no receiver with a full ledger"
RX_RUN=()
trap - XFSZ
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/small"
expect_sender_fails 4 "refused: the receiver could not record the session" \
	"a receiver whose ledger cannot grow"
SESSION=0
expect_summary "id alice, 1000 bytes, verdict good, [0-9.]+ s, failed: cannot write ledger .*/full-ledger: File too large$" \
	"a receiver whose ledger cannot grow"
expect_file_is "$TEST_TMP/full-ledger" "$(printf '%099d' 0)" \
	"the ledger that could not grow"
stop_receiver
expect_status 0 "$RX_STATUS" "receiver with a full ledger after SIGTERM"

# A receiver that cannot store a chunk in the middle of a transfer (its
# output file may not grow past 2 MiB): it refuses with an ERROR while the
# sender still has WRITEs and DONEs in flight, then hangs up.  The sender
# must report the receiver's reason (exit 4), not the broken connection
# that follows it: the common layer makes the ERROR the connection's
# error whatever completions fail around it.
make_file "$TEST_TMP/eight" $((8 << 20))
mkdir "$TEST_TMP/out-full"
trap '' XFSZ
RX_RUN=(prlimit --fsize=$((2 << 20)))
start_receiver -o "$TEST_TMP/out-full" -k "$TEST_TMP/secret" -w 512K \
	-n 4 || fail "no receiver with a small file size limit"
RX_RUN=()
trap - XFSZ
run_sender -i alice "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/eight"
expect_sender_fails 4 "refused: cannot write .*: File too large$" \
	"a receiver that cannot store a chunk mid-transfer"
SESSION=0
expect_summary "id -, 8388608 bytes, verdict none, [0-9.]+ s, failed: cannot write .*: File too large$" \
	"a receiver that cannot store a chunk mid-transfer"
expect_saved_only "$TEST_TMP/out-full"
stop_receiver
expect_status 0 "$RX_STATUS" "receiver with a file size limit after SIGTERM"
