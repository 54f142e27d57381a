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
#     quota back at the next SIGHUP, not before (a refusal never looks
#     at the disk);
#   - --id-max without --keep: an ID's oldest files make way for its
#     newest, by bytes;
#   - a roster on one shared host: a roster ID keeps what its --id-max
#     allows, more than the host's --address-max, and a classmate on the
#     same host is still keyed; a roster ID's files from two addresses
#     count (and make way) together;
#   - the amplifier: one address at its --address-max with 40960 tiny
#     files kept; the receiver's CPU for refused FILE_INFOs from it and
#     from an address with none (figures printed, not judged);
#   - --address-sessions 2: a third session from one address is refused
#     as busy, naming the limit, while another address is served;
#   - sessions without a verdict (failed before FILE_INFO, or refused at
#     it) cost the ledger one record per address per minute, and one
#     that sums up the rest at the end;
#   - one ID from one address: 120 keys, then its key is refused (exit
#     4), and a classmate's from that address is not.
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
	-m 300000 --address-max 1M --store-max 3M || fail "no receiver with quotas"

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
kill -HUP "$RX_PID"	# (their 400 kB count no more)
expect_stderr_line "^receiver: SIGHUP: -o $out counted again: 0 files kept$" \
	"the SIGHUP after keeper's files were removed"

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
	-m 300000 --address-max 34% --store-max 3M || fail "no receiver after the restart"
SESSION=0
refused_address "the filler after a restart" fill5 "$TEST_TMP/f300k" 300000
keyed "another address after a restart" "$RXE_ADDR6" honest "$TEST_TMP/f100k" 100000
# The instructor gives the quota back by removing the filler's files,
# then a reload (SIGHUP): until then the running total stands.
rm -r "$out/fill1" "$out/fill2"
refused_address "the filler once its files are removed, before a reload" \
	fill6 "$TEST_TMP/f300k" 300000
kill -HUP "$RX_PID"
expect_stderr_line "^receiver: SIGHUP: -o $out counted again: 3 files kept$" \
	"the SIGHUP after the filler's files were removed"
keyed "the filler once its files are removed" "$RXE_ADDR" fill6 "$TEST_TMP/f300k" 300000
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after the restart, after SIGTERM"

# --id-max without --keep: three files of 300000 bytes for one ID under
# --id-max 700000: the newest two stay, the oldest makes way.
mkdir "$TEST_TMP/out2"
start_receiver -o "$TEST_TMP/out2" -l "$TEST_TMP/ledger-id" \
	-k "$TEST_TMP/secret" -m 300000 --id-max 700000 ||
	fail "no receiver with --id-max"
SESSION=0
for n in 1 2 3; do
	keyed "--id-max, file $n" "$RXE_ADDR" bytes "$TEST_TMP/f300k" 300000
done
expect_saved_only "$TEST_TMP/out2" bytes/f300k.2 bytes/f300k.3
tail -n 1 "$TEST_TMP/ledger-id" | grep -q '"saved_as":"bytes/f300k.3","dropped":\["bytes/f300k"\]}$' ||
	fail "--id-max: the third record does not name the dropped file: $(tail -n 1 "$TEST_TMP/ledger-id")"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with --id-max after SIGTERM"

# A roster on one shared host (the IPv4 address): --keep 1 -m 300000
# gives each roster ID 600000 bytes (--id-max), more than the address's
# --address-max 512K; 3 IDs x 600000 and a next file fit in 3M.  alice
# keeps two files from the host and bob is still keyed there; alice's
# third, from another address, makes her oldest (from the host) go.
printf 'alice\nbob\ncarol\n' >"$TEST_TMP/roster"
mkdir "$TEST_TMP/out3"
start_receiver -o "$TEST_TMP/out3" -l "$TEST_TMP/ledger-r" \
	-k "$TEST_TMP/secret" -r "$TEST_TMP/roster" --keep 1 -m 300000 \
	--address-max 512K --store-max 3M || fail "no receiver with a roster"
SESSION=0
keyed "alice's first, on the shared host" "$RXE_ADDR" alice "$TEST_TMP/f300k" 300000
keyed "alice's second, on the shared host" "$RXE_ADDR" alice "$TEST_TMP/f300k" 300000
keyed "bob, on the host where alice holds 600000" "$RXE_ADDR" bob "$TEST_TMP/f300k" 300000
keyed "alice's third, from elsewhere" "$RXE_ADDR6" alice "$TEST_TMP/f300k" 300000
expect_saved_only "$TEST_TMP/out3" alice/f300k.2 alice/f300k.3 bob/f300k
tail -n 1 "$TEST_TMP/ledger-r" | grep -q '"saved_as":"alice/f300k.3","dropped":\["alice/f300k"\]}$' ||
	fail "a roster ID's files from two addresses: $(tail -n 1 "$TEST_TMP/ledger-r")"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with a roster after SIGTERM"

# The amplifier, measured: an address at its --address-max with 40960
# kept files of 8 bytes (each counted as 64 KiB: 2560 MiB), made on disk
# with their ledger records; the receiver's CPU (utime + stime) for
# AMP_N refused FILE_INFOs from it, then, in a receiver with nothing
# kept, for AMP_N refused by a small --address-max.  Printed only:
# TCG's times vary, and the SIGHUP parts above check that a refusal
# does not look at the disk.
AMP_N=5
amp=$TEST_TMP/amp
mkdir -p "$amp/out/tiny" "$amp/none"
(cd "$amp/out/tiny" && head -c $((40960 * 8)) /dev/zero | split -b 8 -a 5 - f) ||
	fail "cannot make 40960 files"
