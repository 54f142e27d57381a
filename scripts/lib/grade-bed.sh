# shellcheck shell=bash
# grade-bed.sh WORK: the part of scripts/grade that runs on the bed
# (scripts/rxe-run), as root, from the repository root.  WORK (a
# directory on the host's disk) holds big.bin, the file larger than this
# VM's memory, and either sender, the program to grade, or build/, the
# kit with a submission's files in it, whose sender is built first.
#
# The submission runs only in the sandbox (scripts/lib/sandbox.sh): its
# build, and every run of its sender.  What it could print or write is
# data: the evidence comes from where it cannot reach (the receiver's
# summary line, the file the receiver saved, the evil receiver's line,
# the exit status the sandbox returns), and every line below is written
# here, after the sender has exited:
#
#	SANDBOX fail WHY           it cannot be sandboxed here: nothing ran
#	BUILD pass|fail            the build's result (build/ only), after
#	BUILDLOG LINE              its output, bounded, one line each
#	CHECK NAME pass|fail REASON
#
# one CHECK line per check of scripts/grade's table, in that order, each
# against a fresh receiver (./receiver, or tests/evil-receiver for the
# faults).  A check never waits for ever: every sender runs under a limit
# of GRADE_LIMIT seconds, and all the checks of one SENDER must be over
# GRADE_BUDGET seconds (default 600) after the first began (its build,
# its runs, and the receivers' starts and stops): a check left after
# that fails without running it.
set -u
WORK=$1
T=5			# the sender's -t and the receiver's -t, in seconds
GRADE_LIMIT=60		# the longest any one sender may run
BUILD_LIMIT=300		# the longest its build may run (TCG is slow)
BUILD_TMP=$((128 << 20))	# the build's /tmp: the kit, its objects
BUILD_LOG_MAX=16384	# the bytes of the build's output that are kept
BUDGET=${GRADE_BUDGET:-600}	# all its checks, in seconds from the first
# The grader's own files, where the sandbox cannot see: a fresh secret
# each run (the receiver makes it: no class's secret is ever used), the
# receiver's -o, the files sent, the sender's output.
G=$(mktemp -d /tmp/grader.XXXXXX) || exit 1
trap 'rm -rf "$G"' EXIT
SECRET=$G/secret
OUT=$G/out		# the receiver's -o
mkdir "$G/files"

# shellcheck source=tests/receiver-lib.sh
. tests/receiver-lib.sh
# shellcheck source=scripts/lib/sandbox.sh
. scripts/lib/sandbox.sh

# result NAME pass|fail REASON...: the check's line.
result() {
	local name=$1 verdict=$2
	shift 2
	printf 'CHECK %s %s %s\n' "$name" "$verdict" "$*"
}

# run_sender ID FILE [OPTION...]: run SENDER -i ID -t T OPTION... (-t
# SENDER_T if set) in the sandbox, to the receiver that start_receiver
# started, with FILE (which it sees as /files/NAME); sets S_STATUS, S_SECS,
# S_OUT (its stdout, bounded), S_ERR (the first line of its stderr,
# bounded and made printable) and S_RAN: 0 when it did not run, or no
# RDMA packet moved while it ran (so there is no session to wait for).
run_sender() {
	local id=$1 file=$2 start limit packets
	shift 2
	start=$EPOCHREALTIME
	limit=$((BUDGET_END - ${start%.*}))
	S_RAN=1
	: >"$G/sender.out"
	: >"$G/sender.err"
	packets=$(rdma_packets)
	if [ "$limit" -le 0 ]; then
		S_STATUS=137 S_SECS=0 S_OUT= S_RAN=0
		S_ERR="not run: the sender's runs used up their ${BUDGET} s"
		return
	fi
	[ "$limit" -lt "$GRADE_LIMIT" ] || limit=$GRADE_LIMIT
	sandbox_run -t "$limit" -r "$SENDER:/submission/sender" \
		-r "$file:/files/${file##*/}" -- /submission/sender -i "$id" \
		-t "${SENDER_T:-$T}" "$@" "$RXE_ADDR" "$RX_PORT" \
		"/files/${file##*/}" </dev/null >"$G/sender.out" 2>"$G/sender.err"
	S_STATUS=$?
	S_SECS=$(awk -v a="$start" -v b="$EPOCHREALTIME" \
		'BEGIN { printf "%.1f", b - a }')
	S_OUT=$(head -c 4096 "$G/sender.out")
	S_ERR=$(head -n 1 "$G/sender.err" | head -c 300 | printable)
	[ "$S_STATUS" -eq 137 ] &&
		S_ERR="killed after $limit s (it never ended)"
	[ -z "$packets" ] || [ "$(rdma_packets)" != "$packets" ] || S_RAN=0
}

