# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The grader's mutants, for tests/slow/grader.test and grader-verbs.test
# (source it after tests/lib.sh): the reference with one typical student
# mistake patched in, each in a copy of the sources under TEST_TMP; what
# each should lose (LOSES), may lose by chance (MAYLOSE), and what the
# failed check's line should say (HINT); and the functions that grade
# senders two at a time and judge them.

# part NAME: the mutants that follow are of the part NAME (protocol: the
# lab's message sequence, graded by grader.test; verbs: the slides' verbs
# and the file's bytes, by grader-verbs.test).
# mutant NAME FILE OLD NEW: in the copy of the sources, replace the text
# OLD of FILE by NEW (exactly once), or fail: the mistake no longer fits
# the reference, and this table needs a look.
declare -A LOSES MAYLOSE HINT PART
part() {
	CURRENT_PART=$1
}
ALL_CHECKS="lab-empty-file lab-one-byte lab-odd-size lab-one-window
	lab-few-mib many-windows larger-than-memory over-max bad-verdict
	silent-receiver receiver-killed"
mutant() {
	local name=$1 file=$TEST_TMP/src-$1/$2
	[ -d "$TEST_TMP/src-$1" ] || {
		PART[$1]=$CURRENT_PART
		mkdir "$TEST_TMP/src-$1"
		cp -R ./*.c ./*.h server cli lib Makefile "$TEST_TMP/src-$1/"
	}
	OLD=$3 NEW=$4 perl -0pi -e '
		my $n = () = /\Q$ENV{OLD}\E/g;
		die "found $n times\n" if $n != 1;
		s/\Q$ENV{OLD}\E/$ENV{NEW}/;' "$file" ||
		fail "mutant $name: cannot patch $2: '$3'"
}

part protocol

# The length in the wrong byte order (converted twice: the framework's
# lab3_encode() converts already): only an empty file survives; the
# receivers refuse the rest as too large (exit 4).
mutant length-byte-order sender.c \
	'msg.file_info.length = s->size;' \
	'msg.file_info.length = lab3_htobe64(s->size);'
HINT[length-byte-order]="lab-few-mib|byte-swapped: 3145728 (host byte order?)"
LOSES[length-byte-order]="lab-one-byte lab-odd-size lab-one-window
	lab-few-mib many-windows larger-than-memory bad-verdict receiver-killed"

# Every chunk written at the file's start: files of one window pass.
mutant offset-ignored sender.c \
	'uint64_t offset = r->offset, length' \
	'uint64_t offset = 0, length'
LOSES[offset-ignored]="many-windows larger-than-memory"
HINT[offset-ignored]="many-windows|chunk 1 holds the file's bytes from offset 0"

# No DONE: the receiver never learns the chunk has landed.
mutant no-done sender.c \
	'while ((ret = lab3_post_msg(&s->conn, &msg)) == -EAGAIN) {' \
	'while ((ret = 0) != 0) {'
HINT[no-done]="lab-few-mib|waiting for DONE of the chunk at offset 0"
LOSES[no-done]="lab-empty-file lab-one-byte lab-odd-size lab-one-window
	lab-few-mib many-windows larger-than-memory bad-verdict"

# The DONE posted before the chunk's WRITEs: the receiver takes the window
# back before the bytes come.  (An empty file has no WRITE to be late.  A
# 1-byte WRITE right behind its DONE often lands before the receiver takes
# the window back: lab-one-byte catches it by chance, which a CI run of
# c92c595 saw go either way.)
mutant done-before-writes sender.c \
	'	for (uint64_t written = 0; written < length; ) {' \
	'	{
		struct lab3_msg early = { .type = LAB3_MSG_DONE };

		early.done.offset = offset;
		early.done.bytes = length;
		while ((ret = lab3_post_msg(&s->conn, &early)) == -EAGAIN)
			lab3_wait(&s->conn, 0);
		if (ret != 0)
			return -1;
	}
	for (uint64_t written = 0; written < length; ) {'
mutant done-before-writes sender.c \
	'while ((ret = lab3_post_msg(&s->conn, &msg)) == -EAGAIN) {' \
	'while ((ret = 0) != 0) {'
LOSES[done-before-writes]="lab-one-window lab-few-mib larger-than-memory"
# (bad-verdict: the evil receiver hashes what arrived at the DONE, which
# the WRITEs may not have reached yet.  lab-odd-size's chunk of 1 MB and
# many-windows' of 256 KiB: in a bed of 2 virtual CPUs they were lost
# every time; in beds of 1, as this suite and a class's grading run,
# the receiver is not scheduled until the kernel has placed the WRITEs
# behind the DONE, and both passed in the first run of 2ab2892.)
MAYLOSE[done-before-writes]="lab-one-byte lab-odd-size many-windows bad-verdict"

# The ID sent before the verdict has come.  (With an empty file the
# receiver has nothing to hash: it answers the DONE of 0 bytes with its
# VERDICT at once, and the early ID, posted right behind that DONE, often
# arrives after it; the receiver cannot tell it from an ID sent in turn.  lab-empty-file catches it by chance: missed 12 times in 40 in
# the bed, and a CI run of 9acbb45 failed on it.  A 1-byte file leaves
# the receiver as little to do between the DONE and its VERDICT: a
# fresh clone's .ci/run of 83112bf saw lab-one-byte pass it once, the
# first time in the slow suite's runs.  Every file of a MiB or more
# still catches it: the hash takes longer than the ID's way.)
mutant id-before-verdict sender.c \
	'	if (receive(s, &msg, behind) != 0)
		return -1;
	s->verdict = ' \
	'	{
		struct lab3_msg early = { .type = LAB3_MSG_ID };
		int ret;

		snprintf(early.id.id, sizeof(early.id.id), "%s", s->opt.id);
		while ((ret = lab3_post_msg(&s->conn, &early)) == -EAGAIN)
			lab3_wait(&s->conn, 0);
		if (ret != 0)
			return -1;
	}
	if (receive(s, &msg, behind) != 0)
		return -1;
	s->verdict = '
mutant id-before-verdict sender.c \
	'	snprintf(msg.id.id, sizeof(msg.id.id), "%s", s->opt.id);
	return send_step(s, &msg);' \
	'	snprintf(msg.id.id, sizeof(msg.id.id), "%s", s->opt.id);
	lab3_tx_advance(&s->tx);
	return 0;'
LOSES[id-before-verdict]="lab-odd-size lab-one-window lab-few-mib
	many-windows larger-than-memory bad-verdict"
MAYLOSE[id-before-verdict]="lab-empty-file lab-one-byte"

# Each WRITE placed at the window's address plus the chunk's offset in
# the file, not plus the bytes of the chunk already written: past the
# first chunk, the WRITEs fall outside the window, and the receiver's
# device refuses them (a remote access error, which the sender explains).
mutant write-past-window sender.c \
	'r->addr + written,' 'r->addr + offset + written,'
LOSES[write-past-window]="many-windows larger-than-memory"
HINT[write-past-window]="many-windows|inside the window the REGION describes"

# A bad verdict not acted on: on to the ID, and a key printed if one comes.
mutant key-after-bad-verdict sender.c \
	'if (msg.verdict.verdict != LAB3_VERDICT_GOOD)' \
	'if (0 && msg.verdict.verdict != LAB3_VERDICT_GOOD)'
LOSES[key-after-bad-verdict]="bad-verdict"
HINT[key-after-bad-verdict]="bad-verdict|after a bad verdict, it must fail the run"

# No timeout: -t taken, then ignored (an hour instead).
mutant no-timeout sender.c \
	'.timeout_ms = s->opt.timeout_s * 1000,' '.timeout_ms = 3600 * 1000,'
LOSES[no-timeout]="silent-receiver"

part verbs

# The hash over sizeof(pointer) bytes of each block read, not the block:
# every file but the empty one gets a bad verdict, though it arrived
# intact, which the grader's hint says.
mutant hash-over-pointer sender.c \
	'lab3_sha256_add(&h, buf, (size_t)n)' \
	'lab3_sha256_add(&h, buf, sizeof(buf))'
LOSES[hash-over-pointer]="lab-one-byte lab-odd-size lab-one-window
	lab-few-mib many-windows larger-than-memory"
HINT[hash-over-pointer]="lab-few-mib|the file arrived intact"

# The slides' verbs gone wrong (issue 34): each fails with a hint that
# names the mistake, from the receiver's side of the evidence.
# No route resolution: rdma_connect on a cm_id whose route is unknown
# fails, and the receiver never sees the sender.
mutant no-route client.c \
	'	if (rdma_resolve_route(conn->id, RESOLVE_TIMEOUT_MS) != 0)
		return resolve_error(conn, "rdma_resolve_route",
				     rdma_get_peer_addr(conn->id));
	while (ret == 0 && conn->cm_event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		ret = lab3_wait(conn, 0);
	return ret;' \
	'	return 0;'
LOSES[no-route]=$ALL_CHECKS
HINT[no-route]="lab-few-mib|then the route, each waiting for its event"

# Never connects: the resources built and the receives posted, but no
# rdma_connect.  It scores 0, and the hint names the missing call.
mutant never-connects client.c \
	'	if (rdma_connect(conn->id, &param) != 0)' \
	'	(void)param;
	return 0;
	if (rdma_connect(conn->id, &param) != 0)'
LOSES[never-connects]=$ALL_CHECKS
HINT[never-connects]="lab-few-mib|then calls rdma_connect and waits for ESTABLISHED"

# The WRITE under the sender's own lkey, not the REGION's rkey: the
# receiver's device refuses it (an empty file has no WRITE).
mutant lkey-for-rkey client.c '.rkey = rkey,' '.rkey = mr->lkey,'
LOSES[lkey-for-rkey]="lab-one-byte lab-odd-size lab-one-window
	lab-few-mib many-windows larger-than-memory bad-verdict"
HINT[lkey-for-rkey]="lab-few-mib|under the REGION's rkey"

# Every piece of a chunk written to the window's start: a chunk of one
# piece (8 MiB at most) passes.
mutant pieces-at-start sender.c \
	'r->addr + written, r->rkey' 'r->addr, r->rkey'
LOSES[pieces-at-start]="lab-one-window larger-than-memory"
HINT[pieces-at-start]="lab-one-window|plus the bytes of the chunk already written"

# A registration shorter than the WRITE: the staging ring's first half
# and a byte, so that a WRITE from its third slot on is a local
# protection error (a file of two slots or less passes: the two
# smallest; slots are a quarter of a small file).
mutant short-registration lib/pieces.c \
	'lab3_reg_mr(conn, p->ring, bytes, 0, &p->ring_mr)' \
	'lab3_reg_mr(conn, p->ring, bytes / 2 + 1, 0, &p->ring_mr)'
LOSES[short-registration]="lab-odd-size lab-one-window lab-few-mib
	many-windows larger-than-memory bad-verdict"
HINT[short-registration]="lab-few-mib|local protection error"

# IBV_WR_SEND in place of IBV_WR_RDMA_WRITE: the chunk's bytes consume a
# receive of the receiver's.
mutant send-not-write client.c \
	'.opcode = IBV_WR_RDMA_WRITE,' '.opcode = IBV_WR_SEND,'
LOSES[send-not-write]="lab-one-byte lab-odd-size lab-one-window
	lab-few-mib many-windows larger-than-memory bad-verdict"
HINT[send-not-write]="lab-few-mib|IBV_WR_SEND"

# A wr_id its completion handling cannot place (the tag alone: the kind
# of work request lost): the sender's own completion handling says so.
mutant wrong-wr-id client.c \
	'.wr_id = WR_ID(WR_WRITE, 0),' '.wr_id = 0,'
LOSES[wrong-wr-id]="lab-one-byte lab-odd-size lab-one-window
	lab-few-mib many-windows larger-than-memory bad-verdict"
HINT[wrong-wr-id]="lab-few-mib|wr_id 0x0, which says RECV"

# Never reads its file: the hash and the WRITEs of as many zeros.  Its
# verdicts are good, and its keys right; the larger-than-memory check
# compares what arrived with the file (issue 39).  (lab-one-byte: the
# random byte is a zero 1 time in 256.  bad-verdict: the evil receiver's
# line shows zeros arrived, not the file.)
mutant never-reads sender.c \
	'while ((n = read(s->fd, buf, HASH_BLOCK)) != 0) {' \
	'while ((n = (ssize_t)(s->size - total < (uint64_t)HASH_BLOCK ?
		s->size - total : (uint64_t)HASH_BLOCK)) != 0 &&
	       memset(buf, 0, HASH_BLOCK) != NULL) {'
mutant never-reads lib/pieces.c \
	'ssize_t n = pread(p->fd, dst + got, len - got,
				  (off_t)(offset + got));' \
	'ssize_t n = memset(dst + got, 0, len - got) != NULL ?
			    (ssize_t)(len - got) : -1;'
LOSES[never-reads]="lab-odd-size lab-one-window lab-few-mib many-windows
	larger-than-memory bad-verdict"
MAYLOSE[never-reads]="lab-one-byte"
HINT[never-reads]="larger-than-memory|the bytes that arrived are not the file's"

# The protocol's worst case registered at once, once connected: 8 windows
# of 16 MiB (one buffer registered 8 times: each registration counts
# against the locked-memory limit), as an independent sender that
# provisions for every window a receiver may offer; then deregistered.
# Each check gives a run 8 windows of its receiver's -w and 16 MiB
# (issue 39): it passes every check whose windows are of 16 MiB, the lab's
# among them (under the sandbox's old 64 MiB it lost every check that
# connects); many-windows' windows are of 256 KiB (18 MiB in all), and
# its line names that limit.
mutant worst-case-registrations sender.c \
	'			    s->opt.where, s->conn.err);
	lab3_tx_advance(&s->tx);' \
	'			    s->opt.where, s->conn.err);
	{
		static uint8_t pool[16u << 20];
		struct ibv_mr *mr[8];
		int n, i;

		for (n = 0; n < 8; n++)
			if (lab3_reg_mr(&s->conn, pool, sizeof(pool), 0,
					&mr[n]) != 0)
				break;
		for (i = 0; i < n; i++)
			ibv_dereg_mr(mr[i]);
		if (n < 8)
			return fail(s, LAB3_EXIT_LOCAL, "registration %d of 8 "
				    "windows of 16 MiB: %s", n + 1, s->conn.err);
	}
	lab3_tx_advance(&s->tx);'
LOSES[worst-case-registrations]="many-windows"
HINT[worst-case-registrations]="many-windows|of 18 MiB: the receiver's 8 windows at most"

# grade_sender WHAT: scripts/grade on SENDERS[WHAT]; its scorecard in
# TEST_TMP/card-WHAT, its stderr in grade-WHAT.err, its exit status in
# status-WHAT, results.json under results-WHAT/.
grade_sender() {
	scripts/grade -o "$TEST_TMP/results-$1" "${SENDERS[$1]}" \
		>"$TEST_TMP/card-$1" 2>"$TEST_TMP/grade-$1.err"
	echo $? >"$TEST_TMP/status-$1"
}

# graded WHAT: SENDERS[WHAT]'s grading, shown; LOST gets the names of the
# checks it failed, sorted, one line; GRADE_STATUS its exit status.
graded() {
	GRADE_STATUS=$(cat "$TEST_TMP/status-$1" 2>/dev/null)
	echo "== $1"
	cat "$TEST_TMP/card-$1"
	[ -n "$GRADE_STATUS" ] || fail "$1: the grader left no exit status"
	[ "$GRADE_STATUS" -le 1 ] ||
		fail "$1: the grader exited $GRADE_STATUS: $(tail -n 5 "$TEST_TMP/grade-$1.err")"
	[ "$(awk '$3 == "pass:" || $3 == "fail:"' "$TEST_TMP/card-$1" | wc -l)" -eq 11 ] ||
		fail "$1: the scorecard has not 11 checks"
	LOST=$(awk '$3 == "fail:" { print $1 }' "$TEST_TMP/card-$1" | sort |
		tr '\n' ' ')
}

# sorted WORDS: the words, sorted, one line.
sorted() {
	tr -s ' \t\n' '\n' <<<"$1" | grep . | sort | tr '\n' ' '
}

# mutants_of PART: MUTANTS, the mutants of PART, sorted, or of them those
# GRADER_ONLY names (a name in GRADER_ONLY that is no mutant fails the
# test).
mutants_of() {
	local name
	for name in ${GRADER_ONLY:-}; do
		[ -n "${PART[$name]:-}" ] ||
			fail "GRADER_ONLY names '$name', which is no mutant of tests/slow/grader-mutants.sh"
	done
	mapfile -t MUTANTS < <(for name in "${!PART[@]}"; do
		[ "${PART[$name]}" = "$1" ] || continue
		[ -z "${GRADER_ONLY:-}" ] || [[ " $GRADER_ONLY " == *" $name "* ]] ||
			continue
		echo "$name"
	done | sort)
}

# build_mutant NAME: its sender, in SENDERS[NAME]. Built as a student's
# is, warnings and all: CI's `make test-slow WERROR=1` leaves WERROR=1
# in the environment, and a mutant's unused parameter must not fail it.
declare -A SENDERS
build_mutant() {
	make -s -C "$TEST_TMP/src-$1" sender WERROR= >"$TEST_TMP/make-$1" 2>&1 ||
		fail "mutant $1 does not build: $(tail -5 "$TEST_TMP/make-$1")"
	SENDERS[$1]=$TEST_TMP/src-$1/sender
}

# judge_mutant NAME: it lost exactly what LOSES says (and perhaps what
# MAYLOSE says), the grader exited 1, and its HINT is on the line of
# the check it names.
judge_mutant() {
	local name=$1 want got maybe check
	graded "$name"
	want=$(sorted "${LOSES[$name]}")
	got=" $LOST"
	for maybe in ${MAYLOSE[$name]:-}; do
		got=${got/ $maybe / }
	done
	[ "${got# }" = "$want" ] ||
		fail "mutant $name lost '$LOST', expected '$want'" \
			"${MAYLOSE[$name]:+(and maybe ${MAYLOSE[$name]})}"
	expect_status 1 "$GRADE_STATUS" "the grader on mutant $name"
	if [ -n "${HINT[$name]:-}" ]; then
		check=${HINT[$name]%%|*}
		grep "^$check " "$TEST_TMP/card-$name" | grep -qF -- "${HINT[$name]#*|}" ||
			fail "mutant $name: the $check line does not say" \
				"'${HINT[$name]#*|}': $(grep "^$check " "$TEST_TMP/card-$name")"
	fi
}
