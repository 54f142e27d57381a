# SPDX-License-Identifier: MIT
# One good session under valgrind's memcheck on each side: the receiver
# (tests/vg-receiver) serves one sender (tests/vg-sender), then stops on
# SIGTERM.  Both must report no error: no invalid read or write, no use of
# uninitialised memory, no leak (definite, indirect or possible).  The
# only reports suppressed are those from inside the RDMA and crypto
# libraries, listed with their reasons in tests/valgrind.supp.
. tests/e2e/lib.sh

vg=(valgrind --tool=memcheck --leak-check=full
	--show-leak-kinds=definite,indirect,possible
	--errors-for-leak-kinds=definite,indirect,possible
	--track-fds=no --error-exitcode=99
	--suppressions=tests/valgrind.supp)

# memcheck_clean LOG WHAT: LOG says valgrind saw no error.
memcheck_clean() {
	if ! grep -q "ERROR SUMMARY: 0 errors" "$1"; then
		cat "$1"
		fail "$2: valgrind found errors (its log is above)"
	fi
}

make_file "$TEST_TMP/file" 3000000
mkdir "$TEST_TMP/out"
RX_BIN=tests/vg-receiver
RX_RUN=("${vg[@]}" --log-file="$TEST_TMP/receiver.vg")
start_receiver -t 60 -w 1M -n 2 -o "$TEST_TMP/out" -k "$TEST_TMP/secret" ||
	fail "no receiver"

"${vg[@]}" --log-file="$TEST_TMP/sender.vg" tests/vg-sender -i memcheck \
	-t 60 "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/file" \
	>"$TEST_TMP/sender.out" 2>"$TEST_TMP/sender.err"
status=$?
[ "$status" -eq 99 ] && memcheck_clean "$TEST_TMP/sender.vg" "the sender"
expect_status 0 "$status" "the sender under valgrind ($(cat "$TEST_TMP/sender.err"))"
expect_summary "id memcheck, 3000000 bytes, verdict good, key sent, saved as memcheck/file" \
	"the session under valgrind"
cmp -s "$TEST_TMP/file" "$TEST_TMP/out/memcheck/file" ||
	fail "the saved file differs"

stop_receiver
memcheck_clean "$TEST_TMP/sender.vg" "the sender"
memcheck_clean "$TEST_TMP/receiver.vg" "the receiver"
expect_status 0 "$RX_STATUS" "the receiver under valgrind, after SIGTERM"
grep -h "ERROR SUMMARY\|in use at exit\|definitely lost" "$TEST_TMP/sender.vg" \
	"$TEST_TMP/receiver.vg"
