# SPDX-License-Identifier: MIT
# The verb-level mistakes of tests/long/verb-mistakes.test, on the bed:
# the reference sender, then each mutant sender of $MUTANTS/table (NAME,
# a regex of what must name it, "connected" or "unconnected": whether
# the receiver sees a session of it, and its -t if not 5; tab-separated),
# against one receiver (-w 64K -n 2 -t 5) with a file of 300000 bytes
# (five chunks), each sender ended by timeout(1) after 40 s.  The reference gets the key of its ID;
# each mutant exits non-zero, prints no key, and its stderr or the
# receiver's summary line for it matches its regex.  Every mutant is run
# before the verdict, which lists each that broke its expectation.
. tests/e2e/lib.sh

make_file "$TEST_TMP/file" 300000
start_receiver -w 64K -n 2 -t 5 -k "$TEST_TMP/secret" || fail "no receiver"

# run_one SENDER ID [connected|unconnected [T]]: run SENDER -t T (5 if
# none) to the receiver (its stdout, stderr and status in OUT, ERR and
# STATUS), then take its session's summary line (LINE; 30 s at most for
# it: the receiver's own -t is 5 s), unless it never connected.
run_one() {
	local start=$SECONDS
	timeout 40 "$1" -t "${4:-5}" -i "$2" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/file" \
		>"$TEST_TMP/out" 2>"$TEST_TMP/err" </dev/null
	STATUS=$?
	OUT=$(cat "$TEST_TMP/out")
	ERR=$(cat "$TEST_TMP/err")
	if [ "${3:-connected}" = unconnected ]; then
		LINE="(no session: it fails before rdma_connect)"
	else
		LINE=$(next_line 30) || LINE="(no summary line within 30 s)"
	fi
	echo "== $2: exit $STATUS after $((SECONDS - start)) s"
	echo "   stderr: $ERR"
	echo "   summary: $LINE"
}

run_one ./sender reference
want=$(./receiver -k "$TEST_TMP/secret" --key-for reference)
[ "$STATUS" -eq 0 ] && [ "$OUT" = "secret key: ${want#*: }" ] ||
	fail "the reference: exit $STATUS, stdout '$OUT', stderr '$ERR'"

broken=()
while IFS=$'\t' read -r name named connected t; do
	run_one "$MUTANTS/$name/sender" "$name" "$connected" "$t"
	if [ "$STATUS" -eq 0 ] || [ "$STATUS" -eq 124 ]; then
		broken+=("$name: exit status $STATUS (expected a failure, in time)")
	elif [[ $OUT == *"secret key"* ]]; then
		broken+=("$name: printed a key: $OUT")
	elif ! printf '%s\n%s\n' "$ERR" "$LINE" | grep -Eq -- "$named"; then
		broken+=("$name: neither its stderr nor the summary line says '$named'")
	fi
done <"$MUTANTS/table"
[ ${#broken[@]} -eq 0 ] ||
	fail "mistakes not named: $(printf '\n  %s' "${broken[@]}")"
echo "every mistake named"
