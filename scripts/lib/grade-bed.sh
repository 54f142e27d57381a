# SPDX-License-Identifier: MIT
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
# one CHECK line per check of scripts/grade's table, each against a fresh
# receiver (./receiver, or tests/evil-receiver for the faults): the lab's
# checks in the table's order, then the four fault checks in a random
# order of this submission's own.  What a run can tell of its check is
# what the check is about: every ID and every name of a file sent is
# random (s and hex), so neither names the check, and the fault checks
# look alike until the fault (a file of random size, the same limits,
# -t 5).  No state crosses runs (scripts/lib/sandbox.sh).
#
# Locked memory: each run may lock what the protocol's worst case needs
# against its receiver: WINDOWS_MAX (8, a receiver's largest -n) windows
# of the receiver's -w registered whole at once, and 16 MiB for the
# sender's own buffers (memlock_for): 144 MiB with windows of 16 MiB
# (every check but many-windows), 18 MiB with many-windows' 256 KiB.
#
# A check never waits for ever: every sender runs under a limit
# of GRADE_LIMIT seconds, and all the checks of one SENDER must be over
# GRADE_BUDGET seconds (default 600) after the first began (its build,
# its runs, and the receivers' starts and stops): a check left after
# that fails without running it.
set -u
WORK=$1
T=5			# the sender's -t and the receiver's -t, in seconds
GRADE_LIMIT=60		# the longest any one sender may run
BIG_LIMIT=120		# larger-than-memory's (it takes 24 to 30 s: memory, not time)
BUILD_LIMIT=300		# the longest its build may run (TCG is slow)
BUILD_TMP=$((128 << 20))	# the build's /tmp: the kit, its objects
BUILD_LOG_MAX=16384	# the bytes of the build's output that are kept
BUDGET=${GRADE_BUDGET:-600}	# all its checks, in seconds from the first
WINDOWS_MAX=8		# the most windows a receiver offers (-n, LAB3_WINDOWS_MAX)
MEMLOCK_MARGIN=$((16 << 20))	# a sender's own buffers, beyond the windows
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

# result NAME pass|fail REASON...: the check's line; its verdict in
# LAST_VERDICT.
result() {
	local name=$1 verdict=$2
	shift 2
	LAST_VERDICT=$verdict
	printf 'CHECK %s %s %s\n' "$name" "$verdict" "$*"
}

