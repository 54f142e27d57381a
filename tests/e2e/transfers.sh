# SPDX-License-Identifier: MIT
# Files of many sizes through one receiver, one session after another.
# Each transfer: the sender exits 0 and prints exactly one line, the key;
# the key equals `receiver --key-for ID`; the saved file equals the one
# sent; the receiver's summary says good and key sent.  Then the same
# with --json (1 MiB), and a bad verdict on each side: the receiver given
# a wrong hash (by tests/evil-sender), the sender's --json given a bad
# verdict (by tests/evil-receiver, on a port of its own).  The receiver
# keeps a grading ledger (-l) of its sessions, checked at the end.
. tests/e2e/lib.sh

mkdir "$TEST_TMP/out"
start_receiver -o "$TEST_TMP/out" -k "$TEST_TMP/secret" -l "$TEST_TMP/ledger" ||
	fail "no receiver"

# size name: 0 B, 1 B, 4 KiB, an odd size, 64 MiB (several RDMA WRITEs:
# rxe's largest message is 8 MiB); 1 MiB below, with --json.
saved=()
for size in 0 1 4096 3145745 67108864; do
	file="$TEST_TMP/file-$size.bin"
	id="student-$size"
	make_file "$file" "$size"
	run_sender -i "$id" "$RXE_ADDR" "$RX_PORT" "$file"
	expect_status 0 "$SENDER_STATUS" "sender of $size bytes ($SENDER_ERR)"
	want="secret key: $(./receiver -k "$TEST_TMP/secret" --key-for "$id")"
	[ "$SENDER_OUT" = "$want" ] ||
		fail "$size bytes: stdout '$SENDER_OUT', expected '$want'"
	# Not a terminal: no progress bar, just the one summary line.
	[ "$(printf '%s\n' "$SENDER_ERR" | wc -l)" -eq 1 ] &&
		printf '%s\n' "$SENDER_ERR" | grep -Eq "verdict good; hash .* MB/s$" ||
		fail "$size bytes: stderr is not one summary line: $SENDER_ERR"
	summary=$(next_line) || fail "no summary line for $size bytes"
	echo "$summary"
	case $summary in
	*"id $id, $size bytes, verdict good, key sent, saved as $id/file-$size.bin"*) ;;
	*) fail "$size bytes: summary '$summary'" ;;
	esac
	cmp "$file" "$TEST_TMP/out/$id/file-$size.bin" ||
		fail "$size bytes: the saved file differs"
	saved+=("$id/file-$size.bin")
	rm "$file"
done

# --json, a good transfer: one JSON object on stdout and nothing else,
# nothing on stderr either; the grader's key; each field's value.
file="$TEST_TMP/json.bin"
make_file "$file" 1048576
run_sender --json -i student-json "$RXE_ADDR" "$RX_PORT" "$file"
expect_status 0 "$SENDER_STATUS" "sender --json ($SENDER_ERR)"
echo "$SENDER_OUT"
[ -z "$SENDER_ERR" ] || fail "sender --json wrote on stderr: $SENDER_ERR"
expect_json "sender --json"
key=$(./receiver -k "$TEST_TMP/secret" --key-for student-json)
expect_json_field verdict '"good"' "sender --json"
expect_json_field key "\"$key\"" "sender --json"
expect_json_field file "\"$file\"" "sender --json"
expect_json_field bytes 1048576 "sender --json"
expect_json_field receiver "\"$RXE_ADDR\"" "sender --json"
expect_json_field port "$RX_PORT" "sender --json"
expect_json_field id '"student-json"' "sender --json"
expect_json_field exit_status 0 "sender --json"
[ -z "$(json_field error)" ] || fail "sender --json: an error on success"
times=()
for field in hash_seconds transfer_seconds verify_seconds total_seconds \
	goodput_mb_per_s; do
	value=$(json_field $field)
	printf '%s\n' "$value" | grep -Eq '^[0-9]+\.[0-9]+$' ||
		fail "sender --json: $field is '$value'"
	times+=("$value")