# said: what the sender said, for a reason.
said() {
	echo "(exit status $S_STATUS${S_ERR:+; it said: $S_ERR})"
}

# rdma_packets: the packets this bed's RDMA device has received so far
# (nothing where it does not count them: siw).
rdma_packets() {
	cat "/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/rcvd_pkts" \
		2>/dev/null
}

# printable: stdin with every byte outside printable ASCII, but the line
# ends, as '?': what a submission printed, fit to quote.
printable() {
	LC_ALL=C tr -c '\n\040-\176' '?'
}

# summary_line: the receiver's summary line of the session just run: it
# comes when the session ends; a session still open is ended by
# stopping the receiver.  Stops the receiver either way.
summary_line() {
	local line
	# (A sender that did not run leaves nothing to wait for.)
	if ! line=$(next_line $((S_RAN ? 2 * T + 5 : 1)) 2>/dev/null); then
		kill -TERM "$RX_PID" 2>/dev/null
		line=$(next_line $((S_RAN ? 10 : 1)) 2>/dev/null) ||
			line="(no summary line)"
	fi
	stop_receiver
	exec {RX_FD}<&-
	echo "$line"
}

# summary_says LINE ID BYTES: succeed if the receiver's summary LINE is of
# a session of ID that took BYTES bytes, with a good verdict and the key
# sent.  (Anchored at the line's start: an ID is the peer's text.)
summary_says() {
	[[ $1 =~ ^session\ [0-9]+\ from\ [^\ ]+:\ id\ (.*),\ ([0-9]+)\ bytes,\ verdict\ good,\ key\ sent, ]] &&
		[ "${BASH_REMATCH[1]}" = "$2" ] && [ "${BASH_REMATCH[2]}" = "$3" ]
}

# make_file PATH SIZE: SIZE random bytes.
make_file() {
	head -c "$2" /dev/urandom >"$1"
}

# printed_key: the key the sender printed ("secret key: HEX"), or nothing.
printed_key() {
	sed -n 's/^secret key: \([0-9a-f]\{64\}\)$/\1/p' <<<"$S_OUT" | head -n 1
}

