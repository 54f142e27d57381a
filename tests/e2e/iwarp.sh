# SPDX-License-Identifier: MIT
# Lab 3 over iWARP, on one host: run by tests/long/iwarp.test with
# RXE_PROVIDER=siw, so RXE_DEV is a Soft-iWARP device.  A focused set of
# what the other scripts check over RoCE, with what iWARP does
# differently in mind:
#   - the device is iWARP, and rping with data validation works on it;
#   - a receiver on every address (no -a) serves IPv4 and IPv6 senders
#     (iWARP takes a connection only on a listener of its own family);
#   - transfers of 0 B, 1 B, an odd size and many windows: each sender
#     prints the key `receiver --key-for` gives, each file is saved as
#     sent;
#   - four senders at once, each exiting as soon as it has its key: the
#     receiver counts every KEY as sent (over iWARP a SEND completes when
#     it is on the wire, and the sender may hang up before the receiver
#     sees that);
#   - a file over -m is refused (exit 4); a wrong hash gets verdict bad
#     and saves nothing; a receiver's bad verdict ends the sender (exit 5);
#   - misbehaving senders (tests/evil-sender), each ending its session
#     with no key and no file: a wrong version, a WRITE past the region,
#     DONE twice, a hang-up mid-session, and a WRITE into a window the
#     receiver took back (refused by a TERMINATE after the WRITE);
#   - a receiver that never answers: the sender's zero-length WRITEs go
#     (a remedy for a Soft-iWARP race: nudge() in lib/provider.c), then it
#     times out;
#   - a port where nothing listens (iWARP refuses inside rdma_connect) and
#     a loopback address: one clear line each, exit 3;
#   - root's registrations, which siw counts against root's `ulimit -l`:
#     the default 16 MiB windows; a busy refusal with -c 1;
#   - a sender that takes none of the receiver's messages (tests/evil-sender
#     starve): iWARP has no RNR retries, so the first message that finds
#     no receive breaks the connection at once, and the receiver serves
#     on.
. tests/e2e/lib.sh

iwarp || fail "$RXE_DEV is not an iWARP device: $(ibv_devinfo -d "$RXE_DEV" | grep transport)"

rping -s -a "$RXE_ADDR" -p 7175 -C 3 -V >/dev/null & server=$!
scripts/rxe-wait -t 30 listen 7175 || fail "the rping server did not listen"
# Bounded: siw's accept race (see nudge() in lib/provider.c) can leave a
# client's first message unseen, and rping has no remedy for it.
timeout 30 rping -c -a "$RXE_ADDR" -p 7175 -C 3 -V -v >"$TEST_TMP/rping"
status=$?
[ "$status" -ne 124 ] ||
	fail "rping over $RXE_DEV: no 3 pings within 30 s (siw's accept race?): $(tail -n 5 "$TEST_TMP/rping")"
expect_status 0 "$status" "rping over $RXE_DEV ($(tail -n 5 "$TEST_TMP/rping"))"
expect_done 30 "$server" "the rping server"
[ "$(grep -c '^ping data: rdma-ping-' "$TEST_TMP/rping")" -eq 3 ] ||
	fail "rping did not report 3 validated pings"

out=$TEST_TMP/out
mkdir "$out"
start_receiver -w 256K -n 2 -m 8M -t 5 -o "$out" -k "$TEST_TMP/secret" ||
	fail "no receiver"
case $(rdma resource show cm_id | grep -c "state LISTEN .*:$RX_PORT ") in
2) ;;
*) fail "not one listener for IPv4 and one for IPv6 on port $RX_PORT" ;;
esac

# key_for ID: the secret key line a sender with ID must print.
key_for() {
	echo "secret key: $(./receiver -k "$TEST_TMP/secret" --key-for "$1")"
}

# size id address: the odd size over IPv6, the rest over IPv4; the last
# takes 11 windows of 256 KiB.
saved=()
for spec in "0 empty $RXE_ADDR" "1 one $RXE_ADDR" "1000001 odd [$RXE_ADDR6]" \
	"2621441 many $RXE_ADDR"; do
	set -- $spec
	make_file "$TEST_TMP/$2" "$1"
	run_sender -v -i "$2" "$3" "$RX_PORT" "$TEST_TMP/$2"
	expect_status 0 "$SENDER_STATUS" "$1 bytes to $3 ($SENDER_ERR)"
	[ "$SENDER_OUT" = "$(key_for "$2")" ] || fail "$2: wrong key: $SENDER_OUT"
	expect_summary "id $2, $1 bytes, verdict good, key sent, saved as $2/$2," "$2"
	cmp "$TEST_TMP/$2" "$out/$2/$2" || fail "$2: the saved file differs"
	saved+=("$2/$2")