done
# The phases fit in the total, and the goodput is the bytes over the
# transfer time (within the rounding of the printed figures).
awk -v h="${times[0]}" -v t="${times[1]}" -v v="${times[2]}" \
	-v total="${times[3]}" -v g="${times[4]}" 'BEGIN {
	err = g * t - 1048576 / 1e6
	exit !(h + t + v <= total + 0.002 && t > 0 &&
	       err * err <= (0.0005 * g + 0.005 * t + 0.001) ^ 2)
}' || fail "sender --json: timings do not add up: $SENDER_OUT"
summary=$(next_line) || fail "no summary line for --json"
echo "$summary"
case $summary in
*"id student-json, 1048576 bytes, verdict good, key sent, saved as student-json/json.bin"*) ;;
*) fail "--json: summary '$summary'" ;;
esac
cmp "$file" "$TEST_TMP/out/student-json/json.bin" || fail "--json: the saved file differs"
saved+=(student-json/json.bin)

# A bad verdict, the receiver's side: tests/evil-sender sends a 1 MiB file
# honestly but claims a wrong hash: verdict bad, no ID asked for, no key,
# nothing saved (under a name not saved before).
tests/evil-sender -s 1048576 -n bad.bin -i student-json bad-hash \
	"$RXE_ADDR" "$RX_PORT" >"$TEST_TMP/evil.out"
expect_status 0 $? "tests/evil-sender bad-hash"
cat "$TEST_TMP/evil.out"
grep -q "^evil-sender: bad-hash: 1048576 bytes in 1 chunk, .*, verdict bad\$" \
	"$TEST_TMP/evil.out" || fail "bad hash: the evil sender's line"
summary=$(next_line) || fail "no summary line for the bad hash"
echo "$summary"
case $summary in
*"id -, 1048576 bytes, verdict bad, "*) ;;
*) fail "bad hash: summary '$summary'" ;;
esac
case $summary in *"key sent"*|*"saved as"*) fail "bad hash: $summary" ;; esac
expect_saved_only "$TEST_TMP/out" "${saved[@]}"

# --json, a bad verdict, the sender's side: the real sender against
# tests/evil-receiver bad-verdict, which takes the file whole and answers
# bad: verdict bad, the error line, exit_status 5 as the sender's own, no
# key, and the sender hangs up without sending its ID.
run_sender_to_evil bad-verdict "$file" --json -i student-json
echo "$SENDER_OUT"
expect_json_failure 5 "sender --json given a bad verdict"
expect_json_field verdict '"bad"' "sender --json with a bad verdict"
expect_json_field bytes 1048576 "sender --json with a bad verdict"
printf '%s\n' "$SENDER_ERR" | grep -q "json.bin: verdict bad: " ||
	fail "sender --json with a bad verdict: stderr $SENDER_ERR"
expect_status 0 "$EVIL_STATUS" "tests/evil-receiver bad-verdict"
sha=$(sha256sum "$file" | cut -c 1-64)
[ "$EVIL_LINE" = "evil-receiver: bad-verdict: 1048576 bytes received, SHA-256 $sha, verdict bad sent, the sender hung up; FILE_INFO of 1048576 bytes, SHA-256 $sha" ] ||
	fail "tests/evil-receiver bad-verdict: '$EVIL_LINE'"

