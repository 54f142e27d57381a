# SPDX-License-Identifier: MIT
# The class's quotas (over the bed): no student takes what others need.
#   - --keep 1: an ID's third good file removes its first; the ledger's
#     record of the third names it under "dropped"; a sender at another
#     address that claims the ID removes only its own files;
#   - --address-max: a store filler from one address (sparse-written
#     files of zeros, then honest files under many IDs) is refused once
#     its address holds its share, naming the limit and what is left,
#     while a sender from another address (IPv6) is keyed during the
#     fill, after it, and after a restart, which learns from the ledger
#     what each address holds; removing the filler's files gives its
#     quota back;
#   - --address-sessions 2: a third session from one address is refused
#     as busy, naming the limit, while another address is served;
#   - sessions that fail before FILE_INFO cost the ledger one record per
#     address per minute, and one that sums up the rest at the end.
. tests/e2e/lib.sh

[ -n "${RXE_ADDR6:-}" ] || fail "RXE_ADDR6 is not set: the bed gave no IPv6 address"
out=$TEST_TMP/out
ledger=$TEST_TMP/ledger
mkdir "$out"
make_file "$TEST_TMP/f300k" 300000
make_file "$TEST_TMP/f100k" 100000

# keyed WHAT ADDR ID FILE BYTES: an honest sender to ADDR gets its key.
keyed() {
	run_sender -i "$3" "$2" "$RX_PORT" "$4"
	expect_status 0 "$SENDER_STATUS" "$1 ($SENDER_ERR)"
	expect_summary "id $3, $5 bytes, verdict good, key sent" "$1"
}

# refused_address WHAT ID FILE BYTES: a sender from the IPv4 address is
# refused by --address-max, told how much is left.
refused_address() {
	run_sender -i "$2" "$RXE_ADDR" "$RX_PORT" "$3"
	expect_sender_fails 4 "refused: no room for $4 bytes: your address has [0-9]+ left of its --address-max $ADDRESS_MAX$" \
		"$1"
	expect_summary "verdict none, .*failed: no room for $4 bytes: your address has" "$1"
}

ADDRESS_MAX=1048576
start_receiver -o "$out" -l "$ledger" -k "$TEST_TMP/secret" --keep 1 \
	--address-max 1M --store-max 3M || fail "no receiver with quotas"

# --keep 1: three good files of one ID and name; the first goes.
for n in 1 2 3; do
	keyed "keep, file $n" "$RXE_ADDR6" keeper "$TEST_TMP/f100k" 100000
done
expect_saved_only "$out" keeper/f100k.2 keeper/f100k.3
tail -n 1 "$ledger" | grep -q ',"saved_as":"keeper/f100k.3","dropped":\["keeper/f100k"\]}$' ||
	fail "--keep 1: the third record does not name the dropped file: $(tail -n 1 "$ledger")"
# A sender at another address that claims the ID (three times) removes
# none of the first address's files, only its own oldest.
for n in 1 2 3; do
	keyed "keep, the ID claimed elsewhere, file $n" "$RXE_ADDR" keeper \
		"$TEST_TMP/f100k" 100000
done
expect_saved_only "$out" keeper/f100k.2 keeper/f100k.3 keeper/f100k.4 \
	keeper/f100k.5
rm -r "$out/keeper"

# The filler, from the IPv4 address: sparse-written zeros are refused
# (the canaries), honest files under new IDs fill its share; another
# address is keyed in between, and the filler is then refused.
line=$(tests/evil-sender -s 300000 sparse "$RXE_ADDR" "$RX_PORT")
case $line in
"evil-sender: sparse: the receiver stopped it after "*) ;;
*) fail "the filler's sparse file: $line" ;;
esac
expect_summary "failed: chunk at offset 0: (nothing was written at window offset|none of its 73 places checked was written)" \
	"the filler's sparse file"
for id in fill1 fill2 fill3; do
	keyed "the filler as $id" "$RXE_ADDR" "$id" "$TEST_TMP/f300k" 300000
	keyed "another address during the fill" "$RXE_ADDR6" "honest" \
		"$TEST_TMP/f100k" 100000