# window_of RECEIVER_OPTION...: the receiver's window size in bytes, from
# its -w (16 MiB without one).
window_of() {
	local w=16M
	while [ $# -gt 0 ]; do
		[ "$1" = -w ] && w=$2
		shift
	done
	numfmt --from=iec "$w"
}

# chunk_source ARRIVED FILE W K: the chunk of FILE, at a multiple of W,
# whose bytes chunk K of ARRIVED holds; "zeros" if it holds only zeros;
# nothing if neither.  (cmp -i skips into each file: no pipes, which the
# bed's /dev/fd may not serve.)
chunk_source() {
	local arrived=$1 file=$2 w=$3 k=$4 j size len
	size=$(stat -c %s "$file")
	len=$((w < size - k * w ? w : size - k * w))
	cmp -s -i $((k * w)):0 -n "$len" "$arrived" /dev/zero &&
		{ echo zeros; return; }
	for ((j = 0; j * w + len <= size; j++)); do
		cmp -s -i $((k * w)):$((j * w)) -n "$len" "$arrived" "$file" &&
			{ echo $((j * w)); return; }
	done
}

# hint LINE FILE W: what the evidence says went wrong in a failed
# transfer of FILE through windows of W bytes, LINE being the receiver's
# summary: for a bad verdict, what arrived (kept by --keep-failed)
# against FILE; for any other failure, the receiver's reason.
hint() {
	local line=$1 file=$2 w=$3 kept at k from
	# (Anchored, and only the receiver's own name for what it kept: a
	# sender's ERROR reason, quoted at the line's end, could say
	# anything, "kept as ../../etc/shadow" too.)
	kept=$(sed -En 's|^session [0-9]+ from [^ ]+: id [^,]*, [0-9]+ bytes, verdict bad, kept as (\.failed/session-[0-9]+), .*|\1|p' <<<"$line")
	if [[ $line == *"verdict bad"* && -n $kept && -f $OUT/$kept ]]; then
		if [ "$(stat -c %s "$OUT/$kept")" -ne "$(stat -c %s "$file")" ]; then
			echo "$(stat -c %s "$OUT/$kept") bytes arrived, and the" \
				"file has $(stat -c %s "$file"): is FILE_INFO's" \
				"length the file's size?"
			return
		fi
		if cmp -s "$OUT/$kept" "$file"; then
			echo "the file arrived intact, so the SHA-256 that FILE_INFO" \
				"claimed is not the file's: is it taken over all its bytes?"
			return
		fi
		# (cmp -l: the first differing byte's number, in any locale;
		# its prose says "byte" or "char".)
		at=$(cmp -l "$OUT/$kept" "$file" 2>/dev/null | awk '{ print $1; exit }')
		[ -n "$at" ] || return 0
		k=$(((at - 1) / w))
		from=$(chunk_source "$OUT/$kept" "$file" "$w" "$k")
		printf 'the first byte that differs is at offset %d, in chunk %d' \
			$((at - 1)) "$k"
		case $from in
		zeros) echo " (offset $((k * w))), which holds only zeros: was it written?" ;;
		"") echo " (offset $((k * w)))" ;;
		*) echo "; chunk $k holds the file's bytes from offset $from:" \
			"are the WRITEs placed by the REGION's offset?" ;;
		esac
	elif [[ $line == *", failed: "* ]]; then
		echo "the receiver: ${line#*, failed: }$(verbs_hint "${line#*, failed: }")"
	elif [[ $line == "(no summary line)" ]]; then
		echo "the receiver saw no connection from it (to connect, a" \
			"sender resolves the address, then the route, each" \
			"waiting for its event, then calls rdma_connect and" \
			"waits for ESTABLISHED)"
	fi
}

# verbs_hint REASON: what a receiver's REASON for a failed session most
# likely says of the sender's verbs, as " (...)", or nothing.
verbs_hint() {
	case $1 in
	"the connection broke (work requests flushed)")
		echo " (a WRITE its device refused? under the REGION's rkey, not" \
			"an lkey or rkey of the sender's own, inside the window)" ;;
	*"nothing was written at window offset "*)
		echo " (the chunk's first bytes came and these not: does each" \
			"piece go to the REGION's addr plus the bytes of the chunk" \
			"already written, and does each WRITE's registration cover" \
			"all its bytes?)" ;;
	"the peer disconnected while we waited for DONE"*)
		echo " (did its WRITE fail? one whose bytes are not all inside" \
			"the registration its lkey names fails with a local" \
			"protection error)" ;;
	*"RECV failed: local length error"* | *"RECV failed: local QP operation error"* | \
	*"protocol error: message of "*)
		echo " (a SEND where the chunk's RDMA WRITE belongs? its opcode" \
			"must be IBV_WR_RDMA_WRITE, not IBV_WR_SEND)" ;;
	esac
}