# The grading ledger (-l): one JSON line for each session above, in the
# receiver's own form.  A good session and a bad verdict of a file whose
# name, and an ID, need escaping (a quote, a backslash), field by field;
# no key anywhere in it; --ledger-summary.  Then a record cut short, as by
# a crash: the next session's record starts on a line of its own, and the
# summary counts the cut one as unreadable.  (No python3 or jq in the VM:
# bash and grep read the lines; each process costs time under TCG.)
ledger="$TEST_TMP/ledger"
json_escape() { printf '%s' "$1" | sed 's/[\\"]/\\&/g'; }
peer_of() {
	local peer=${1#session * from }
	printf '%s\n' "${peer%%: id *}"
}
time_of() {
	[[ $1 =~ ^\{\"time\":\"([^\"]*)\" ]] && printf '%s\n' "${BASH_REMATCH[1]}"
}
weird='we"ird\name.bin'
weird_id='stu"dent\42'
make_file "$TEST_TMP/$weird" 1000
sha=$(sha256sum <"$TEST_TMP/$weird" | cut -d' ' -f1)
before=$(date -u +%FT%TZ)
run_sender -i "$weird_id" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/$weird"
expect_status 0 "$SENDER_STATUS" "sender of $weird ($SENDER_ERR)"
key=${SENDER_OUT#secret key: }
good=$(next_line) || fail "no summary line for $weird"
echo "$good"
said=$(tests/evil-sender -s 1000 -n "$weird" -i "$weird_id" bad-hash \
	"$RXE_ADDR" "$RX_PORT")
expect_status 0 $? "tests/evil-sender bad-hash as $weird"
echo "$said"
[[ $said =~ ^evil-sender:\ bad-hash:\ 1000\ bytes\ .*\ claimed\ sha256\ ([0-9a-f]{64}),\ verdict\ bad$ ]] ||
	fail "tests/evil-sender bad-hash as $weird: '$said'"
claimed=${BASH_REMATCH[1]}
bad=$(next_line) || fail "no summary line for $weird with a wrong hash"
echo "$bad"
after=$(date -u +%FT%TZ)
# Saved under its ID, escaped: '"' is %22, '\' is %5C.
[ -f "$TEST_TMP/out/stu%22dent%5C42/$weird" ] ||
	fail "$weird is not saved under stu%22dent%5C42/: $(ls -A "$TEST_TMP/out")"
rm -r "$TEST_TMP/out/stu%22dent%5C42"
cat "$ledger"

# Every line is a record: the fields in order, strings escaped, plain
# ASCII; one line per session.
string='"([^"\\[:cntrl:]]|\\["\\]|\\u00[0-9a-f]{2})*"'
record="^\\{\"time\":\"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\""
record+=",\"peer\":$string,\"id\":(null|$string),\"file\":(null|$string)"
record+=",\"bytes\":(null|0|[1-9][0-9]*),\"sha256\":(null|\"[0-9a-f]{64}\")"
record+=",\"verdict\":(null|\"good\"|\"bad\"),\"key_sent\":(true|false)"
record+=",\"error\":(null|$string),\"saved_as\":(null|$string)\\}\$"
! LC_ALL=C grep -Ev "$record" "$ledger" ||
	fail "ledger: the lines above are not records"
! LC_ALL=C grep -n '[^ -~]' "$ledger" || fail "ledger: not plain ASCII"
mapfile -t lines <"$ledger"
sessions=${bad#session }
sessions=${sessions%% *}
[ "${#lines[@]}" -eq "$sessions" ] ||
	fail "ledger: ${#lines[@]} lines for $sessions sessions"

# The two sessions just run, field by field; their times are now, in UTC.
time=$(time_of "${lines[-2]}")
want="{\"time\":\"$time\",\"peer\":\"$(peer_of "$good")\""
want+=",\"id\":\"$(json_escape "$weird_id")\""
want+=",\"file\":\"$(json_escape "$weird")\",\"bytes\":1000"
want+=",\"sha256\":\"$sha\",\"verdict\":\"good\",\"key_sent\":true"
want+=",\"error\":null,\"saved_as\":\"stu%22dent%5C42/$(json_escape "$weird")\"}"
[ "${lines[-2]}" = "$want" ] ||
	fail "ledger: the good session's record is"$'\n'"${lines[-2]}"$'\n'"not"$'\n'"$want"
time2=$(time_of "${lines[-1]}")
want="{\"time\":\"$time2\",\"peer\":\"$(peer_of "$bad")\",\"id\":null"
want+=",\"file\":\"$(json_escape "$weird")\",\"bytes\":1000"
want+=",\"sha256\":\"$claimed\""
want+=",\"verdict\":\"bad\",\"key_sent\":false,\"error\":null"
want+=",\"saved_as\":null}"
[ "${lines[-1]}" = "$want" ] ||
	fail "ledger: the bad verdict's record is"$'\n'"${lines[-1]}"$'\n'"not"$'\n'"$want"
[[ ! $time < $before && ! $after < $time2 ]] ||
	fail "ledger: times $time, $time2 are not from $before to $after"

# No key: not this one, and no other run of 64 hex digits but the hashes.
! grep -qiF "$key" "$ledger" || fail "ledger: the key $key is in it"
! sed 's/"sha256":"[0-9a-f]\{64\}"//' "$ledger" | grep -Eq '[0-9a-fA-F]{64}' ||
	fail "ledger: 64 hex digits outside a sha256 field"

# expect_ledger_summary ID_LINE TOTALS WHAT: --ledger-summary exits 0 and
# prints its header, one line per ID of the ledger (each once, in byte
# order) with ID_LINE among them, and the line TOTALS.  Rows are the lines
# with a tab; the others before the totals are flags (every sender here
# comes from one address: one line says it got keys for several IDs).
id_field=',"id":("([^"\\]|\\.)*"),'
expect_ledger_summary() {
	local out line ids=() found=0
	local -A in_ledger=()
	out=$(./receiver --ledger-summary "$ledger" 2>&1)
	expect_status 0 $? "$3: --ledger-summary"
	printf '%s\n' "$out"
	mapfile -t out <<<"$out"
	[ "${out[0]}" = $'ID\tFIRST SUCCESS\tATTEMPTS' ] ||
		fail "$3: --ledger-summary header '${out[0]}'"
	[ "${out[-1]}" = "$2" ] ||
		fail "$3: --ledger-summary totals '${out[-1]}', expected '$2'"
	for line in "${out[@]:1:${#out[@]}-2}"; do
		if [[ $line != *$'\t'* ]]; then
			[[ $line == "flag: address "*" got keys for "*" IDs: "* ]] ||
				fail "$3: --ledger-summary line '$line', expected a row or a flag"
			continue
		fi
		ids+=("${line%%$'\t'*}")
		[ "$line" = "$1" ] && found=1
	done
	[ "$found" -eq 1 ] || fail "$3: --ledger-summary has no line '$1'"
	printf '%s\n' "${ids[@]}" | LC_ALL=C sort -cu ||
		fail "$3: --ledger-summary IDs are not sorted, one line each"
	for line in "${lines[@]}"; do
		[[ $line =~ $id_field ]] && in_ledger[${BASH_REMATCH[1]}]=1
	done
	[ "${#ids[@]}" -eq "${#in_ledger[@]}" ] ||
		fail "$3: --ledger-summary: ${#ids[@]} IDs, the ledger has ${#in_ledger[@]}"
}
without=0
for line in "${lines[@]}"; do
	case $line in *',"id":null,'*) without=$((without + 1)) ;; esac
done
expect_ledger_summary "$weird_id"$'\t'"$time"$'\t'1 \
	"records: $sessions, without an ID: $without, unreadable lines skipped: 0" \
	"a whole ledger"

# A record cut short, then a retry by the same ID: its own line after the
# cut one; the first success stays the first, the attempts are two.
partial='{"time":"2026-11-22T20:31:05Z","peer":"198.18'
printf '%s' "$partial" >>"$ledger"
run_sender -i "$weird_id" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/$weird"
expect_status 0 "$SENDER_STATUS" "sender after a cut-short record ($SENDER_ERR)"
retry=$(next_line) || fail "no summary line after a cut-short record"
echo "$retry"
# Saved under its ID, escaped: '"' is %22, '\' is %5C.
[ -f "$TEST_TMP/out/stu%22dent%5C42/$weird" ] ||
	fail "$weird is not saved under stu%22dent%5C42/: $(ls -A "$TEST_TMP/out")"
rm -r "$TEST_TMP/out/stu%22dent%5C42" "$TEST_TMP/$weird"
mapfile -t lines <"$ledger"
printf '%s\n' "${lines[@]: -3}"
[ "${#lines[@]}" -eq $((sessions + 2)) ] &&
	[ "${lines[-2]}" = "$partial" ] &&
	[[ ${lines[-1]} =~ $record && ${lines[-1]} == *',"key_sent":true,'* ]] ||
	fail "ledger: the record after a cut-short one is not on its own line"
expect_ledger_summary "$weird_id"$'\t'"$time"$'\t'2 \
	"records: $((sessions + 1)), without an ID: $without, unreadable lines skipped: 1" \
	"a ledger with a cut-short record"

# Stopping: SIGTERM ends the receiver cleanly.
stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"