# run_sender ID FILE W [OPTION...]: run SENDER -i ID -t T OPTION... (-t
# SENDER_T if set) in the sandbox, to the receiver that start_receiver
# started, whose windows are of W bytes (its locked memory:
# memlock_for W), with FILE, which it sees as /files/S_NAME, a random
# name; sets S_NAME, S_STATUS, S_SECS,
# S_OUT (its stdout, bounded), S_ERR (the first line of its stderr,
# bounded and made printable) and S_RAN: 0 when it did not run, or no
# RDMA packet moved while it ran (so there is no session to wait for).
# It runs for GRADE_LIMIT s at most (SENDER_LIMIT s if set).
run_sender() {
	local id=$1 file=$2 memlock start limit packets tenths
	memlock=$(memlock_for "$3")
	shift 3
	S_NAME=$(random_name)
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
	[ "$limit" -lt "${SENDER_LIMIT:-$GRADE_LIMIT}" ] ||
		limit=${SENDER_LIMIT:-$GRADE_LIMIT}
	sandbox_run -t "$limit" -l "$memlock" -r "$SENDER:/submission/sender" \
		-r "$file:/files/$S_NAME" -- /submission/sender -i "$id" \
		-t "${SENDER_T:-$T}" "$@" "$RXE_ADDR" "$RX_PORT" \
		"/files/$S_NAME" </dev/null >"$G/sender.out" 2>"$G/sender.err"
	S_STATUS=$?
	# (Seconds to a tenth, in the shell: EPOCHREALTIME has 6 decimals.)
	tenths=$(((10#${EPOCHREALTIME//[.,]/} - 10#${start//[.,]/} + 50000) / 100000))
	((tenths >= 0)) || tenths=0		# (a clock set back)
	printf -v S_SECS '%d.%d' $((tenths / 10)) $((tenths % 10))
	S_OUT=$(head -c 4096 "$G/sender.out")
	S_ERR=$(head -n 1 "$G/sender.err" | head -c 300 | printable)
	[ "$S_STATUS" -eq 137 ] &&
		S_ERR="killed after $limit s (it never ended)"
	[ -z "$packets" ] || [ "$(rdma_packets)" != "$packets" ] || S_RAN=0
}

# random_name: a name that says nothing of the check: s and 16 hex
# digits, fresh each time (an ID, a file's name).
random_name() {
	if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501)); then	# SRANDOM
		printf 's%08x%08x\n' "$SRANDOM" "$SRANDOM"
	else
		echo "s$(od -An -tx8 -N8 /dev/urandom | tr -d ' ')"
	fi
}

# memlock_for W: the locked memory of a run whose receiver's windows are
# of W bytes, in bytes: see the head of this file.
memlock_for() {
	echo $((WINDOWS_MAX * $1 + MEMLOCK_MARGIN))
}

# memlock_hint: for a sender that said it could not register memory, the
# limit it ran under, as " (...)"; else nothing.
memlock_hint() {
	case $S_ERR in
	*[Rr]egist* | *"locked memory"* | *"ulimit -l"* | *ibv_reg_mr*)
		echo " (this check runs under \`ulimit -l\` of" \
			"$(($(memlock_for "$1") >> 20)) MiB: the receiver's" \
			"$WINDOWS_MAX windows at most, registered whole, and 16" \
			"MiB more; is more registered at once?)" ;;
	esac
}

# said: what the sender said, for a reason.
said() {
	echo "(exit status $S_STATUS${S_ERR:+; it said: $S_ERR})"
}

# rdma_packets: the packets this bed's RDMA device has received so far
# (nothing where it does not count them: siw).
rdma_packets() {
	local n f=/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters/rcvd_pkts
	{ read -r n <"$f"; } 2>/dev/null && echo "$n"
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

# summary_says LINE ID BYTES [SAVED_AS]: succeed if the receiver's
# summary LINE is, whole, of a session of ID that took BYTES bytes, with a
# good verdict, the key sent, saved as SAVED_AS (or not saved) and no
# failure.  (ID and SAVED_AS are the grader's: s and hex digits.)
summary_says() {
	local re="^session [0-9]+ from [^ ]+: id $2, $3 bytes, verdict good, key sent${4:+, saved as $4}, [0-9]+\\.[0-9]+ s\$"
	[[ $1 =~ $re ]]
}

# SUMMARY_FAILED: a receiver's summary line of a session that failed,
# whole; BASH_REMATCH[1] the verdict, [5] the reason.
# (An ID is the peer's text: the fields before the reason hold no comma,
# so the reason is the line's end, whatever it says.)
SUMMARY_FAILED='^session [0-9]+ from [^ ]+: id [^,]*, [0-9]+ bytes, verdict (none|good|bad)(, key sent)?(, saved as [^,]*)?(, kept as [^,]*)?, [0-9]+\.[0-9]+ s, failed: (.*)$'
SUMMARY_KEPT='^session [0-9]+ from [^ ]+: id [^,]*, [0-9]+ bytes, verdict bad, kept as (\.failed/session-[0-9]+), [0-9]+\.[0-9]+ s(, failed: .*)?$'

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
	local line=$1 file=$2 w=$3 kept= at k from
	# (Anchored, the whole line, and only the receiver's own name for
	# what it kept: a sender's ERROR reason, quoted at the line's end,
	# could say anything, "kept as ../../etc/shadow" too.)
	[[ $line =~ $SUMMARY_KEPT ]] && kept=${BASH_REMATCH[1]}
	if [ -n "$kept" ] && [ -f "$OUT/$kept" ]; then
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
	elif [[ $line =~ $SUMMARY_FAILED ]]; then
		echo "the receiver: ${BASH_REMATCH[5]}$(verbs_hint "${BASH_REMATCH[5]}")"
	elif [ "$line" = "(no summary line)" ]; then
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
			"the registration its lkey names, or whose registration" \
			"was deregistered before its completion, fails with a" \
			"local protection or QP operation error)" ;;
	*"the peer posted no receive for it"*)
		echo " (no receive posted: does the sender post each receive" \
			"buffer with ibv_post_recv() before rdma_connect?)" ;;
	*"RECV failed: local length error"* | *"RECV failed: local QP operation error"* | \
	*"protocol error: message of "*)
		echo " (a SEND where the chunk's RDMA WRITE belongs? its opcode" \
			"must be IBV_WR_RDMA_WRITE, not IBV_WR_SEND)" ;;
	esac
}