# check_transfer NAME ID SIZE RECEIVER_OPTION...: the lab's path: a file
# of SIZE bytes to a receiver with RECEIVER_OPTION... and -o: the sender
# exits 0 and prints the key that `receiver --key-for ID` gives, the
# receiver's summary line says the verdict was good and the key sent,
# and the saved file is byte-identical.  A failure says what the evidence
# shows (hint()).
check_transfer() {
	local name=$1 id=$2 size=$3 file=$G/files/$1.bin line want diff why
	shift 3
	make_file "$file" "$size"
	rm -rf "$OUT"
	mkdir -p "$OUT"
	start_receiver -t "$T" -o "$OUT" --keep-failed -k "$SECRET" "$@" ||
		{ result "$name" fail "the receiver did not start"; return; }
	run_sender "$id" "$file"
	line=$(summary_line)
	why=$(hint "$line" "$file" "$(window_of "$@")")
	want=$(./receiver -k "$SECRET" --key-for "$id")
	if [ "$S_STATUS" -ne 0 ]; then
		result "$name" fail "the sender failed $(said)${why:+; $why}"
	elif [ "$(printed_key)" != "$want" ]; then
		result "$name" fail "the key printed is not the key for $id:" \
			"'$(head -n 1 <<<"$S_OUT" | head -c 100 | printable)'"
	elif ! summary_says "$line" "$id" "$size" || [[ $line == *"failed:"* ]]; then
		result "$name" fail "the receiver's summary: $line"
	elif ! diff=$(cmp "$file" "$OUT/$id/$(basename "$file")" 2>&1); then
		result "$name" fail "the saved file differs: $diff"
	else
		result "$name" pass "a $size-byte file: key and saved file right" \
			"(${S_SECS} s)"
	fi
	rm -f "$file"
}

# check_big NAME: a file larger than this VM's memory (WORK/big.bin, on
# the host's disk), to a receiver of 2 windows of 16 MiB, no -o.  The
# check is about memory, not time: in this small VM the file's pages come
# and go slowly, so both sides run with the default -t (30 s), as a
# student's sender and a class's receiver would.
check_big() {
	local name=$1 file=$WORK/big.bin line want why
	start_receiver -t 30 -n 2 -w 16M -k "$SECRET" ||
		{ result "$name" fail "the receiver did not start"; return; }
	SENDER_T=30 run_sender grade-big "$file"
	line=$(summary_line)
	want=$(./receiver -k "$SECRET" --key-for grade-big)
	# A stall (killed, or a timeout) here is most likely memory.
	case $S_RAN$S_STATUS in
	13 | 1137) why="(the check: the file must go through without being"
		why+=" held in memory: are each WRITE's pages dropped once it"
		why+=" completes, MADV_DONTNEED?)" ;;
	*) why= ;;
	esac
	if [ "$S_STATUS" -ne 0 ]; then
		# (The receiver's line too: in this VM, short of memory, a
		# stall or an OOM kill on either side shows only there.)
		result "$name" fail "the sender failed $(said); the receiver:" \
			"${line#session 1 from }${why:+ $why}"
	elif [ "$(printed_key)" != "$want" ]; then
		result "$name" fail "the key printed is not the key for grade-big"
	elif ! summary_says "$line" grade-big "$(stat -c %s "$file")"; then
		result "$name" fail "the receiver's summary: $line"
	else
		result "$name" pass "$(stat -c %s "$file") bytes in a VM of" \
			"$(awk '$1 == "MemTotal:" { print int($2 / 1024) }' \
				/proc/meminfo) MiB (${S_SECS} s)"
	fi
}

# expect_failure NAME STATUS WHAT HINT EVIDENCE: the sender must have
# exited STATUS and printed no key: WHAT is what the check is about, HINT
# the likely mistake when it did not.  EVIDENCE is what the receiver saw
# that shows the sender did take part, or else, starting "no sign", what
# is missing: an exit status alone is not evidence (a program that does
# no RDMA at all can exit 3).
expect_failure() {
	local name=$1 want=$2 what=$3 hint=$4 evidence=$5
	if [ -n "$(printed_key)" ] || grep -qai "secret key" "$G/sender.out"; then
		result "$name" fail "$what, yet it printed a key $(said)" \
			"(the check: $hint)"
	elif [[ $evidence == "no sign"* ]]; then
		result "$name" fail "$what: $evidence $(said)"
	elif [ "$S_STATUS" -ne "$want" ]; then
		result "$name" fail "$what: exit status $S_STATUS, expected" \
			"$want${S_ERR:+; it said: $S_ERR} (the check: $hint)"
	else
		result "$name" pass "$what: $evidence; exit $want, no key" \
			"(${S_SECS} s)"
	fi
}

