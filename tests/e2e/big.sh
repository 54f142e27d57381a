# SPDX-License-Identifier: MIT
# A file larger than this VM's memory (run with RXE_VM_MEM=224M; BIG_FILE
# is on the host's disk, made by tests/long/big.test): the transfer works
# while the receiver's peak RSS stays under its windows plus 32 MiB.  On a
# terminal the sender shows a progress bar, and -q silences it.
. tests/e2e/lib.sh

file=$BIG_FILE
mem_kib=$(sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/meminfo)
[ "$(stat -c %s "$file")" -gt $((mem_kib * 1024)) ] ||
	fail "the file is not larger than the VM's memory ($mem_kib KiB)"

# Windows: 2 x 16 MiB.
start_receiver -n 2 -w 16M -k "$TEST_TMP/secret" || fail "no receiver"

# send_on_tty ARGS...: run the sender on a pseudo-terminal (script(1)),
# its output in $TEST_TMP/tty.
send_on_tty() {
	script -qfec "./sender $*" "$TEST_TMP/tty" >/dev/null 2>&1
}

send_on_tty -i big "$RXE_ADDR" "$RX_PORT" "$file"
expect_status 0 $? "a file larger than memory"
grep -q "secret key: " "$TEST_TMP/tty" || fail "no key: $(cat "$TEST_TMP/tty")"
grep -Eq "big\.[A-Za-z0-9]+: [0-9.]+ of 256.0 MiB, [0-9.]+ MB/s" "$TEST_TMP/tty" ||
	fail "no progress bar on a terminal: $(tr '\r' '\n' <"$TEST_TMP/tty")"
line=$(next_line 300) || fail "no summary line"
echo "$line"
case $line in
*"id big, 268435456 bytes, verdict good, key sent"*) ;;
*) fail "summary: $line" ;;
esac
peak_kib=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$RX_PID/status")
echo "receiver peak RSS: $peak_kib KiB"
[ "$peak_kib" -le $(((32 + 32) * 1024)) ] ||
	fail "receiver peak RSS $peak_kib KiB is over 2 x 16 MiB + 32 MiB"

send_on_tty -q -i big "$RXE_ADDR" "$RX_PORT" "$file"
expect_status 0 $? "a file larger than memory, with -q"
! grep -q "MiB, " "$TEST_TMP/tty" ||
	fail "-q still shows progress: $(tr '\r' '\n' <"$TEST_TMP/tty")"
next_line 300 >/dev/null || fail "no summary line for the -q run"

stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"