done
refused_address "the filler past its share" fill4 "$TEST_TMP/f300k" 300000
keyed "another address after the fill" "$RXE_ADDR6" honest "$TEST_TMP/f100k" 100000
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with quotas after SIGTERM"

# After a restart, the ledger says what the filler's address holds;
# its share is now a part of --store-max (34% of 3 MiB).
ADDRESS_MAX=$((3145728 * 34 / 100))
start_receiver -o "$out" -l "$ledger" -k "$TEST_TMP/secret" --keep 1 \
	--address-max 34% --store-max 3M || fail "no receiver after the restart"
SESSION=0
refused_address "the filler after a restart" fill5 "$TEST_TMP/f300k" 300000
keyed "another address after a restart" "$RXE_ADDR6" honest "$TEST_TMP/f100k" 100000
# The instructor gives the quota back by removing the filler's files.
rm -r "$out/fill1" "$out/fill2"
keyed "the filler once its files are removed" "$RXE_ADDR" fill6 "$TEST_TMP/f300k" 300000
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after the restart, after SIGTERM"

# --address-sessions 2: two silent senders from one address hold its
# sessions; a third from it is refused as busy; another address is not.
# Sessions that fail before FILE_INFO from one address (the two silent
# ones, then six that hang up at once): the ledger gets the first one's
# record, and at the end one for the other seven.
: >"$TEST_TMP/ledger3"
start_receiver -v -t 3 --address-sessions 2 -l "$TEST_TMP/ledger3" \
	-k "$TEST_TMP/secret" || fail "no receiver with --address-sessions 2"
SESSION=0
tests/evil-sender silent "$RXE_ADDR" "$RX_PORT" >"$TEST_TMP/silent1" & s1=$!
tests/evil-sender silent "$RXE_ADDR" "$RX_PORT" >"$TEST_TMP/silent2" & s2=$!
# Until the receiver's trace (-v) shows both waiting for FILE_INFO, at
# most 30 s.
for ((i = 0; i < 300; i++)); do
	[ "$(grep -c ': state RECV_FILE_INFO$' "$RX_DIR/stderr")" -ge 2 ] && break
	sleep 0.1
done
[ "$(grep -c ': state RECV_FILE_INFO$' "$RX_DIR/stderr")" -ge 2 ] ||
	fail "the two silent sessions were not waiting for FILE_INFO within 30 s"
run_sender -i third "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/f100k"
expect_sender_fails 4 "connect to .*: connection refused: receiver busy: your address has 2 sessions open, its --address-sessions" \
	"a third session from one address"
run_sender -i other "$RXE_ADDR6" "$RX_PORT" "$TEST_TMP/f100k"
expect_status 0 "$SENDER_STATUS" "another address beside two silent ones ($SENDER_ERR)"
wait_within 30 "$s1" "the first silent sender"
wait_within 30 "$s2" "the second silent sender"
# Each session's summary line comes once it is over (and its record, if
# it has one, is written): the IPv6 sender's and the two silent ones'.
for i in 1 2 3; do
	next_line 30 >/dev/null || fail "$i of 3 summary lines before the flood"
done
records=$(wc -l <"$TEST_TMP/ledger3")
for i in 1 2 3 4 5 6; do
	tests/evil-sender gone-after-connect "$RXE_ADDR" "$RX_PORT" >/dev/null ||
		fail "gone-after-connect $i could not run"
done
for i in 1 2 3 4 5 6; do
	next_line 30 >/dev/null || fail "$i of 6 summary lines of the flood"
done
[ "$records" -eq 2 ] && [ "$(wc -l <"$TEST_TMP/ledger3")" -eq 2 ] ||
	fail "early failures from one address: the ledger has $(wc -l <"$TEST_TMP/ledger3") records (had $records), expected 2: the first silent one's and the IPv6 sender's"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with --address-sessions after SIGTERM"
tail -n 1 "$TEST_TMP/ledger3" | grep -q '"peer":"198.18.0.1",.*"error":"7 sessions from this address failed before FILE_INFO since ' ||
	fail "the last record does not sum up the early failures: $(tail -n 1 "$TEST_TMP/ledger3")"
echo "quotas: --keep, --address-max (and a restart), --address-sessions, early failures"