# evil_evidence WANT: evidence for expect_failure from EVIL_LINE, the
# line of tests/evil-receiver: it names the FILE_INFO that came, and WANT
# (a pattern) must match what the sender did after it.
evil_evidence() {
	if [[ $EVIL_LINE != *"FILE_INFO of "* ]]; then
		echo "no sign that it connected and sent FILE_INFO (the" \
			"receiver: ${EVIL_LINE:-nothing})"
	elif [[ $EVIL_LINE != *$1* ]]; then
		echo "no sign that it went on as it must (the receiver:" \
			"${EVIL_LINE#evil-receiver: })"
	else
		echo "its FILE_INFO came"
	fi
}

# fault_file NAME: a file of random size for a fault check, in FAULT_FILE,
# and a random ID in FAULT_ID: the four fault checks look alike until
# the receiver answers, so that a sender cannot tell which one it is in
# and exit as that check wants.
fault_file() {
	FAULT_FILE=$G/files/$1.bin
	FAULT_ID=student-$(od -An -tx4 -N4 /dev/urandom | tr -d ' ')
	make_file "$FAULT_FILE" $(((3 << 19) + $(od -An -tu4 -N4 /dev/urandom) % (1 << 20)))
}

# check_over_max NAME: a file of 1.5 to 2.5 MiB to a receiver that takes
# at most 1 MiB (-m): refused, exit 4, no key.
check_over_max() {
	local line evidence="its FILE_INFO came"
	fault_file over
	start_receiver -t "$T" -m 1M -k "$SECRET" ||
		{ result "$1" fail "the receiver did not start"; return; }
	run_sender "$FAULT_ID" "$FAULT_FILE"
	line=$(summary_line)
	[[ $line =~ ^session\ [0-9]+\ from\ [^\ ]+:\ id\ -,\ [0-9]+\ bytes,\ verdict\ none,\ [0-9.]+\ s,\ failed:\ file\ of\ [0-9]+\ bytes\ (is\ )?over\ the\  ]] ||
		evidence="no sign that the receiver refused its FILE_INFO for size (the receiver: ${line#session 1 from })"
	expect_failure "$1" 4 "a file over the receiver's -m" \
		"an ERROR instead of the REGION must end the run (exit 4)" \
		"$evidence"
}

# evil_receiver MODE ID FILE: run the sender against tests/evil-receiver
# MODE; its line in EVIL_LINE.
evil_receiver() {
	local mode=$1 RX_BIN=tests/evil-receiver
	start_receiver "$mode" ||
		{ EVIL_LINE="tests/evil-receiver $mode did not start"; return 1; }
	run_sender "$2" "$3"
	EVIL_LINE=$(next_line $((S_RAN ? 5 : 1)) 2>/dev/null)
	kill -KILL "$RX_PID" 2>/dev/null
	wait_within 30 "$RX_PID" "tests/evil-receiver $mode, after SIGKILL,"
	exec {RX_FD}<&-
}

# check_bad_verdict NAME: a receiver that answers VERDICT bad (and would
# give a KEY to an ID sent anyway): exit 5, no key, and the file written
# and the connection closed without an ID.
check_bad_verdict() {
	local sha
	fault_file bad
	sha=$(sha256sum "$FAULT_FILE" | cut -c 1-64)
	evil_receiver bad-verdict "$FAULT_ID" "$FAULT_FILE" ||
		{ result "$1" fail "$EVIL_LINE"; return; }
	if [[ $EVIL_LINE == *"then the sender sent ID"* ]]; then
		result "$1" fail "a bad verdict: it sent its ID all the same" \
			"$(said) (the check: a bad VERDICT must end the run," \
			"exit 5, with no ID sent)"
		return
	fi
	expect_failure "$1" 5 "a bad verdict" \
		"a bad VERDICT must end the run (exit 5), with no ID sent" \
		"$(evil_evidence " bytes received, SHA-256 $sha, verdict bad sent, the sender hung up")"
}