done
regions=$(grep -c "received REGION" "$TEST_TMP/sender.err")
[ "$regions" -eq 11 ] || fail "many: $regions REGIONs, expected 11"

# Four at once, each gone the moment it has its key.
pids=()
for i in 1 2 3 4; do
	make_file "$TEST_TMP/c$i" $((i * 300000))
	./sender -q -i "c$i" "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/c$i" \
		>"$TEST_TMP/c$i.out" 2>"$TEST_TMP/c$i.err" &
	pids+=($!)
done
for i in 1 2 3 4; do
	expect_key "${pids[$((i - 1))]}" "$i" \
		"$(./receiver -k "$TEST_TMP/secret" --key-for "c$i")" \
		"sender c$i of 4 at once"
done
for i in 1 2 3 4; do
	line=$(next_line) || fail "only $((i - 1)) of 4 summary lines"
	echo "$line"
	case $line in
	*", verdict good, key sent, saved as c"*) ;;
	*) fail "one of 4 at once: $line" ;;
	esac
done
SESSION=$((SESSION + 4))
for i in 1 2 3 4; do
	cmp "$TEST_TMP/c$i" "$out/c$i/c$i" || fail "c$i: the saved file differs"
	saved+=("c$i/c$i")
done

# Refused, bad verdicts.
make_file "$TEST_TMP/big" $((8 << 20 | 1))
run_sender -i big "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/big"
expect_sender_fails 4 "refused: file of 8388609 bytes is over the receiver's limit" \
	"a file over -m"
expect_summary "verdict none, .*failed: file of 8388609 bytes is over" "over -m"
EVIL=$(tests/evil-sender -s 1060865 bad-hash "$RXE_ADDR" "$RX_PORT")
expect_status 0 $? "tests/evil-sender bad-hash ($EVIL)"
case $EVIL in
*", verdict bad") ;;
*) fail "a wrong hash: '$EVIL'" ;;
esac
expect_summary "id -, 1060865 bytes, verdict bad, [0-9.]+ s$" "a wrong hash"
run_sender_to_evil bad-verdict "$TEST_TMP/one" -i alice
expect_sender_fails 5 "verdict bad: the receiver's SHA-256 of the 1 bytes differs$" \
	"a sender given a bad verdict"

# Misbehaving senders.
for mode in bad-version write-past-region done-twice gone-after-region; do
	tests/evil-sender "$mode" "$RXE_ADDR" "$RX_PORT" ||
		fail "$mode: the evil sender could not run"
	expect_summary "(failed: |verdict bad)" "$mode"
	case $SUMMARY in *"key sent"*) fail "$mode: a key was released" ;; esac
done
EVIL=$(tests/evil-sender -s 1060865 stale-write "$RXE_ADDR" "$RX_PORT")
expect_status 0 $? "tests/evil-sender stale-write ($EVIL)"
# (siw ends the connection over the bad STag: the sender learns it from
# its flushed work requests or, first on 6.12 at times, from rdma_cm's
# DISCONNECTED; either way the write failed.)
case $EVIL in
"evil-sender: stale-write: the write under the old rkey failed: the connection broke (work requests flushed)") ;;
"evil-sender: stale-write: the write under the old rkey failed: the peer disconnected") ;;
*) fail "a write into a revoked window: '$EVIL'" ;;
esac
expect_summary "id -, 1060865 bytes, verdict none, .*failed: " \
	"a write into a revoked window"
expect_saved_only "$out" "${saved[@]}"

# A receiver that accepts and never answers: the sender, having heard
# nothing, sends its three zero-length WRITEs (see nudge() in lib/provider.c),
# which complete, and then times out.
run_sender_to_evil silent "$TEST_TMP/one" -v -t 2 -i alice
expect_status 3 "$SENDER_STATUS" "a sender to a silent receiver"
[ "$(grep -c 'nothing heard yet: a zero-length RDMA WRITE' "$TEST_TMP/sender.err")" -eq 3 ] ||
	fail "not 3 zero-length WRITEs to a silent receiver: $SENDER_ERR"