# check_transfer NAME SIZE RECEIVER_OPTION...: the lab's path: a file of
# SIZE bytes to a receiver with RECEIVER_OPTION... and -o: the sender
# exits 0 and prints the key that `receiver --key-for ID` gives (ID a
# random name), the receiver's summary line says the verdict was good and
# the key sent, and the saved file is byte-identical.  A failure says
# what the evidence shows (hint()).
check_transfer() {
	local name=$1 id size=$2 file=$G/files/$1.bin line want diff why w
	shift 2
	id=$(random_name)
	w=$(window_of "$@")
	make_file "$file" "$size"
	rm -rf "$OUT"
	mkdir -p "$OUT"
	start_receiver -t "$T" -o "$OUT" --keep-failed -k "$SECRET" "$@" ||
		{ result "$name" fail "the receiver did not start"; return; }
	run_sender "$id" "$file" "$w"
	line=$(summary_line)
	LAST_SUMMARY=$line
	why=$(hint "$line" "$file" "$w")
	want=$(./receiver -k "$SECRET" --key-for "$id")
	if [ "$S_STATUS" -ne 0 ]; then
		result "$name" fail "the sender failed $(said)$(memlock_hint "$w")${why:+; $why}"
	elif [ "$(printed_key)" != "$want" ]; then
		result "$name" fail "the key printed is not the key for its ID" \
			"($id): '$(head -n 1 <<<"$S_OUT" | head -c 100 | printable)'"
	elif ! summary_says "$line" "$id" "$size" "$id/$S_NAME"; then
		result "$name" fail "the receiver's summary: $line"
	elif ! diff=$(cmp "$file" "$OUT/$id/$S_NAME" 2>&1); then
		result "$name" fail "the saved file differs: $diff"
	else
		result "$name" pass "a $size-byte file: key and saved file right" \
			"(${S_SECS} s)"
	fi
	rm -f "$file"
}