# check_silent NAME: a receiver that accepts and then says nothing: the
# sender must give up (exit 3) after its -t, and within as much again
# and 2 s for the connection and the file.
check_silent() {
	local evidence
	fault_file silent
	evil_receiver silent "$FAULT_ID" "$FAULT_FILE" ||
		{ result "$1" fail "$EVIL_LINE"; return; }
	evidence=$(evil_evidence "silent; the sender hung up after ")
	if [[ $evidence == "no sign"* ]]; then
		expect_failure "$1" 3 "a silent receiver" \
			"a wait with nothing heard for -t seconds must end the run (exit 3)" \
			"$evidence"
	elif awk -v s="$S_SECS" -v t="$T" 'BEGIN { exit !(s > 2 * t + 2) }'; then
		result "$1" fail "a silent receiver: gave up only after" \
			"$S_SECS s with -t $T $(said): does every wait end" \
			"after -t seconds of silence?"
	elif awk -v s="$S_SECS" -v t="$T" 'BEGIN { exit !(s < t - 1) }'; then
		result "$1" fail "a silent receiver: gave up after $S_SECS s," \
			"before its -t of $T s $(said): does it wait -t seconds?"
	else
		expect_failure "$1" 3 "a silent receiver" \
			"a wait with nothing heard for -t seconds must end the run (exit 3)" \
			"$evidence"
	fi
}

# check_killed NAME: a receiver killed while the sender writes: exit 3, no
# key.
check_killed() {
	fault_file killed
	evil_receiver killed-mid-write "$FAULT_ID" "$FAULT_FILE" ||
		{ result "$1" fail "$EVIL_LINE"; return; }
	expect_failure "$1" 3 "a receiver killed mid-transfer" \
		"a connection that breaks must end the run (exit 3)" \
		"$(evil_evidence "; REGION of $(stat -c %s "$FAULT_FILE") bytes sent, killing itself")"
}

# build: build/'s sender, built in the sandbox: the kit (WORK/build) is
# seen read-only as /kit, copied into the sandbox's own /tmp and built
# there; the program comes out on stdout (a file no larger than the
# sandbox's limit, whatever its build made of the name), its output on
# stderr.  The BUILD line, and that output as BUILDLOG lines, bounded and
# printable.  Sets SENDER.
build() {
	local status limit=$((BUDGET_END - ${EPOCHREALTIME%.*}))
	[ "$limit" -lt "$BUILD_LIMIT" ] || limit=$BUILD_LIMIT
	# shellcheck disable=SC2016 # expanded in the sandbox
	sandbox_run -t "$limit" -s "$BUILD_TMP" -r "$WORK/build:/kit" -- \
		bash -c 'cp -a /kit /tmp/kit && cd /tmp/kit &&
			make --no-print-directory sender >&2 &&
			[ -f sender ] && [ ! -L sender ] && cat sender' \
		</dev/null >"$G/sender" 2>"$G/build.out"
	status=$?
	[ "$status" -eq 137 ] &&
		echo "(the build was stopped after $limit s)" >>"$G/build.out"
	if [ "$status" -eq 0 ] && [ -s "$G/sender" ]; then
		echo "BUILD pass"
	else
		echo "BUILD fail"
	fi
	# (sed's '$a\': a last line without its line end gets one.)
	head -c "$BUILD_LOG_MAX" "$G/build.out" | printable |
		sed -e 's/^/BUILDLOG /' -e '$a\'
	[ "$(stat -c %s "$G/build.out")" -le "$BUILD_LOG_MAX" ] ||
		echo "BUILDLOG (... the rest of its $(stat -c %s "$G/build.out") bytes not shown)"
	[ "$status" -eq 0 ] && [ -s "$G/sender" ] || return 1
	chmod 0755 "$G/sender"
	SENDER=$G/sender
}

if ! why=$(sandbox_check 2>&1); then
	echo "SANDBOX fail $why"
	exit 0
fi
# (The budget counts the build too.)
BUDGET_END=$((${EPOCHREALTIME%.*} + BUDGET))
if [ -d "$WORK/build" ]; then
	build || exit 0
else
	SENDER=$WORK/sender
fi

# The checks, in scripts/grade's order.
check_transfer lab-empty-file grade-empty 0
check_transfer lab-one-byte grade-one 1
check_transfer lab-odd-size grade-odd 1000003
check_transfer lab-one-window grade-window $((16 << 20)) -w 16M
check_transfer lab-few-mib grade-few $((3 << 20))
check_transfer many-windows grade-many $(((3 << 20) + 12345)) -w 256K -n 2
check_big larger-than-memory
check_over_max over-max
check_bad_verdict bad-verdict
check_silent silent-receiver
check_killed receiver-killed