hash=$(printf '0%.0s' $(seq 64))
find "$amp/out/tiny" -type f -printf '%f\n' | sort |
	awk -v peer="$RXE_ADDR:40000" -v h="$hash" '{ printf "{\"time\":\"2026-11-28T09:00:00Z\",\"peer\":\"%s\",\"id\":\"tiny\",\"file\":\"%s\",\"bytes\":8,\"sha256\":\"%s\",\"verdict\":\"good\",\"key_sent\":true,\"error\":null,\"saved_as\":\"tiny/%s\"}\n", peer, $1, h, $1 }' \
	>"$amp/ledger"
[ "$(wc -l <"$amp/ledger")" -eq 40960 ] || fail "the amplifier's ledger has $(wc -l <"$amp/ledger") records"
# cpu_ticks: the receiver's user and system time so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$RX_PID/stat"; }
# refusals_cost WHAT FILE BYTES: AMP_N senders from the IPv4 address
# refused by --address-max; the receiver's CPU for them, in ms, in
# COST_MS.
refusals_cost() {
	local before after
	before=$(cpu_ticks)
	for ((i = 0; i < AMP_N; i++)); do
		refused_address "$1, $((i + 1)) of $AMP_N" amp "$2" "$3"
	done
	after=$(cpu_ticks)
	COST_MS=$(((after - before) * 1000 / $(getconf CLK_TCK)))
}
started=$(date +%s%N)
start_receiver -o "$amp/out" -l "$amp/ledger" -k "$TEST_TMP/secret" \
	-m 1M --address-max 2560M || fail "no receiver over 40960 kept files"
start_ms=$((($(date +%s%N) - started) / 1000000))
SESSION=0
ADDRESS_MAX=2684354560
refusals_cost "refused at 40960 kept files" "$TEST_TMP/f100k" 100000
full_ms=$COST_MS
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver over 40960 kept files, after SIGTERM"
start_receiver -o "$amp/none" -k "$TEST_TMP/secret" -m 1M --address-max 64K ||
	fail "no receiver with nothing kept"
SESSION=0
ADDRESS_MAX=65536
refusals_cost "refused at 0 kept files" "$TEST_TMP/f100k" 100000
none_ms=$COST_MS
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with nothing kept, after SIGTERM"
echo "quota check: $AMP_N refused FILE_INFOs cost the receiver ${full_ms} ms of CPU at 40960 kept files, ${none_ms} ms at 0; its start over 40960 ledger records took ${start_ms} ms"

# --address-sessions 2: two silent senders from one address hold its
# sessions; a third from it is refused as busy; another address is not.
# Sessions without a verdict from one address (the two silent ones, six
# that hang up at once, three refused at FILE_INFO): the ledger gets the
# first one's record, and at the end one for the other ten.
: >"$TEST_TMP/ledger3"
start_receiver -v -t 3 --address-sessions 2 -l "$TEST_TMP/ledger3" \
	-k "$TEST_TMP/secret" -m 200000 ||
	fail "no receiver with --address-sessions 2"
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
# And three whose FILE_INFO is refused (over -m): no verdict either.
for i in 1 2 3; do
	run_sender -i big "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/f300k"
	expect_sender_fails 4 "refused: file of 300000 bytes is over the receiver's limit of 200000 bytes$" \
		"a file over -m, $i of 3"
	next_line 30 >/dev/null || fail "$i of 3 summary lines of the refused"
done
[ "$records" -eq 2 ] && [ "$(wc -l <"$TEST_TMP/ledger3")" -eq 2 ] ||
	fail "sessions without a verdict from one address: the ledger has $(wc -l <"$TEST_TMP/ledger3") records (had $records), expected 2: the first silent one's and the IPv6 sender's"
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver with --address-sessions after SIGTERM"
tail -n 1 "$TEST_TMP/ledger3" | grep -q '"peer":"198.18.0.1",.*"error":"10 sessions from this address ended without a key since .* (recorded together); the last: file of 300000 bytes is over the receiver.s limit of 200000 bytes"' ||
	fail "the last record does not sum up the sessions without a verdict: $(tail -n 1 "$TEST_TMP/ledger3")"

# One ID from one address has 120 keys an hour: a student's sender run
# in a loop on a shared host is refused its 121st key (exit 4, naming
# the limit), and a classmate at that address is still keyed.
start_receiver -l "$TEST_TMP/ledger4" -k "$TEST_TMP/secret" ||
	fail "no receiver for the keys' limit"
make_file "$TEST_TMP/empty" 0
for ((i = 1; i <= 120; i++)); do
	./sender -q -i looper "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/empty" \
		>/dev/null 2>"$TEST_TMP/looper.err" ||
		fail "the looper's key $i of 120: $(cat "$TEST_TMP/looper.err")"
	next_line 30 >/dev/null || fail "no summary line of the looper's key $i"
done
SESSION=120
run_sender -i looper "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/empty"
expect_sender_fails 4 "refused: your ID has had 120 keys from your address this hour, its limit: the ledger takes more in [0-9]+ min$" \
	"the looper's 121st key in an hour"
expect_summary "id looper, 0 bytes, verdict good, .*failed: your ID has had 120 keys" \
	"the looper's 121st key"
keyed "a classmate at the looper's address" "$RXE_ADDR" classmate "$TEST_TMP/f100k" 100000
stop_receiver
expect_status 0 "$RX_STATUS" "the receiver after the keys' limit"
[ "$(grep -c '"key_sent":true' "$TEST_TMP/ledger4")" -eq 121 ] ||
	fail "the ledger has $(grep -c '"key_sent":true' "$TEST_TMP/ledger4") keyed records, expected 121 (the looper's 120, the classmate's)"
echo "quotas: --keep, --address-max (and a restart), --id-max, a roster on a shared host, the amplifier, --address-sessions, sessions without a verdict, one ID's keys from one address"