# check_big NAME: a file larger than this VM's memory (WORK/big.bin, on
# the host's disk, its SHA-256 in WORK/big.sha256, both scripts/grade's),
# to a receiver of 2 windows of 16 MiB, no -o.  The check is about
# memory, not time: in this small VM the file's pages come and go slowly,
# so both sides run with the default -t (30 s), as a student's sender and
# a class's receiver would.  The content must be the file's: the
# receiver's ledger record (-l) holds the SHA-256 that FILE_INFO
# announced, and a good verdict says the receiver's own hash of the bytes
# that arrived is that one; it must be big.sha256.  (Not a saved file:
# 256 MiB fits in no tmpfs of this VM, and writing it to the host's disk
# would take time from the check with the thinnest margin.)
check_big() {
	local name=$1 file=$WORK/big.bin line want why id record sha size re
	id=$(random_name)
	sha=$(head -c 64 "$WORK/big.sha256")
	size=$(stat -c %s "$file")
	rm -f "$G/ledger"
	start_receiver -t 30 -n 2 -w 16M -k "$SECRET" -l "$G/ledger" ||
		{ result "$name" fail "the receiver did not start"; return; }
	SENDER_T=30 SENDER_LIMIT=$BIG_LIMIT run_sender "$id" "$file" $((16 << 20))
	line=$(summary_line)
	want=$(./receiver -k "$SECRET" --key-for "$id")
	# (The ledger's one record, whole; its file name is the peer's text,
	# a JSON string.)
	record=$(head -c 4096 "$G/ledger" 2>/dev/null | head -n 1)
	re='^\{"time":"[0-9TZ:-]+","peer":"[^"]*","id":"'$id'","file":("([^"\\]|\\.)*"|null),"bytes":'$size',"sha256":"([0-9a-f]{64})","verdict":"good","key_sent":true,"error":null,"saved_as":null\}$'
	# A stall (killed, or a timeout) here is most likely memory.
	case $S_RAN$S_STATUS in
	13 | 1137) why="(the check: the file must go through without being"
		why+=" held in memory whole: is it read, mapped or"
		why+=" registered all at once?)" ;;
	*) why= ;;
	esac
	if [ "$S_STATUS" -ne 0 ]; then
		# (The receiver's line too: in this VM, short of memory, a
		# stall or an OOM kill on either side shows only there.)
		result "$name" fail "the sender failed $(said)$(memlock_hint \
			$((16 << 20))); the receiver: ${line#session 1 from }${why:+ $why}"
	elif [ "$(printed_key)" != "$want" ]; then
		result "$name" fail "the key printed is not the key for its ID ($id)"
	elif ! summary_says "$line" "$id" "$size"; then
		result "$name" fail "the receiver's summary: $line"
	elif ! [[ $record =~ $re ]]; then
		result "$name" fail "the receiver's record of the session is not" \
			"of a good verdict: $(printable <<<"$record")"
	elif [ "${BASH_REMATCH[3]}" != "$sha" ]; then
		result "$name" fail "the bytes that arrived are not the file's:" \
			"their SHA-256 is ${BASH_REMATCH[3]}, the file's $sha (the" \
			"check: are the WRITEs' bytes read from the file?)"
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

# FILE_INFO_SAID: how tests/evil-receiver names the FILE_INFO that came.
FILE_INFO_SAID='FILE_INFO of [0-9]+ bytes, SHA-256 [0-9a-f]{64}'

# evil_evidence MODE WANT: evidence for expect_failure from EVIL_LINE, the
# line of tests/evil-receiver MODE: it names the FILE_INFO that came, and
# WANT (a regular expression) must match the whole line, what the sender
# did after it included.
evil_evidence() {
	local came="^evil-receiver: $1: (.*; )?$FILE_INFO_SAID(; .*)?\$"
	if ! [[ $EVIL_LINE =~ $came ]]; then
		echo "no sign that it connected and sent FILE_INFO (the" \
			"receiver: ${EVIL_LINE:-nothing})"
	elif ! [[ $EVIL_LINE =~ $2 ]]; then
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
	FAULT_ID=$(random_name)
	make_file "$FAULT_FILE" $(((3 << 19) + $(od -An -tu4 -N4 /dev/urandom) % (1 << 20)))
}

# check_over_max NAME: a file of 1.5 to 2.5 MiB to a receiver that takes
# at most 1 MiB (-m): refused, exit 4, no key.
check_over_max() {
	local line evidence="its FILE_INFO came" re
	fault_file over
	start_receiver -t "$T" -m 1M -k "$SECRET" ||
		{ result "$1" fail "the receiver did not start"; return; }
	run_sender "$FAULT_ID" "$FAULT_FILE" $((16 << 20))
	line=$(summary_line)
	# (The whole line: refused for size, as it is or byte-swapped.)
	re='^session [0-9]+ from [^ ]+: id -, [0-9]+ bytes, verdict none, [0-9]+\.[0-9]+ s, failed: file of [0-9]+ bytes (is over the receiver.s limit of 1048576 bytes|over the limit; byte-swapped: [0-9]+ \(host byte order\?\))$'
	[[ $line =~ $re ]] ||
		evidence="no sign that the receiver refused its FILE_INFO for size (the receiver: ${line#session 1 from })"
	expect_failure "$1" 4 "a file over the receiver's -m" \
		"an ERROR instead of the REGION must end the run (exit 4)" \
		"$evidence"
}

