# SPDX-License-Identifier: MIT
# Addresses: IPv4, IPv6 and host names, on both sides.  A receiver on
# every address takes senders over IPv4 and over IPv6 alike; one bound to
# a single address takes only senders to that address; names resolve on
# both sides (a private /etc/hosts, in a mount namespace of this test's
# own, maps them to the bed's addresses); an IPv6 address may be written
# in brackets; an unknown name is one clear line and exit status 3.
. tests/e2e/lib.sh

[ -n "${RXE_ADDR6:-}" ] || fail "RXE_ADDR6 is not set: the bed gave no IPv6 address"
make_file "$TEST_TMP/file" 200000

# good_transfer ID HOST WHAT: a sender to HOST gets a key, and the
# receiver's summary names ID; its peer address is left in SUMMARY.
good_transfer() {
	run_sender -i "$1" "$2" "$RX_PORT" "$TEST_TMP/file"
	expect_status 0 "$SENDER_STATUS" "$3 ($SENDER_ERR)"
	expect_summary "id $1, 200000 bytes, verdict good, key sent" "$3"
}

# Every address: IPv4 and IPv6 senders both.
start_receiver -t 10 -k "$TEST_TMP/secret" || fail "no receiver"
good_transfer v4 "$RXE_ADDR" "IPv4 to a receiver on every address"
case $SUMMARY in *" from $RXE_ADDR:"*) ;; *) fail "IPv4 peer not named" ;; esac
good_transfer v6 "$RXE_ADDR6" "IPv6 to a receiver on every address"
case $SUMMARY in *" from [$RXE_ADDR6]:"*) ;; *) fail "IPv6 peer not named" ;; esac
case $SENDER_ERR in
*" to [$RXE_ADDR6]:$RX_PORT, verdict good"*) ;;
*) fail "the sender did not name [$RXE_ADDR6]:$RX_PORT: $SENDER_ERR" ;;
esac
good_transfer brackets "[$RXE_ADDR6]" "an IPv6 address in brackets"
stop_receiver
expect_status 0 "$RX_STATUS" "receiver on every address, after SIGTERM"

# One address: only senders to it.
start_receiver -t 10 -a "$RXE_ADDR6" -k "$TEST_TMP/secret" ||
	fail "no receiver on $RXE_ADDR6"
SESSION=0
good_transfer v6only "$RXE_ADDR6" "IPv6 to a receiver on that address"
run_sender -i v4 "$RXE_ADDR" "$RX_PORT" "$TEST_TMP/file"
expect_sender_fails 3 "connect to .*$RX_PORT" \
	"IPv4 to a receiver bound to its IPv6 address"
stop_receiver

# Host names, on both sides, through a private /etc/hosts.
printf '%s lab3-server\n%s lab3-server6\n' "$RXE_ADDR" "$RXE_ADDR6" \
	>"$TEST_TMP/hosts"
unshare -m bash -c '
	mount --bind "$1/hosts" /etc/hosts || exit 99
	. tests/e2e/lib.sh
	start_receiver -t 10 -a lab3-server6 -k "$1/secret" || exit 98
	run_sender -i byname lab3-server6 "$RX_PORT" "$1/file"
	expect_status 0 "$SENDER_STATUS" "a sender to a host name ($SENDER_ERR)"
	expect_summary "id byname, 200000 bytes, verdict good, key sent" \
		"a receiver bound by host name"
	run_sender -i nobody no-such-host.invalid "$RX_PORT" "$1/file"
	expect_sender_fails 3 "no-such-host.invalid.*cannot resolve" \
		"a sender to an unknown host name"
	stop_receiver
' names "$TEST_TMP"
expect_status 0 $? "transfers by host name"
echo "IPv4, IPv6, brackets, one address, host names: all as expected"