[ "$(grep -c 'completion: RDMA_WRITE .* status=success byte_len=0$' "$TEST_TMP/sender.err")" -eq 3 ] ||
	fail "the zero-length WRITEs did not complete: $SENDER_ERR"
grep -q "^sender: $RXE_ADDR:[0-9]*: timed out after 2 s waiting for REGION of the chunk at offset 0$" \
	"$TEST_TMP/sender.err" ||
	fail "a sender to a silent receiver did not time out: $SENDER_ERR"

# Nowhere to connect.
run_sender -t 5 -i alice "$RXE_ADDR" 1 "$TEST_TMP/one"
expect_sender_fails 3 "connect to $RXE_ADDR:1: connection refused \(is a receiver listening on that port\?\)$" \
	"nothing listening on the port"
run_sender -t 5 -i alice 127.0.0.1 "$RX_PORT" "$TEST_TMP/one"
expect_sender_fails 3 "no RDMA device reachable for that address" \
	"a loopback address"

stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"

# Root's registrations count against root's `ulimit -l` with siw: the
# receiver's default windows (4 of 16 MiB) need more than root's limit
# here, so both programs must lift it (lab3_memlock_limit()), or the
# receiver would shrink its windows to fit.  Then a
# receiver serving one sender at a time (-c 1), held by a silent one,
# refuses the next as busy (exit 4).
limit=$(ulimit -l)
[ "$limit" != unlimited ] && [ "$limit" -lt $((16 << 10)) ] ||
	fail "root's ulimit -l is $limit KiB here: the check would prove nothing"
start_receiver -v -c 1 -o "$out" -k "$TEST_TMP/secret" || fail "no receiver"
SESSION=0
make_file "$TEST_TMP/root" $((20 << 20))
run_sender -v -i root "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/root"
expect_status 0 "$SENDER_STATUS" "20 MiB through 16 MiB windows as root ($SENDER_ERR)"
regions=$(grep -c "received REGION" "$TEST_TMP/sender.err")
[ "$regions" -eq 2 ] ||
	fail "root: $regions REGIONs for 20 MiB, expected 2 windows of 16 MiB"
expect_summary "id root, 20971520 bytes, verdict good, key sent" "as root"
cmp "$TEST_TMP/root" "$out/root/root" || fail "root: the saved file differs"
# (The evil sender waits for its own disconnection, which iWARP's
# connection manager may take seconds to report: in the background.)
tests/evil-sender starve "$RXE_ADDR" "$RX_PORT" >"$TEST_TMP/starve" & starve=$!
# The probe's session and the attack's end in either order (the probe's
# closes more slowly), one summary line each.
for _ in probe attack; do
	line=$(next_line) || fail "starve: fewer than 2 summary lines"
	echo "$line"
	case $line in
	*", failed: the sender gave up: a probe, nothing more") probe=1 ;;
	*"id -, 285212672 bytes, verdict none, "*", failed: the connection broke"* | \
	*"id -, 285212672 bytes, verdict none, "*", failed: chunk at offset 0: none of its "*)
		attack=1 ;;
	*) fail "starve: '$line' ($(cat "$TEST_TMP/starve"))" ;;
	esac
done
[ "${probe:-0}${attack:-0}" = 11 ] ||
	fail "starve: not one summary line each for its probe and its attack"
SESSION=$((SESSION + 2))
tests/evil-sender silent "$RXE_ADDR" "$RX_PORT" >/dev/null & silent=$!
timeout 10 tail -n +1 -f "$RX_DIR/stderr" |
	grep -q -m 1 "session $((SESSION + 1)): state RECV_FILE_INFO" ||
	fail "the silent sender did not connect"
run_sender -t 5 -i busy "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/one"
expect_sender_fails 4 "connection refused: receiver busy with another session$" \
	"a sender while the only place is taken"
stop_receiver
expect_status 0 "$RX_STATUS" "receiver after SIGTERM"
wait_within 30 "$silent" "the silent evil sender"
wait_within 90 "$starve" "the starve evil sender"
expect_status 0 "$WAIT_STATUS" "tests/evil-sender starve: $(cat "$TEST_TMP/starve")"