# evil_receiver MODE ID FILE: run the sender against tests/evil-receiver
# MODE, with the locked memory of the other fault checks (windows of 16
# MiB: over-max's receiver's); its line in EVIL_LINE.
evil_receiver() {
	local mode=$1 RX_BIN=tests/evil-receiver
	start_receiver "$mode" ||
		{ EVIL_LINE="tests/evil-receiver $mode did not start"; return 1; }
	run_sender "$2" "$3" $((16 << 20))
	EVIL_LINE=$(next_line $((S_RAN ? 5 : 1)) 2>/dev/null)
	kill -KILL "$RX_PID" 2>/dev/null
	wait_within 30 "$RX_PID" "tests/evil-receiver $mode, after SIGKILL,"
	exec {RX_FD}<&-
}

# check_bad_verdict NAME: a receiver that answers VERDICT bad (and would
# give a KEY to an ID sent anyway): exit 5, no key, and the file written
# and the connection closed without an ID.
check_bad_verdict() {
	local sha size id_sent
	fault_file bad
	sha=$(sha256sum "$FAULT_FILE" | cut -c 1-64)
	size=$(stat -c %s "$FAULT_FILE")
	evil_receiver bad-verdict "$FAULT_ID" "$FAULT_FILE" ||
		{ result "$1" fail "$EVIL_LINE"; return; }
	id_sent="^evil-receiver: bad-verdict: [0-9]+ bytes received, SHA-256 [0-9a-f]{64}, verdict bad sent, then the sender sent ID, a KEY went back; $FILE_INFO_SAID\$"
	if [[ $EVIL_LINE =~ $id_sent ]]; then
		result "$1" fail "a bad verdict: it sent its ID all the same" \
			"$(said) (the check: a bad VERDICT must end the run," \
			"exit 5, with no ID sent)"
		return
	fi
	expect_failure "$1" 5 "a bad verdict" \
		"a bad VERDICT must end the run (exit 5), with no ID sent" \
		"$(evil_evidence bad-verdict "^evil-receiver: bad-verdict: $size bytes received, SHA-256 $sha, verdict bad sent, the sender hung up; $FILE_INFO_SAID\$")"
}

# check_silent NAME: a receiver that accepts and then says nothing: the
# sender must give up (exit 3) after its -t, and within as much again
# and 2 s for the file.  (The time is the receiver's, from the
# connection to the hang-up: the sandbox's start, 3 to 4 s under TCG,
# is not the sender's wait.)
check_silent() {
	local evidence secs re
	fault_file silent
	evil_receiver silent "$FAULT_ID" "$FAULT_FILE" ||
		{ result "$1" fail "$EVIL_LINE"; return; }
	re="^evil-receiver: silent: silent; the sender hung up after ([0-9]+\\.[0-9]) s; $FILE_INFO_SAID\$"
	evidence=$(evil_evidence silent "$re")
	[[ $EVIL_LINE =~ $re ]] && secs=${BASH_REMATCH[1]}
	if [[ $evidence == "no sign"* ]]; then
		expect_failure "$1" 3 "a silent receiver" \
			"a wait with nothing heard for -t seconds must end the run (exit 3)" \
			"$evidence"
	elif awk -v s="$secs" -v t="$T" 'BEGIN { exit !(s > 2 * t + 2) }'; then
		result "$1" fail "a silent receiver: hung up only $secs s after" \
			"connecting, with -t $T $(said): does every wait end" \
			"after -t seconds of silence?"
	elif awk -v s="$secs" -v t="$T" 'BEGIN { exit !(s < t - 1) }'; then
		result "$1" fail "a silent receiver: hung up $secs s after" \
			"connecting, before its -t of $T s $(said): does it" \
			"wait -t seconds?"
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
		"$(evil_evidence killed-mid-write "^evil-receiver: killed-mid-write: $FILE_INFO_SAID; REGION of $(stat -c %s "$FAULT_FILE") bytes sent, killing itself\$")"
}

# traced NAME SIZE RECEIVER_OPTION...: check_transfer with the receiver
# traced (-v), each line of its trace read here as it comes, with the
# time it came: the evidence of make check's stages (scripts/grade -c)
# and of the run's chart (scripts/lib/chart.py).  After the CHECK line:
#	TRACED NAME                   which run this is
#	SAID LINE                     the sender's first line on stderr
#	STATUS N                      its exit status
#	TRACE SECONDS LINE            a line of the receiver's, the time
#	                              it came (epoch seconds, to the
#	                              microsecond), at most TRACE_MAX; the
#	                              last is "summary: LINE", its summary
# (The receiver's stderr goes through a FIFO to a loop that stamps each
# line: the bed's /dev/fd serves no process substitution.)
TRACE_MAX=4000
traced() {
	local stamper n=0
	rm -f "$G/rxerr" "$G/trace"
	mkfifo "$G/rxerr" || { check_transfer "$@"; return; }
	# (Read to the end, so that the receiver never blocks on it; kept
	# up to TRACE_MAX lines.)
	while IFS= read -r l; do
		[ $((n += 1)) -gt "$TRACE_MAX" ] ||
			printf '%s %s\n' "$EPOCHREALTIME" "$l"
	done <"$G/rxerr" >"$G/trace" &
	stamper=$!
	# shellcheck disable=SC2016 # expanded by the inner shell
	RX_RUN=(bash -c 'exec "$@" 2>"$0"' "$G/rxerr")
	check_transfer "$1" "$2" -v "${@:3}"
	RX_RUN=()
	wait_within 10 "$stamper" "the receiver's trace" >&2
	printf 'TRACED %s\nSAID %s\nSTATUS %s\n' "$1" "$S_ERR" "$S_STATUS"
	{
		head -n "$TRACE_MAX" "$G/trace"
		printf '%s summary: %s\n' "$EPOCHREALTIME" "$LAST_SUMMARY"
	} | printable | sed 's/^/TRACE /'
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

# What to run: every check (the grader), or make check's stages
# (WORK/mode: "check", and "check N" for stage N alone; scripts/grade -c):
# first one traced run of a file through five windows' chunks, the
# evidence of stages 1 to 6; the lab's checks for stage 7 once it got
# its key; the rest for stage 8.
mode= stage=
[ -f "$WORK/mode" ] && read -r mode stage <"$WORK/mode"
lab=1 beyond=1
if [ "$mode" = check ]; then
	[ "$stage" = 8 ] || traced stage-run 300007 -w 64K -n 2
	case $stage in
	[1-6]) lab=0 beyond=0 ;;
	7) beyond=0 ;;
	8) lab=0 ;;
	esac
	# (Without a key, every check fails as the stage run did.)
	if [ "$stage" != 8 ] && [ "${LAST_VERDICT:-}" != pass ]; then
		lab=0 beyond=0
	fi
fi

# The checks: scripts/grade's order, then the fault checks in an order of
# this submission's own.  The grader traces lab-odd-size's run (its chart).
if [ "$lab" -eq 1 ]; then
	check_transfer lab-empty-file 0
	check_transfer lab-one-byte 1
	if [ "$mode" = check ]; then
		check_transfer lab-odd-size 1000003
	else
		traced lab-odd-size 1000003
	fi
	check_transfer lab-one-window $((16 << 20)) -w 16M
	check_transfer lab-few-mib $((3 << 20))
fi
[ "$beyond" -eq 1 ] || exit 0
check_transfer many-windows $(((3 << 20) + 12345)) -w 256K -n 2
check_big larger-than-memory
for check in $(shuf --random-source=/dev/urandom -e over-max bad-verdict \
	silent-receiver receiver-killed); do
	case $check in
	over-max) check_over_max over-max ;;
	bad-verdict) check_bad_verdict bad-verdict ;;
	silent-receiver) check_silent silent-receiver ;;
	receiver-killed) check_killed receiver-killed ;;
	esac
done
